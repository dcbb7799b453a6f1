"""The code point table normalization runs on: one byte per code point, read from shipped data.

Why a shipped table: deciding what a code point prints takes Unicode lookups and an NFKD fold,
about 7 microseconds each; a long history holds some 17,000 distinct code points (CJK, Hangul,
emoji), so deciding them per process cost a tenth of a second before the first frame.  The
decisions are the same for every text, so ``scripts/make_code_point_table.py`` evaluates the rules
of :mod:`snapcompact.text.code_point_rules` over the whole code space once and writes
``code_point_table.json`` (runs of equal entries plus the folds); here it becomes a lookup array,
and normalizing a text is a handful of numpy passes over its code points.  The table also pins
the Unicode data: normalization no longer depends on the ``unicodedata`` of the Python running it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

import numpy as np

from snapcompact.core import JS_WHITESPACE
from snapcompact.text.coverage import supported_ranges

__all__ = [
    "CANDIDATE",
    "CODE_SPACE",
    "DROP",
    "FALLBACK",
    "FOLD",
    "IN_RUN",
    "KEEP",
    "KIND_MASK",
    "LINE_BREAK",
    "MARKER",
    "REAL_SPACE",
    "UNRENDERABLE",
    "WIDE",
    "TABLE_FILE",
    "Folds",
    "FontTable",
    "codepoints",
    "font_table",
    "from_codepoints",
    "js_whitespace",
    "load_table_json",
    "shared_entries",
]

#: Code points 0 .. 0x10FFFF.
CODE_SPACE = 0x110000
TABLE_FILE = "code_point_table.json"

# What a code point prints (the low three bits of its entry).
KEEP = 0  #: prints itself and counts as a graphic character
MARKER = 1  #: prints itself (dim toggles, newline glyph) but counts as nothing
FOLD = 2  #: prints its fold (possibly empty) and counts as a graphic character
DROP = 3  #: prints nothing and counts as nothing
CANDIDATE = 4  #: stored table only: prints itself if the font or Silver draws it, else ``?``
FALLBACK = 5  #: loaded tables: a candidate no font at hand draws, printed as ``?``
KIND_MASK = 0x07

# Properties the other normalization steps read (the high bits).
UNRENDERABLE = 0x08  #: skipped by the CJK-heavy count (Cc, Mn, Me, Cs outside printable Latin-1)
WIDE = 0x10  #: takes two cells in a bitmap shape
IN_RUN = 0x20  #: JavaScript whitespace or a format character: collapsed with its neighbours
LINE_BREAK = 0x40  #: a run holding one becomes the newline glyph
REAL_SPACE = 0x80  #: whitespace that is not a format character: a run holding one becomes " "


@dataclass(frozen=True)
class Folds:
    """The fold of each ``FOLD`` code point: ``chars[offsets[i]:offsets[i] + lengths[i]]``."""

    code_points: np.ndarray  # sorted, uint32
    offsets: np.ndarray  # int64
    lengths: np.ndarray  # int64
    chars: np.ndarray  # uint32, every fold's characters back to back


@dataclass(frozen=True)
class FontTable:
    """What normalization for one font reads: the candidates it draws and the folds.

    The candidates the font (or Silver) draws are a bit set (139 KB), so a process that scans
    several fonts keeps one byte-per-code-point table, not one per font.
    """

    drawn: np.ndarray  # uint8 bit set over the code space: bit cp is set when cp is drawn
    folds: Folds

    def kinds(self, cps: np.ndarray) -> np.ndarray:
        """``KEEP``, ``MARKER``, ``FOLD``, ``DROP`` or ``FALLBACK`` for each code point."""
        kinds = shared_entries()[cps] & KIND_MASK
        candidates = np.flatnonzero(kinds == FALLBACK)
        if candidates.size:
            found = cps[candidates]
            hit = (self.drawn[found >> 3] >> (found & 7).astype(np.uint8)) & 1
            kinds[candidates[hit != 0]] = KEEP
        return kinds


def codepoints(text: str) -> np.ndarray:
    """The code points of ``text`` as an unsigned array (lone surrogates kept as their values).

    uint16 when every code point is in the Basic Multilingual Plane and none is a surrogate
    (half the memory of uint32 for the usual history), else uint32.
    """
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8).astype(np.uint16)
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) == 2 * len(text):  # nothing astral
        narrow = np.frombuffer(units, dtype=np.uint16)
        if not np.any((narrow >= 0xD800) & (narrow <= 0xDFFF)):
            return narrow
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def from_codepoints(cps: np.ndarray) -> str:
    """The string of a code point array (the inverse of :func:`codepoints`)."""
    if cps.dtype == np.uint16 and not np.any((cps >= 0xD800) & (cps <= 0xDFFF)):
        return np.ascontiguousarray(cps).tobytes().decode("utf-16-le")
    return np.ascontiguousarray(cps, dtype=np.uint32).tobytes().decode(
        "utf-32-le", "surrogatepass")


@cache
def _js_whitespace_table() -> np.ndarray:
    table = np.zeros(0x10000, dtype=bool)  # every JavaScript whitespace character is in the BMP
    table[[ord(ch) for ch in JS_WHITESPACE]] = True
    table[0xFFFF] = False  # astral code points are clipped onto this entry
    return table


def js_whitespace(cps: np.ndarray) -> np.ndarray:
    """True where a code point is JavaScript whitespace (what ``/\\s/`` matches)."""
    return _js_whitespace_table().take(cps, mode="clip")


def load_table_json() -> dict:
    """The shipped table as stored (runs, folds and the Unicode version it was made with)."""
    return json.loads(files("snapcompact.text").joinpath(TABLE_FILE).read_text(encoding="utf-8"))


@cache
def _shared() -> tuple[np.ndarray, Folds]:
    raw = load_table_json()
    starts = np.array([start for start, _ in raw["runs"]] + [CODE_SPACE], dtype=np.int64)
    values = np.array([value for _, value in raw["runs"]], dtype=np.uint8)
    if starts[0] != 0 or np.any(np.diff(starts) <= 0):
        raise ValueError(f"{TABLE_FILE}: runs must start at 0 and increase")
    # Until a font says it draws them, candidates print as the fallback.
    values[(values & KIND_MASK) == CANDIDATE] += FALLBACK - CANDIDATE
    entries = np.repeat(values, np.diff(starts))
    entries.setflags(write=False)
    fold_items = sorted((int(cp), text) for cp, text in raw["folds"].items())
    lengths = np.array([len(text) for _, text in fold_items], dtype=np.int64)
    joined = "".join(text for _, text in fold_items)
    folds = Folds(
        code_points=np.array([cp for cp, _ in fold_items], dtype=np.uint32),
        offsets=np.cumsum(lengths) - lengths,
        lengths=lengths,
        chars=np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32),
    )
    return entries, folds


def shared_entries() -> np.ndarray:
    """Every code point's entry with no font drawing anything: candidates are ``FALLBACK``."""
    return _shared()[0]


@cache
def font_table(font: str) -> FontTable:
    """The table for ``font``: candidates it or Silver draws print themselves, the rest ``?``."""
    entries, folds = _shared()
    spans = np.array(
        [span for name in (("silver",) if font == "silver" else (font, "silver"))
         for span in supported_ranges(name)], dtype=np.int64,
    ).reshape(-1, 2)
    # Every code point of every span, without a loop: each span's start repeated over its
    # length, plus 0, 1, 2, ... within the span.
    lengths = spans[:, 1] - spans[:, 0] + 1
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    drawn = np.repeat(spans[:, 0], lengths) + within
    mask = np.zeros(CODE_SPACE, dtype=bool)
    mask[drawn[(entries[drawn] & KIND_MASK) == FALLBACK]] = True
    bits = np.packbits(mask, bitorder="little")
    bits.setflags(write=False)
    return FontTable(bits, folds)
