"""Stopword dimming: function words printed in grey so the content words stand out.

Why: the ``-dim`` shapes spend no cells on it (the toggles are zero-width) and a reader restores
function words from context; the word list is the research's, the toggles the reference's.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from snapcompact.core import DIM_OFF, DIM_ON, check_text
from snapcompact.text.code_points import codepoints, from_codepoints

# ---------------------------------------------------------------------------------------------
# Stopword dimming
# ---------------------------------------------------------------------------------------------

#: High-frequency function words a reader restores from context (the research ``_STOPWORDS``).
STOPWORDS: frozenset[str] = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "at",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "by",
        "for",
        "with",
        "that",
        "this",
        "it",
        "its",
        "from",
        "had",
        "has",
        "have",
        "not",
        "but",
        "he",
        "she",
        "his",
        "her",
        "they",
        "their",
        "them",
        "which",
        "also",
        "who",
        "whom",
        "when",
        "where",
        "while",
        "will",
        "would",
        "could",
        "should",
        "there",
        "then",
        "than",
        "into",
        "over",
        "under",
        "about",
        "after",
        "before",
        "between",
        "during",
        "each",
        "such",
        "these",
        "those",
        "some",
        "most",
        "more",
        "other",
        "only",
        "same",
        "so",
    ]
)

#: Longest stopword: longer letter runs are never dimmed.
_MAX_STOPWORD = max(map(len, STOPWORDS))
_DIM_ON, _DIM_OFF = ord(DIM_ON), ord(DIM_OFF)


def _word_key(word: str) -> int:
    """A lowercase ASCII word of at most 8 letters as one integer, a byte per letter."""
    return int.from_bytes(word.lower().encode("ascii"), "little")


_STOPWORD_KEYS = np.array(sorted(map(_word_key, STOPWORDS)), dtype=np.uint64)


@cache
def _letters() -> np.ndarray:
    """``table[min(cp, 256)]``: 1 for an ASCII letter, 2 for a Latin-1 letter, else 0."""
    table = np.zeros(257, dtype=np.uint8)
    for lo, hi, kind in ((0x41, 0x5A, 1), (0x61, 0x7A, 1), (0xC0, 0xD6, 2), (0xD8, 0xF6, 2),
                         (0xF8, 0xFF, 2)):
        table[lo : hi + 1] = kind
    return table


def dim_stopwords(text: str) -> str:
    """Wrap stopwords outside existing dim spans in DIM_ON/DIM_OFF (reference ``dimStopwords``).

    Only zero-width markers are added; text inside a dim span (even an unterminated one) is left
    alone so the enclosing span is not cut short.  A word is a maximal run of ASCII and Latin-1
    letters; it is a stopword when its lowercase form is in ``STOPWORDS`` (all ASCII, so a run
    holding a Latin-1 letter never is).
    """
    check_text(text)
    cps = codepoints(text)
    if cps.size == 0:
        return text
    letter = _letters().take(cps, mode="clip")  # code points past Latin-1 land on entry 256
    edges = np.flatnonzero(np.diff(np.concatenate(([0], letter > 0, [0])).astype(np.int8)))
    starts, ends = edges[0::2], edges[1::2]
    short = (ends - starts) <= _MAX_STOPWORD
    starts, ends = starts[short], ends[short]
    if starts.size == 0:
        return text
    # Runs with a Latin-1 letter cannot be stopwords.
    latin1_before = np.concatenate(([0], np.cumsum(letter == 2)))
    ascii_only = latin1_before[ends] == latin1_before[starts]
    starts, ends = starts[ascii_only], ends[ascii_only]
    lower = (cps | 0x20).astype(np.uint64)
    keys = np.zeros(starts.size, dtype=np.uint64)
    for i in range(_MAX_STOPWORD):
        has = ends - starts > i
        keys[has] |= lower[starts[has] + i] << np.uint64(8 * i)
    stop = np.isin(keys, _STOPWORD_KEYS)
    if not stop.any():
        return text
    starts, ends = starts[stop], ends[stop]
    toggles = np.flatnonzero((cps == _DIM_ON) | (cps == _DIM_OFF))
    if toggles.size:
        # A word inside a dim span (after DIM_ON, before the next DIM_OFF) is left alone.
        last = np.searchsorted(toggles, starts) - 1
        inside = (last >= 0) & (cps[toggles[np.maximum(last, 0)]] == _DIM_ON)
        starts, ends = starts[~inside], ends[~inside]
        if starts.size == 0:
            return text
    at = np.concatenate((starts, ends))
    marks = np.concatenate((np.full(starts.size, _DIM_ON, np.uint32),
                            np.full(ends.size, _DIM_OFF, np.uint32)))
    order = np.argsort(at, kind="stable")
    return from_codepoints(np.insert(cps, at[order], marks[order]))
