"""Greedy word wrap for the two-column ``doc-*`` shapes, counting wide glyphs as two cells.

Why separate from normalization: only document shapes wrap; grid shapes print row-major with no
wrap, so the rule is a layout input, kept beside the text it cuts.
"""

from __future__ import annotations

import re

from snapcompact.core import (
    DIM_OFF,
    DIM_ON,
    JS_WHITESPACE,
    WIDE_RANGES,
    check_text,
    is_wide,
)
from snapcompact.text.unicode17 import char_class

# ---------------------------------------------------------------------------------------------
# Greedy word wrap (doc shapes)
# ---------------------------------------------------------------------------------------------

_JS_WHITESPACE_RUN = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def _cells(ch: str, wide_cells: bool) -> int:
    if ch == DIM_ON or ch == DIM_OFF:
        return 0
    return 2 if wide_cells and is_wide(ord(ch)) else 1


_WIDE_CHAR = re.compile(f"[{char_class(WIDE_RANGES)}]")


def _cell_length(text: str, wide_cells: bool) -> int:
    """Cells ``text`` takes: as ``sum(_cells(ch))``, counted by C string scans."""
    cells = len(text) - text.count(DIM_ON) - text.count(DIM_OFF)
    if wide_cells and not text.isascii():
        cells += len(_WIDE_CHAR.findall(text))
    return cells


def _fitting_prefix(word: str, width: int, wide_cells: bool) -> str:
    """Longest prefix of ``word`` within ``width`` cells, holding at least one visible char."""
    cells = 0
    placed = False
    for i, ch in enumerate(word):
        w = _cells(ch, wide_cells)
        if placed and cells + w > width:
            return word[:i]
        cells += w
        if w:
            placed = True
    return word


def wrap(text: str, cols: int, wide_cells: bool = False) -> list[str]:
    """Greedy word wrap at ``cols`` cells (reference ``wrap``): a list of lines.

    Splits on JavaScript whitespace, never breaks inside a word unless the word alone is wider than
    a line (then it is hard-split after flushing the current line).  Dim toggles take no cells;
    with ``wide_cells`` wide code points take two.
    """
    check_text(text)
    if isinstance(cols, bool) or not isinstance(cols, int) or cols < 1:
        raise ValueError(f"cols must be a positive integer, got {cols!r}")
    lines: list[str] = []
    cur = ""
    cur_cells = 0
    for word in _JS_WHITESPACE_RUN.split(text):
        if not word:
            continue
        word_cells = _cell_length(word, wide_cells)
        while word_cells > cols:
            if cur:
                lines.append(cur)
                cur, cur_cells = "", 0
            head = _fitting_prefix(word, cols, wide_cells)
            lines.append(head)
            word = word[len(head) :]
            word_cells = _cell_length(word, wide_cells)
        if not cur:
            cur, cur_cells = word, word_cells
        elif cur_cells + 1 + word_cells <= cols:
            cur += " " + word
            cur_cells += 1 + word_cells
        else:
            lines.append(cur)
            cur, cur_cells = word, word_cells
    if cur:
        lines.append(cur)
    return lines
