"""Grid layout: the vectorized placement and pagination follow the rule as written, glyph by glyph.

The rule (reference renderer): dim toggles take no cell, a wide glyph takes two and is pushed to
the next row (a one-cell pad) when it would start in the last column, and a page ends before the
first glyph that would overflow it.  The walk below is that rule, written out independently.
"""

from __future__ import annotations

import random
from itertools import pairwise

import numpy as np
import pytest

from snapcompact.core import DIM_OFF, DIM_ON, NEWLINE_GLYPH, WIDE_RANGES, is_wide
from snapcompact.render import layout


def _walk(text: str, cols: int, capacity: int) -> tuple[list[int], list[int]]:
    """Start cell of every code point on an unbounded grid, and each page's first index."""
    starts, breaks = [], []
    cell = page_cell = 0
    placed = False
    for i, ch in enumerate(text):
        w = 0 if ch in (DIM_ON, DIM_OFF) else 2 if is_wide(ord(ch)) else 1
        at = cell
        if w == 2 and cols >= 2 and at % cols == cols - 1:
            at += 1
        starts.append(at)
        cell = at + w
        if w:
            page_at = page_cell
            if w == 2 and cols >= 2 and page_at % cols == cols - 1:
                page_at += 1
            if placed and page_at + w > capacity:
                breaks.append(i)
                page_at = 0
            page_cell = page_at + w
            placed = True
    return starts, breaks


ALPHABET = ["a", "b", " ", ".", NEWLINE_GLYPH, DIM_ON, DIM_OFF, "é", "中", "한", "Ａ", "の", "😀"]


@pytest.mark.parametrize("seed", range(40))
def test_placement_and_pages_follow_the_rule(seed: int) -> None:
    rnd = random.Random(seed)
    text = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(1, 400)))
    cols = rnd.randint(1, 12)
    capacity = cols * rnd.randint(1, 6) + (rnd.randint(1, cols) if seed % 5 == 0 else 0)
    starts, breaks = _walk(text, cols, capacity)
    widths = layout.cell_widths(layout.codepoints(text), True)
    assert layout.cell_starts(widths, cols).tolist() == starts
    pages = layout.paginate_cells(text, capacity, cols, True)
    bounds = [0, *breaks, len(text)]
    expected = [text[a:b] for a, b in pairwise(bounds)]
    if not any(w for w in widths.tolist()):
        expected = []
    assert pages == expected


def test_wide_mask_matches_is_wide_at_every_range_edge_and_a_sample() -> None:
    edges = [cp + d for lo, hi in WIDE_RANGES for cp in (lo, hi) for d in (-1, 0, 1)]
    sample = np.random.default_rng(0).integers(0, 0x110000, size=50_000).tolist()
    cps = np.array(sorted(set(edges + sample + [0, 0x10FFFF])), dtype=np.uint32)
    expected = np.fromiter((is_wide(int(c)) for c in cps), dtype=bool, count=cps.size)
    assert np.array_equal(layout.wide_mask(cps), expected)
