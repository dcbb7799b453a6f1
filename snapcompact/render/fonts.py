"""Bitmap fonts as glyph atlases: every covered code point pre-drawn into one character cell.

Why an atlas: a frame is a grid of identical cells, so drawing a page is a single numpy gather
(``atlas[glyph_ids]``) instead of one blit per character.  The atlas for a (font, cell) pair is
built once from the vendored BDF / hex files, restricted to the code points the reference covers
(``fonts/coverage.json``), with the glyphs the reference draws differently patched in
(``fonts/glyph-patches.txt``: its slashed/barred zeros and six unscii Latin-1 glyphs).
Glyph placement matches the reference: left = BDF x offset, top = ascent - height - y offset,
measured from the cell's top-left corner; taller pitches leave the extra rows below the glyph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from snapcompact.core import NEWLINE_GLYPH, fonts_dir
from snapcompact.text import supported

BITMAP_FONTS = ("5x8", "6x12", "8x13", "8x8")
_FILES = {"5x8": "5x8.bdf", "6x12": "6x12.bdf", "8x13": "8x13.bdf", "8x8": "unscii-8.hex"}
#: unscii has no BDF header: 8x8 cells, baseline 7 px down, glyphs sit one pixel below it.
_UNSCII_ASCENT = 7
_UNSCII_YOFF = -1
#: Code points with a meaning other than a glyph: drawn by the renderer itself or invisible.
_NOT_GLYPHS = frozenset({0x0A, 0x0E, 0x0F, ord(NEWLINE_GLYPH)})


@dataclass(frozen=True)
class Glyph:
    """One bitmap glyph: ``bitmap`` is a bool array (height x width) at BDF offsets."""

    bitmap: np.ndarray
    xoff: int
    yoff: int


@dataclass(frozen=True)
class BitmapFont:
    """A parsed BDF font: cell size, ascent and its glyphs by code point."""

    name: str
    cell_width: int
    cell_height: int
    ascent: int
    glyphs: dict[int, Glyph]


def _unpack_glyphs(found: list[tuple[int, int, int, int, int, list[str]]]) -> dict[int, Glyph]:
    """(code, width, height, xoff, yoff, hex rows) per glyph -> glyphs, unpacked in one pass.

    A hex row holds ``ceil(width / 8)`` bytes, most significant bit leftmost (a shorter row is
    the same number with its leading zeros left out); rows are padded on the right to a common
    byte count so that every row of every glyph unpacks at once.
    """
    if not found:
        return {}
    widest = max((w + 7) // 8 for _, w, _, _, _, _ in found)
    hex_rows: list[str] = []
    for _, w, h, _, _, rows in found:
        nbytes = (w + 7) // 8
        hex_rows.extend(r.rjust(2 * nbytes, "0").ljust(2 * widest, "0") for r in rows[:h])
    packed = np.frombuffer(bytes.fromhex("".join(hex_rows)), np.uint8).reshape(-1, widest)
    bits = np.unpackbits(packed, axis=1).astype(bool)
    glyphs: dict[int, Glyph] = {}
    start = 0
    for code, w, h, xoff, yoff, _ in found:
        glyphs[code] = Glyph(bits[start : start + h, :w], xoff, yoff)
        start += h
    return glyphs


_BDF_HEADER = re.compile(r"^(FONT_ASCENT|FONTBOUNDINGBOX) +(-?\d+)(?: +(-?\d+))?", re.MULTILINE)
_BDF_GLYPH = re.compile(
    r"^ENCODING +(-?\d+)\s*$.*?^BBX +(-?\d+) +(-?\d+) +(-?\d+) +(-?\d+)\s*$.*?"
    r"^BITMAP\s*$(.*?)^ENDCHAR",
    re.MULTILINE | re.DOTALL,
)


def _parse_bdf(text: str,
               wanted: frozenset[int] | None = None) -> tuple[int, int, int, dict[int, Glyph]]:
    """Cell size, ascent and glyphs of a BDF font (only the ``wanted`` code points, if given)."""
    header = {m[1]: (int(m[2]), int(m[3] or 0)) for m in _BDF_HEADER.finditer(text)}
    if "FONT_ASCENT" not in header or "FONTBOUNDINGBOX" not in header:
        raise ValueError("BDF file lacks FONT_ASCENT or FONTBOUNDINGBOX")
    ascent = header["FONT_ASCENT"][0]
    cell_w, cell_h = header["FONTBOUNDINGBOX"]
    found: list[tuple[int, int, int, int, int, list[str]]] = []
    for m in _BDF_GLYPH.finditer(text):
        code = int(m[1])
        if wanted is not None and code not in wanted:
            continue
        w, h, xoff, yoff = int(m[2]), int(m[3]), int(m[4]), int(m[5])
        if code < 0 or w <= 0 or h <= 0:
            continue
        rows = m[6].split()
        if len(rows) < h:
            raise ValueError(f"BDF glyph {code} has {len(rows)} bitmap rows, expected {h}")
        found.append((code, w, h, xoff, yoff, rows))
    if not (ascent and cell_w and cell_h):
        raise ValueError("BDF file lacks FONT_ASCENT or FONTBOUNDINGBOX")
    return cell_w, cell_h, ascent, _unpack_glyphs(found)


def _parse_hex(text: str, wanted: frozenset[int] | None = None) -> dict[int, Glyph]:
    found = []
    for line in text.splitlines():
        code_hex, _, data = line.strip().partition(":")
        if not data or len(data) != 16:  # 8x8 glyphs only; 8x16 entries are not part of unscii-8
            continue
        code = int(code_hex, 16)
        if wanted is None or code in wanted:
            found.append((code, 8, 8, 0, _UNSCII_YOFF, [data[i : i + 2] for i in range(0, 16, 2)]))
    return _unpack_glyphs(found)


def _glyph_patches() -> dict[str, dict[int, Glyph]]:
    """Glyphs the reference draws differently from the files (``fonts/glyph-patches.txt``)."""
    patches: dict[str, dict[int, Glyph]] = {}
    header: tuple[str, int, int, int, int, int] | None = None
    rows: list[str] = []

    def flush() -> None:
        if header is not None:
            font, code, w, h, xoff, yoff = header
            bits = np.array([[c == "#" for c in r] for r in rows], dtype=bool)
            if bits.shape != (h, w):
                raise ValueError(f"glyph patch {font} U+{code:04X}: expected {w}x{h}, got "
                                 f"{bits.shape}")
            patches.setdefault(font, {})[code] = Glyph(bits, xoff, yoff)

    for line in (fonts_dir() / "glyph-patches.txt").read_text().splitlines():
        if line.startswith("font "):
            flush()
            parts = line.split()  # font NAME char HEX bbx W H XOFF YOFF
            w, h, xoff, yoff = (int(v) for v in parts[5:9])
            header, rows = (parts[1], int(parts[3], 16), w, h, xoff, yoff), []
        elif line and set(line) <= {"#", "."} and header is not None:
            rows.append(line)
    flush()
    return patches


@lru_cache(maxsize=None)
def load_font(name: str) -> BitmapFont:
    """Parse a vendored bitmap font, keeping only the code points the reference covers."""
    if name not in _FILES:
        raise ValueError(f"unknown bitmap font {name!r}; known: {', '.join(BITMAP_FONTS)}")
    text = (fonts_dir() / _FILES[name]).read_text(encoding="latin-1")
    covered = frozenset(supported(name) - _NOT_GLYPHS)
    if name == "8x8":
        cell_w, cell_h, ascent, glyphs = 8, 8, _UNSCII_ASCENT, _parse_hex(text, covered)
    else:
        cell_w, cell_h, ascent, glyphs = _parse_bdf(text, covered)
    glyphs.update(_glyph_patches().get(name, {}))
    glyphs = {cp: g for cp, g in glyphs.items() if cp in covered}
    glyphs = {cp: g for cp, g in glyphs.items() if cp in covered}
    return BitmapFont(name, cell_w, cell_h, ascent, glyphs)


@dataclass(frozen=True)
class Atlas:
    """Cell-sized ink masks for one font at one cell pitch.

    ``masks[i]`` is a uint8 (cell_height x cell_width) array of 0/1; id 0 is the blank cell and
    id 1 the full block (the newline glyph).  ``ids`` maps a BMP code point to its mask id
    (0 when the font lacks it); code points above the BMP are never in a bitmap font.
    """

    font: str
    cell_width: int
    cell_height: int
    masks: np.ndarray
    ids: np.ndarray
    has_glyph: np.ndarray
    inked: np.ndarray
    full: np.ndarray
    pixel_counts: np.ndarray

    BLANK = 0
    FULL = 1
    INKS = 10

    def coloured(self) -> np.ndarray:
        """Masks pre-multiplied by every palette index: ``[id * INKS + ink]`` is one cell."""
        return _coloured(self.font, self.cell_width, self.cell_height)


@lru_cache(maxsize=None)
def atlas(font_name: str, cell_width: int, cell_height: int) -> Atlas:
    """Every glyph of a font drawn into its cell once, so pages render by array lookups."""
    font = load_font(font_name)
    codes = sorted(font.glyphs)
    masks = np.zeros((len(codes) + 2, cell_height, cell_width), dtype=np.uint8)
    masks[Atlas.FULL] = 1
    ids = np.zeros(0x10000, dtype=np.int32)
    has_glyph = np.zeros(0x10000, dtype=bool)
    for i, cp in enumerate(codes, start=2):
        g = font.glyphs[cp]
        h, w = g.bitmap.shape
        top = font.ascent - h - g.yoff
        left = g.xoff
        # Clip to the cell; every covered glyph of the vendored fonts fits its natural cell.
        y0, y1 = max(0, top), min(cell_height, top + h)
        x0, x1 = max(0, left), min(cell_width, left + w)
        if y1 > y0 and x1 > x0:
            masks[i, y0:y1, x0:x1] = g.bitmap[y0 - top : y1 - top, x0 - left : x1 - left]
        ids[cp] = i
        has_glyph[cp] = True
    ids[ord(NEWLINE_GLYPH)] = Atlas.FULL
    # With an axis the reductions give arrays; numpy's stubs also allow a bare bool.
    inked = np.asarray(masks.any(axis=(1, 2)))
    full = np.asarray(masks.all(axis=(1, 2)))
    pixel_counts = masks.sum(axis=(1, 2), dtype=np.int64)
    return Atlas(font_name, cell_width, cell_height, masks, ids, has_glyph, inked, full,
                 pixel_counts)


@lru_cache(maxsize=None)
def _coloured(font_name: str, cell_width: int, cell_height: int) -> np.ndarray:
    masks = atlas(font_name, cell_width, cell_height).masks
    inks = np.arange(Atlas.INKS, dtype=np.uint8)
    coloured = masks[:, None, :, :] * inks[None, :, None, None]
    return coloured.reshape(-1, cell_height, cell_width)
