"""Greedy word wrap for the two-column ``doc-*`` shapes, counting wide glyphs as two cells.

Why separate from normalization: only document shapes wrap; grid shapes print row-major with no
wrap, so the rule is a layout input, kept beside the text it cuts.

Speed: a long history wraps into tens of thousands of lines, so the words, their cell counts and
the gaps between them are numpy arrays: one binary search over the running sum of word widths
gives, for every word, where a line it opens would end, and the greedy rule just follows those
ends; only words wider than a line, which are hard-split, take a search of their own.
"""

from __future__ import annotations

import numpy as np

from snapcompact.core import DIM_OFF, DIM_ON, check_text
from snapcompact.text.code_points import (
    WIDE,
    codepoints,
    from_codepoints,
    js_whitespace,
    shared_entries,
)

_DIM_TOGGLES = (ord(DIM_ON), ord(DIM_OFF))


def _cell_widths(cps: np.ndarray, wide_cells: bool) -> np.ndarray:
    """Cells per code point: 0 for dim toggles, 2 for wide ones (``wide_cells``), else 1."""
    widths = np.ones(cps.size, dtype=np.int32)
    if wide_cells and cps.size and cps.max() >= 0x1100:
        widths[(shared_entries()[cps] & WIDE) != 0] = 2
    widths[(cps == _DIM_TOGGLES[0]) | (cps == _DIM_TOGGLES[1])] = 0
    return widths


def _hard_split(cells_before: np.ndarray, start: int, end: int,
                cols: int) -> tuple[list[tuple[int, int]], int]:
    """Lines cut from a word wider than ``cols``: each the longest prefix within ``cols`` cells
    holding at least one visible character (zero-width toggles after it ride along).  Returns
    the lines and where the remainder (at most ``cols`` cells) starts."""
    lines = []
    while cells_before[end] - cells_before[start] > cols:
        first_visible = start + int(np.flatnonzero(np.diff(cells_before[start : end + 1]))[0])
        # Code point i stays while the cells through it fit: cells_before[i + 1] <= limit.
        limit = cells_before[start] + cols
        cut = int(np.searchsorted(cells_before, limit, side="right")) - 1
        cut = min(max(cut, first_visible + 1), end)  # the first visible one always goes
        lines.append((start, cut))
        start = cut
    return lines, start


def wrap(text: str, cols: int, wide_cells: bool = False) -> list[str]:
    """Greedy word wrap at ``cols`` cells (reference ``wrap``): a list of lines.

    Splits on JavaScript whitespace, never breaks inside a word unless the word alone is wider than
    a line (then it is hard-split after flushing the current line).  Dim toggles take no cells;
    with ``wide_cells`` wide code points take two.
    """
    check_text(text)
    if isinstance(cols, bool) or not isinstance(cols, int) or cols < 1:
        raise ValueError(f"cols must be a positive integer, got {cols!r}")
    cps = codepoints(text)
    space = js_whitespace(cps)
    # Words: maximal runs of non-whitespace, as [starts, ends) code point offsets.
    edges = np.flatnonzero(np.diff(np.concatenate(([True], space, [True])).astype(np.int8)))
    word_starts, word_ends = edges[0::2], edges[1::2]
    if word_starts.size == 0:
        return []
    widths = _cell_widths(cps, wide_cells)
    cells_before = np.zeros(cps.size + 1, dtype=np.int32)  # under 2**31: at most 2 per character
    np.cumsum(widths, out=cells_before[1:])
    del widths
    word_cells = cells_before[word_ends] - cells_before[word_starts]
    # A line from word i through word j takes run[j] - run[i - 1] - 1 cells (one space before
    # every word but the first), so a line opened by word i holds the words before ``fits[i]``.
    run = np.cumsum(word_cells + 1)
    fits = np.searchsorted(run, run - word_cells + cols, side="right")
    too_wide = word_cells > cols
    spans: list[tuple[int, int]] = []  # lines as code point spans, gaps printed as one space
    n_words = int(word_starts.size)
    k = 0
    rest: tuple[int, int] | None = None  # what is left of a hard-split word: the line's start
    while k < n_words:
        if too_wide[k]:
            if rest is not None:
                spans.append(rest)
            end = int(word_ends[k])
            cut, at = _hard_split(cells_before, int(word_starts[k]), end, cols)
            spans.extend(cut)
            rest = (at, end) if at < end else None
            k += 1
            continue
        if rest is None:
            last = int(fits[k])
            spans.append((int(word_starts[k]), int(word_ends[last - 1])))
        else:
            rest_cells = int(cells_before[rest[1]] - cells_before[rest[0]])
            last = int(np.searchsorted(run[k:], run[k - 1] + cols - rest_cells, side="right")) + k
            spans.append((rest[0], int(word_ends[last - 1])) if last > k else rest)
            rest = None
        k = last
    if rest is not None:
        spans.append(rest)
    return _line_texts(text, cps, space, spans)


def _line_texts(text: str, cps: np.ndarray, space: np.ndarray,
                spans: list[tuple[int, int]]) -> list[str]:
    """Each span's text with every whitespace gap printed as one space."""
    # A span is a plain slice when every whitespace in it is a lone " ".
    plain_space = space & (cps == 0x20)
    lone = plain_space.copy()
    lone[1:] &= ~space[:-1]
    lone[:-1] &= ~space[1:]
    odd_before = np.zeros(cps.size + 1, dtype=np.int32)
    np.cumsum(space & ~lone, out=odd_before[1:])
    bounds = np.array(spans, dtype=np.int64).reshape(-1, 2)
    clean = (odd_before[bounds[:, 1]] - odd_before[bounds[:, 0]] == 0).tolist()
    lines = []
    for (a, b), ok in zip(spans, clean):
        if ok:
            lines.append(text[a:b])
        else:
            part = cps[a:b]
            words = np.flatnonzero(np.diff(np.concatenate(([True], space[a:b], [True]))
                                           .astype(np.int8)))
            lines.append(" ".join(from_codepoints(part[s:e])
                                  for s, e in zip(words[0::2], words[1::2])))
    return lines
