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

Speed: every step is a numpy pass over the text's code points.  Step 4 reads one byte per code
point from the shipped table of :mod:`snapcompact.text.code_points` (the rules of
:mod:`snapcompact.text.code_point_rules` evaluated over the whole code space ahead of time), so a
history with thousands of distinct CJK, Hangul and emoji code points costs no per-character
Unicode lookups; only ANSI stripping and the rare surrogate repair work on the string.

Unicode version: the reference runs on JavaScriptCore with Unicode 17 while Python 3.11's
``unicodedata`` is Unicode 14 (the shipped table was made with it and records so).  The
property tables in :mod:`snapcompact.text.unicode17` (Extended_Pictographic, Cf, and the
Unicode 15-17 additions to the mark/unrenderable sets and to NFKD folds) were read from the
reference engine
(``tests/golden/normalize/make_golden.py --tables`` prints the range tables again; the few newer
ASCII folds were found by diffing every code point); the full-code-space parity test in
``tests/text/test_normalize.py`` fails if any of them drift.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from snapcompact.core import FONTS, NEWLINE_GLYPH, check_text
from snapcompact.text import code_points as rules
from snapcompact.text.ansi import strip_ansi
from snapcompact.text.code_points import FALLBACK, font_table, shared_entries
from snapcompact.text.code_points import codepoints as _codepoints
from snapcompact.text.code_points import from_codepoints as _text

__all__ = [
    "SAFE_FALLBACK_RATIO",
    "Renderability",
    "ScanCounts",
    "cjk_heavy",
    "normalize",
    "piece_scan_counts",
    "scan_counts",
    "scan_renderability",
]

_SPACE = 0x20
_NEWLINE = ord(NEWLINE_GLYPH)
_QUESTION_MARK = 0x3F
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _join_surrogate_pairs(text: str) -> str:
    """JavaScript strings are UTF-16: a high+low surrogate pair is one code point there."""
    return _SURROGATE_PAIR.sub(
        lambda m: chr(
            0x10000 + ((ord(m.group()[0]) - 0xD800) << 10) + (ord(m.group()[1]) - 0xDC00)
        ),
        text,
    )


# ---------------------------------------------------------------------------------------------
# Whitespace collapse
# ---------------------------------------------------------------------------------------------


def _trim_edges(cps: np.ndarray) -> np.ndarray:
    """Drop leading and trailing spaces and newline glyphs."""
    if cps.size == 0 or not (
        cps[0] in (_SPACE, _NEWLINE) or cps[-1] in (_SPACE, _NEWLINE)
    ):
        return cps
    inner = np.flatnonzero((cps != _SPACE) & (cps != _NEWLINE))
    return cps[inner[0] : inner[-1] + 1] if inner.size else cps[:0]


def _collapse(cps: np.ndarray) -> np.ndarray:
    """Each maximal run of whitespace / format characters becomes the newline glyph (the run
    holds a line break), one space (it holds real whitespace) or nothing; then edges trimmed.

    Written to keep few text-sized arrays alive at once (histories run to millions of
    characters): the runs are found from the positions of run characters only.
    """
    in_run = (shared_entries()[cps] & rules.IN_RUN) != 0
    at = np.flatnonzero(in_run)
    if at.size == 0:
        return _trim_edges(cps)
    run_first = np.empty(at.size, dtype=bool)
    run_first[0] = True
    np.not_equal(np.diff(at), 1, out=run_first[1:])
    starts = np.flatnonzero(run_first)
    del run_first
    held = np.bitwise_or.reduceat(shared_entries()[cps[at]], starts)
    breaks = (held & rules.LINE_BREAK) != 0
    printed = breaks | ((held & rules.REAL_SPACE) != 0)
    first = at[starts]
    del at
    keep = ~in_run
    del in_run
    keep[first[printed]] = True
    out = cps[keep]
    del keep
    # Where each printed run's first character landed: its offset less the run characters
    # dropped before it (all run characters before it, but the printed first ones).
    landed = first[printed] - starts[printed] + np.arange(int(printed.sum()))
    out[landed] = np.where(breaks[printed], _NEWLINE, _SPACE)
    return _trim_edges(out)


#: The last (input, result) of ``_input_cps``: shape resolution scans the same history text
#: three times (two fonts' renderability, the CJK test) and then normalizes it.
_LAST_INPUT: tuple[str, np.ndarray] = ("", np.zeros(0, dtype=np.uint32))


def _input_cps(text: str) -> np.ndarray:
    """The reference's ``normalizedInputChars`` as code points: ANSI stripped, runs collapsed,
    edges trimmed.

    Surrogate code points (only in Python strings built oddly, e.g. from ``surrogatepass``) are
    paired up again after every step that could bring a high and a low surrogate together.
    """
    global _LAST_INPUT
    last = _LAST_INPUT  # one read: another thread may replace it
    if last[0] is text:
        return last[1]
    surrogates = not text.isascii() and _SURROGATE.search(text) is not None
    chars = _join_surrogate_pairs(text) if surrogates else text
    if "\x1b" in chars:
        chars = strip_ansi(chars)
        if surrogates:
            chars = _join_surrogate_pairs(chars)
    result = _collapse(_codepoints(chars))
    if surrogates:
        result = _codepoints(_join_surrogate_pairs(_text(result)))
    result.setflags(write=False)
    _LAST_INPUT = (text, result)
    return result


# ---------------------------------------------------------------------------------------------
# Per-code-point decision (the table of :mod:`snapcompact.text.code_points`)
# ---------------------------------------------------------------------------------------------


def _check_font(font: str) -> str:
    if font not in FONTS:
        raise ValueError(f"unknown font {font!r}; known fonts: {', '.join(FONTS)}")
    return font


def _print(cps: np.ndarray, font: str) -> np.ndarray:
    """What each code point prints in ``font``: itself, ``?``, its fold or nothing."""
    table = font_table(font)
    kinds = table.kinds(cps)
    if not np.any(kinds > rules.MARKER):
        return cps
    out = cps.copy()
    out[kinds == FALLBACK] = _QUESTION_MARK
    keep = kinds != rules.DROP
    folding = np.flatnonzero(kinds == rules.FOLD)
    del kinds
    if folding.size == 0:
        return out[keep]
    folds = table.folds
    which = np.searchsorted(folds.code_points, cps[folding])
    lengths = folds.lengths[which]
    # Folds to nothing are dropped; every other fold prints its first character in place ...
    keep[folding[lengths == 0]] = False
    printed = lengths > 0
    out[folding[printed]] = folds.chars[folds.offsets[which[printed]]]
    # ... and the rest of a longer fold (a ligature, a circled number) goes in after it.
    longer = np.flatnonzero(lengths > 1)
    if longer.size == 0:
        return out[keep]
    dropped_at = np.flatnonzero(~keep)
    out = out[keep]
    at = folding[longer]
    at = at - np.searchsorted(dropped_at, at)  # its index once the dropped ones are gone
    extra = lengths[longer] - 1
    within = np.arange(int(extra.sum())) - np.repeat(np.cumsum(extra) - extra, extra)
    chars = folds.chars[np.repeat(folds.offsets[which[longer]] + 1, extra) + within]
    return np.insert(out, np.repeat(at + 1, extra), chars.astype(out.dtype))


def _squeeze_spaces(cps: np.ndarray) -> np.ndarray:
    space = cps == _SPACE
    repeated = space[1:] & space[:-1]
    if repeated.any():
        cps = cps[np.concatenate(([True], ~repeated))]
    return _trim_edges(cps)


def normalize(text: str, font: str = "5x8") -> str:
    """Printable form of ``text`` for a shape drawn in ``font`` (reference ``normalize``)."""
    check_text(text)
    _check_font(font)
    return _text(_squeeze_spaces(_print(_input_cps(text), font)))


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
    table = font_table(_check_font(font))
    kinds = np.bincount(table.kinds(_input_cps(text)), minlength=FALLBACK + 1)
    fallback = int(kinds[FALLBACK])
    graphic = int(kinds[rules.KEEP] + kinds[rules.FOLD]) + fallback
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
    cps = _input_cps(check_text(text))
    entries = shared_entries()[cps]
    counted = ((entries & rules.KIND_MASK) != rules.MARKER) & (cps != _SPACE)
    counted &= (entries & rules.UNRENDERABLE) == 0
    n_counted = int(np.count_nonzero(counted))
    wide = int(np.count_nonzero(counted & ((entries & rules.WIDE) != 0)))
    return wide >= CJK_HEAVY_MIN_WIDE and wide / n_counted >= CJK_HEAVY_WIDE_RATIO


# ---------------------------------------------------------------------------------------------
# Counts that add up over pieces joined by line breaks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScanCounts:
    """What :func:`scan_renderability` (per font) and :func:`cjk_heavy` read of a text, as
    counts: ``graphic[f]`` / ``fallback[f]`` for each of ``fonts``, ``wide`` / ``counted`` for
    the CJK test.

    Why counts: the agent's renderability probe scans its whole history on every pass. The
    history is pieces joined by line breaks, and every count here is a sum over code points
    outside whitespace runs (a run holding a line break prints the uncounted newline glyph),
    so the counts of the whole are the sums of its pieces' counts
    (:func:`piece_scan_counts`), each piece counted once.
    """

    fonts: tuple[str, ...]
    graphic: tuple[int, ...]
    fallback: tuple[int, ...]
    wide: int
    counted: int

    def __add__(self, other: ScanCounts) -> ScanCounts:
        if other.fonts != self.fonts:
            raise ValueError(f"scan counts for fonts {self.fonts} and {other.fonts} do not add")
        return ScanCounts(self.fonts, tuple(map(operator.add, self.graphic, other.graphic)),
                          tuple(map(operator.add, self.fallback, other.fallback)),
                          self.wide + other.wide, self.counted + other.counted)

    def __sub__(self, other: ScanCounts) -> ScanCounts:
        if other.fonts != self.fonts:
            raise ValueError(f"scan counts for fonts {self.fonts} and {other.fonts} do not add")
        return ScanCounts(self.fonts, tuple(map(operator.sub, self.graphic, other.graphic)),
                          tuple(map(operator.sub, self.fallback, other.fallback)),
                          self.wide - other.wide, self.counted - other.counted)

    def renderability(self, font: str) -> Renderability:
        """``scan_renderability(text, font)`` of the counted text."""
        at = self.fonts.index(_check_font(font))
        graphic, fallback = self.graphic[at], self.fallback[at]
        ratio = fallback / graphic if graphic else 0.0
        return Renderability(ratio=ratio, safe=ratio <= SAFE_FALLBACK_RATIO, graphic=graphic,
                             fallback=fallback)

    def cjk_heavy(self) -> bool:
        """``cjk_heavy(text)`` of the counted text."""
        return (self.wide >= CJK_HEAVY_MIN_WIDE
                and self.wide / self.counted >= CJK_HEAVY_WIDE_RATIO)


def _counts_of(cps: np.ndarray, fonts: tuple[str, ...]) -> ScanCounts:
    graphic, fallback = [], []
    for font in fonts:
        kinds = np.bincount(font_table(font).kinds(cps), minlength=FALLBACK + 1)
        fallback.append(int(kinds[FALLBACK]))
        graphic.append(int(kinds[rules.KEEP] + kinds[rules.FOLD]) + fallback[-1])
    entries = shared_entries()[cps]
    counted = ((entries & rules.KIND_MASK) != rules.MARKER) & (cps != _SPACE)
    counted &= (entries & rules.UNRENDERABLE) == 0
    return ScanCounts(fonts, tuple(graphic), tuple(fallback), int(np.count_nonzero(
        counted & ((entries & rules.WIDE) != 0))), int(np.count_nonzero(counted)))


def scan_counts(text: str, fonts: tuple[str, ...]) -> ScanCounts:
    """The counts of a whole text (what :func:`scan_renderability` and :func:`cjk_heavy` read)."""
    check_text(text)
    for font in fonts:
        _check_font(font)
    return _counts_of(_input_cps(text), fonts)


#: A piece between two line breaks is counted with this letter on either side (so no edge is
#: trimmed and its edge runs merge with a line break, as in the joined text).
_SENTINEL = "a"


def piece_scan_counts(piece: str, fonts: tuple[str, ...], *, first: bool = False,
                      last: bool = False) -> ScanCounts | None:
    """The counts ``piece`` adds to a text in which a line break precedes it (unless ``first``:
    it opens the text) and one follows it (unless ``last``).

    ``scan_counts("\\n".join(pieces))`` equals the sum of the pieces' counts (the first piece
    ``first``, the last ``last``). None when a piece cannot be counted apart: it holds an ESC
    (ANSI stripping works on the whole string) or a surrogate (pairs are joined across pieces),
    or, at an edge of the text, nothing survives the edge trim there (the trim would then reach
    the next piece).
    """
    check_text(piece)
    if "\x1b" in piece or (not piece.isascii() and _SURROGATE.search(piece) is not None):
        return None
    counts = _summed_counts(piece, fonts, first, last)
    if counts is not None:
        return counts
    before = "" if first else _SENTINEL + "\n"
    after = "" if last else "\n" + _SENTINEL
    cps = _collapse(_codepoints(before + piece + after))
    if (first or last) and cps.size == len(before) // 2 + len(after) // 2:
        return None  # the edge trim ate the whole piece; it would go on into the neighbour
    counts = _counts_of(cps, fonts)
    sentinels = int(not first) + int(not last)
    return counts - _sentinel_counts(sentinels, fonts) if sentinels else counts


def _summed_counts(piece: str, fonts: tuple[str, ...], first: bool,
                   last: bool) -> ScanCounts | None:
    """:func:`piece_scan_counts` summed per character instead of over numpy arrays (a probe
    counts every new section of a long session, most of them a few hundred characters, where the
    arrays' fixed cost dominates); None where the sum needs the array path: a piece made of
    whitespace runs only, or whose first (``first``) or last (``last``) character outside them
    is the newline glyph, which the edge trim would take too.

    The same sum: in ``"a\\n" + piece + "\\na"`` each character outside a whitespace run counts
    as itself, a run inside the piece as the newline glyph (it holds a line break), one space
    (real whitespace) or nothing, and a run at an edge merges with the line break beside the
    piece into one newline glyph; the two ``a`` are taken off again. At the text's own edge
    (``first``, ``last``) there is no line break: the run there collapses and is trimmed away.
    """
    folded = piece.translate(_run_folds())  # each run character as "\n", " " or U+200B
    outside = _FOLDED_RUN.sub("", folded)
    if not outside or (first and outside[0] == NEWLINE_GLYPH) or (
            last and outside[-1] == NEWLINE_GLYPH):
        return None
    table = _packed_counts(fonts)
    try:
        total = sum(map(table.chars.__getitem__, outside))
    except KeyError:
        table.learn(outside)  # the characters not seen yet, all at once
        total = sum(map(table.chars.__getitem__, outside))
    total += (2 - first - last) * table.chars[NEWLINE_GLYPH]
    inner = _FOLDED_RUN.findall(folded)
    if inner and folded[0] in _FOLDED_RUN_CHARS:
        del inner[0]  # merged with the line break before the piece (counted above), or trimmed
    if inner and folded[-1] in _FOLDED_RUN_CHARS:
        del inner[-1]  # and the one after it
    total += sum(map(table.runs.__getitem__, inner))
    values = table.unpack(total)
    n = len(fonts)
    return ScanCounts(fonts, values[:n], values[n:2 * n], values[2 * n], values[2 * n + 1])


class _Packed:
    """Counts of one character (or one collapsed run) packed into one integer, fields of
    :data:`_FIELD_BITS` bits (graphic per font, fallback per font, wide, counted), so a piece's
    counts are one sum over its characters."""

    def __init__(self, fonts: tuple[str, ...]) -> None:
        self.fonts = fonts
        self.width = 2 * len(fonts) + 2
        packed = self

        class Runs(dict[str, int]):  # keyed by the folded run (see _run_folds)
            def __missing__(self, run: str) -> int:
                value = (packed.chars[NEWLINE_GLYPH] if "\n" in run else packed.chars[" "]
                         if " " in run else 0)
                if len(self) < 4096:
                    self[run] = value
                return value

        #: Character -> its packed counts (:meth:`learn` adds characters).
        self.chars: dict[str, int] = {}
        self.learn(NEWLINE_GLYPH + " ")
        self.runs: dict[str, int] = Runs()

    def learn(self, text: str) -> None:
        """Add the packed counts of the characters of ``text`` not known yet: per character,
        what :func:`_counts_of` counts of it alone (the same tests, element by element)."""
        new = sorted(set(text).difference(self.chars))
        if not new:
            return
        cps = np.array([ord(c) for c in new], dtype=np.uint32)
        columns = []
        for font in self.fonts:
            kinds = font_table(font).kinds(cps)
            columns.append((kinds == rules.KEEP) | (kinds == rules.FOLD) | (kinds == FALLBACK))
        columns += [font_table(font).kinds(cps) == FALLBACK for font in self.fonts]
        entries = shared_entries()[cps]
        counted = ((entries & rules.KIND_MASK) != rules.MARKER) & (cps != _SPACE)
        counted &= (entries & rules.UNRENDERABLE) == 0
        columns += [counted & ((entries & rules.WIDE) != 0), counted]
        rows = np.stack(columns, axis=1).astype(np.int64).tolist()
        for ch, row in zip(new, rows):
            self.chars[ch] = self.pack(tuple(row))

    def pack(self, values: tuple[int, ...]) -> int:
        total = 0
        for k, v in enumerate(values):
            if not 0 <= v < 1 << 16:
                raise ValueError(f"one character's count out of range: {values}")
            total |= v << (_FIELD_BITS * k)
        return total

    def unpack(self, total: int) -> tuple[int, ...]:
        mask = (1 << _FIELD_BITS) - 1
        return tuple((total >> (_FIELD_BITS * k)) & mask for k in range(self.width))


#: Bits per packed field: room for a count of 2**48 characters.
_FIELD_BITS = 48


@cache
def _packed_counts(fonts: tuple[str, ...]) -> _Packed:
    return _Packed(fonts)


#: A run of folded run characters (:func:`_run_folds`), and those characters.
_FOLDED_RUN_CHARS = "\n \u200b"
_FOLDED_RUN = re.compile("[\n \u200b]+")


@cache
def _run_folds() -> dict[int, str]:
    """Every whitespace / format code point (what :func:`_collapse` collapses) -> ``"\\n"`` when
    it is a line break, ``" "`` when it is real whitespace, else U+200B (a format character):
    a folded run tells what it collapses to, and runs are found with a three-character class."""
    entries = shared_entries()
    for ch in ("\n", " ", "\u200b"):
        flags = int(entries[ord(ch)])
        if not flags & rules.IN_RUN or _fold_of(flags) != ch:
            raise AssertionError(f"code point table: {ch!r} is not the run character it stands for")
    return {cp: _fold_of(int(entries[cp]))
            for cp in np.flatnonzero((entries & rules.IN_RUN) != 0).tolist()}


def _fold_of(flags: int) -> str:
    """What a run character with these table flags folds to (U+200B: a format character)."""
    return "\n" if flags & rules.LINE_BREAK else " " if flags & rules.REAL_SPACE else "\u200b"


@lru_cache(maxsize=64)
def _sentinel_counts(sentinels: int, fonts: tuple[str, ...]) -> ScanCounts:
    return _counts_of(np.array([ord(_SENTINEL)] * sentinels, dtype=np.uint32), fonts)
