"""A piece's scan counts inside a text equal what the whole-text scan reads for it.

``piece_scan_counts`` sums a piece per character (not over numpy arrays); the expectation here
is :func:`scan_counts` of the piece between two line breaks (or at the text's start or end),
less the letters around it: the numpy path over the whole text. Pieces: cuts of the benchmarks' mixed
corpus (prose, code, one-sentence lines, non-Latin, emoji) and seeded random mixes of the
characters the collapse treats specially (JavaScript whitespace, format characters, line
breaks, the newline glyph itself, controls, astral characters).
"""

from __future__ import annotations

import random
import sys

import pytest
from locations import REPO

from snapcompact.core import FONTS
from snapcompact.text import piece_scan_counts, scan_counts

_FONTS = tuple(FONTS)
_ATOMS = ("a", "Z", " ", "  ", "\t", "\n", "\r\n", "\r", "\u2028", "\u2029", "\u200b", "\u00a0",
          "\u3000", "\ufeff", "\x0b", "\x0c", "\x85", "\u180e", "\u061c", "\U000e0001", "█",
          "█ █", "x y", "東京", "한", "😀", "👍🏽", "e\u0301", "\u0301", "\x01", "\x7f", "?", "é",
          "—", "“q”", "ﬁ", "①", "\ue000")


def _expected(piece: str, first: bool, last: bool):  # noqa: ANN202 - a ScanCounts
    """The counts ``piece`` adds where a line break precedes it (unless ``first``: it opens the
    text) and one follows it (unless ``last``), read off the whole-text scan."""
    letter = scan_counts("a", _FONTS)
    counts = scan_counts(("" if first else "a\n") + piece + ("" if last else "\na"), _FONTS)
    for _ in range(2 - first - last):
        counts = counts - letter
    return counts


def _pieces() -> list[str]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from corpus import mixed

    rng = random.Random(26)
    text = mixed(60_000)
    out = []
    for _ in range(200):
        at = rng.randrange(len(text))
        out.append(text[at:at + rng.randint(1, 300)])
    for _ in range(600):
        out.append("".join(rng.choice(_ATOMS) for _ in range(rng.randint(1, 10))))
    return out


@pytest.mark.parametrize("first,last", [(False, False), (True, False), (False, True),
                                        (True, True)])
def test_piece_counts_equal_the_whole_text_scan(first: bool, last: bool) -> None:
    pieces = [p for p in _pieces() if "\x1b" not in p]
    got = [(p, piece_scan_counts(p, _FONTS, first=first, last=last)) for p in pieces]
    # None: the edge trim would reach past the piece (the caller then scans the whole text).
    counted = [(p, c) for p, c in got if c is not None]
    assert len(counted) > 0.9 * len(pieces)
    assert [p for p, c in counted if c != _expected(p, first, last)] == []
