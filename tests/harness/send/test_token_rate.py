"""Input-tokens-per-minute limit: spacing by predicted tokens, waiting (never refusing), and one
budget shared by every process pointed at the same limits folder (the jobs of a sweep).

Expected times follow from the limit's definition alone: at T tokens per minute, one minute's
tokens may go at once, after which every token costs 60/T seconds.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from types import SimpleNamespace

import pytest

from evals.send.client import EvalClient, Request
from evals.send.token_rate import TokenRateLimiter, state_file_for

MODEL = "openai/fake-model"


class FakeClock:
    """A clock that only moves when the limiter sleeps."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def limiter(tpm: float, clock: FakeClock, state_file=None) -> TokenRateLimiter:
    return TokenRateLimiter(tpm, state_file=state_file, clock=clock, sleep=clock.sleep)


def test_one_minute_of_tokens_goes_at_once_then_the_steady_rate() -> None:
    clock = FakeClock()
    tpm = limiter(600, clock)  # 10 tokens per second
    assert asyncio.run(tpm.acquire(600)) == 0.0  # an idle bucket holds one minute's tokens
    assert asyncio.run(tpm.acquire(50)) == pytest.approx(5.0)  # 50 tokens at 10/s
    assert asyncio.run(tpm.acquire(10)) == pytest.approx(1.0)
    clock.now += 120  # idle for two minutes: the bucket is full again, not fuller
    assert asyncio.run(tpm.acquire(600)) == 0.0
    assert asyncio.run(tpm.acquire(1)) == pytest.approx(0.1)


def test_a_request_over_the_minute_waits_instead_of_being_refused() -> None:
    clock = FakeClock()
    tpm = limiter(600, clock)
    # 900 tokens on an idle limiter: 600 are there, the other 300 take 30 s to come back
    assert asyncio.run(tpm.acquire(900)) == pytest.approx(30.0)
    assert clock.slept == [pytest.approx(30.0)]


def test_settle_pays_back_a_short_prediction() -> None:
    clock = FakeClock()
    tpm = limiter(600, clock)
    asyncio.run(tpm.acquire(600))
    tpm.settle(600, 660)  # the provider counted 60 more: 6 s of debt
    assert asyncio.run(tpm.acquire(10)) == pytest.approx(7.0)
    tpm.settle(10, None)  # nothing reported: the prediction stands
    assert asyncio.run(tpm.acquire(10)) == pytest.approx(1.0)


def test_two_limiters_on_one_state_file_share_the_budget(tmp_path) -> None:
    clock = FakeClock()
    state = state_file_for(tmp_path / "limits", MODEL)
    job_a, job_b = limiter(600, clock, state), limiter(600, clock, state)
    assert asyncio.run(job_a.acquire(400)) == 0.0
    # alone, job b's 400 would fit in its minute; with job a's 400 it is 200 over: 20 s
    assert asyncio.run(job_b.acquire(400)) == pytest.approx(20.0)
    alone = limiter(600, clock)
    assert asyncio.run(alone.acquire(400)) == 0.0


@pytest.mark.parametrize("value", [0, -5, float("nan"), True, "many"])
def test_bad_limit_is_one_clear_error(value) -> None:
    with pytest.raises(ValueError, match="tokens_per_minute must be a number > 0"):
        TokenRateLimiter(value)
    with pytest.raises(ValueError, match="tokens_per_minute must be a number > 0"):
        EvalClient(cache=None, renderer_version="r", tokens_per_minute=value)


def test_a_torn_state_file_starts_afresh(tmp_path) -> None:
    clock = FakeClock()
    state = tmp_path / "x.tpm"
    state.write_text("not a number")
    assert asyncio.run(limiter(600, clock, state).acquire(600)) == 0.0


# -- through the client ------------------------------------------------------------------------


def _answer(prompt_tokens: int):
    async def completion(**kwargs):
        return SimpleNamespace(
            choices=[SimpleNamespace(message=SimpleNamespace(content="ok"))],
            usage=SimpleNamespace(prompt_tokens=prompt_tokens, completion_tokens=1, cost=0.0),
            model=kwargs["model"])
    return completion


def _request(tokens: int, question: str) -> Request:
    return Request(model=MODEL, messages=[{"role": "user", "content": question}],
                   predicted_prompt_tokens=tokens)


def test_client_sends_an_oversized_request_after_waiting(tmp_path) -> None:
    # 60,000 tokens/min = 1,000 tokens/s; 61,000 predicted tokens: one minute's worth plus 1 s
    client = EvalClient(cache=None, renderer_version="r", tokens_per_minute=60_000,
                        limits_dir=tmp_path / "limits", completion_fn=_answer(61_000))
    started = time.monotonic()
    response = asyncio.run(client.complete(_request(61_000, "q")))
    waited = time.monotonic() - started
    assert response.ok and response.answer == "ok" and response.attempts == 1
    assert client.progress.token_waits == 1 and client.progress.budget_refusals == 0
    assert client.progress.token_wait_s == pytest.approx(1.0, abs=0.05)
    assert waited >= 0.95
    assert state_file_for(tmp_path / "limits", MODEL).exists()


def test_cache_hits_spend_no_tokens(tmp_path) -> None:
    from evals.send.response_cache import ResponseCache

    client = EvalClient(cache=ResponseCache(tmp_path / "cache"), renderer_version="r",
                        tokens_per_minute=60_000, completion_fn=_answer(60_000))
    asyncio.run(client.complete(_request(60_000, "q")))  # the whole minute
    again = asyncio.run(client.complete(_request(60_000, "q")))
    assert again.cached and client.progress.token_waits == 0


def _job(limits_dir: str, tokens: int, out) -> None:
    """One sweep job: its own client, the run's shared limits folder, one request."""
    client = EvalClient(cache=None, renderer_version="r", tokens_per_minute=600_000,
                        limits_dir=limits_dir, completion_fn=_answer(tokens))
    response = asyncio.run(client.complete(_request(tokens, f"q{tokens}")))
    out.put((response.ok, client.progress.token_wait_s))


def _run_jobs(limits_dirs: list[str], tokens: list[int]) -> list[tuple[bool, float]]:
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    jobs = [context.Process(target=_job, args=(d, t, out)) for d, t in zip(limits_dirs, tokens)]
    for job in jobs:
        job.start()
    results = [out.get(timeout=60) for _ in jobs]
    for job in jobs:
        job.join(timeout=60)
        assert job.exitcode == 0
    return results


def test_two_jobs_of_a_sweep_share_one_limit(tmp_path) -> None:
    # 600,000 tokens/min = 10,000 tokens/s. Each job alone fits in one minute (360,000 and
    # 280,000 tokens); together they are 40,000 over: the later one waits 4 s for it, less
    # the tokens that came back between the two jobs' starts (a loaded machine starts the
    # second process late).
    shared = str(tmp_path / "limits")
    results = _run_jobs([shared, shared], [360_000, 280_000])
    assert all(ok for ok, _ in results)
    waits = sorted(wait for _, wait in results)
    assert waits[0] == 0.0 and 2.0 < waits[1] <= 4.0
    # the same two jobs with a folder each do not see each other: nobody waits
    apart = _run_jobs([str(tmp_path / "a"), str(tmp_path / "b")], [360_000, 280_000])
    assert [wait for _, wait in apart] == [0.0, 0.0]


# -- from the config to the client -------------------------------------------------------------

# Tier 1 input tokens per minute as the providers' rate-limit pages state them (see the comments
# in each model config for the page); models without a published per-minute token limit: None.
DOCUMENTED_TPM = {"claude-sonnet-4-5": 30_000, "claude-opus-4-7": 30_000, "gpt-5": 500_000,
                  "gpt-4.1": 30_000, "gemini-2.5-flash": 1_000_000, "ocr": None, "fake": None}


@pytest.mark.parametrize("name, expected", sorted(DOCUMENTED_TPM.items()))
def test_every_job_of_a_sweep_gets_the_shared_limits_folder(tmp_path, name, expected, compose_eval) -> None:

    from evals.pipeline.run_loop import make_client
    from evals.spec.run_spec import RunSpec

    cfg = compose_eval([f"model={name}", f"results_dir={tmp_path}/results"])
    spec = RunSpec.from_config(cfg, base_dir=tmp_path)
    assert spec.model.tokens_per_minute == expected
    # the folder is the results folder's, not the job's: every job of a sweep names the same one
    assert spec.limits_dir == tmp_path / "results" / "cache" / "limits"
    limiter = make_client(spec).token_limiter(spec.model.litellm_id)
    if expected is None:
        assert limiter is None
    else:
        assert limiter.tokens_per_minute == expected
        assert limiter.state_file == state_file_for(spec.limits_dir, spec.model.litellm_id)


def test_failed_attempts_give_their_tokens_back(tmp_path) -> None:
    from evals.send.client import RetryPolicy

    calls = []

    async def flaky(**kwargs):
        calls.append(kwargs["model"])
        if len(calls) < 3:
            raise ConnectionError("connection reset")  # retried; nothing reached the model
        return await _answer(30_000)(**kwargs)

    client = EvalClient(cache=None, renderer_version="r", tokens_per_minute=60_000,
                        completion_fn=flaky, retry=RetryPolicy(4, 0.01, 0.05))
    response = asyncio.run(client.complete(_request(30_000, "q")))
    assert response.ok and response.attempts == 3 and client.progress.token_waits == 0
    # three attempts, one answer: 30,000 of the minute's 60,000 are spent, so 30,000 more fit
    assert client.token_limiter(MODEL).reserve(30_000) == 0.0
    # and 6,000 more wait 6 s, less what refilled since (the machine may be slow)
    assert client.token_limiter(MODEL).reserve(6_000) == pytest.approx(6.0, abs=1.0)
