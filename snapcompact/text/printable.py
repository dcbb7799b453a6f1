"""Text normalization: turn any text into what a bitmap frame can print, exactly as the reference.

Why exact: the frames a model reads, the page count and the "is this text safe to image" decision
(`scan_renderability`) all follow from the normalized text, so a one-character drift changes which
shape is picked, where pages break and what the eval measures.  The rules (digest §d):

1. strip ANSI escape sequences the way ``Bun.stripANSI`` does (only when ESC occurs);
2. replace each maximal run of JavaScript whitespace / format characters (``/[\\s\\p{Cf}]+/u``) by
   the newline glyph (run holds a line break), one space (run holds real whitespace) or nothing;
3. trim edge runs of spaces / newline glyphs;
4. decide per code point: keep ASCII/Latin-1, fold status emoji and typographic punctuation to
   ASCII, box drawing to ``| - +``, keep what the font or Silver draws, NFKD-fold compatibility
   forms, drop other pictographs and controls/marks/surrogates, print ``?`` for the rest;
5. squeeze space runs and trim the edges again.

Speed: plain text skips step 4 entirely (one regex scan proves it is all Latin-1), and otherwise the
per-code-point decision is computed once per distinct code point and applied with ``str.translate``.

Unicode version: the reference runs on JavaScriptCore with Unicode 17 while Python 3.11's
``unicodedata`` is Unicode 14.  The property tables in :mod:`snapcompact.text.unicode17`
(Extended_Pictographic, Cf, and the Unicode 15-17 additions to the mark/unrenderable sets and to
NFKD folds) were read from the reference engine
(``tests/golden/normalize/make_golden.py --tables`` prints the range tables again; the few newer
ASCII folds were found by diffing every code point); the full-code-space parity test in
``tests/test_normalize.py`` fails if any of them drift.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache

from snapcompact.core import (
    DIM_OFF,
    DIM_ON,
    FONTS,
    JS_WHITESPACE,
    NEWLINE_GLYPH,
    check_text,
    is_wide,
)
from snapcompact.text import coverage
from snapcompact.text.ansi import strip_ansi
from snapcompact.text.folds import CHAR_FOLD, EMOJI_FOLD
from snapcompact.text.unicode17 import (
    FOLD_NEWER,
    FORMAT_RANGES,
    MARK_ADDED,
    PICTOGRAPHIC,
    UNRENDERABLE_ADDED,
    UNRENDERABLE_FORMER,
    char_class,
    fold_to_ascii,
    is_unrenderable,
)

__all__ = [
    "SAFE_FALLBACK_RATIO",
    "Renderability",
    "cjk_heavy",
    "normalize",
    "scan_renderability",
]


# ---------------------------------------------------------------------------------------------
# Whitespace collapse
# ---------------------------------------------------------------------------------------------

_FORMAT_CLASS = char_class(FORMAT_RANGES)
_WS_CLASS = re.escape(JS_WHITESPACE)
_WS_NO_SPACE_CLASS = re.escape(JS_WHITESPACE.replace(" ", ""))
# Only runs that change: two or more characters, or one character other than a plain space.  The
# lookahead lets the regex engine skip ahead to candidate characters (twice as fast on prose).
_COLLAPSIBLE = re.compile(
    f"(?=[{_WS_CLASS}{_FORMAT_CLASS}])"
    f"(?:[{_WS_CLASS}{_FORMAT_CLASS}]{{2,}}|[{_WS_NO_SPACE_CLASS}{_FORMAT_CLASS}])"
)
_LINE_BREAK = re.compile("[\n\r\u2028\u2029]")
_NOT_FORMAT = re.compile(f"[^{_FORMAT_CLASS}]")
_EDGES = " " + NEWLINE_GLYPH
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SPACE_RUN = re.compile(" {2,}")


class _RunReplacements(dict):
    """Memo: whitespace/format run -> replacement (runs repeat a lot: indentation, blank lines)."""

    def __missing__(self, run: str) -> str:
        if _LINE_BREAK.search(run):
            out = NEWLINE_GLYPH
        elif _NOT_FORMAT.search(run):
            out = " "
        else:
            out = ""
        if len(self) < 4096:
            self[run] = out
        return out


_RUNS = _RunReplacements()


def _replace_run(match: re.Match[str]) -> str:
    return _RUNS[match.group()]


def _join_surrogate_pairs(text: str) -> str:
    """JavaScript strings are UTF-16: a high+low surrogate pair is one code point there."""
    return _SURROGATE_PAIR.sub(
        lambda m: chr(
            0x10000 + ((ord(m.group()[0]) - 0xD800) << 10) + (ord(m.group()[1]) - 0xDC00)
        ),
        text,
    )


#: The last (input, result) of ``_input_chars``: shape resolution scans the same history text
#: three times (two fonts' renderability, the CJK test) and then normalizes it.
_LAST_INPUT: tuple[str, str] = ("", "")


def _input_chars(text: str) -> str:
    """The reference's ``normalizedInputChars``: ANSI stripped, runs collapsed, edges trimmed.

    Surrogate code points (only in Python strings built oddly, e.g. from ``surrogatepass``) are
    paired up again after every step that could bring a high and a low surrogate together.
    """
    global _LAST_INPUT
    last = _LAST_INPUT  # one read: another thread may replace it
    if last[0] is text:
        return last[1]
    result = _collapse_input(text)
    _LAST_INPUT = (text, result)
    return result


def _collapse_input(text: str) -> str:
    surrogates = not text.isascii() and _SURROGATE.search(text) is not None
    if surrogates:
        text = _join_surrogate_pairs(text)
    if "\x1b" in text:
        text = strip_ansi(text)
        if surrogates:
            text = _join_surrogate_pairs(text)
    text = _COLLAPSIBLE.sub(_replace_run, text).strip(_EDGES)
    return _join_surrogate_pairs(text) if surrogates else text


# ---------------------------------------------------------------------------------------------
# Per-code-point decision
# ---------------------------------------------------------------------------------------------

# Kind of one input character for the statistics, as a one-letter string so a whole text's kinds
# come out of one ``str.translate``: "g" prints something, "f" prints the ``?`` fallback, ""
# prints nothing that counts (dim toggles, newline glyph, dropped characters).
_NOT_GRAPHIC, _GRAPHIC, _FALLBACK = "", "g", "f"
_CANDIDATE = None  # kept iff the font (or Silver) draws it, else "?"


@lru_cache(maxsize=1 << 16)
def _font_free_decision(cp: int) -> tuple[str, str] | None:
    """(output, kind) for a code point outside Latin-1, or ``_CANDIDATE`` when the font decides."""
    ch = chr(cp)
    if ch in (DIM_ON, DIM_OFF, NEWLINE_GLYPH):
        return ch, _NOT_GRAPHIC
    if ch in EMOJI_FOLD:
        return EMOJI_FOLD[ch], _GRAPHIC
    if ch in CHAR_FOLD:
        return CHAR_FOLD[ch], _GRAPHIC
    if 0x2500 <= cp <= 0x257F:
        return ("|" if cp in (0x2502, 0x2503) else "-" if cp in (0x2500, 0x2501) else "+"), _GRAPHIC
    category = unicodedata.category(ch)
    # Fast path: most code points have no decomposition and are no mark, so they cannot fold.
    # (Hangul syllables decompose only to Jamo, which never fold either.)
    if (
        category[0] == "M"
        or cp in MARK_ADDED
        or cp in FOLD_NEWER
        or unicodedata.decomposition(ch)
    ):
        folded = fold_to_ascii(ch)
    else:
        folded = None
    if folded is not None:
        return folded, _GRAPHIC
    if cp in PICTOGRAPHIC:
        return "", _NOT_GRAPHIC
    if cp in UNRENDERABLE_FORMER:
        return _CANDIDATE
    if category in ("Cc", "Mn", "Me", "Cs") or cp in UNRENDERABLE_ADDED:
        return "", _NOT_GRAPHIC
    return _CANDIDATE


class _FontTable(dict):
    """``str.translate`` table for one font, filled lazily: code point -> output text.

    ``kinds`` is the matching table code point -> kind letter.  Both are bounded so a sweep over
    all of Unicode does not keep a million entries alive.
    """

    _LIMIT = 1 << 17

    def __init__(self, font: str) -> None:
        super().__init__()
        self.renderable = coverage.renderable(font)
        self.kinds = _KindTable(self)
        self._seed()

    def _seed(self) -> None:
        for cp in (*range(0x20, 0x7F), *range(0xA0, 0x100)):
            self[cp] = chr(cp)
            self.kinds[cp] = _GRAPHIC

    def __missing__(self, cp: int) -> str:
        decided = _font_free_decision(cp)
        if decided is _CANDIDATE:
            decided = (chr(cp), _GRAPHIC) if cp in self.renderable else ("?", _FALLBACK)
        if len(self) >= self._LIMIT:
            self.clear()
            self.kinds.clear()
            self._seed()
        self[cp] = decided[0]
        self.kinds[cp] = decided[1]
        return decided[0]


class _KindTable(dict):
    """Code point -> kind letter, filled by its font table."""

    def __init__(self, table: _FontTable) -> None:
        super().__init__()
        self.table = table

    def __missing__(self, cp: int) -> str:
        self.table[cp]
        return self[cp]


@cache
def _font_table(font: str) -> _FontTable:
    return _FontTable(font)


def _check_font(font: str) -> str:
    if font not in FONTS:
        raise ValueError(f"unknown font {font!r}; known fonts: {', '.join(FONTS)}")
    return font


# Anything outside printable ASCII / Latin-1 (and the three control glyphs kept as they are)
# needs the per-code-point table.
_NEEDS_TABLE = re.compile(f"[^\x20-\x7e\xa0-\xff{DIM_ON}{DIM_OFF}{NEWLINE_GLYPH}]")
_NEEDS_TABLE_RUN = re.compile(f"([^\x20-\x7e\xa0-\xff{DIM_ON}{DIM_OFF}{NEWLINE_GLYPH}]+)")


def _apply_table(chars: str, table: _FontTable) -> str:
    """``chars.translate(table)``, touching only the runs that need it when they are sparse."""
    pieces = _NEEDS_TABLE_RUN.split(chars)  # [plain, run, plain, run, ..., plain]
    if len(pieces) > len(chars) >> 5:
        return chars.translate(table)
    pieces[1::2] = [run.translate(table) for run in pieces[1::2]]
    return "".join(pieces)


def _uncounted(chars: str) -> int:
    """Dim toggles and newline glyphs: printed, but neither graphic nor fallback."""
    return chars.count(DIM_ON) + chars.count(DIM_OFF) + chars.count(NEWLINE_GLYPH)


def _finish(text: str) -> str:
    if "  " in text:
        text = _SPACE_RUN.sub(" ", text)
    return text.strip(_EDGES)


def normalize(text: str, font: str = "5x8") -> str:
    """Printable form of ``text`` for a shape drawn in ``font`` (reference ``normalize``)."""
    check_text(text)
    table = _font_table(_check_font(font))
    chars = _input_chars(text)
    if _NEEDS_TABLE.search(chars) is not None:
        chars = _apply_table(chars, table)
    return _finish(chars)


SAFE_FALLBACK_RATIO = 0.05


@dataclass(frozen=True)
class Renderability:
    """How much of a text would print as the ``?`` fallback in one font.

    ``graphic`` counts input characters that print something (a fold counts once), ``fallback``
    those printed as ``?``; ``ratio`` = fallback / graphic (0 with no graphic characters) and the
    text is ``safe`` to image when at most 5 % falls back.
    """

    ratio: float
    safe: bool
    graphic: int
    fallback: int


def scan_renderability(text: str, font: str = "5x8") -> Renderability:
    """Fallback statistics of ``normalize(text, font)`` (reference ``scanRenderability``)."""
    check_text(text)
    table = _font_table(_check_font(font))
    chars = _input_chars(text)
    special = "".join(_NEEDS_TABLE_RUN.findall(chars))
    kinds = special.translate(table.kinds)
    graphic = len(chars) - len(special) - _uncounted(chars) + len(kinds)
    fallback = kinds.count(_FALLBACK)
    ratio = fallback / graphic if graphic else 0.0
    return Renderability(
        ratio=ratio, safe=ratio <= SAFE_FALLBACK_RATIO, graphic=graphic, fallback=fallback
    )


# ---------------------------------------------------------------------------------------------
# Wide glyphs and the CJK-heavy test
# ---------------------------------------------------------------------------------------------

CJK_HEAVY_MIN_WIDE = 8
CJK_HEAVY_WIDE_RATIO = 0.25


def cjk_heavy(text: str) -> bool:
    """Whether wide (CJK) glyphs dominate ``text`` enough to prefer the Silver shape.

    Counted over the collapsed input characters, skipping spaces, dim toggles, the newline glyph
    and unrenderables: at least 8 wide code points and wide / counted >= 0.25.
    """
    chars = _input_chars(check_text(text))
    special = Counter("".join(_NEEDS_TABLE_RUN.findall(chars)))
    counted = len(chars) - sum(special.values()) - chars.count(" ") - _uncounted(chars)
    wide = 0
    for ch, count in special.items():
        cp = ord(ch)
        if is_unrenderable(cp):
            continue
        counted += count
        if is_wide(cp):
            wide += count
    return wide >= CJK_HEAVY_MIN_WIDE and wide / counted >= CJK_HEAVY_WIDE_RATIO
