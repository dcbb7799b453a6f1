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
``unicodedata`` is Unicode 14.  The property tables below (Extended_Pictographic, Cf, and the
Unicode 15-17 additions to the mark/unrenderable sets and to NFKD folds) were read from the
reference engine (``tests/golden/normalize/make_golden.py --tables`` prints the range tables
again; the few newer ASCII folds were found by diffing every code point); the full-code-space
parity test in ``tests/test_normalize.py`` fails if any of them drift.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache

from snapcompact.text import coverage
from snapcompact.core.glyphs import DIM_OFF, DIM_ON, NEWLINE_GLYPH, WIDE_RANGES, is_wide
from snapcompact.core.shapes import FONTS

__all__ = [
    "CHAR_FOLD",
    "EMOJI_FOLD",
    "SAFE_FALLBACK_RATIO",
    "STOPWORDS",
    "Renderability",
    "cjk_heavy",
    "dim_stopwords",
    "is_wide",
    "normalize",
    "scan_renderability",
    "strip_ansi",
    "wrap",
]

# ---------------------------------------------------------------------------------------------
# Fold tables (digest §d)
# ---------------------------------------------------------------------------------------------

#: Status-like pictographs that carry meaning in tool output, printed as a bracketed label.
EMOJI_FOLD: dict[str, str] = {
    **dict.fromkeys("\u2705\u2611\u2714", "[OK]"),
    **dict.fromkeys("\u274c\u274e\u2716", "[FAIL]"),
    "\u26a0": "[WARN]",
    "\U0001f6a8": "[ALERT]",
    "\u2139": "[INFO]",
    "\U0001f41b": "[BUG]",
    "\U0001f4a5": "[CRASH]",
    "\U0001f525": "[HOT]",
    "\U0001f512": "[LOCK]",
    "\U0001f513": "[UNLOCK]",
    **dict.fromkeys("\U0001f4c1\U0001f4c2", "[DIR]"),
    "\U0001f4c4": "[FILE]",
    "\U0001f4dd": "[NOTE]",
    "\U0001f9ea": "[TEST]",
    **dict.fromkeys("\u23f3\u231b", "[WAIT]"),
    "\U0001f680": "[RUN]",
}

#: Typographic punctuation without a useful compatibility decomposition, folded to ASCII.
#: (U+2714 is also listed in EMOJI_FOLD, which wins.)
CHAR_FOLD: dict[str, str] = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2035", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u2033\u2036", '"'),
    "\u2039": "<",
    "\u203a": ">",
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043", "-"),
    "\u2044": "/",
    "\u2024": ".",
    "\u2025": "..",
    **dict.fromkeys("\u2026\u22ef", "..."),
    **dict.fromkeys("\u2022\u2023\u2219\u25cf\u25a0\u25aa", "*"),
    "\u2190": "<-",
    "\u2191": "^",
    "\u2192": "->",
    "\u2193": "v",
    "\u2194": "<->",
    "\u21d0": "<=",
    "\u21d2": "=>",
    "\u21d4": "<=>",
    **dict.fromkeys("\u2713\u2714", "v"),
    **dict.fromkeys("\u2717\u2718", "x"),
}

# ---------------------------------------------------------------------------------------------
# Unicode data as the reference engine (JavaScriptCore, Unicode 17) sees it
# ---------------------------------------------------------------------------------------------

#: JavaScript ``\s``: WhiteSpace + LineTerminator.  Unlike Python's ``\s`` it excludes
#: U+001C-001F and U+0085 (those are plain controls there and get dropped as Cc).
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)

#: General category Cf (format characters) in Unicode 17, inclusive ranges.
# fmt: off
FORMAT_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
# fmt: on

#: Extended_Pictographic (emoji-data, Unicode 17), inclusive ranges.  Python has no such property.
# fmt: off
PICTOGRAPHIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x23CF, 0x23CF), (0x23E9, 0x23F3),
    (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB), (0x25B6, 0x25B6),
    (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2604), (0x260E, 0x260E),
    (0x2611, 0x2611), (0x2614, 0x2615), (0x2618, 0x2618), (0x261D, 0x261D),
    (0x2620, 0x2620), (0x2622, 0x2623), (0x2626, 0x2626), (0x262A, 0x262A),
    (0x262E, 0x262F), (0x2638, 0x263A), (0x2640, 0x2640), (0x2642, 0x2642),
    (0x2648, 0x2653), (0x265F, 0x2660), (0x2663, 0x2663), (0x2665, 0x2666),
    (0x2668, 0x2668), (0x267B, 0x267B), (0x267E, 0x267F), (0x2692, 0x2697),
    (0x2699, 0x2699), (0x269B, 0x269C), (0x26A0, 0x26A1), (0x26A7, 0x26A7),
    (0x26AA, 0x26AB), (0x26B0, 0x26B1), (0x26BD, 0x26BE), (0x26C4, 0x26C5),
    (0x26C8, 0x26C8), (0x26CE, 0x26CF), (0x26D1, 0x26D1), (0x26D3, 0x26D4),
    (0x26E9, 0x26EA), (0x26F0, 0x26F5), (0x26F7, 0x26FA), (0x26FD, 0x26FD),
    (0x2702, 0x2702), (0x2705, 0x2705), (0x2708, 0x270D), (0x270F, 0x270F),
    (0x2712, 0x2712), (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D),
    (0x2721, 0x2721), (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744),
    (0x2747, 0x2747), (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755),
    (0x2757, 0x2757), (0x2763, 0x2764), (0x2795, 0x2797), (0x27A1, 0x27A1),
    (0x27B0, 0x27B0), (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C), (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030),
    (0x303D, 0x303D), (0x3297, 0x3297), (0x3299, 0x3299), (0x1F004, 0x1F004),
    (0x1F02C, 0x1F02F), (0x1F094, 0x1F09F), (0x1F0AF, 0x1F0B0), (0x1F0C0, 0x1F0C0),
    (0x1F0CF, 0x1F0D0), (0x1F0F6, 0x1F0FF), (0x1F170, 0x1F171), (0x1F17E, 0x1F17F),
    (0x1F18E, 0x1F18E), (0x1F191, 0x1F19A), (0x1F1AE, 0x1F1E5), (0x1F201, 0x1F20F),
    (0x1F21A, 0x1F21A), (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F),
    (0x1F249, 0x1F25F), (0x1F266, 0x1F321), (0x1F324, 0x1F393), (0x1F396, 0x1F397),
    (0x1F399, 0x1F39B), (0x1F39E, 0x1F3F0), (0x1F3F3, 0x1F3F5), (0x1F3F7, 0x1F3FA),
    (0x1F400, 0x1F4FD), (0x1F4FF, 0x1F53D), (0x1F549, 0x1F54E), (0x1F550, 0x1F567),
    (0x1F56F, 0x1F570), (0x1F573, 0x1F57A), (0x1F587, 0x1F587), (0x1F58A, 0x1F58D),
    (0x1F590, 0x1F590), (0x1F595, 0x1F596), (0x1F5A4, 0x1F5A5), (0x1F5A8, 0x1F5A8),
    (0x1F5B1, 0x1F5B2), (0x1F5BC, 0x1F5BC), (0x1F5C2, 0x1F5C4), (0x1F5D1, 0x1F5D3),
    (0x1F5DC, 0x1F5DE), (0x1F5E1, 0x1F5E1), (0x1F5E3, 0x1F5E3), (0x1F5E8, 0x1F5E8),
    (0x1F5EF, 0x1F5EF), (0x1F5F3, 0x1F5F3), (0x1F5FA, 0x1F64F), (0x1F680, 0x1F6C5),
    (0x1F6CB, 0x1F6D2), (0x1F6D5, 0x1F6E5), (0x1F6E9, 0x1F6E9), (0x1F6EB, 0x1F6F0),
    (0x1F6F3, 0x1F6FF), (0x1F7DA, 0x1F7FF), (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F),
    (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8AF), (0x1F8BC, 0x1F8BF),
    (0x1F8C2, 0x1F8CF), (0x1F8D9, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945),
    (0x1F947, 0x1F9FF), (0x1FA58, 0x1FA5F), (0x1FA6E, 0x1FAFF), (0x1FC00, 0x1FFFD),
)
# fmt: on

#: Code points that are Mn/Me in Unicode 17 but unassigned (or not Mn/Me) in Python's Unicode 14.
# fmt: off
_UNRENDERABLE_NEWER: tuple[tuple[int, int], ...] = (
    (0x0897, 0x0897), (0x0ECE, 0x0ECE), (0x1ACF, 0x1ADD), (0x1AE0, 0x1AEB),
    (0x10D69, 0x10D6D), (0x10EFA, 0x10EFF), (0x11241, 0x11241), (0x113BB, 0x113C0),
    (0x113CE, 0x113CE), (0x113D0, 0x113D0), (0x113D2, 0x113D2), (0x113E1, 0x113E2),
    (0x11B60, 0x11B60), (0x11B62, 0x11B64), (0x11B66, 0x11B66), (0x11F00, 0x11F01),
    (0x11F36, 0x11F3A), (0x11F40, 0x11F40), (0x11F42, 0x11F42), (0x11F5A, 0x11F5A),
    (0x13440, 0x13440), (0x13447, 0x13455), (0x1611E, 0x16129), (0x1612D, 0x1612F),
    (0x1E08F, 0x1E08F), (0x1E4EC, 0x1E4EF), (0x1E5EE, 0x1E5EF), (0x1E6E3, 0x1E6E3),
    (0x1E6E6, 0x1E6E6), (0x1E6EE, 0x1E6EF), (0x1E6F5, 0x1E6F5),
)
# fmt: on
#: AHOM CONSONANT SIGN MEDIAL RA moved from Mn to Mc in Unicode 15 (still a mark, now kept/folded).
_UNRENDERABLE_FORMER = frozenset({0x1171E})

#: Marks (\p{M}) of Unicode 15-17 that Python's Unicode 14 does not know.
# fmt: off
_MARK_NEWER: tuple[tuple[int, int], ...] = (
    (0x0897, 0x0897), (0x0CF3, 0x0CF3), (0x0ECE, 0x0ECE), (0x1ACF, 0x1ADD),
    (0x1AE0, 0x1AEB), (0x10D69, 0x10D6D), (0x10EFA, 0x10EFF), (0x11241, 0x11241),
    (0x113B8, 0x113C0), (0x113C2, 0x113C2), (0x113C5, 0x113C5), (0x113C7, 0x113CA),
    (0x113CC, 0x113D0), (0x113D2, 0x113D2), (0x113E1, 0x113E2), (0x11B60, 0x11B67),
    (0x11F00, 0x11F01), (0x11F03, 0x11F03), (0x11F34, 0x11F3A), (0x11F3E, 0x11F42),
    (0x11F5A, 0x11F5A), (0x13440, 0x13440), (0x13447, 0x13455), (0x1611E, 0x1612F),
    (0x1E08F, 0x1E08F), (0x1E4EC, 0x1E4EF), (0x1E5EE, 0x1E5EF), (0x1E6E3, 0x1E6E3),
    (0x1E6E6, 0x1E6E6), (0x1E6EE, 0x1E6EF), (0x1E6F5, 0x1E6F5),
)
# fmt: on

#: NFKD decompositions added after Unicode 14 that fold to ASCII: U+A7F1 (modifier capital S) and
#: the outlined Latin letters and digits of Symbols for Legacy Computing Supplement.
_FOLD_NEWER: dict[int, str] = {
    0xA7F1: "S",
    **{0x1CCD6 + i: chr(ord("A") + i) for i in range(26)},
    **{0x1CCF0 + i: chr(ord("0") + i) for i in range(10)},
}


def _class_body(ranges: tuple[tuple[int, int], ...]) -> str:
    """Regex character-class body for inclusive code point ranges."""
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in ranges
    )


def _expand(ranges: tuple[tuple[int, int], ...]) -> frozenset[int]:
    return frozenset(cp for lo, hi in ranges for cp in range(lo, hi + 1))


_PICTOGRAPHIC = _expand(PICTOGRAPHIC_RANGES)
_UNRENDERABLE_ADDED = _expand(_UNRENDERABLE_NEWER)
_MARK_ADDED = _expand(_MARK_NEWER)


def is_pictographic(cp: int) -> bool:
    """Extended_Pictographic as the reference engine reports it."""
    return cp in _PICTOGRAPHIC


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M" or ord(ch) in _MARK_ADDED


def is_unrenderable(cp: int) -> bool:
    """Cc, Mn, Me or Cs (controls, non-spacing/enclosing marks, surrogates): dropped silently."""
    if cp in _UNRENDERABLE_FORMER:
        return False
    return unicodedata.category(chr(cp)) in ("Cc", "Mn", "Me", "Cs") or cp in _UNRENDERABLE_ADDED


def _is_latin1_graphic(cp: int) -> bool:
    return 0x20 <= cp < 0x7F or 0xA0 <= cp <= 0xFF


def fold_to_ascii(ch: str) -> str | None:
    """NFKD fold of one code point: decompose, drop marks, keep ASCII/Latin-1, CHAR_FOLD the rest.

    ``None`` when nothing changes or a part stays undrawable.  A bare mark folds to ``""`` (it
    decomposes to itself, then the mark is removed), which the reference counts as a graphic.
    """
    cp = ord(ch)
    if cp in _FOLD_NEWER:
        return _FOLD_NEWER[cp]
    if 0xD800 <= cp <= 0xDFFF:
        return None
    skeleton = "".join(part for part in unicodedata.normalize("NFKD", ch) if not _is_mark(part))
    if skeleton == ch:
        return None
    out = []
    for part in skeleton:
        if _is_latin1_graphic(ord(part)):
            out.append(part)
        elif part in CHAR_FOLD:
            out.append(CHAR_FOLD[part])
        else:
            return None
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# ANSI escape stripping (Bun.stripANSI)
# ---------------------------------------------------------------------------------------------

# Characters that may start an escape sequence (plus C1 ST, which Bun's scanner also stops at and
# then leaves literal because it starts nothing).
_ESCAPE_START = re.compile("[\x1b\x90\x98\x9b\x9c\x9d\x9e\x9f]")
# A CSI ends at its final byte (0x40-0x7E) or is aborted by ESC, CAN, SUB or C1 ST.
_CSI_END = re.compile("[\x40-\x7e\x1b\x18\x1a\x9c]")
# OSC payload ends at BEL or ST (C1 ST, or ESC \\); other strings only at ST; CAN/SUB abort both.
_OSC_END = re.compile("[\x07\x9c\x1b\x18\x1a]")
_STRING_END = re.compile("[\x9c\x1b\x18\x1a]")

(_GROUND, _GOT_ESC, _SKIP_ONE, _CSI, _OSC, _OSC_GOT_ESC, _STRING, _STRING_GOT_ESC) = range(8)


def _consume_escapes(text: str, start: int) -> int:
    """End of the chain of escape sequences starting at ``start`` (``start`` itself: none).

    A negative result ``-j`` means the chain ended by swallowing only the high surrogate of the
    astral character at ``j - 1``: its low surrogate is kept, then text resumes at ``j``.

    Mirrors the VT500-style state machine of ``Bun.stripANSI`` (Bun 1.4): ``ESC [`` / C1 CSI up to
    a final byte; ``ESC ]`` / C1 OSC up to BEL or ST; ``ESC P X ^ _`` / C1 DCS SOS PM APC up to ST;
    ``ESC`` + intermediate (0x20-0x2F) + one more character; ``ESC`` + a final byte (0x30-0x7E).
    ESC inside a sequence aborts it and starts a new one; CAN, SUB and C1 ST abort to ground and
    are swallowed; an unterminated sequence runs to the end of the text.  ESC followed by anything
    else (a control, non-ASCII) removes just the ESC.
    """
    end = len(text)
    state = _GROUND
    i = start
    while i < end:
        c = text[i]
        if state == _GROUND:
            if c == "\x1b":
                state = _GOT_ESC
            elif c == "\x9b":
                state = _CSI
            elif c == "\x9d":
                state = _OSC
            elif c in "\x90\x98\x9e\x9f":
                state = _STRING
            else:
                return i
            i += 1
            continue
        if state == _OSC_GOT_ESC or state == _STRING_GOT_ESC:
            if c == "\\":
                state = _GROUND
                i += 1
                continue
            state = _GOT_ESC  # the ESC aborted the string and introduces a new sequence
        if state == _GOT_ESC:
            if c == "\x1b":
                pass
            elif c == "[":
                state = _CSI
            elif c == "]":
                state = _OSC
            elif c in "PX^_":
                state = _STRING
            elif c in "\x18\x1a\x9c" or "\x30" <= c <= "\x7e":
                state = _GROUND
            elif "\x20" <= c <= "\x2f":
                state = _SKIP_ONE
            else:
                return i
        elif state == _SKIP_ONE:
            if c > "\uffff":
                # Bun skips one UTF-16 unit: the high surrogate goes, the low one stays as text
                # and ends the chain.
                return -(i + 1)
            state = _GOT_ESC if c == "\x1b" else _GROUND
        else:  # _CSI, _OSC, _STRING: jump to the byte that ends or aborts the payload
            pattern = _CSI_END if state == _CSI else _OSC_END if state == _OSC else _STRING_END
            found = pattern.search(text, i)
            if found is None:
                return end
            i = found.start()
            if text[i] == "\x1b":
                state = (
                    _GOT_ESC
                    if state == _CSI
                    else _OSC_GOT_ESC
                    if state == _OSC
                    else _STRING_GOT_ESC
                )
            else:
                state = _GROUND
        i += 1
    return end


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences as ``Bun.stripANSI`` does (text without any is unchanged)."""
    found = _ESCAPE_START.search(text)
    if found is None:
        return text
    pieces: list[str] = []
    pos = 0
    while found is not None:
        at = found.start()
        pieces.append(text[pos:at])
        after = _consume_escapes(text, at)
        if after == at:
            pieces.append(text[at])
            pos = at + 1
        elif after < 0:
            pos = -after
            pieces.append(chr(0xDC00 + ((ord(text[pos - 1]) - 0x10000) & 0x3FF)))
        else:
            pos = after
        found = _ESCAPE_START.search(text, pos)
    pieces.append(text[pos:])
    return "".join(pieces)


# ---------------------------------------------------------------------------------------------
# Whitespace collapse
# ---------------------------------------------------------------------------------------------

_FORMAT_CLASS = _class_body(FORMAT_RANGES)
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
def _font_free_decision(cp: int) -> tuple[str, int] | None:
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
        or cp in _MARK_ADDED
        or cp in _FOLD_NEWER
        or unicodedata.decomposition(ch)
    ):
        folded = fold_to_ascii(ch)
    else:
        folded = None
    if folded is not None:
        return folded, _GRAPHIC
    if cp in _PICTOGRAPHIC:
        return "", _NOT_GRAPHIC
    if cp in _UNRENDERABLE_FORMER:
        return _CANDIDATE
    if category in ("Cc", "Mn", "Me", "Cs") or cp in _UNRENDERABLE_ADDED:
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


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        # ValueError, not TypeError: the package reports every bad argument the same way.
        raise ValueError(f"text must be a str, got {type(text).__name__}")  # noqa: TRY004
    return text


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
    _check_text(text)
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
    _check_text(text)
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
    chars = _input_chars(_check_text(text))
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
    _check_text(text)
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


# ---------------------------------------------------------------------------------------------
# Greedy word wrap (doc shapes)
# ---------------------------------------------------------------------------------------------

_JS_WHITESPACE_RUN = re.compile(f"[{_WS_CLASS}]+")


def _cells(ch: str, wide_cells: bool) -> int:
    if ch == DIM_ON or ch == DIM_OFF:
        return 0
    return 2 if wide_cells and is_wide(ord(ch)) else 1


_WIDE_CHAR = re.compile(f"[{_class_body(WIDE_RANGES)}]")


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
    _check_text(text)
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
