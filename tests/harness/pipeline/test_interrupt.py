"""Ctrl-C while requests are in flight stops at once (issue 35): the interrupt is reported
before anything is waited for, and no reader thread still busy with a frame holds the exit."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from evals.pipeline.run_loop import INTERRUPTED, run_interruptibly

SLOW = 5.0  # seconds a reader thread stays busy (an OCR read of a large frame)


async def _requests_in_flight(recorded: list[int]) -> None:
    """Eight slow reads in threads, as the offline reader runs them; one finishes quickly and
    is recorded; Ctrl-C arrives while the rest are busy."""
    busy = threading.Event()

    def read(k: int) -> int:
        if k:
            busy.set()
            time.sleep(SLOW)
        return k

    async def one(k: int) -> None:
        recorded.append(await asyncio.to_thread(read, k))

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    asyncio.get_running_loop().call_later(0.3, ctrl_c)
    await asyncio.gather(*(one(k) for k in range(8)))


def test_ctrl_c_says_so_at_once_and_does_not_wait_for_busy_threads() -> None:
    said: list[tuple[float, str]] = []
    recorded: list[int] = []
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_interruptibly(_requests_in_flight(recorded),
                          log=lambda text: said.append((time.perf_counter() - started, text)))
    elapsed = time.perf_counter() - started
    assert said and said[0][1] == INTERRUPTED
    assert said[0][0] < 1.0, f"the interrupt was reported after {said[0][0]:.1f} s"
    assert elapsed < 1.5, f"Ctrl-C took {elapsed:.1f} s (threads busy for {SLOW} s were awaited)"
    assert recorded == [0]  # what finished before the interrupt is kept


def test_without_an_interrupt_it_returns_the_result() -> None:
    async def answer() -> int:
        return await asyncio.to_thread(lambda: 42)

    assert run_interruptibly(answer(), log=lambda text: None) == 42
