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

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from snapcompact._assets import fonts_dir
from snapcompact.coverage import supported
from snapcompact.glyphs import NEWLINE_GLYPH

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
    name: str
    cell_width: int
    cell_height: int
    ascent: int
    glyphs: dict[int, Glyph]


def _parse_bdf(text: str) -> tuple[int, int, int, dict[int, Glyph]]:
    ascent = cell_w = cell_h = 0
    glyphs: dict[int, Glyph] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if line.startswith("FONT_ASCENT "):
            ascent = int(line.split()[1])
        elif line.startswith("FONTBOUNDINGBOX "):
            cell_w, cell_h = (int(v) for v in line.split()[1:3])
        elif line.startswith("STARTCHAR"):
            code = -1
            bbx = (0, 0, 0, 0)
            rows: list[int] = []
            for line in lines:
                if line.startswith("ENCODING "):
                    code = int(line.split()[1])
                elif line.startswith("BBX "):
                    bbx = tuple(int(v) for v in line.split()[1:5])  # type: ignore[assignment]
                elif line == "BITMAP":
                    for line in lines:
                        if line == "ENDCHAR":
                            break
                        rows.append(int(line, 16))
                    break
            w, h, xoff, yoff = bbx
            if code < 0 or w <= 0 or h <= 0:
                continue
            nbytes = (w + 7) // 8
            bits = np.array(
                [[(row >> (8 * nbytes - 1 - x)) & 1 for x in range(w)] for row in rows[:h]],
                dtype=bool,
            ).reshape(h, w)
            glyphs[code] = Glyph(bits, xoff, yoff)
    if not (ascent and cell_w and cell_h):
        raise ValueError("BDF file lacks FONT_ASCENT or FONTBOUNDINGBOX")
    return cell_w, cell_h, ascent, glyphs


def _parse_hex(text: str) -> dict[int, Glyph]:
    glyphs: dict[int, Glyph] = {}
    for line in text.splitlines():
        code_hex, _, data = line.strip().partition(":")
        if not data or len(data) != 16:  # 8x8 glyphs only; 8x16 entries are not part of unscii-8
            continue
        rows = [int(data[i : i + 2], 16) for i in range(0, 16, 2)]
        bits = np.array([[(r >> (7 - x)) & 1 for x in range(8)] for r in rows], dtype=bool)
        glyphs[int(code_hex, 16)] = Glyph(bits, 0, _UNSCII_YOFF)
    return glyphs


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
                raise ValueError(f"glyph patch {font} U+{code:04X}: expected {w}x{h}, got {bits.shape}")
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
    if name == "8x8":
        cell_w, cell_h, ascent, glyphs = 8, 8, _UNSCII_ASCENT, _parse_hex(text)
    else:
        cell_w, cell_h, ascent, glyphs = _parse_bdf(text)
    glyphs.update(_glyph_patches().get(name, {}))
    covered = supported(name) - _NOT_GLYPHS
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
    inked = masks.any(axis=(1, 2))
    full = masks.all(axis=(1, 2))
    pixel_counts = masks.sum(axis=(1, 2), dtype=np.int64)
    return Atlas(font_name, cell_width, cell_height, masks, ids, has_glyph, inked, full, pixel_counts)


@lru_cache(maxsize=None)
def _coloured(font_name: str, cell_width: int, cell_height: int) -> np.ndarray:
    masks = atlas(font_name, cell_width, cell_height).masks
    inks = np.arange(Atlas.INKS, dtype=np.uint8)
    coloured = masks[:, None, :, :] * inks[None, :, None, None]
    return coloured.reshape(-1, cell_height, cell_width)
