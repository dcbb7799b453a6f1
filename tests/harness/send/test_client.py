"""Eval client through litellm: mock path and a loopback OpenAI-compatible server (real HTTP).

No key and no network: the fake server listens on 127.0.0.1 and is reached with a dummy key
that must never show up in a cache file or a recorded error.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import logging
import os
import re
import time

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from evals.send.client import (  # noqa: E402
    REDACTED,
    EvalClient,
    Progress,
    ProgressBar,
    Request,
    RetryPolicy,
    import_litellm,
    provider_of,
    redact,
)
from evals.send.dollar_budget import Budget, BudgetExceeded  # noqa: E402
from evals.send.response_cache import ResponseCache  # noqa: E402
from evals.twins.fake_server import DUMMY_API_KEY, FakeChatServer, FakeReply, count_usage  # noqa: E402

FAST_RETRY = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)
PNG_BYTES = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()
PNG_SHA = hashlib.sha256(PNG_BYTES).hexdigest()


@pytest.fixture(scope="module")
def litellm():
    return import_litellm()


@pytest.fixture(scope="module")
def server_module(litellm):
    with FakeChatServer(latency_s=0.0) as server:
        yield server


@pytest.fixture
def server(server_module):
    server_module.reset()
    server_module.latency_s = 0.0
    yield server_module
    server_module.reset()


def fake_request(server: FakeChatServer, question: str = "Who wrote the letter?", *,
                 image: bool = True, **fields) -> Request:
    content: list = [{"type": "text", "text": question}]
    if image:
        content.insert(0, {"type": "image_url", "image_url": {"url": PNG_URL, "detail": "high"}})
    return Request(
        model="openai/fake-model",
        messages=[{"role": "user", "content": content}],
        params={"api_base": server.api_base, "api_key": DUMMY_API_KEY, "temperature": 0,
                "max_tokens": 32},
        frame_hashes=(PNG_SHA,) if image else (),
        metadata={"item": "q1"},
        **fields,
    )


def make_client(tmp_path, **kwargs) -> EvalClient:
    kwargs.setdefault("retry", FAST_RETRY)
    kwargs.setdefault("seed", 0)
    return EvalClient(cache=ResponseCache(tmp_path / "cache"), renderer_version="test-renderer-1",
                      **kwargs)


def run(coro):
    return asyncio.run(coro)


# -- litellm mock path -----------------------------------------------------------------------


def test_mock_response_path_prices_and_caches(tmp_path, litellm):
    client = make_client(tmp_path)
    request = Request(
        model="anthropic/claude-sonnet-4-5",
        messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": PNG_URL}},
            {"type": "text", "text": "What does the frame say?"}]}],
        params={"mock_response": "a red pixel", "max_tokens": 16},
        frame_hashes=(PNG_SHA,),
    )
    first = run(client.complete(request))
    assert first.ok and first.answer == "a red pixel" and not first.cached and first.attempts == 1
    price = litellm.model_cost["claude-sonnet-4-5"]
    expected = (first.prompt_tokens * price["input_cost_per_token"]
                + first.completion_tokens * price["output_cost_per_token"])
    assert first.cost_usd == pytest.approx(expected)
    again = run(client.complete(request))
    assert again.cached and again.attempts == 0 and again.answer == "a red pixel"
    assert (client.progress.requests_sent, client.progress.cache_hits) == (1, 1)
    assert client.progress.cost_usd == pytest.approx(expected)  # spent once


def test_a_bare_timeout_is_logged_with_what_it_means(tmp_path, litellm, caplog):
    """``asyncio.TimeoutError`` says nothing itself: the retry line names the wait it ran out."""
    calls = []

    async def slow_once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise asyncio.TimeoutError()
        return await litellm.acompletion(**kwargs)

    client = make_client(tmp_path, completion_fn=slow_once, timeout_s=12)
    request = Request(model="anthropic/claude-sonnet-4-5",
                      messages=[{"role": "user", "content": "hi"}],
                      params={"mock_response": "hello"})
    with caplog.at_level(logging.WARNING, logger="snapcompact-eval.client"):
        response = run(client.complete(request))
    assert response.answer == "hello" and response.attempts == 2
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retry ")]
    assert len(lines) == 1
    assert "(attempt 1 of " in lines[0] and "failed: TimeoutError, no answer within 42 s)" in \
        lines[0]  # timeout_s + the 30 s grace of the hard timeout


def test_mock_rate_limit_exception_is_retried(tmp_path, litellm):
    calls = []

    async def flaky(**kwargs):
        calls.append({**kwargs, "metadata": dict(kwargs["metadata"])})  # as it was sent
        if len(calls) < 3:
            kwargs = {**kwargs, "mock_response": litellm.RateLimitError(
                "busy", llm_provider="anthropic", model=kwargs["model"])}
        return await litellm.acompletion(**kwargs)

    client = make_client(tmp_path, completion_fn=flaky)
    request = Request(model="anthropic/claude-sonnet-4-5",
                      messages=[{"role": "user", "content": "hi"}],
                      params={"mock_response": "hello"}, metadata={"item": 7})
    response = run(client.complete(request))
    assert response.answer == "hello" and response.attempts == 3
    assert all(call["max_retries"] == 0 for call in calls)  # SDK retries are ours to count
    # Each attempt gets the caller's metadata afresh (litellm adds its own keys in place).
    assert all(call["metadata"] == {"item": 7} for call in calls)


# -- loopback server, litellm's real HTTP client ---------------------------------------------


def test_answer_and_usage_come_from_the_server(tmp_path, server):
    request = fake_request(server, "Who wrote the letter?")
    response = run(make_client(tmp_path).complete(request))
    body = server.bodies[0]
    assert response.answer == "echo: Who wrote the letter?"
    assert (response.prompt_tokens, response.completion_tokens) == count_usage(body, response.answer)
    assert response.cost_usd is None  # fake-model has no price
    assert response.attempts == 1 and server.requests == 1
    # What reached the wire: the image part with its detail; no metadata, no key in the body.
    assert body["messages"][0]["content"][0]["image_url"] == {"url": PNG_URL, "detail": "high"}
    assert body["temperature"] == 0 and body["max_tokens"] == 32
    assert "metadata" not in body and DUMMY_API_KEY not in repr(body)


def test_retries_429_and_500_then_succeeds_honouring_retry_after(tmp_path, server, caplog):
    server.push(FakeReply.rate_limited(retry_after=0.4), FakeReply.server_error(503),
                FakeReply.server_error(500))
    client = make_client(tmp_path)
    with caplog.at_level(logging.WARNING, logger="snapcompact-eval.client"):
        response = run(client.complete(fake_request(server)))
    assert response.ok and response.attempts == 4 and server.requests == 4
    # each retry in the job log with its cause; the end line counts them by the same name
    retries = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retry ")]
    assert len(retries) == 3 == client.progress.retries
    assert "RateLimitError" in retries[0] and "the wait the provider asked for" in retries[0]
    assert "InternalServerError" in retries[2] and "attempt 3 of" in retries[2]
    assert ", 4 sent, 0 cache hits, 0 shared, 3 retries, 0 errors," in client.progress.summary()
    gaps = [b - a for a, b in zip(server.arrivals, server.arrivals[1:])]
    assert gaps[0] >= 0.4  # waited as long as Retry-After asked, measured at the server
    assert max(gaps[1:]) < 0.4  # backoff without Retry-After is the short policy delay


def test_gives_up_after_max_attempts_and_records_the_error(tmp_path, server):
    server.push(*[FakeReply.server_error()] * 4)
    client = make_client(tmp_path)
    response = run(client.complete(fake_request(server)))
    assert not response.ok and response.attempts == 4 and server.requests == 4
    assert "InternalServerError" in response.error and "after 4 attempts" in response.error
    assert client.progress.errors == 1 and client.progress.retries == 3
    assert len(client.cache) == 0  # errors are not cached: a rerun tries again
    response = run(client.complete(fake_request(server)))
    assert response.ok and server.requests == 5


def test_no_retry_on_client_error(tmp_path, server):
    server.push(FakeReply.bad_request("messages[0].content is malformed"))
    response = run(make_client(tmp_path).complete(fake_request(server)))
    assert response.attempts == 1 and server.requests == 1
    assert response.error.startswith("BadRequestError") and "malformed" in response.error
    assert response.answer is None and not response.cached


def test_timeout_is_retried(tmp_path, server):
    server.push(FakeReply.slow(3.0))
    client = make_client(tmp_path, timeout_s=0.5)
    started = time.perf_counter()
    response = run(client.complete(fake_request(server)))
    elapsed = time.perf_counter() - started
    assert response.ok and response.attempts == 2 and server.requests == 2
    assert elapsed < 2.5  # did not wait for the slow answer


def test_connection_error_is_retried(tmp_path, server):
    client = make_client(tmp_path, retry=RetryPolicy(max_attempts=2, base_delay_s=0.01))
    dead = Request(model="openai/fake-model", messages=[{"role": "user", "content": "hi"}],
                   params={"api_base": "http://127.0.0.1:9/v1", "api_key": DUMMY_API_KEY})
    response = run(client.complete(dead))
    assert not response.ok and response.attempts == 2
    assert DUMMY_API_KEY not in response.error


def test_cache_hit_sends_zero_requests(tmp_path, server):
    requests = [fake_request(server, f"question {i}") for i in range(6)]
    first = run(make_client(tmp_path).complete_all(requests))
    assert server.requests == 6 and not any(r.cached for r in first)
    server.reset()
    rerun_client = make_client(tmp_path)  # a new process would look the same
    again = run(rerun_client.complete_all(requests))
    assert server.requests == 0
    assert all(r.cached and r.attempts == 0 for r in again)
    assert [r.answer for r in again] == [r.answer for r in first]
    assert rerun_client.progress.cache_hits == 6 and rerun_client.progress.requests_sent == 0
    assert rerun_client.progress.cost_usd == 0


def test_interrupted_sweep_resumes_without_rebilling(tmp_path, server):
    server.latency_s = 0.3
    requests = [fake_request(server, f"resume {i}", image=False, predicted_cost_usd=0.125)
                for i in range(8)]
    budget = Budget(None)
    client = make_client(tmp_path, concurrency=2, budget=budget)

    async def interrupted():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.complete_all(requests), timeout=0.75)

    run(interrupted())
    answered = len(client.cache)
    assert 1 <= answered < 8
    # Cancelled requests gave their reservations back; answered ones count as spent.
    # (An answer that arrived while its cache write was being cancelled is spent, not cached.)
    assert budget.in_flight_usd == 0
    assert 0.125 * answered <= budget.spent_usd <= 0.125 * (answered + 2)
    sent_before = server.requests
    server.reset()
    resumed = make_client(tmp_path, concurrency=4)
    responses = run(resumed.complete_all(requests))
    assert all(r.ok for r in responses)
    assert sum(r.cached for r in responses) == answered
    assert server.requests == 8 - answered  # only the unanswered ones were sent again
    assert sent_before >= answered


def test_identical_in_flight_requests_share_one_call(tmp_path, server):
    server.latency_s = 0.2
    client = make_client(tmp_path)
    request = fake_request(server, "same question")
    responses = run(client.complete_all([request] * 10))
    assert server.requests == 1
    assert sum(not r.cached for r in responses) == 1 and sum(r.cached for r in responses) == 9
    assert len({r.answer for r in responses}) == 1
    assert client.progress.dedup_hits == 9 and client.progress.requests_sent == 1


def test_per_provider_concurrency_limit(tmp_path, server):
    server.latency_s = 0.15
    client = make_client(tmp_path, concurrency={"openai": 3, "default": 50})
    run(client.complete_all([fake_request(server, f"c{i}", image=False) for i in range(12)]))
    assert server.requests == 12 and server.max_in_flight == 3


def test_rate_limit_spaces_requests(tmp_path, server):
    client = make_client(tmp_path, rate_limits={"openai": 10.0}, concurrency=8)
    run(client.complete_all([fake_request(server, f"r{i}", image=False) for i in range(5)]))
    span = server.arrivals[-1] - server.arrivals[0]
    assert span >= 0.35  # 5 requests at 10/s: 4 intervals of 0.1 s (less scheduling slack)


def test_budget_refuses_before_and_stops_during_a_run(tmp_path, server):
    requests = [fake_request(server, f"b{i}", predicted_prompt_tokens=1000,
                             predicted_cost_usd=0.4) for i in range(5)]
    budget = Budget(1.0)
    client = make_client(tmp_path, budget=budget)
    summary = client.plan(requests)
    assert (summary.requests, summary.predicted_cache_hits) == (5, 0)
    assert summary.predicted_cost_to_send_usd == pytest.approx(2.0)
    with pytest.raises(BudgetExceeded, match=r"\$2\.0000 exceeds the budget \$1\.0000"):
        budget.check(summary)
    assert server.requests == 0
    # Run anyway: only what fits is sent; the rest comes back refused, nothing raised.
    responses = run(client.complete_all(requests))
    assert server.requests == 2 and sum(r.ok for r in responses) == 2
    refused = [r for r in responses if not r.ok]
    assert len(refused) == 3 and all(r.error.startswith("BudgetExceeded") for r in refused)
    assert all(r.attempts == 0 for r in refused)
    assert budget.spent_usd == pytest.approx(0.8)  # unpriced model: the prediction counts
    # The two answers are now cached: the plan of a rerun expects them as free hits.
    assert client.plan(requests).predicted_cache_hits == 2


def test_keys_never_reach_cache_files_or_errors(tmp_path, server):
    server.push(FakeReply.bad_request(f"Incorrect API key provided: {DUMMY_API_KEY}"),
                FakeReply(status=401, message=f"Authorization: Bearer {DUMMY_API_KEY} rejected"))
    client = make_client(tmp_path)
    errors = [run(client.complete(fake_request(server, f"k{i}"))).error for i in range(2)]
    ok = run(client.complete_all([fake_request(server, f"k{i}") for i in range(3)]))
    assert all(r.ok for r in ok)
    assert all(e is not None and REDACTED in e and DUMMY_API_KEY not in e for e in errors)
    assert "test-not-a-real" not in "".join(errors)
    files = list((tmp_path / "cache").rglob("*"))
    assert any(f.is_file() for f in files)
    for path in files:
        assert DUMMY_API_KEY not in path.name
        if path.is_file():
            assert DUMMY_API_KEY.encode() not in path.read_bytes()


# -- helpers ---------------------------------------------------------------------------------

# Made-up secrets in the shapes providers use (none is a real key).
SECRET_SHAPES = {
    "openai": "sk-proj-AbCdEf0123456789xyzXYZ",
    "anthropic": "sk-ant-api03-Zz9_Yy8-Xx7Ww6Vv5",
    "google": "AIza" + "SyA-1234567890abcdefghijKLMNOP",  # split so secret scanners stay quiet
    "bearer": "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
    "named": "api_key=hunter2hunter2",
    "url": "https://generativelanguage.example/v1?key=abc123def456",
}


@pytest.mark.parametrize("shape", sorted(SECRET_SHAPES))
def test_redact_removes_key_shapes(shape):
    secret = SECRET_SHAPES[shape]
    text = redact(f"request failed ({secret}) try again")
    assert REDACTED in text and text.startswith("request failed (") and text.endswith(" try again")
    for piece in ("AbCdEf0123456789", "Zz9_Yy8", "1234567890abcdef", "payload.sig", "hunter2",
                  "abc123def456"):
        assert piece not in text


def test_redact_removes_environment_secrets(monkeypatch):
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "plainvalue-without-known-shape")
    assert redact("got plainvalue-without-known-shape back") == f"got {REDACTED} back"


@pytest.mark.parametrize("model, provider", [
    ("anthropic/claude-sonnet-4-5", "anthropic"),
    ("openrouter/anthropic/claude-sonnet-4-5", "openrouter"),
    ("snapocr/tess-1x", "snapocr"),
    ("gpt-4o", "openai"),
])
def test_provider_of(model, provider, litellm):
    assert provider_of(model) == provider


@pytest.mark.parametrize("fields, problem", [
    (dict(model=""), "model"),
    (dict(messages=[]), "empty"),
    (dict(messages="hi"), "list of OpenAI-format"),
    (dict(params={"model": "x"}), "must not contain 'model'"),
    (dict(predicted_prompt_tokens=-1), "predicted_prompt_tokens"),
    (dict(predicted_cost_usd=float("nan")), "predicted_cost_usd"),
])
def test_request_rejects_bad_fields(fields, problem):
    base = dict(model="openai/x", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match=problem):
        Request(**{**base, **fields})


def test_progress_bar_shows_requests_hits_tokens_dollars(tmp_path, server):
    progress = Progress()
    client = make_client(tmp_path, progress=progress)
    requests = [fake_request(server, f"p{i}") for i in range(3)]
    out = io.StringIO()
    with ProgressBar(progress, total=6, file=out, mininterval=0):
        run(client.complete_all(requests + requests))
    text = out.getvalue()
    assert "6/6" in text and "sent=3" in text and "usd=0.0000" in text
    # the end line's names: three answered by the model, three by an identical request or the
    # cache, no retry
    last = text.rsplit("\r", 1)[-1]
    hits = int(re.search(r"cache hits=(\d+)", last)[1]) + int(re.search(r"shared=(\d+)", last)[1])
    assert hits == 3 and "retries=0" in last and "errors=0" in last
    assert "time left" not in last  # the model has answered: tqdm's own estimate again
    assert f"tok={progress.prompt_tokens + progress.completion_tokens}" in text


def test_fake_server_runs_in_its_own_process():
    """The benchmark's mode: ``python -m evals.twins.fake_server`` prints its port, serves /stats."""
    import json
    import subprocess
    import sys
    import urllib.request

    child = subprocess.Popen([sys.executable, "-m", "evals.twins.fake_server", "--latency", "0"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{int(child.stdout.readline())}"
        body = json.dumps({"model": "fake-model",
                           "messages": [{"role": "user", "content": "two words"}]}).encode()
        post = urllib.request.Request(f"{base}/v1/chat/completions", data=body,
                                      headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(post, timeout=10) as reply:
            answer = json.loads(reply.read())
        assert answer["choices"][0]["message"]["content"] == "echo: two words"
        assert answer["usage"]["prompt_tokens"] == 2
        with urllib.request.urlopen(f"{base}/stats", timeout=10) as reply:
            assert json.loads(reply.read())["requests"] == 1
    finally:
        child.stdin.close()
        assert child.wait(timeout=30) == 0


def test_custom_provider_is_priced_by_its_registered_model(tmp_path, litellm, monkeypatch):
    """The embedded reader is a litellm custom provider: its cost comes from register_model."""
    from litellm import CustomLLM
    from litellm.types.utils import Choices, Message, ModelResponse, Usage

    class Echo(CustomLLM):
        async def acompletion(self, model, messages, *args, **kwargs):
            return ModelResponse(model=model, choices=[Choices(
                index=0, finish_reason="stop", message=Message(role="assistant", content="seen"))],
                usage=Usage(prompt_tokens=1000, completion_tokens=10, total_tokens=1010))

    monkeypatch.setattr(litellm, "custom_provider_map",
                        [{"provider": "clienttestocr", "custom_handler": Echo()}])
    litellm.register_model({"clienttestocr/reader": {
        "input_cost_per_token": 1e-6, "output_cost_per_token": 4e-6,
        "litellm_provider": "clienttestocr", "mode": "chat"}})
    client = make_client(tmp_path, concurrency={"clienttestocr": 1})
    response = run(client.complete(Request(model="clienttestocr/reader",
                                           messages=[{"role": "user", "content": "read"}])))
    assert response.ok and response.answer == "seen"
    assert (response.prompt_tokens, response.completion_tokens) == (1000, 10)
    assert response.cost_usd == pytest.approx(1000 * 1e-6 + 10 * 4e-6)


class _HeaderError(Exception):
    def __init__(self, headers):
        super().__init__("busy")
        self.litellm_response_headers = headers


@pytest.mark.parametrize("headers, expected", [
    ({"Retry-After": "7"}, 7.0),
    ({"retry-after": "0.25"}, 0.25),
    ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # OpenAI's finer header wins
    ({"x-other": "1"}, None),
    ({"Retry-After": "soon"}, None),
])
def test_retry_after_header_forms(headers, expected):
    from evals.send.client import retry_after_seconds

    assert retry_after_seconds(_HeaderError(headers)) == expected


def test_retry_after_http_date():
    import email.utils

    from evals.send.client import retry_after_seconds

    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= retry_after_seconds(_HeaderError({"Retry-After": when})) <= 31


def test_backoff_grows_exponentially_with_jitter_and_respects_retry_after():
    import random

    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0, max_retry_after_s=20.0)
    rng = random.Random(1)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = [policy.delay(attempt, None, rng) for _ in range(200)]
        assert ceiling / 2 <= min(delays) and max(delays) <= ceiling
        assert len(set(delays)) > 100  # jittered, so retries of a burst spread out
    assert 5.0 <= policy.delay(1, 5.0, rng) <= 5.5  # at least what the server asked for
    assert 20.0 <= policy.delay(1, 3600.0, rng) <= 22.0  # capped


def test_the_bar_shows_no_time_left_before_the_model_answers():
    """A bar whose first updates are the reader's warm-up (cache hits, nothing answered by the
    model yet) gives no estimate; once the model answers, tqdm's own time left appears."""
    progress = Progress()
    out = io.StringIO()
    with ProgressBar(progress, total=100, file=out, mininterval=0):
        progress.completed += 1
        progress.cache_hits += 1
        progress.notify()
        before = out.getvalue().rsplit("\r", 1)[-1]
        progress.completed += 1
        progress.requests_sent += 1
        progress.notify()
        after = out.getvalue().rsplit("\r", 1)[-1]
    assert "time left: after the first answer" in before and "<" not in before
    assert "time left" not in after and "<" in after  # [elapsed<remaining, rate]
