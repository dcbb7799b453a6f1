"""What normalization does with one code point, decided from its Unicode properties.

Why a module of its own: these rules are slow to evaluate (``unicodedata`` lookups, an NFKD fold
per candidate) and the same for every text, so they are evaluated once for the whole code space
by ``scripts/make_code_point_table.py`` and shipped as ``code_point_table.json``; at run time
:mod:`snapcompact.text.code_points` reads that table and normalization is array lookups.  This
module is the source of truth the table is generated from, and the check test
(``tests/text/test_code_point_table.py``) regenerates the table from it.

The rules (digest §d, step 4): printable ASCII and Latin-1 print themselves; the dim toggles
and the newline glyph print themselves but count as nothing; status emoji, typographic
punctuation and box drawing fold to ASCII; characters with a compatibility decomposition fold
by NFKD with the marks removed; other pictographs, controls, marks and surrogates are dropped;
the rest prints itself when the font (or Silver) draws it, else ``?``.  The entry's values are
defined in :mod:`snapcompact.text.code_points`, which normalization imports without this module.
"""

from __future__ import annotations

import unicodedata

from snapcompact.core import DIM_OFF, DIM_ON, JS_WHITESPACE, NEWLINE_GLYPH, is_wide
from snapcompact.text.code_points import (
    CANDIDATE,
    DROP,
    FOLD,
    IN_RUN,
    KEEP,
    LINE_BREAK,
    MARKER,
    REAL_SPACE,
    UNRENDERABLE,
    WIDE,
)
from snapcompact.text.folds import CHAR_FOLD, EMOJI_FOLD
from snapcompact.text.unicode17 import (
    FOLD_NEWER,
    FORMAT_RANGES,
    MARK_ADDED,
    PICTOGRAPHIC,
    UNRENDERABLE_ADDED,
    UNRENDERABLE_FORMER,
    fold_to_ascii,
    is_unrenderable,
)

__all__ = ["code_point_entry"]

_MARKERS = frozenset(map(ord, (DIM_ON, DIM_OFF, NEWLINE_GLYPH)))
_WHITESPACE = frozenset(map(ord, JS_WHITESPACE))
_FORMAT = frozenset(cp for lo, hi in FORMAT_RANGES for cp in range(lo, hi + 1))
_LINE_BREAKS = frozenset(map(ord, "\n\r\u2028\u2029"))


def _printable_latin1(cp: int) -> bool:
    return 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF


def _kind(cp: int) -> tuple[int, str | None]:
    """(kind, fold) of one code point; ``fold`` is set for ``FOLD`` only."""
    if _printable_latin1(cp):
        return KEEP, None
    ch = chr(cp)
    if cp in _MARKERS:
        return MARKER, None
    if ch in EMOJI_FOLD:
        return FOLD, EMOJI_FOLD[ch]
    if ch in CHAR_FOLD:
        return FOLD, CHAR_FOLD[ch]
    if 0x2500 <= cp <= 0x257F:
        return FOLD, ("|" if cp in (0x2502, 0x2503) else "-" if cp in (0x2500, 0x2501) else "+")
    category = unicodedata.category(ch)
    # Most code points have no decomposition and are no mark, so they cannot fold.
    if category[0] == "M" or cp in MARK_ADDED or cp in FOLD_NEWER or unicodedata.decomposition(ch):
        folded = fold_to_ascii(ch)
        if folded is not None:
            return FOLD, folded
    if cp in PICTOGRAPHIC:
        return DROP, None
    if cp in UNRENDERABLE_FORMER:
        return CANDIDATE, None
    if category in ("Cc", "Mn", "Me", "Cs") or cp in UNRENDERABLE_ADDED:
        return DROP, None
    return CANDIDATE, None


def code_point_entry(cp: int) -> tuple[int, str | None]:
    """The table entry of ``cp`` (kind | property bits) and its fold (``FOLD`` kinds only)."""
    kind, fold = _kind(cp)
    entry = kind
    if not _printable_latin1(cp) and cp not in _MARKERS and is_unrenderable(cp):
        entry |= UNRENDERABLE
    if is_wide(cp):
        entry |= WIDE
    if cp in _WHITESPACE or cp in _FORMAT:
        entry |= IN_RUN
        if cp in _LINE_BREAKS:
            entry |= LINE_BREAK
        if cp not in _FORMAT:
            entry |= REAL_SPACE
    return entry, fold
