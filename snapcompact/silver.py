"""Silver TrueType glyphs, rasterized bit-for-bit like the reference's native renderer.

Why a rasterizer of our own: the reference (pi-natives 18.2.3) draws the Silver pixel font
(``fonts/Silver.ttf``, unitsPerEm 1900, 100 font units per design pixel, so it is *not* crisp at
16 px) with the Rust crate fontdue 0.9.4, and its anti-aliased coverage ends up in the frames:
blended into RGB in the ``silver16`` shape, thresholded into palette indices wherever a bitmap
shape falls back to Silver (CJK in ``8on16``, Cyrillic in ``5x8``, ...).  Any other rasterizer
(FreeType, Pillow) differs by a few coverage levels on most edge pixels, so frames would not be
byte-identical.  This module reproduces fontdue's arithmetic step by step in float32.

What fontdue 0.9.4 does (facts from its public source, each confirmed against reference frames):

* Outline: ttf-parser's contour walk, one segment per pair of consecutive points plus the
  closing segment.  Segments with equal y (horizontal) are dropped; Silver is rectilinear, so
  every kept segment is vertical (fontdue's "v_lines").  The sign of the summed
  ``(y1 - y0) * (x1 + x0)`` decides whether every line is reversed; lines are then moved to a
  y-down frame whose origin is the outline's (xmin, ymax).
* Metrics at ``px``: ``scale = px / 1900`` (f32); scaled bounds; ``offset_x = fract(xmin)``,
  ``offset_y = fract(1 - fract(height) - fract(ymin))`` (each + 1 if negative);
  ``width = ceil(bounds.width + offset_x)``, ``height = ceil(bounds.height + offset_y)`` with
  fontdue's own ceil (``trunc(nextbelow(x + 1))``), ``xmin/ymin = floor(bounds)``,
  ``advance = scale * advance_width``.
* Raster: each line is walked cell row by cell row (start/end rows from truncation after a
  one-ulp "nudge"), adding ``height * (1 - fract(x))`` and ``height * fract(x)`` into a flat
  f32 accumulation buffer of ``w * h + 3`` cells, in line order.
* Bitmap: SSE prefix sum over the *whole flat buffer* in blocks of four lanes
  (``x += x<<1 lane; x += x<<2 lanes; x += carry``), then ``u8(trunc(|x * 255.9|))`` with
  saturation.  Order matters: float32 residue carries across row ends.

Placement (checked against the reference, which differs from the upstream digest in one point):

* Pixel size, f32: ``16 * min(units * cellW / 16, cellH / 16)``; units = 2 for a wide code point
  in a bitmap shape, else 1 (the Silver shape always uses 1).
* Horizontal: ``left = x + max(0, span - ceil(advance)) div 2 + xmin``, span = units * cellW.
  The Silver shape centres the same way in its single cell.
* Vertical: ``top = round(cellTop + ascent - height - ymin)`` (f32, half away from zero), where
  ``ascent`` is **the bitmap font's integer ascent** (5x8: 7, 6x12: 10, 8x13: 11, unscii: 7) for
  the fallback, and Silver's own line ascent ``1200 * scale`` for the Silver shape.  (The digest
  calls it "bitmapAscent" without saying which font it belongs to.)
* Silver shape: per channel ``(bg * (255 - a) + ink * a + 127) div 255`` over the current pixel,
  pixels with zero coverage untouched.  Fallback: coverage >= 170 -> ink; else >= 56 with black
  ink -> dim gray (9); else >= 110 -> ink; else untouched.  Both are clipped to the canvas.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from snapcompact._assets import fonts_dir
from snapcompact.glyphs import WIDE_RANGES

FONT_FILE = "Silver.ttf"
#: Silver's design size and square cell: pixel sizes scale from it.
DESIGN_PX = 16
#: Palette indices used by the fallback path (see the frame renderer's palette).
INK_BLACK = 7
INK_DIM = 9
#: Coverage thresholds of the reference's two-level indexed anti-aliasing.
SOLID_COVERAGE = 170
FRINGE_COVERAGE = 56
COLORED_COVERAGE = 110

_F32 = np.float32
_COVERAGE_GAIN = _F32(255.9)


@dataclass(frozen=True)
class SilverGlyph:
    """One glyph rasterized at one pixel size, with fontdue's metrics.

    ``coverage`` is ``height x width`` uint8 (row 0 at the top); ``xmin``/``ymin`` are the whole
    pixel offsets of the bitmap's left and bottom edges from the pen origin (y up), ``advance``
    the f32 advance width in pixels.
    """

    coverage: np.ndarray
    xmin: int
    ymin: int
    advance: float

    @property
    def width(self) -> int:
        return int(self.coverage.shape[1])

    @property
    def height(self) -> int:
        return int(self.coverage.shape[0])


@dataclass(frozen=True)
class _Outline:
    """A glyph's px-independent geometry: fontdue's repositioned vertical lines, in font units."""

    x: np.ndarray  # float32, distance from the outline's xmin
    y0: np.ndarray  # float32, distance below the outline's ymax (line start)
    y1: np.ndarray  # float32 (line end)
    xmin: float
    ymin: float
    width: float
    height: float
    advance: float


class _Face:
    """Silver.ttf parsed once: code point map, outlines on demand, vertical metrics."""

    def __init__(self) -> None:
        from fontTools.ttLib import TTFont

        self._font = TTFont(str(fonts_dir() / FONT_FILE), lazy=True)
        self.units_per_em = _F32(self._font["head"].unitsPerEm)
        # fontdue keeps the *last* cmap subtable's mapping per code point.
        cmap: dict[int, str] = {}
        for table in self._font["cmap"].tables:
            cmap.update(table.cmap)
        self.cmap = cmap
        hhea = self._font["hhea"]
        os2 = self._font["OS/2"]
        # ttf-parser prefers the OS/2 typo metrics when USE_TYPO_METRICS (bit 7) is set.
        if os2.fsSelection & 0x80:
            self.ascender = os2.sTypoAscender
        else:
            self.ascender = hhea.ascent
        self._glyf = self._font["glyf"]
        self._hmtx = self._font["hmtx"]
        self._outlines: dict[int, _Outline] = {}

    def outline(self, cp: int) -> _Outline:
        found = self._outlines.get(cp)
        if found is None:
            found = self._outlines[cp] = self._build_outline(cp)
        return found

    def _build_outline(self, cp: int) -> _Outline:
        name = self.cmap.get(cp)
        if name is None:
            raise ValueError(f"code point U+{cp:04X} has no glyph in {FONT_FILE}")
        advance = float(self._hmtx[name][0])
        glyph = self._glyf[name]
        empty = np.zeros(0, dtype=_F32)
        if glyph.numberOfContours <= 0:
            if glyph.numberOfContours < 0:
                raise ValueError(f"U+{cp:04X}: composite glyphs are not supported")
            return _Outline(empty, empty, empty, 0.0, 0.0, 0.0, 0.0, advance)
        coords, ends, _flags = glyph.getCoordinates(self._glyf)
        points = np.asarray(coords, dtype=np.int64).reshape(-1, 2)
        starts, stops = [], []
        first = 0
        for last in ends:
            contour = points[first : last + 1]
            starts.append(contour)
            stops.append(np.roll(contour, -1, axis=0))
            first = last + 1
        a = np.concatenate(starts)
        b = np.concatenate(stops)
        if np.any((a[:, 0] != b[:, 0]) & (a[:, 1] != b[:, 1])):
            raise ValueError(f"U+{cp:04X}: outline has a diagonal segment; Silver is rectilinear")
        kept = a[:, 1] != b[:, 1]  # fontdue drops horizontal segments
        a, b = a[kept], b[kept]
        if len(a) == 0:
            return _Outline(empty, empty, empty, 0.0, 0.0, 0.0, 0.0, advance)
        # Orientation: fontdue reverses every line when this signed sum is positive.  The sum is of
        # integers far from zero, so exact integer arithmetic gives the same sign as its f32 one.
        area = int(np.sum((b[:, 1] - a[:, 1]) * (b[:, 0] + a[:, 0])))
        if area > 0:
            a, b = b, a
        xs = np.concatenate([a[:, 0], b[:, 0]])
        ys = np.concatenate([a[:, 1], b[:, 1]])
        xmin, xmax, ymin, ymax = int(xs.min()), int(xs.max()), int(ys.min()), int(ys.max())
        return _Outline(
            x=(a[:, 0] - xmin).astype(_F32),
            y0=np.abs(a[:, 1] - ymax).astype(_F32),
            y1=np.abs(b[:, 1] - ymax).astype(_F32),
            xmin=float(xmin),
            ymin=float(ymin),
            width=float(xmax - xmin),
            height=float(ymax - ymin),
            advance=advance,
        )


@lru_cache(maxsize=1)
def _face() -> _Face:
    return _Face()


def has_glyph(cp: int) -> bool:
    """Whether Silver.ttf maps ``cp`` to a glyph (the reference may still normalize it away)."""
    return cp in _face().cmap


# --- fontdue's float helpers (x86 build), on float32 numpy values -----------------------------


def _bits(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, dtype=_F32).view(np.int32)


def _from_bits(b: np.ndarray) -> np.ndarray:
    return np.asarray(b, dtype=np.int32).view(_F32)


def _cvtt(v: np.ndarray) -> np.ndarray:
    """``cvttps2dq``: truncate to int32; NaN and out-of-range give INT_MIN."""
    v = np.asarray(v, dtype=_F32)
    out = np.full(v.shape, np.iinfo(np.int32).min, dtype=np.int32)
    ok = np.isfinite(v) & (v > -2147483904.0) & (v < 2147483648.0)
    out[ok] = np.trunc(v[ok]).astype(np.int32)
    return out


def _trunc(v: np.ndarray) -> np.ndarray:
    return _cvtt(v).astype(_F32)


def _fract(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=_F32)
    return v - _trunc(v)


def _is_negative(v: np.ndarray) -> np.ndarray:
    return _bits(v) < 0


def _ceil(v: np.ndarray) -> np.ndarray:
    """fontdue's ceil: for non-negative x, trunc of the float just below x + 1."""
    v = np.asarray(v, dtype=_F32)
    up = _from_bits(_bits(v + _F32(1.0)) - 1)
    return _trunc(np.where(_is_negative(v), v, up))


def _floor(v: np.ndarray) -> np.ndarray:
    """fontdue's floor: for negative x, trunc of the float just above x - 1."""
    v = np.asarray(v, dtype=_F32)
    down = _from_bits(_bits(v - _F32(1.0)) - 1)
    return _trunc(np.where(_is_negative(v), down, v))


def _copysign_one(v: np.ndarray) -> np.ndarray:
    return np.where(_is_negative(v), _F32(-1.0), _F32(1.0)).astype(_F32)


# --- rasterization -----------------------------------------------------------------------------


def _as_px(px: float) -> np.float32:
    value = _F32(px)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"pixel size must be a positive finite number, got {px!r}")
    return value


def _metrics(outline: _Outline, scale: np.float32) -> tuple[int, int, int, int, np.float32, np.float32, float]:
    """fontdue's ``metrics_raw``: (xmin, ymin, width, height, offset_x, offset_y, advance)."""
    bxmin = _F32(outline.xmin) * scale
    bymin = _F32(outline.ymin) * scale
    bwidth = _F32(outline.width) * scale
    bheight = _F32(outline.height) * scale
    offset_x = _fract(bxmin + _F32(0.0))
    offset_y = _fract(_F32(1.0) - _fract(bheight) - _fract(bymin))
    if _is_negative(offset_x):
        offset_x = offset_x + _F32(1.0)
    if _is_negative(offset_y):
        offset_y = offset_y + _F32(1.0)
    width = int(_cvtt(_ceil(bwidth + offset_x)))
    height = int(_cvtt(_ceil(bheight + offset_y)))
    xmin = int(_cvtt(_floor(bxmin)))
    ymin = int(_cvtt(_floor(bymin)))
    advance = float(scale * _F32(outline.advance))
    return xmin, ymin, width, height, _F32(offset_x), _F32(offset_y), advance


def _rasterize_batch(cps: list[int], px: np.float32) -> dict[int, SilverGlyph]:
    """Rasterize many glyphs at one size in a single vectorized pass (same result as one by one)."""
    face = _face()
    scale = px / face.units_per_em
    outlines = [face.outline(cp) for cp in cps]
    metrics = [_metrics(o, scale) for o in outlines]
    lengths = np.array([m[2] * m[3] for m in metrics], dtype=np.int64)
    row = int(((lengths.max(initial=0) + 3 + 3) // 4) * 4)  # >= w*h + 3, whole SSE blocks
    buffers = np.zeros((len(cps), row), dtype=_F32)

    line_counts = np.array([len(o.x) for o in outlines], dtype=np.int64)
    if line_counts.sum():
        owner = np.repeat(np.arange(len(cps)), line_counts)
        x = np.concatenate([o.x for o in outlines])
        y0 = np.concatenate([o.y0 for o in outlines])
        y1 = np.concatenate([o.y1 for o in outlines])
        off_x = np.array([m[4] for m in metrics], dtype=_F32)[owner]
        off_y = np.array([m[5] for m in metrics], dtype=_F32)[owner]
        width = np.array([m[2] for m in metrics], dtype=_F32)[owner]
        # Scale into the bitmap (separate multiply and add, as the SSE code does).
        x0 = x * scale + off_x
        y0 = y0 * scale + off_y
        y1 = y1 * scale + off_y
        down = y1 >= y0  # in the y-down frame; fontdue's "end >= start"
        start_nudge = np.where(down, 0, 1).astype(np.int32)
        end_nudge = np.where(y1 > y0, 1, 0).astype(np.int32)
        start_y = _trunc(_from_bits(_bits(y0) - start_nudge))
        end_y = _trunc(_from_bits(_bits(y1) - end_nudge))
        start_x = _trunc(x0)  # vertical lines: both x nudges are "floor" (none)
        target_y = start_y + np.where(down, _F32(1.0), _F32(0.0)).astype(_F32)
        sy = _copysign_one(y1 - y0)
        mid_x = _fract(x0)
        index = _cvtt(start_x + start_y * width).astype(np.int64)
        index_inc = _cvtt(sy * width).astype(np.int64)
        end_index = _cvtt(start_x + end_y * width).astype(np.int64)
        dist = _cvtt(np.abs(start_y - end_y)).astype(np.int64)

        # One contribution per crossed row plus the final partial one, in line order.
        steps = dist + 1
        total = int(steps.sum())
        line_of = np.repeat(np.arange(len(x0)), steps)
        first_of_line = np.cumsum(steps) - steps
        k = np.arange(total) - first_of_line[line_of]
        last = k == dist[line_of]
        heights = np.where(k == 0, y0[line_of] - target_y[line_of], -sy[line_of]).astype(_F32)
        # The final step runs from the last crossed row (or the start) down to y1.
        prev_y = np.where(
            dist[line_of] == 0,
            y0[line_of],
            target_y[line_of] + (dist[line_of] - 1).astype(_F32) * sy[line_of],
        ).astype(_F32)
        heights = np.where(last, prev_y - y1[line_of], heights).astype(_F32)
        cells = np.where(last, end_index[line_of], index[line_of] + k * index_inc[line_of])
        m = heights * mid_x[line_of]
        base = owner[line_of] * row + cells
        targets = np.empty(2 * total, dtype=np.int64)
        values = np.empty(2 * total, dtype=_F32)
        targets[0::2] = base
        targets[1::2] = base + 1
        values[0::2] = heights - m
        values[1::2] = m
        np.add.at(buffers.reshape(-1), targets, values)  # sequential f32 adds, in order

    # SSE prefix sum in blocks of four lanes, carry = previous block's last lane.
    blocks = buffers.reshape(len(cps), row // 4, 4)
    zero = np.zeros_like(blocks[..., :1])
    step1 = blocks + np.concatenate([zero, blocks[..., :3]], axis=-1)
    step2 = step1 + np.concatenate([zero, zero, step1[..., :2]], axis=-1)
    carry = np.cumsum(step2[..., 3], axis=1, dtype=_F32)  # sequential, like the SSE loop
    carry = np.concatenate([np.zeros_like(carry[:, :1]), carry[:, :-1]], axis=1)
    sums = step2 + carry[..., None]
    scaled = np.abs(sums * _COVERAGE_GAIN)
    ints = _cvtt(scaled)
    coverage_all = np.where(ints < 0, 0, np.minimum(ints, 255)).astype(np.uint8).reshape(len(cps), row)

    out: dict[int, SilverGlyph] = {}
    for i, cp in enumerate(cps):
        xmin, ymin, w, h, _ox, _oy, advance = metrics[i]
        coverage = coverage_all[i, : w * h].reshape(h, w).copy()
        coverage.setflags(write=False)
        out[cp] = SilverGlyph(coverage=coverage, xmin=xmin, ymin=ymin, advance=advance)
    return out


_CACHE: dict[tuple[int, float], SilverGlyph] = {}


def rasterize_many(cps, px: float) -> dict[int, SilverGlyph]:
    """Rasterize (and cache) every code point in ``cps`` at ``px``; one vectorized pass for all misses.

    The frame renderer should call this once per page with the page's distinct fallback code
    points: a cold frame of 9,604 distinct CJK glyphs then costs one batch, not 9,604 calls.
    """
    size = _as_px(px)
    key_px = float(size)
    wanted = list(dict.fromkeys(int(cp) for cp in cps))
    missing = [cp for cp in wanted if (cp, key_px) not in _CACHE]
    if missing:
        face = _face()
        unknown = [cp for cp in missing if cp not in face.cmap]
        if unknown:
            shown = ", ".join(f"U+{cp:04X}" for cp in unknown[:5])
            raise ValueError(f"no glyph in {FONT_FILE} for {shown}")
        for cp, glyph in _rasterize_batch(missing, size).items():
            _CACHE[(cp, key_px)] = glyph
    return {cp: _CACHE[(cp, key_px)] for cp in wanted}


def rasterize(cp: int, px: float) -> SilverGlyph:
    """fontdue's ``Font::rasterize(char, px)`` for Silver: coverage bitmap plus metrics (cached)."""
    return rasterize_many((cp,), px)[int(cp)]


def line_ascent(px: float) -> float:
    """Silver's line ascent at ``px`` (fontdue ``horizontal_line_metrics(px).ascent``), f32."""
    face = _face()
    return float(_F32(face.ascender) * (_as_px(px) / face.units_per_em))


def is_wide(cp: int) -> bool:
    """East Asian wide code point: two cells (and a doubled pixel size) in bitmap shapes."""
    return any(lo <= cp <= hi for lo, hi in WIDE_RANGES)


def pixel_size(cell_w: int, cell_h: int, units: int = 1) -> float:
    """Reference pixel size, f32: ``16 * min(units * cell_w / 16, cell_h / 16)``."""
    for name, value in (("cell_w", cell_w), ("cell_h", cell_h), ("units", units)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    sx = _F32(units * cell_w) / _F32(DESIGN_PX)
    sy = _F32(cell_h) / _F32(DESIGN_PX)
    return float(_F32(DESIGN_PX) * min(sx, sy))


def _round_half_away(value: np.float32) -> int:
    magnitude = np.floor(np.abs(value) + _F32(0.5)) if False else None  # placeholder, see below
    del magnitude
    v = float(value)
    r = int(np.floor(abs(v) + 0.5))
    # Exact for f32 inputs: abs(v) + 0.5 is computed in double, which holds it without rounding.
    return r if v >= 0 else -r


def _placement(glyph: SilverGlyph, x: int, cell_top: int, span_w: int, ascent: np.float32) -> tuple[int, int]:
    advance_cells = int(np.ceil(_F32(glyph.advance)))
    pad = max(0, span_w - advance_cells) // 2
    left = x + pad + glyph.xmin
    top_f = _F32(cell_top) + ascent - _F32(glyph.height) - _F32(glyph.ymin)
    return left, _round_half_away(_F32(top_f))


def _clip(canvas_h: int, canvas_w: int, glyph: SilverGlyph, left: int, top: int):
    """Canvas and glyph slices of the visible part, or None when nothing is visible."""
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + glyph.height, canvas_h), min(left + glyph.width, canvas_w)
    if y0 >= y1 or x0 >= x1:
        return None
    return (slice(y0, y1), slice(x0, x1)), (slice(y0 - top, y1 - top), slice(x0 - left, x1 - left))


def draw_silver_cell(
    rgb: np.ndarray, cp: int, x: int, y: int, cell_w: int, cell_h: int, ink_rgb: tuple[int, int, int]
) -> None:
    """Silver-shape path: alpha-blend ``cp`` into the RGB canvas cell at (x, y), clipped."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"rgb canvas must be uint8 of shape (h, w, 3), got {rgb.dtype} {rgb.shape}")
    px = pixel_size(cell_w, cell_h)
    glyph = rasterize(cp, px)
    if glyph.coverage.size == 0:
        return
    left, top = _placement(glyph, x, y, cell_w, _F32(line_ascent(px)))
    clipped = _clip(rgb.shape[0], rgb.shape[1], glyph, left, top)
    if clipped is None:
        return
    dst, src = clipped
    alpha = glyph.coverage[src].astype(np.uint32)[..., None]
    region = rgb[dst]
    ink = np.asarray(ink_rgb, dtype=np.uint32).reshape(1, 1, 3)
    blended = (region.astype(np.uint32) * (255 - alpha) + ink * alpha + 127) // 255
    rgb[dst] = np.where(alpha > 0, blended, region).astype(np.uint8)


def draw_fallback_glyph(
    indexed: np.ndarray,
    cp: int,
    x: int,
    cell_top: int,
    span_w: int,
    cell_h: int,
    cell_w: int,
    wide: bool,
    ink_index: int,
    *,
    ascent: int,
) -> None:
    """Bitmap-shape fallback: draw ``cp`` thresholded into the palette-index canvas, clipped.

    ``x``/``cell_top`` are the first cell's origin, ``span_w`` the pixels the glyph owns
    (``2 * cell_w`` when ``wide``), ``ascent`` the *bitmap* font's ascent (5x8: 7, 6x12: 10,
    8x13: 11, 8x8 unscii: 7).  One call draws one repeat copy.
    """
    if indexed.ndim != 2 or indexed.dtype != np.uint8:
        raise ValueError(f"indexed canvas must be 2-D uint8, got {indexed.dtype} {indexed.shape}")
    px = pixel_size(cell_w, cell_h, 2 if wide else 1)
    glyph = rasterize(cp, px)
    if glyph.coverage.size == 0:
        return
    left, top = _placement(glyph, x, cell_top, span_w, _F32(ascent))
    clipped = _clip(indexed.shape[0], indexed.shape[1], glyph, left, top)
    if clipped is None:
        return
    dst, src = clipped
    cov = glyph.coverage[src]
    mapped = np.zeros(cov.shape, dtype=np.uint8)  # 0 = leave the pixel alone
    mapped[cov >= COLORED_COVERAGE] = ink_index
    if ink_index == INK_BLACK:
        mapped[(cov >= FRINGE_COVERAGE) & (cov < SOLID_COVERAGE)] = INK_DIM
    mapped[cov >= SOLID_COVERAGE] = ink_index
    region = indexed[dst]
    hit = (cov >= COLORED_COVERAGE) | ((ink_index == INK_BLACK) & (cov >= FRINGE_COVERAGE))
    region[hit] = mapped[hit]
