"""Stopping a running compaction, and trying several summarizer models with retries.

Why: a summary takes seconds to minutes of LLM calls. The user must be able to stop it
(``abortCompaction``, Escape during a branch summary), a manual compaction must win over an
automatic one already running, and a transient provider failure (rate limit, overload, a dropped
connection) should be retried, or handed to the next configured model when the provider asks
for a long wait.

Cancellation is cooperative: :class:`AbortSignal` is checked before and after every completion
call (a call in flight is not interrupted; its answer is thrown away), and a strategy that sees
it raises :class:`CompactionAborted`, which the pipeline turns into a cancelled outcome with
nothing written.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from snapcompact.compaction.triggers import is_context_overflow

__all__ = ["DEFAULT_RETRY_POLICY", "AbortSignal", "CompactionAborted", "RetryPolicy",
           "TransientError", "failure_kind", "guarded_complete", "is_transient", "run_awaitable",
           "run_candidates", "with_candidates"]

T = TypeVar("T")


class CompactionAborted(Exception):
    """The compaction (or branch summary) was aborted; nothing was written."""


class TransientError(Exception):
    """A failure worth retrying; ``retry_after`` is the provider's requested wait in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class AbortSignal:
    """A thread-safe flag a running compaction checks between LLM calls."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def abort(self) -> None:
        """Ask the running compaction to stop at its next check."""
        self._event.set()

    def reset(self) -> None:
        """Clear the flag so the next compaction can run."""
        self._event.clear()

    @property
    def aborted(self) -> bool:
        """True once :meth:`abort` was called and not yet reset."""
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`CompactionAborted` if an abort was asked for."""
        if self._event.is_set():
            raise CompactionAborted("compaction aborted")


def guarded_complete(complete: Callable[..., Any] | None,
                     signal: AbortSignal) -> Callable[..., Any] | None:
    """``complete`` checking ``signal`` before and after each call (None stays None)."""
    if complete is None:
        return None

    def call(system_prompt: str, prompt: str, *, max_tokens: int) -> Any:
        signal.check()
        reply = complete(system_prompt, prompt, max_tokens=max_tokens)
        signal.check()
        return reply

    return call


_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
#: pi-ai ``auth-classify.ts:60``: a hard 401 or a 403 is a credential failure (next model).
_AUTH_STATUS = frozenset({401, 403})


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def is_transient(exc: BaseException) -> bool:
    """Rate limits, overload and server errors, timeouts and dropped connections (not overflow)."""
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    return _status(exc) in _TRANSIENT_STATUS


def _retry_after(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    return float(value) if isinstance(value, (int, float)) else None


def failure_kind(exc: BaseException) -> str:
    """How the agent's candidate loop treats a failed summary (pi-ai ``AIError`` flags, as the
    loop in session-maintenance.ts:4858-4910 reads them): ``auth`` (401/403: next model, no
    retry), ``timeout`` (next model, no retry), ``overflow`` (the input does not fit: never
    retried), ``transient`` (retried), else ``other`` (next model, no retry)."""
    status = _status(exc)
    name = type(exc).__name__
    if status in _AUTH_STATUS or "Authentication" in name or "PermissionDenied" in name:
        return "auth"
    if isinstance(exc, TimeoutError) or "Timeout" in name or status == 408:
        return "timeout"
    text = " ".join(str(exc).split())
    if "ContextWindowExceeded" in name or is_context_overflow(
            {"role": "assistant", "stopReason": "error", "errorMessage": text}):
        return "overflow"
    return "transient" if is_transient(exc) else "other"


def run_awaitable(value: Any) -> Any:
    """``value`` itself, or the result of awaiting it when it is awaitable (an async completion
    function's reply), run to completion from synchronous code (on a private loop in a thread
    when the caller is already inside a running loop)."""
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(wait())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=runner, daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


@dataclass(frozen=True)
class RetryPolicy:
    """The agent's ``retry.*`` settings as its auto-compaction loop uses them.

    Defaults: ``retry.enabled`` true, ``retry.maxRetries`` 10, ``retry.baseDelayMs`` 500
    (coding agent 18.3.4 ``session/settings.ts:666-687``); a wait over 30 s goes to the next
    candidate when there is one (``maxAcceptableDelayMs``, session-maintenance.ts:4922).
    """

    enabled: bool = True
    max_retries: int = 10
    base_delay: float = 0.5
    max_candidate_wait: float = 30.0

    def __post_init__(self) -> None:
        if type(self.enabled) is not bool:
            raise ValueError(f"retry.enabled must be true or false, got {self.enabled!r}")
        if type(self.max_retries) is not int or self.max_retries < 0:
            raise ValueError("retry.maxRetries must be a non-negative integer, got "
                             f"{self.max_retries!r}")
        for name in ("base_delay", "max_candidate_wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"retry {name} must be a non-negative number of seconds, got "
                                 f"{value!r}")


DEFAULT_RETRY_POLICY = RetryPolicy()


def run_candidates(candidates: Sequence[T], attempt: Callable[[T], Any], *,
                   policy: RetryPolicy = DEFAULT_RETRY_POLICY,
                   sleep: Callable[[float], None] = time.sleep,
                   signal: AbortSignal | None = None) -> Any:
    """``attempt(candidate)`` over the candidates in order, as the agent's auto-compaction does
    (session-maintenance.ts:4809-4961); an async attempt is awaited inside the loop, so its
    failures are retried and handed on like a sync one's.

    Per candidate: success returns; an auth failure, a timeout or a failure that is not retried
    goes to the next candidate; a transient failure (or one carrying the provider's
    ``retry_after``) is retried up to ``max_retries`` times after ``base_delay * 2**attempt``
    seconds, or the provider's wait when longer; overflow is never retried; a wait over
    ``max_candidate_wait`` goes to the next candidate when there is one. An abort raises at
    once. When every candidate failed, the last failure is raised.
    """
    if not candidates:
        raise ValueError("run_candidates needs at least one candidate")
    last: BaseException | None = None
    for index, candidate in enumerate(candidates):
        has_next = index + 1 < len(candidates)
        tries = 0
        while True:
            if signal is not None:
                signal.check()
            try:
                return run_awaitable(attempt(candidate))
            except CompactionAborted:
                raise
            except Exception as exc:
                if signal is not None and signal.aborted:
                    raise
                last = exc
                kind = failure_kind(exc)
                retry_after = _retry_after(exc)
                should_retry = (policy.enabled and tries < policy.max_retries
                                and kind != "overflow"
                                and kind not in ("auth", "timeout")
                                and (retry_after is not None or kind == "transient"))
                if not should_retry:
                    break
                delay = policy.base_delay * 2 ** tries
                if retry_after is not None:
                    delay = max(delay, retry_after)
                if delay > policy.max_candidate_wait and has_next:
                    break
                tries += 1
                sleep(delay)
    assert last is not None
    raise last


def with_candidates(candidates: Sequence[Callable[..., Any]], *, retries: int | None = None,
                    base_delay: float | None = None, max_delay: float | None = None,
                    sleep: Callable[[float], None] = time.sleep,
                    signal: AbortSignal | None = None,
                    policy: RetryPolicy = DEFAULT_RETRY_POLICY) -> Callable[..., Any]:
    """One completion function over several models (sync or async), each call run through
    :func:`run_candidates`. ``retries``/``base_delay``/``max_delay`` override the policy's
    ``max_retries``/``base_delay``/``max_candidate_wait``."""
    if not candidates:
        raise ValueError("with_candidates needs at least one completion function")
    overrides: dict[str, Any] = {}
    for key, value in (("max_retries", retries), ("base_delay", base_delay),
                       ("max_candidate_wait", max_delay)):
        if value is not None:
            overrides[key] = value
    chosen = replace(policy, **overrides) if overrides else policy

    def call(system_prompt: str, prompt: str, *, max_tokens: int) -> Any:
        return run_candidates(
            candidates, lambda complete: complete(system_prompt, prompt, max_tokens=max_tokens),
            policy=chosen, sleep=sleep, signal=signal)

    return call
