"""Bitmap fonts as glyph atlases: every covered code point pre-drawn into one character cell.

Why an atlas: a frame is a grid of identical cells, so drawing a page is one gather per cell
row (``coloured_rows()[y, keys]``) instead of one blit per character.  The atlas for a
(font, cell) pair is built once from the font's glyphs, restricted to the code points the
reference covers (``fonts/coverage.json``), with the glyphs the reference draws differently
patched in (``fonts/glyph-patches.txt``: its slashed/barred zeros and six unscii Latin-1
glyphs).  Those glyphs come pre-parsed from ``fonts/bitmap-glyphs.npz``
(:mod:`snapcompact.render.font_table`) when it matches the files, else from the vendored
BDF / hex files.
Glyph placement matches the reference: left = BDF x offset, top = ascent - height - y offset,
measured from the cell's top-left corner; taller pitches leave the extra rows below the glyph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from snapcompact.core import NEWLINE_GLYPH, fonts_dir
from snapcompact.render.font_table import GlyphArrays, StoredFont, stored_font
from snapcompact.text import supported

BITMAP_FONTS = ("5x8", "6x12", "8x13", "8x8")
FONT_FILES = {"5x8": "5x8.bdf", "6x12": "6x12.bdf", "8x13": "8x13.bdf", "8x8": "unscii-8.hex"}
#: unscii has no BDF header: 8x8 cells, baseline 7 px down, glyphs sit one pixel below it.
_UNSCII_ASCENT = 7
_UNSCII_YOFF = -1
#: Code points with a meaning other than a glyph: drawn by the renderer itself or invisible.
_NOT_GLYPHS = frozenset({0x0A, 0x0E, 0x0F, ord(NEWLINE_GLYPH)})

#: One parsed glyph: code point, width, height, x offset, y offset, hex rows (MSB leftmost).
_Found = tuple[int, int, int, int, int, list[str]]


@dataclass(frozen=True)
class Glyph:
    """One bitmap glyph: ``bitmap`` is a bool array (height x width) at BDF offsets."""

    bitmap: np.ndarray
    xoff: int
    yoff: int


@dataclass(frozen=True)
class BitmapFont:
    """A bitmap font: cell size, ascent and its covered glyphs (as arrays)."""

    name: str
    cell_width: int
    cell_height: int
    ascent: int
    arrays: GlyphArrays

    @cached_property
    def glyphs(self) -> dict[int, Glyph]:
        """Glyphs by code point, one bool bitmap each."""
        a = self.arrays
        bits = np.unpackbits(a.rows, axis=1).astype(bool)
        return {
            cp: Glyph(bits[start : start + h, :w], xoff, yoff)
            for cp, w, h, xoff, yoff, start in zip(
                a.cps.tolist(), a.widths.tolist(), a.heights.tolist(), a.xoffs.tolist(),
                a.yoffs.tolist(), a.starts.tolist())
        }


def _glyph_arrays(found: list[_Found]) -> GlyphArrays:
    """Parsed glyphs (any order, one per code point) -> arrays sorted by code point.

    A hex row holds ``ceil(width / 8)`` bytes (a shorter row is the same number with its leading
    zeros left out); rows are padded on the right to a common byte count.
    """
    found = sorted(found)
    widest = max(((w + 7) // 8 for _, w, _, _, _, _ in found), default=1)
    hex_rows: list[str] = []
    for _, w, h, _, _, rows in found:
        nbytes = (w + 7) // 8
        hex_rows.extend(r.rjust(2 * nbytes, "0").ljust(2 * widest, "0") for r in rows[:h])
    packed = np.frombuffer(bytes.fromhex("".join(hex_rows)), np.uint8).reshape(-1, widest)
    columns = np.array([f[:5] for f in found], dtype=np.int64).reshape(-1, 5).T
    cps, widths, heights, xoffs, yoffs = columns
    return GlyphArrays(cps, widths, heights, xoffs, yoffs, packed.copy())


_BDF_HEADER = re.compile(r"^(FONT_ASCENT|FONTBOUNDINGBOX) +(-?\d+)(?: +(-?\d+))?", re.MULTILINE)
_BDF_GLYPH = re.compile(
    r"^ENCODING +(-?\d+)\s*$.*?^BBX +(-?\d+) +(-?\d+) +(-?\d+) +(-?\d+)\s*$.*?"
    r"^BITMAP\s*$(.*?)^ENDCHAR",
    re.MULTILINE | re.DOTALL,
)


def _parse_bdf(text: str,
               wanted: frozenset[int] | None = None) -> tuple[int, int, int, list[_Found]]:
    """Cell size, ascent and glyphs of a BDF font (only the ``wanted`` code points, if given)."""
    header = {m[1]: (int(m[2]), int(m[3] or 0)) for m in _BDF_HEADER.finditer(text)}
    if "FONT_ASCENT" not in header or "FONTBOUNDINGBOX" not in header:
        raise ValueError("BDF file lacks FONT_ASCENT or FONTBOUNDINGBOX")
    ascent = header["FONT_ASCENT"][0]
    cell_w, cell_h = header["FONTBOUNDINGBOX"]
    found: list[_Found] = []
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
    return cell_w, cell_h, ascent, found


def _parse_hex(text: str, wanted: frozenset[int] | None = None) -> list[_Found]:
    found: list[_Found] = []
    for line in text.splitlines():
        code_hex, _, data = line.strip().partition(":")
        if not data or len(data) != 16:  # 8x8 glyphs only; 8x16 entries are not part of unscii-8
            continue
        code = int(code_hex, 16)
        if wanted is None or code in wanted:
            found.append((code, 8, 8, 0, _UNSCII_YOFF, [data[i : i + 2] for i in range(0, 16, 2)]))
    return found


def _glyph_patches() -> dict[str, list[_Found]]:
    """Glyphs the reference draws differently from the files (``fonts/glyph-patches.txt``)."""
    patches: dict[str, list[_Found]] = {}
    header: tuple[str, int, int, int, int, int] | None = None
    rows: list[str] = []

    def flush() -> None:
        if header is not None:
            font, code, w, h, xoff, yoff = header
            bits = np.array([[c == "#" for c in r] for r in rows], dtype=bool)
            if bits.shape != (h, w):
                raise ValueError(f"glyph patch {font} U+{code:04X}: expected {w}x{h}, got "
                                 f"{bits.shape}")
            hex_rows = [row.tobytes().hex() for row in np.packbits(bits, axis=1)]
            patches.setdefault(font, []).append((code, w, h, xoff, yoff, hex_rows))

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


def parse_font(name: str) -> StoredFont:
    """Parse a vendored bitmap font from its files: covered code points only, patches applied."""
    if name not in FONT_FILES:
        raise ValueError(f"unknown bitmap font {name!r}; known: {', '.join(BITMAP_FONTS)}")
    text = (fonts_dir() / FONT_FILES[name]).read_text(encoding="latin-1")
    covered = frozenset(supported(name) - _NOT_GLYPHS)
    if name == "8x8":
        cell_w, cell_h, ascent, found = 8, 8, _UNSCII_ASCENT, _parse_hex(text, covered)
    else:
        cell_w, cell_h, ascent, found = _parse_bdf(text, covered)
    by_code = {f[0]: f for f in found}
    by_code.update((f[0], f) for f in _glyph_patches().get(name, []))
    kept = [f for cp, f in by_code.items() if cp in covered]
    return StoredFont(cell_w, cell_h, ascent, _glyph_arrays(kept))


@lru_cache(maxsize=None)
def load_font(name: str) -> BitmapFont:
    """A vendored bitmap font (covered code points only): from the table, else parsed."""
    if name not in FONT_FILES:
        raise ValueError(f"unknown bitmap font {name!r}; known: {', '.join(BITMAP_FONTS)}")
    font = stored_font(name, FONT_FILES[name]) or parse_font(name)
    return BitmapFont(name, font.cell_width, font.cell_height, font.ascent, font.glyphs)


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

    def key(self, glyph_ids: np.ndarray, inks: np.ndarray) -> np.ndarray:
        """Cell keys into :meth:`coloured_rows`: ``ink * len(masks) + glyph id`` (0: blank)."""
        return inks.astype(np.int32) * np.int32(len(self.masks)) + glyph_ids

    def coloured_rows(self) -> np.ndarray:
        """Masks pre-multiplied by every palette index, by pixel row: ``[y, key]`` is row
        ``y`` of the cell :meth:`key` names (``cell_width`` bytes), so a row of cells is one
        gather per pixel row straight into the canvas."""
        return _coloured_rows(self.font, self.cell_width, self.cell_height)


@lru_cache(maxsize=None)
def atlas(font_name: str, cell_width: int, cell_height: int) -> Atlas:
    """Every glyph of a font drawn into its cell once, so pages render by array lookups."""
    font = load_font(font_name)
    a = font.arrays
    n = a.cps.size
    masks = np.zeros((n + 2, cell_height, cell_width), dtype=np.uint8)
    masks[Atlas.FULL] = 1
    # Every set bit of every glyph row, then moved to its place in the cell and clipped
    # (every covered glyph of the vendored fonts fits its natural cell).
    row, x = np.nonzero(np.unpackbits(a.rows, axis=1))
    glyph = np.repeat(np.arange(n), a.heights)[row]
    inside_box = x < a.widths[glyph]
    row, x, glyph = row[inside_box], x[inside_box], glyph[inside_box]
    y = row - a.starts[glyph] + (font.ascent - a.heights - a.yoffs)[glyph]
    x = x + a.xoffs[glyph]
    inside = (y >= 0) & (y < cell_height) & (x >= 0) & (x < cell_width)
    masks[glyph[inside] + 2, y[inside], x[inside]] = 1
    ids = np.zeros(0x10000, dtype=np.int32)
    ids[a.cps] = np.arange(2, n + 2, dtype=np.int32)
    has_glyph = np.zeros(0x10000, dtype=bool)
    has_glyph[a.cps] = True
    ids[ord(NEWLINE_GLYPH)] = Atlas.FULL
    # With an axis the reductions give arrays; numpy's stubs also allow a bare bool.
    inked = np.asarray(masks.any(axis=(1, 2)))
    full = np.asarray(masks.all(axis=(1, 2)))
    pixel_counts = masks.sum(axis=(1, 2), dtype=np.int64)
    return Atlas(font_name, cell_width, cell_height, masks, ids, has_glyph, inked, full,
                 pixel_counts)


@lru_cache(maxsize=None)
def _coloured_rows(font_name: str, cell_width: int, cell_height: int) -> np.ndarray:
    masks = atlas(font_name, cell_width, cell_height).masks
    by_row = np.ascontiguousarray(masks.transpose(1, 0, 2))
    coloured = np.empty((cell_height, Atlas.INKS, len(masks), cell_width), dtype=np.uint8)
    for ink in range(Atlas.INKS):
        np.multiply(by_row, np.uint8(ink), out=coloured[:, ink])
    return coloured.reshape(cell_height, -1, cell_width)
