"""Pages in parallel on every core: forked workers when that is safe, else a thread pool.

Why processes: drawing a page is numpy work interleaved with Python (Silver fallback glyphs,
sprite lookups, palette bookkeeping), so threads share one interpreter lock and a second core
stays mostly idle.  A forked child starts with the parent's memory (imports, font atlases,
glyph caches already built), renders its share of the items and sends the results back through
a pipe; the parent renders its own share meanwhile.

Forking is only safe when the parent runs no other thread (a lock held by another thread would
stay locked in the child forever), so a multithreaded host (an eval harness, a server) gets the
thread pool instead.  A child that fails or dies is not trusted: the parent redoes its items
itself, so the results and any exception are exactly those of a serial run.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

#: Fewer items than this are not worth a fork (a few milliseconds each).
FORK_MIN_ITEMS = 4
#: At most this many workers (parent included), whatever the core count.
MAX_WORKERS = 4


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers() -> int:
    """Page workers to fork: the usable cores, capped at ``MAX_WORKERS``."""
    return max(1, min(MAX_WORKERS, available_cores()))


def can_fork() -> bool:
    """True when forking is safe here: a POSIX fork and no other Python thread running."""
    return hasattr(os, "fork") and threading.active_count() == 1


def parallel_map(
    fn: Callable[[Item], Result], items: Sequence[Item], workers: int | None = None
) -> list[Result]:
    """``[fn(item) for item in items]``, spread over ``workers`` (default: the usable cores).

    Item ``i`` goes to worker ``i % workers`` so that long and short items mix.  Results come
    back in item order.  ``fn``'s results must pickle when the workers are processes.
    """
    n_workers = default_workers() if workers is None else max(1, workers)
    n_workers = min(n_workers, len(items))
    if n_workers <= 1:
        return [fn(item) for item in items]
    if len(items) >= FORK_MIN_ITEMS and can_fork():
        return _forked_map(fn, items, n_workers)
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        return list(pool.map(fn, items))


def _forked_map(fn: Callable[[Item], Result], items: Sequence[Item],
                n_workers: int) -> list[Result]:
    results: list[Result | None] = [None] * len(items)
    children: list[tuple[int, int, range]] = []  # (pid, read fd, item indices)
    try:
        for worker in range(1, n_workers):
            share = range(worker, len(items), n_workers)
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # child: never returns
                os.close(read_fd)
                _child(fn, items, share, write_fd)
            os.close(write_fd)
            children.append((pid, read_fd, share))
        for i in range(0, len(items), n_workers):
            results[i] = fn(items[i])
        for pid, read_fd, share in children:
            payload = _read_all(read_fd)
            os.close(read_fd)
            _, status = os.waitpid(pid, 0)
            done = _decode(payload) if status == 0 else None
            if done is None or len(done) != len(share):
                done = [fn(items[i]) for i in share]  # the child failed: redo its share here
            for i, result in zip(share, done):
                results[i] = result
        children.clear()
    finally:
        for pid, read_fd, _ in children:  # interrupted: do not leave workers behind
            try:
                os.close(read_fd)
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
    return results  # type: ignore[return-value]


def _child(fn: Callable, items: Sequence, share: range, write_fd: int) -> None:
    status = 1
    try:
        payload = pickle.dumps([fn(items[i]) for i in share], protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view) :]
        status = 0
    except BaseException:  # noqa: BLE001 - any failure: the parent redoes this share
        status = 1
    finally:
        os._exit(status)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _decode(payload: bytes) -> list | None:
    try:
        return pickle.loads(payload)  # written by our own forked child
    except Exception:  # noqa: BLE001 - a truncated payload means the child died
        return None
