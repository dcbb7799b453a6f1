"""Input tokens per minute: the limit providers hit first, shared by every process of a sweep.

Why: providers limit input tokens per minute (Anthropic's ITPM, OpenAI's and Gemini's TPM)
before requests per minute, and an image question is token-heavy (a 100k-token context is a
tenth of a request limit's worth of requests but several minutes of a 30k ITPM). Sending on
request counts alone earns a stream of 429s, each retried after a backoff. This limiter spaces
requests by their *predicted* input tokens (``Request.predicted_prompt_tokens``: the library's
own bill of the request, computed before sending), so the provider's bucket is never overrun.

The algorithm is GCRA over tokens (the "virtual scheduling" form of a token bucket): one number,
the theoretical arrival time ``tat``, advances by ``tokens * 60 / tokens_per_minute`` seconds per
request; a request may go when ``tat`` minus one minute is not in the future. So an idle
limiter lets one minute's worth of tokens through at once (as the providers' buckets do), then
the steady rate. A request is never refused: a request over the minute's budget, or one that
finds the budget spent, waits until the tokens are back (a request larger than a whole minute
waits for the excess). The slot is reserved before the wait, so waiters go in arrival order.
After the answer, ``settle`` moves ``tat`` by the difference between the provider's reported
prompt tokens and the prediction, so a prediction that was short is paid back; an attempt
that failed (a 429, a dropped connection) gives its tokens back, so retries do not pile up.

Shared state: with a ``state_file`` the one number lives in that file, read and written under an
exclusive ``flock`` (the same mechanism as the run-folder lock and the cache's claims), so every
job of a joblib or submitit sweep on this machine, and every client in one process, draws on one
budget. The times are wall-clock (``time.time``), comparable across processes; on a cluster the
file must sit on storage whose locks work across nodes (NFSv4, Lustre) and the clocks must be
synchronized. Without a state file the number lives in this object (one process).
"""

from __future__ import annotations

import asyncio
import fcntl
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

__all__ = ["TokenRateLimiter", "state_file_for"]

WINDOW_S = 60.0  # the providers state their token limits per minute


def state_file_for(limits_dir: str | os.PathLike[str], model: str) -> Path:
    """The shared state file of ``model``'s limit in ``limits_dir`` (one file name per model id;
    providers limit tokens per model or model class)."""
    return Path(limits_dir) / f"{quote(model, safe='')}.tpm"


class TokenRateLimiter:
    """Waits until ``tokens`` more input tokens fit in ``tokens_per_minute``; see the module."""

    def __init__(self, tokens_per_minute: float, *,
                 state_file: str | os.PathLike[str] | None = None,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        if isinstance(tokens_per_minute, bool) or not isinstance(tokens_per_minute, (int, float)) \
                or not math.isfinite(tokens_per_minute) or tokens_per_minute <= 0:
            raise ValueError(f"tokens_per_minute must be a number > 0, got {tokens_per_minute!r}")
        self.tokens_per_minute = float(tokens_per_minute)
        self.seconds_per_token = WINDOW_S / self.tokens_per_minute
        self.state_file = Path(state_file) if state_file is not None else None
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()  # flock does not exclude threads sharing one descriptor
        self._tat: float | None = None  # the in-process state (no state file)
        self._fd: int | None = None
        if self.state_file is not None:
            try:
                self.state_file.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.state_file, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise ValueError(f"token limit state {self.state_file} cannot be used: "
                                 f"{exc.strerror or exc}") from None

    # -- the one number, in memory or in the shared file ----------------------------------
    def _update(self, change: Callable[[float | None], float]) -> float:
        """Apply ``change`` to ``tat`` atomically (across threads and processes); new ``tat``."""
        with self._lock:
            if self._fd is None:
                self._tat = change(self._tat)
                return self._tat
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                raw = os.pread(self._fd, 64, 0).decode("ascii", "replace").strip()
                try:
                    current: float | None = float(raw) if raw else None
                except ValueError:
                    current = None  # a torn or foreign file: start afresh (never blocks forever)
                if current is not None and not math.isfinite(current):
                    current = None
                new = change(current)
                data = repr(new).encode("ascii")
                os.pwrite(self._fd, data.ljust(32), 0)
                return new
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    # -- use ------------------------------------------------------------------------------
    def reserve(self, tokens: int) -> float:
        """Reserve ``tokens`` now; the seconds to wait before sending (0 if none)."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f"tokens must be an int >= 0, got {tokens!r}")
        if tokens == 0:
            return 0.0
        now = self._clock()
        cost = tokens * self.seconds_per_token
        tat = self._update(lambda old: max(old if old is not None else now, now) + cost)
        return max(0.0, tat - WINDOW_S - now)

    async def acquire(self, tokens: int) -> float:
        """Wait until ``tokens`` input tokens may be sent; the seconds waited."""
        wait = self.reserve(tokens)
        if wait > 0:
            await self._sleep(wait)
        return wait

    def settle(self, predicted_tokens: int, reported_tokens: int | None) -> None:
        """Correct the reservation by what the provider reported (nothing if it did not)."""
        if reported_tokens is None or isinstance(reported_tokens, bool) \
                or not isinstance(reported_tokens, int) or reported_tokens == predicted_tokens:
            return
        delta = (reported_tokens - predicted_tokens) * self.seconds_per_token
        self._update(lambda old: (old if old is not None else self._clock()) + delta)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __repr__(self) -> str:
        where = self.state_file if self.state_file is not None else "this process"
        return f"TokenRateLimiter({self.tokens_per_minute:,.0f} tokens/min, {where})"
