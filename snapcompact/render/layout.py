"""Where every character of a page lands: pagination and cell placement.

The reference splits normalized text into pages in TypeScript and places cells again in its
native renderer; both follow one rule set, reproduced here once: dim toggles take no cell, a wide
glyph (CJK, Hangul, fullwidth) takes two cells in bitmap shapes and is pushed to the next row
with a one-cell pad when it would start in the last column, and a page ends when the next glyph
would overflow it.  Grid mode has no word wrap.  Doc shapes word-wrap into two columns instead.

Layout is numpy over whole arrays; wide glyphs add one binary search per grid row (where a
straddle pad may go), never a walk over characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np

from snapcompact.core import DIM_OFF, DIM_ON, WIDE_RANGES

_DIM_ON = ord(DIM_ON)
_DIM_OFF = ord(DIM_OFF)


def codepoints(text: str) -> np.ndarray:
    """The code points of ``text`` as a uint32 array (lone surrogates kept as their values)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


@lru_cache(maxsize=1)
def _wide_table() -> np.ndarray:
    """``table[cp]`` is True for a wide code point; the last entry (past every range) is False."""
    table = np.zeros(WIDE_RANGES[-1][1] + 2, dtype=bool)
    for lo, hi in WIDE_RANGES:
        table[lo : hi + 1] = True
    return table


def wide_mask(cps: np.ndarray) -> np.ndarray:
    """True where a code point takes two cells in a bitmap shape (one table lookup each)."""
    if not cps.size or cps.max() < WIDE_RANGES[0][0]:
        return np.zeros(cps.shape, dtype=bool)
    return _wide_table().take(cps, mode="clip")


def cell_widths(cps: np.ndarray, wide_cells: bool) -> np.ndarray:
    """Cells each code point occupies: 0 for dim toggles, 2 for wide glyphs, else 1."""
    widths = np.ones(cps.shape, dtype=np.int64)
    if wide_cells:
        widths[wide_mask(cps)] = 2
    widths[(cps == _DIM_ON) | (cps == _DIM_OFF)] = 0
    return widths


def _place_slow(widths: np.ndarray, cols: int) -> np.ndarray:
    """Start cell of every code point, one at a time (the rule as written; kept for checks)."""
    starts = np.empty(widths.shape, dtype=np.int64)
    cell = 0
    for i, w in enumerate(widths.tolist()):
        at = cell
        if w == 2 and cols >= 2 and at % cols == cols - 1:
            at += 1
        starts[i] = at
        cell = at + w
    return starts


def cell_starts(widths: np.ndarray, cols: int) -> np.ndarray:
    """Start cell of every code point on an unbounded grid ``cols`` wide.

    Without straddle pads a glyph starts at the sum of the widths before it.  A pad (one cell)
    goes before a wide glyph that would start in the last column and shifts everything after
    it by one.  Between two pads the shift is constant, so the next pad is the first later wide
    glyph whose unpadded start is ``cols - 1 - shift`` modulo ``cols``: one binary search in
    the wide glyphs grouped by that residue, per pad.
    """
    if widths.size == 0:
        return widths.astype(np.int64)
    before = np.cumsum(widths) - widths
    wide = np.flatnonzero(widths == 2)
    if cols < 2 or wide.size == 0:
        return before
    residue = before[wide] % cols
    by_residue = wide[np.argsort(residue, kind="stable")]
    group_end = np.cumsum(np.bincount(residue, minlength=cols))
    pads = np.zeros(widths.size + 1, dtype=np.int64)
    shift = 0
    next_index = 0
    while True:
        r = (cols - 1 - shift) % cols
        group = by_residue[(group_end[r - 1] if r else 0) : group_end[r]]
        k = int(group.searchsorted(next_index))
        if k == group.size:
            break
        pad_at = int(group[k])
        pads[pad_at] = 1
        shift += 1
        next_index = pad_at + 1
    return before + np.cumsum(pads[:-1])


def paginate_cells(text: str, capacity: int, cols: int, wide_cells: bool) -> list[str]:
    """Split normalized text into contiguous pages of at most ``capacity`` cells.

    A page ends before the first glyph that would overflow it.  When ``capacity`` is whole rows
    (every grid shape), pages cut the unbounded grid at multiples of ``capacity``: a wide glyph
    that would straddle a page end starts in the last column, so it was already pushed onto the
    next row, which is the next page.
    """
    if capacity < 1 or cols < 1:
        raise ValueError(f"a page needs at least one cell (capacity {capacity}, cols {cols})")
    cps = codepoints(text)
    widths = cell_widths(cps, wide_cells)
    glyph_idx = np.flatnonzero(widths)
    if glyph_idx.size == 0:
        return []
    if not (widths == 2).any():
        # Page k starts at the glyph whose ordinal is k * capacity.
        breaks = glyph_idx[capacity::capacity].tolist()
    elif capacity % cols == 0 and cols >= 2:
        page = cell_starts(widths, cols)[glyph_idx] // capacity
        breaks = glyph_idx[1:][page[1:] != page[:-1]].tolist()
    else:
        breaks = _page_breaks_slow(glyph_idx, widths, capacity, cols)
    bounds = [0, *breaks, len(cps)]
    if len(bounds) == 2:
        return [text]
    # Slice by code point: index through a list only when the text is not pure BMP/ASCII-safe.
    if len(text) == len(cps):
        return [text[a:b] for a, b in pairwise(bounds)]
    chars = list(text)
    return ["".join(chars[a:b]) for a, b in pairwise(bounds)]


def _page_breaks_slow(glyph_idx: np.ndarray, widths: np.ndarray, capacity: int,
                      cols: int) -> list[int]:
    """Index of each page's first code point, walking glyph by glyph (any capacity)."""
    breaks = []
    cell = 0
    has_cell = False
    for i in glyph_idx.tolist():
        w = int(widths[i])
        at = cell
        if w == 2 and cols >= 2 and at % cols == cols - 1:
            at += 1
        if has_cell and at + w > capacity:
            breaks.append(i)
            at = 0
        cell = at + w
        has_cell = True
    return breaks


@dataclass(frozen=True)
class GridPlacement:
    """Glyphs of one grid page: code point, start cell and ink-relevant flags per glyph."""

    cps: np.ndarray
    cells: np.ndarray
    widths: np.ndarray
    dim: np.ndarray
    sentence: np.ndarray
    cells_used: int


def sentence_and_dim(cps: np.ndarray, breakers: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Sentence ordinal and dim state of each code point of one page.

    The sentence advances after '.', '!' or '?' directly followed by one of ``breakers``
    (space and the newline glyph; doc pages add '\\n'); the terminator keeps the old hue.
    Dim is on between DIM_ON and the next DIM_OFF.
    """
    n = cps.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    term = (cps == 0x2E) | (cps == 0x21) | (cps == 0x3F)
    nxt = np.zeros(n, dtype=bool)
    for b in breakers:
        nxt[:-1] |= cps[1:] == b
    advance = term & nxt
    sentence = np.zeros(n, dtype=np.int64)
    np.cumsum(advance[:-1], out=sentence[1:])
    toggles = (cps == _DIM_ON) | (cps == _DIM_OFF)
    if toggles.any():
        last = np.where(toggles, np.arange(n), -1)
        np.maximum.accumulate(last, out=last)
        dim = np.zeros(n, dtype=bool)
        seen = last >= 0
        dim[seen] = cps[last[seen]] == _DIM_ON
    else:
        dim = np.zeros(n, dtype=bool)
    return sentence, dim


def place_grid(text: str, cols: int, capacity: int, wide_cells: bool) -> GridPlacement:
    """Place one page's glyphs on the grid; glyphs beyond ``capacity`` cells are dropped."""
    cps = codepoints(text)
    sentence, dim = sentence_and_dim(cps, (0x20, 0x2588))
    widths = cell_widths(cps, wide_cells)
    starts = cell_starts(widths, cols)
    keep = (widths > 0) & (starts + widths <= capacity)
    if widths.size and not keep.all():
        # The reference stops at the first glyph that does not fit.
        over = np.flatnonzero((widths > 0) & ~keep)
        if over.size:
            keep[over[0]:] = False
    cells = starts[keep]
    used = int((cells + widths[keep]).max()) if cells.size else 0
    return GridPlacement(cps[keep], cells, widths[keep], dim[keep], sentence[keep], used)


def rendered_chars_grid(text: str, cols: int, capacity: int, wide_cells: bool) -> int:
    """How many characters of one page's ``text`` land on the grid (the rest is dropped)."""
    return int(place_grid(text, cols, capacity, wide_cells).cps.size)


def doc_pages(lines: list[str], rows: int) -> list[str]:
    """Pages of ``2 * rows`` wrapped lines, newline-joined (left column, then right)."""
    per_page = 2 * rows
    return ["\n".join(lines[i : i + per_page]) for i in range(0, len(lines), per_page)]


def reopen_dim_spans(pages: list[str]) -> list[str]:
    """Re-open on the next page a dim span that a page boundary cut through (doc path)."""
    out = []
    open_span = False
    for page in pages:
        text = DIM_ON + page if open_span else page
        open_span = text.rfind(DIM_ON) > text.rfind(DIM_OFF)
        out.append(text)
    return out
