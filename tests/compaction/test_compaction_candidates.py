"""Summary model candidates: retries and hand-overs as the coding agent's auto-compaction does them,
for sync and async completion functions alike.

Expected values come from coding agent 18.3.4: the candidate loop (session-maintenance.ts:4808-4958:
auth failures and timeouts go to the next model without a retry; a failure is retried only when
``retry.enabled``, fewer than ``retry.maxRetries`` tries were made, it is no context overflow and
it is transient or carries a retry-after; the wait is ``max(baseDelayMs * 2**attempt,
retryAfter)``; a wait over 30,000 ms goes to the next model when there is one; anything else
goes to the next model; when all fail the last failure is raised) and the ``retry.*`` defaults
(session/settings.ts:666-687: enabled, 10 retries, 500 ms).
"""

from __future__ import annotations

import pytest

from snapcompact.compaction import TransientError
from snapcompact.compaction.control import (
    AbortSignal,
    CompactionAborted,
    RetryPolicy,
    failure_kind,
    run_candidates,
    with_candidates,
)


class Status(Exception):
    def __init__(self, status: int, text: str = "failed") -> None:
        super().__init__(text)
        self.status_code = status


def _flaky(name, log, errors, *, is_async):
    """A completion function raising ``errors`` in turn, then answering ``from <name>``."""
    left = list(errors)

    def reply():
        log.append(name)
        if left:
            raise left.pop(0)
        return f"from {name}"

    if is_async:
        async def complete(system_prompt, prompt, *, max_tokens):
            return reply()
    else:
        def complete(system_prompt, prompt, *, max_tokens):
            return reply()
    return complete


def test_defaults_are_the_agents_retry_settings():
    policy = RetryPolicy()
    assert (policy.enabled, policy.max_retries, policy.base_delay, policy.max_candidate_wait) == \
        (True, 10, 0.5, 30.0)
    with pytest.raises(ValueError, match="retry.maxRetries must be a non-negative integer"):
        RetryPolicy(max_retries=-1)


@pytest.mark.parametrize("is_async", [False, True])
def test_transient_failures_are_retried_with_backoff(is_async):
    log, sleeps = [], []
    call = with_candidates([_flaky("a", log, [TransientError("overloaded")] * 2,
                                   is_async=is_async),
                            _flaky("b", log, [], is_async=is_async)], sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from a"
    assert log == ["a", "a", "a"] and sleeps == [0.5, 1.0]


@pytest.mark.parametrize("is_async", [False, True])
def test_a_long_wait_goes_to_the_next_model_and_the_last_one_waits(is_async):
    log, sleeps = [], []
    call = with_candidates([_flaky("a", log, [TransientError("slow", 120)], is_async=is_async),
                            _flaky("b", log, [TransientError("slow", 120)], is_async=is_async)],
                           sleep=sleeps.append)
    # a: 120 s > 30 s with b left -> b at once; b is the last: it waits the 120 s and retries.
    assert call("s", "p", max_tokens=1) == "from b"
    assert log == ["a", "b", "b"] and sleeps == [120.0]
    # A provider wait shorter than the backoff: the backoff wins (max of the two).
    log.clear(), sleeps.clear()
    call = with_candidates([_flaky("a", log, [TransientError("x", 0.1)], is_async=is_async)],
                           sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from a" and sleeps == [0.5]


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("error", [
    ValueError("bad request"),                     # not retried: next model
    Status(401, "invalid api key"),                # auth: next model
    Status(403, "forbidden"),
    TimeoutError("timed out"),                     # timeout: next model, no retry
    Status(400, "prompt is too long: 250000 tokens > 200000 maximum"),  # overflow
    Status(429, "prompt is too long"),             # overflow vetoes the transient arm
])
def test_failures_that_are_not_retried_go_to_the_next_model(error, is_async):
    log, sleeps = [], []
    call = with_candidates([_flaky("a", log, [error], is_async=is_async),
                            _flaky("b", log, [], is_async=is_async)], sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from b"
    assert log == ["a", "b"] and sleeps == []


@pytest.mark.parametrize("is_async", [False, True])
def test_every_model_failing_raises_the_last_failure_after_the_retry_budget(is_async):
    log, sleeps = [], []
    failures = [Status(503, f"overloaded {i}") for i in range(20)]
    call = with_candidates([_flaky("a", log, failures, is_async=is_async)], sleep=sleeps.append)
    with pytest.raises(Status, match="overloaded 10"):
        call("s", "p", max_tokens=1)
    # 1 try + 10 retries; waits 0.5 s doubling, uncapped on the last model.
    assert log == ["a"] * 11 and sleeps == [0.5 * 2 ** k for k in range(10)]
    # With a next model, the first wait over 30 s (32 s, after 6 retries) hands over.
    log.clear(), sleeps.clear()
    call = with_candidates([_flaky("a", log, failures, is_async=is_async),
                            _flaky("b", log, [], is_async=is_async)], sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from b"
    assert log == ["a"] * 7 + ["b"] and sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    # retry.enabled off: no retry at all, straight to the next model.
    log.clear(), sleeps.clear()
    call = with_candidates([_flaky("a", log, failures, is_async=is_async),
                            _flaky("b", log, [], is_async=is_async)], sleep=sleeps.append,
                           policy=RetryPolicy(enabled=False))
    assert call("s", "p", max_tokens=1) == "from b" and log == ["a", "b"] and sleeps == []


def test_classification():
    assert failure_kind(Status(401)) == "auth" and failure_kind(Status(403)) == "auth"
    assert failure_kind(TimeoutError()) == "timeout"
    assert failure_kind(Status(400, "This model's maximum context length is 8192")) == "overflow"
    assert failure_kind(Status(529, "overloaded")) == "transient"
    assert failure_kind(ConnectionError("reset")) == "transient"
    assert failure_kind(Status(400, "bad")) == "other"


def test_an_abort_stops_the_loop():
    signal = AbortSignal()

    async def fails(system_prompt, prompt, *, max_tokens):
        signal.abort()
        raise TransientError("overloaded")

    with pytest.raises(TransientError):
        run_candidates([fails, fails], lambda c: c("s", "p", max_tokens=1), signal=signal,
                       sleep=lambda s: None)
    with pytest.raises(CompactionAborted):
        run_candidates([fails], lambda c: c("s", "p", max_tokens=1), signal=signal)


def test_the_pipeline_retries_async_summarizers():
    from compaction_synth import FakeLLM

    from snapcompact.compaction import (
        DEFAULT_SETTINGS,
        CompactionPipeline,
        ModelInfo,
        Session,
        merge_settings,
    )

    fake = FakeLLM()
    state = {"failures": 1, "calls": 0}

    async def flaky(system_prompt, prompt, *, max_tokens):
        state["calls"] += 1
        if state["failures"]:
            state["failures"] -= 1
            raise TransientError("overloaded", retry_after=0)
        return fake(system_prompt, prompt, max_tokens=max_tokens)

    async def never(system_prompt, prompt, *, max_tokens):
        raise AssertionError("the first model answered after one retry")

    settings = merge_settings(DEFAULT_SETTINGS, {"compaction": {"keepRecentTokens": 500,
                                                                "methodOrder": ["soft"]}})
    p = CompactionPipeline(Session(), ModelInfo("claude-sonnet-4-5", 20_000, provider="anthropic"),
                           settings=settings, complete=[flaky, never])
    for i in range(12):
        p.session.append_message({"role": "user", "content": f"turn {i} " + "word " * 200})
        p.session.append_message({"role": "assistant", "stopReason": "stop",
                                  "content": [{"type": "text", "text": f"done {i}"}]})
    outcome = p.compact()
    assert outcome.entry is not None and state["calls"] == len(fake.calls) + 1
