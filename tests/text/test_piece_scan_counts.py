"""A piece's scan counts inside a text equal what the whole-text scan reads for it.

``piece_scan_counts`` sums an interior piece per character (not over numpy arrays); the
expectation here is :func:`scan_counts` of the piece between two line breaks, less the two
letters around it, the numpy path over the whole text. Pieces: cuts of the benchmarks' mixed
corpus (prose, code, one-sentence lines, non-Latin, emoji) and seeded random mixes of the
characters the collapse treats specially (JavaScript whitespace, format characters, line
breaks, the newline glyph itself, controls, astral characters).
"""

from __future__ import annotations

import random
import sys

from locations import REPO

from snapcompact.core import FONTS
from snapcompact.text import piece_scan_counts, scan_counts

_FONTS = tuple(FONTS)
_ATOMS = ("a", "Z", " ", "  ", "\t", "\n", "\r\n", "\r", "\u2028", "\u2029", "\u200b", "\u00a0",
          "\u3000", "\ufeff", "\x0b", "\x0c", "\x85", "\u180e", "\u061c", "\U000e0001", "█",
          "█ █", "x y", "東京", "한", "😀", "👍🏽", "e\u0301", "\u0301", "\x01", "\x7f", "?", "é",
          "—", "“q”", "ﬁ", "①", "\ue000")


def _expected(piece: str):  # noqa: ANN202 - a ScanCounts
    letter = scan_counts("a", _FONTS)
    return scan_counts(f"a\n{piece}\na", _FONTS) - letter - letter


def _pieces() -> list[str]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from corpus import mixed

    rng = random.Random(26)
    text = mixed(60_000)
    out = []
    for _ in range(300):
        at = rng.randrange(len(text))
        out.append(text[at:at + rng.randint(1, 300)])
    for _ in range(1000):
        out.append("".join(rng.choice(_ATOMS) for _ in range(rng.randint(1, 10))))
    return out


def test_interior_piece_counts_equal_the_whole_text_scan() -> None:
    pieces = [p for p in _pieces() if "\x1b" not in p]
    mismatches = [p for p in pieces if piece_scan_counts(p, _FONTS) != _expected(p)]
    assert mismatches == []
