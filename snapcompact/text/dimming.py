"""Stopword dimming: function words printed in grey so the content words stand out.

Why: the ``-dim`` shapes spend no cells on it (the toggles are zero-width) and a reader restores
function words from context; the word list is the research's, the toggles the reference's.
"""

from __future__ import annotations

import re

from snapcompact.core import DIM_OFF, DIM_ON, check_text

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

_ALPHA_RUN = re.compile("[a-zA-Z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff]+")
_DIM_SPLIT = re.compile(f"([{DIM_ON}{DIM_OFF}])")


def _dim_word(match: re.Match[str]) -> str:
    word = match.group()
    return f"{DIM_ON}{word}{DIM_OFF}" if word.lower() in STOPWORDS else word


def dim_stopwords(text: str) -> str:
    """Wrap stopwords outside existing dim spans in DIM_ON/DIM_OFF (reference ``dimStopwords``).

    Only zero-width markers are added; text inside a dim span (even an unterminated one) is left
    alone so the enclosing span is not cut short.
    """
    check_text(text)
    dim = False
    out: list[str] = []
    for part in _DIM_SPLIT.split(text):
        if part == DIM_ON:
            dim = True
            out.append(part)
        elif part == DIM_OFF:
            dim = False
            out.append(part)
        elif dim or not part:
            out.append(part)
        else:
            out.append(_ALPHA_RUN.sub(_dim_word, part))
    return "".join(out)
