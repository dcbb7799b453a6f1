"""Which code points each font draws itself, as the reference renderer decides it.

The reference bundles only part of each font file (5x8: Latin-1; 8x8: code points 1-255), so
coverage is recorded data (``fonts/coverage.json``, read from the reference's
``snapcompactSupportedChars``) rather than "whatever the file contains".  Code points outside a
bitmap font's coverage fall back to Silver; outside Silver's too they normalize to ``?``.
"""

from __future__ import annotations

import json
from functools import lru_cache

from snapcompact.core import fonts_dir

COVERAGE_FILE = "coverage.json"


@lru_cache(maxsize=1)
def _ranges() -> dict[str, tuple[tuple[int, int], ...]]:
    raw = json.loads((fonts_dir() / COVERAGE_FILE).read_text())
    return {font: tuple((int(a), int(b)) for a, b in spans) for font, spans in raw.items()}


def supported_ranges(font: str) -> tuple[tuple[int, int], ...]:
    """Inclusive code point ranges ``font`` draws with its own glyphs (control markers included)."""
    ranges = _ranges()
    if font not in ranges:
        raise ValueError(f"unknown font {font!r}; known: {', '.join(ranges)}")
    return ranges[font]


@lru_cache(maxsize=None)
def supported(font: str) -> frozenset[int]:
    """Code points ``font`` draws with its own glyphs (control markers included)."""
    return frozenset(cp for a, b in supported_ranges(font) for cp in range(a, b + 1))


@lru_cache(maxsize=None)
def renderable(font: str) -> frozenset[int]:
    """Code points that survive normalization for ``font``: its own glyphs plus Silver's."""
    if font == "silver":
        return supported("silver")
    return supported(font) | supported("silver")
