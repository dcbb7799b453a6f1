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

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["AbortSignal", "CompactionAborted", "TransientError", "guarded_complete", "is_transient",
           "with_candidates"]


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


def is_transient(exc: BaseException) -> bool:
    """Rate limits, overload and server errors, timeouts and dropped connections (not overflow)."""
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    return isinstance(status, int) and status in _TRANSIENT_STATUS


def _retry_after(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    return float(value) if isinstance(value, (int, float)) else None


def with_candidates(candidates: Sequence[Callable[..., Any]], *, retries: int = 2,
                    base_delay: float = 1.0,
                    max_delay: float = 30.0, sleep: Callable[[float], None] = time.sleep,
                    signal: AbortSignal | None = None) -> Callable[..., Any]:
    """One completion function over several models: retry transient failures, then move on.

    Each candidate gets up to ``retries`` retries after a transient failure, waiting
    ``base_delay * 2**attempt`` (or the provider's ``retry_after``); a wait longer than
    ``max_delay`` goes to the next candidate instead, when there is one. A non-transient failure
    is raised at once; when every candidate failed, the last failure is raised.
    """
    if not candidates:
        raise ValueError("with_candidates needs at least one completion function")

    def call(system_prompt: str, prompt: str, *, max_tokens: int) -> Any:
        last: BaseException | None = None
        for index, complete in enumerate(candidates):
            has_next = index + 1 < len(candidates)
            for attempt in range(retries + 1):
                if signal is not None:
                    signal.check()
                try:
                    return complete(system_prompt, prompt, max_tokens=max_tokens)
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    last = exc
                    delay = _retry_after(exc)
                    delay = base_delay * 2 ** attempt if delay is None else delay
                    if attempt == retries or (delay > max_delay and has_next):
                        break
                    sleep(min(delay, max_delay))
        assert last is not None
        raise last

    return call
