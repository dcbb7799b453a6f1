"""parallel_map: forked and threaded workers give exactly the serial results, in order."""

from __future__ import annotations

import os
import threading

import pytest

from snapcompact.core import get_shape
from snapcompact.render import pages, parallel, render_pages


def _square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_forked_workers_share_the_items_and_keep_their_order() -> None:
    items = list(range(23))
    out = parallel.parallel_map(_square_with_pid, items, workers=3)
    assert [v for v, _ in out] == [x * x for x in items]
    pids = {pid for _, pid in out}
    if parallel.can_fork():
        assert len(pids) == 3 and os.getpid() in pids  # the parent renders its share too
        assert {pid for (_, pid), i in zip(out, items) if i % 3 == 0} == {os.getpid()}


def test_a_failing_child_share_is_redone_by_the_parent() -> None:
    parent = os.getpid()

    def fn(x: int) -> int:
        if os.getpid() != parent and x == 5:
            os._exit(7)  # a worker dies mid-share
        return x + 1

    assert parallel.parallel_map(fn, list(range(12)), workers=2) == list(range(1, 13))


def test_an_exception_surfaces_as_in_a_serial_run() -> None:
    def fn(x: int) -> int:
        if x == 9:
            raise ValueError("item 9 is bad")
        return x

    with pytest.raises(ValueError, match="item 9 is bad"):
        parallel.parallel_map(fn, list(range(12)), workers=2)


def test_a_multithreaded_host_gets_threads_not_forks() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not parallel.can_fork()
        out = parallel.parallel_map(_square_with_pid, list(range(10)), workers=2)
    finally:
        stop.set()
        other.join()
    assert [v for v, _ in out] == [x * x for x in range(10)]
    assert {pid for _, pid in out} == {os.getpid()}


@pytest.mark.parametrize("variant", ["8x8r-sent", "6x6u-bw", "silver16-bw", "doc-8on16-sent-dim"])
def test_parallel_frames_are_the_serial_frames(variant: str) -> None:
    shape = get_shape(variant, 320)
    text = ("Sentence one. Zweiter Satz! 第三句。 Ünïcödé ☃ 🙂 def f(x):\n    return x\n" * 200)
    page_texts = pages(text, shape)
    assert len(page_texts) >= parallel.FORK_MIN_ITEMS
    serial = render_pages(page_texts, shape, workers=1)
    assert [f.png for f in render_pages(page_texts, shape, workers=2)] == [f.png for f in serial]
