"""A requests-per-second limit per provider (the client's ``rate_limits``).

Why a module: some providers cap requests per second independently of concurrency and of the
input tokens per minute (:mod:`evals.send.token_rate`); this is the in-process bucket for it.
"""

from __future__ import annotations

import asyncio
import time


class RequestRateLimiter:
    """Requests-per-second limit (GCRA token bucket): bursts up to ``burst``, then ``rate``/s.

    No lock: the bookkeeping between awaits runs atomically on the event loop.
    """

    def __init__(self, rate_per_s: float, burst: int = 1) -> None:
        if not rate_per_s > 0:
            raise ValueError(f"rate limit must be > 0 requests/s, got {rate_per_s!r}")
        self.interval = 1.0 / rate_per_s
        self.tolerance = (max(1, burst) - 1) * self.interval
        self._next = time.monotonic()

    async def acquire(self) -> None:
        now = time.monotonic()
        start = max(self._next, now - self.tolerance)
        self._next = start + self.interval
        wait = start - now
        if wait > 0:
            await asyncio.sleep(wait)
