"""Silver glyphs placed and drawn into frames, pixel for pixel like the reference.

Why: the reference (pi-natives 18.2.3) draws the Silver pixel font with fontdue 0.9.4 and its
anti-aliased coverage ends up in the frames: blended into RGB in the ``silver16`` shape,
thresholded into palette indices wherever a bitmap shape falls back to Silver (CJK in ``8on16``,
Cyrillic in ``5x8``, ...).  The glyphs come from :mod:`snapcompact.render.silver_raster`
(fontdue's float32 rasterizer, over the outlines :mod:`snapcompact.render.silver_face` reads)
or the shipped table; this module decides where each one lands and how its coverage meets the
canvas.  The rasterizer's public names are re-exported here, so callers import one module.

Placement (checked against the reference; where the upstream digest is vague or off, noted):

* Pixel size, f32: ``16 * min(units * cellW / 16, cellH / 16)``; units = 2 for a wide code point
  in a bitmap shape, else 1 (the Silver shape always uses 1).  In the 17 named shapes that gives
  5, 6, 8, 11, 12, 13 and 16 px.
* Horizontal: ``left = x + max(0, span - ceil(advance)) div 2 + xmin``, span = units * cellW.
  The Silver shape centres the same way in its single cell (the digest only says so for the
  fallback).
* Vertical: ``top = round(cellTop + ascent - height - ymin)`` (f32, half away from zero).  For
  the fallback, ``ascent`` is **the bitmap font's integer ascent** (5x8: 7, 6x12: 10, 8x13: 11,
  unscii: 7); the digest's "bitmapAscent" is that, not Silver's line ascent (using Silver's
  10.1 px at 16 px moves every CJK glyph in 8on16 up a row).  For the Silver shape it is
  Silver's line ascent ``1200 * px / 1900`` (OS/2 typo ascender).
* Silver shape: per channel ``(bg * (255 - a) + ink * a + 127) div 255`` where ``bg`` is the
  *current* pixel (white, or the pale band under repeated rows), zero coverage untouched.
  Fallback: coverage >= 170 -> ink; else >= 56 with black ink -> dim gray (9); else >= 110 ->
  ink; else untouched (the band shows through).  Both clip to the canvas; later glyphs blend
  over / overwrite earlier ones where bitmaps overlap.

Speed: ``draw_silver_cells`` / ``draw_fallback_glyphs`` draw a whole page in one pass, with
the page's glyphs rasterized in one batch and sprites cached per kind of cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from snapcompact.core import is_wide  # noqa: F401  (re-exported: wide glyphs span two cells)
from snapcompact.render.silver_face import FONT_FILE, has_glyph  # noqa: F401  (re-exported)
from snapcompact.render.silver_fallback import stored_sprites  # every sprite at once, when stored
from snapcompact.render.silver_glyph import (  # noqa: F401  (re-exported: part of silver's API)
    COLORED_COVERAGE,
    DESIGN_PX,
    FRINGE_COVERAGE,
    INK_BLACK,
    INK_DIM,
    SOLID_COVERAGE,
    SilverGlyph,
    pixel_size,
)
from snapcompact.render.silver_raster import (  # noqa: F401  (re-exported: part of silver's API)
    line_ascent,
    rasterize,
    rasterize_many,
)

_F32 = np.float32


def _round_half_away(values: np.ndarray) -> np.ndarray:
    """Rust ``f32::round``: halves away from zero (exact: |v| + 0.5 is computed in float64)."""
    v = np.asarray(values, dtype=np.float64)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


def _tops(
    cell_tops: ArrayLike, ascent: np.float32, height: ArrayLike, ymin: ArrayLike
) -> np.ndarray:
    """round(cellTop + ascent - height - ymin), each step in f32 like the reference."""
    v = np.asarray(cell_tops, dtype=_F32) + ascent
    v = v - np.asarray(height, dtype=_F32)
    v = v - np.asarray(ymin, dtype=_F32)
    return _round_half_away(v)


@dataclass(frozen=True)
class _Sprite:
    """A glyph ready to draw into one kind of cell: where it goes, and its inked pixels.

    ``ys``/``xs`` are the inked pixels (row, column) inside the bitmap; ``values`` their
    coverage (Silver shape) or palette index (fallback).  ``mask``/``index`` are the same
    pixels as full arrays, for the single-glyph fast path.
    """

    glyph: SilverGlyph
    dx: int  # centring pad + xmin, from the span's left edge
    ascent: np.float32
    ys: np.ndarray
    xs: np.ndarray
    values: np.ndarray
    mask: np.ndarray
    index: np.ndarray | None = None

    def top(self, cell_top: int) -> int:
        return int(_tops([cell_top], self.ascent, [self.glyph.height], [self.glyph.ymin])[0])


def _centring(glyph: SilverGlyph, span_w: int) -> int:
    advance_px = int(np.ceil(_F32(glyph.advance)))
    return max(0, span_w - advance_px) // 2 + glyph.xmin


def _sprite(glyph: SilverGlyph, span_w: int, ascent: np.float32, values: np.ndarray,
            mask: np.ndarray, index=None) -> _Sprite:
    ys, xs = np.nonzero(mask)
    return _Sprite(glyph, _centring(glyph, span_w), ascent, ys, xs, values[ys, xs], mask, index)


@lru_cache(maxsize=None)
def _silver_sprite(cp: int, cell_w: int, cell_h: int) -> _Sprite:
    px = pixel_size(cell_w, cell_h)
    glyph = rasterize(cp, px)
    cov = glyph.coverage
    return _sprite(glyph, cell_w, _F32(line_ascent(px)), cov.astype(np.uint16), cov > 0)


@lru_cache(maxsize=None)
def _fallback_sprite(cp: int, span_w: int, cell_w: int, cell_h: int, wide: bool, ink: int,
                     ascent: int) -> _Sprite:
    glyph = rasterize(cp, pixel_size(cell_w, cell_h, 2 if wide else 1))
    cov = glyph.coverage
    index = np.zeros(cov.shape, dtype=np.uint8)
    index[cov >= COLORED_COVERAGE] = ink
    if ink == INK_BLACK:
        index[(cov >= FRINGE_COVERAGE) & (cov < SOLID_COVERAGE)] = INK_DIM
    index[cov >= SOLID_COVERAGE] = ink
    mask = (cov >= COLORED_COVERAGE) | ((ink == INK_BLACK) & (cov >= FRINGE_COVERAGE))
    return _sprite(glyph, span_w, _F32(ascent), index, mask, index)


def _check_ink(ink_rgb) -> tuple[int, int, int]:
    ink = tuple(int(c) for c in ink_rgb)
    if len(ink) != 3 or not all(0 <= c <= 255 for c in ink):
        raise ValueError(f"ink_rgb must be three 0..255 channel values, got {ink_rgb!r}")
    return ink


def _check_rgb(rgb: np.ndarray, channels: tuple[int, ...] = (3,)) -> None:
    if (not isinstance(rgb, np.ndarray) or rgb.ndim != 3 or rgb.shape[2] not in channels
        or rgb.dtype != np.uint8):
        shapes = " or ".join(f"(h, w, {c})" for c in channels)
        raise ValueError(f"rgb canvas must be a uint8 array of shape {shapes}, got "
                         f"{getattr(rgb, 'shape', rgb)!r}")


def _check_indexed(indexed: np.ndarray) -> None:
    if not isinstance(indexed, np.ndarray) or indexed.ndim != 2 or indexed.dtype != np.uint8:
        raise ValueError("indexed canvas must be a 2-D uint8 array, got "
                         f"{getattr(indexed, 'shape', indexed)!r}")


def draw_silver_cell(
    rgb: np.ndarray, cp: int, x: int, y: int, cell_w: int, cell_h: int,
    ink_rgb: tuple[int, int, int]
) -> None:
    """Silver-shape path: alpha-blend ``cp`` over the RGB canvas cell at (x, y), clipped.

    Per channel ``(bg * (255 - a) + ink * a + 127) div 255``; zero coverage leaves ``bg``.
    For whole frames prefer :func:`draw_silver_cells` (same pixels, one vectorized pass).
    """
    _check_rgb(rgb)
    sprite = _silver_sprite(int(cp), cell_w, cell_h)
    glyph = sprite.glyph
    if not len(sprite.ys):
        return
    keep, add = _silver_blend_terms(int(cp), cell_w, cell_h, _check_ink(ink_rgb))
    left, top = x + sprite.dx, sprite.top(y)
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + glyph.height, rgb.shape[0]), min(left + glyph.width, rgb.shape[1])
    if y0 < y1 and x0 < x1:
        src = (slice(y0 - top, y1 - top), slice(x0 - left, x1 - left))
        region = rgb[y0:y1, x0:x1]
        region[...] = (region * keep[src] + add[src]) // 255


@lru_cache(maxsize=4096)
def _silver_blend_terms(cp: int, cell_w: int, cell_h: int,
                        ink: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per-pixel terms of ``(bg * keep + add) // 255``: keep = 255 - a, add = ink * a + 127."""
    alpha = _silver_sprite(cp, cell_w, cell_h).glyph.coverage.astype(np.uint16)[..., None]
    keep = np.repeat(255 - alpha, 3, axis=2)
    add = np.asarray(ink, dtype=np.uint16).reshape(1, 1, 3) * alpha + 127
    return keep, add


def draw_silver_cells(rgb: np.ndarray, cps, xs, ys, cell_w: int, cell_h: int, ink_rgb) -> None:
    """Draw many Silver-shape cells in order, exactly as repeated :func:`draw_silver_cell` would.

    ``cps``, ``xs``, ``ys`` are per cell; ``ink_rgb`` is one (r, g, b) for all cells or an
    ``(n, 3)`` array.  Where glyph bitmaps overlap, later cells blend over earlier ones.
    A grey canvas (h, w, 1) takes grey inks, ``(v,)`` or ``(n, 1)``: every channel of an RGB
    canvas blends alike, so a frame whose colours are all grey can be drawn on one channel.
    """
    _check_rgb(rgb, (1, 3))
    channels = rgb.shape[2]
    cp_arr = np.asarray(cps, dtype=np.int64).reshape(-1)
    if not cp_arr.size:
        return
    if len(xs) != cp_arr.size or len(ys) != cp_arr.size:
        raise ValueError(f"cps, xs and ys must have the same length ({cp_arr.size}, {len(xs)}, "
                         f"{len(ys)})")
    inks = np.asarray(ink_rgb, dtype=np.int64)
    if inks.shape == (channels,):
        inks = np.broadcast_to(inks, (cp_arr.size, channels))
    if inks.shape != (cp_arr.size, channels) or inks.min() < 0 or inks.max() > 255:
        what = "(r, g, b)" if channels == 3 else "(grey,)"
        raise ValueError(f"ink_rgb must be {what} or one row of 0..255 values per cell, got "
                         f"shape {inks.shape}")
    distinct, which = _distinct(cp_arr)
    distinct_cps = distinct.tolist()
    rasterize_many(distinct_cps, pixel_size(cell_w, cell_h))
    sprites = [_silver_sprite(cp, cell_w, cell_h) for cp in distinct_cps]
    flat, order, alpha = _place(rgb.shape, sprites, which, xs, ys)
    if flat is None:
        return
    canvas = rgb.reshape(-1, channels)
    alpha = alpha.astype(np.uint32)[:, None]
    uniform = bool((inks == inks[0]).all())
    inks = inks.astype(np.uint32)
    for batch in _conflict_free_batches(flat):
        a = alpha[batch]
        ink = inks[0] if uniform else inks[order[batch]]
        target = flat[batch]
        canvas[target] = (canvas[target] * (255 - a) + ink * a + 127) // 255


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

    ``x``/``cell_top`` are the origin of the glyph's first cell, ``span_w`` the pixels it owns
    (``2 * cell_w`` when ``wide``), ``ascent`` the *bitmap* font's ascent (5x8: 7, 6x12: 10,
    8x13: 11, unscii 8x8: 7).  Pixels below the thresholds keep their value (white or the
    repeat band).  One call draws one repeat copy.
    """
    _check_indexed(indexed)
    if not 0 <= int(ink_index) <= 255:
        raise ValueError(f"ink_index must be a palette index 0..255, got {ink_index!r}")
    sprite = _fallback_sprite(int(cp), int(span_w), cell_w, cell_h, bool(wide), int(ink_index),
                              int(ascent))
    glyph = sprite.glyph
    if not len(sprite.ys):
        return
    left, top = x + sprite.dx, sprite.top(cell_top)
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + glyph.height, indexed.shape[0]), min(left + glyph.width, indexed.shape[1])
    if y0 < y1 and x0 < x1:
        src = (slice(y0 - top, y1 - top), slice(x0 - left, x1 - left))
        assert sprite.index is not None  # fallback sprites always carry their palette indices
        np.copyto(indexed[y0:y1, x0:x1], sprite.index[src], where=sprite.mask[src])


def draw_fallback_glyphs(
    indexed: np.ndarray, cps, xs, cell_tops, cell_w: int, cell_h: int, wides, ink_indices, *,
    ascent: int
) -> None:
    """Many fallback glyphs in order (later ones overwrite), as :func:`draw_fallback_glyph` each.

    Per glyph: code point, x and cell top of its first cell, wide flag (span = 2 cells) and
    palette ink; ``cell_w``/``cell_h``/``ascent`` are the shape's.
    """
    _check_indexed(indexed)
    placed = fallback_pixels(indexed.shape, cps, xs, cell_tops, cell_w, cell_h, wides,
                             ink_indices, ascent=ascent)
    if placed is None:
        return
    flat, _, values = placed
    keep = last_writer(flat)
    indexed.reshape(-1)[flat[keep]] = values[keep]


def last_writer(flat: np.ndarray) -> np.ndarray:
    """Mask of the entries (in draw order) that are each pixel's last write."""
    keep = np.ones(len(flat), dtype=bool)
    sorted_idx = np.argsort(flat, kind="stable")
    sorted_flat = flat[sorted_idx]
    keep[sorted_idx[:-1][sorted_flat[:-1] == sorted_flat[1:]]] = False
    return keep


def fallback_pixels(
    canvas_shape: tuple[int, int], cps, xs, cell_tops, cell_w: int, cell_h: int, wides,
    ink_indices, *, ascent: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Pixels :func:`draw_fallback_glyphs` would write, without writing them.

    Returns (flat canvas index, glyph number in ``cps`` order, palette value) per visible
    entry, in draw order, or ``None`` when nothing is visible.  The frame renderer merges
    these with the bitmap glyphs' ink by text order (a later glyph's ink wins).
    """
    cp_arr = np.asarray(cps, dtype=np.int64).reshape(-1)
    if not cp_arr.size:
        return None
    wide_arr = np.asarray(wides, dtype=bool).reshape(-1)
    ink_arr = np.asarray(ink_indices, dtype=np.int64).reshape(-1)
    if not (len(xs) == len(cell_tops) == wide_arr.size == ink_arr.size == cp_arr.size):
        raise ValueError("cps, xs, cell_tops, wides and ink_indices must have the same length")
    if ink_arr.min() < 0 or ink_arr.max() > 255:
        raise ValueError("ink indices must be palette indices 0..255, got "
                         f"{ink_arr.min()}..{ink_arr.max()}")
    # One sprite per distinct (code point, wide, ink); key = cp << 9 | wide << 8 | ink.
    distinct, which = _distinct((cp_arr << 9) | (wide_arr.astype(np.int64) << 8) | ink_arr)
    stored = stored_sprites(distinct, cell_w, cell_h, int(ascent))
    if stored is not None:
        flat, order, values = place_arrays(tuple(canvas_shape), *stored, which, xs, cell_tops)
        return None if flat is None else (flat, order, values)
    cps, wides = cp_arr.tolist(), wide_arr.tolist()
    for wide in (False, True):
        subset = {cp for cp, w in zip(cps, wides) if w == wide}
        if subset:
            rasterize_many(subset, pixel_size(cell_w, cell_h, 2 if wide else 1))
    sprites = [
        _fallback_sprite(key >> 9, (2 if key >> 8 & 1 else 1) * cell_w, cell_w, cell_h,
                         bool(key >> 8 & 1), key & 0xFF, int(ascent))
        for key in distinct.tolist()
    ]
    flat, order, values = _place(tuple(canvas_shape), sprites, which, xs, cell_tops)
    if flat is None:
        return None
    return flat, order, values


def _place(shape, sprites: list[_Sprite], which: np.ndarray, xs, tops_in):
    """Flat canvas index, draw number and value of every visible inked pixel, in draw order.

    ``sprites`` are the distinct sprites; draw ``i`` shows ``sprites[which[i]]`` at
    ``xs[i]``/``tops_in[i]``.  Per-sprite data is gathered once per distinct sprite, then
    spread over the draws with array indexing.
    """
    m = len(sprites)
    counts_u = np.fromiter((len(s.ys) for s in sprites), dtype=np.int64, count=m)
    if not int(counts_u.sum()):
        return None, None, None
    meta = np.array([(s.glyph.height, s.glyph.ymin, s.dx) for s in sprites], dtype=np.int64)
    meta = meta.reshape(m, 3)
    ascents = np.fromiter((s.ascent for s in sprites), dtype=_F32, count=m)
    return place_arrays(
        shape, counts_u, np.concatenate([s.ys for s in sprites]),
        np.concatenate([s.xs for s in sprites]), np.concatenate([s.values for s in sprites]),
        meta[:, 0], meta[:, 1], meta[:, 2], ascents, which, xs, tops_in,
    )


def place_arrays(shape, counts_u, sprite_ys, sprite_xs, sprite_values, heights, ymins, dxs, ascents,
                 which: np.ndarray, xs, tops_in):
    """:func:`_place` on sprites given as arrays: per distinct sprite its pixel count, glyph
    height, ymin, dx and f32 ascent; its inked pixels' rows, columns and values concatenated
    in sprite order."""
    counts = counts_u[which]
    total = int(counts.sum())
    if not total:
        return None, None, None
    tops = _tops(np.asarray(tops_in, dtype=np.int64), ascents[which], heights[which], ymins[which])
    lefts = np.asarray(xs, dtype=np.int64) + dxs[which]
    n = len(which)
    order = np.repeat(np.arange(n), counts)
    # Index of each drawn pixel in the distinct sprites' concatenated pixel lists.
    first_u = np.cumsum(counts_u) - counts_u
    pixel = np.arange(total) - np.repeat(np.cumsum(counts) - counts - first_u[which], counts)
    y = tops[order] + sprite_ys[pixel]
    x = lefts[order] + sprite_xs[pixel]
    values = sprite_values[pixel]
    visible = (y >= 0) & (y < shape[0]) & (x >= 0) & (x < shape[1])
    if not visible.all():
        y, x, order, values = y[visible], x[visible], order[visible], values[visible]
    return y * shape[1] + x, order, values


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) and, per entry, the index of its key among them."""
    distinct, which = np.unique(keys, return_inverse=True)
    return distinct, which.reshape(-1)


def _conflict_free_batches(flat: np.ndarray):
    """Split draw-ordered pixel entries into rounds with unique pixels, preserving per-pixel
    order."""
    sorted_idx = np.argsort(flat, kind="stable")
    sorted_flat = flat[sorted_idx]
    new_group = np.ones(len(flat), dtype=bool)
    new_group[1:] = sorted_flat[1:] != sorted_flat[:-1]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(len(flat)), 0))
    rank = np.empty(len(flat), dtype=np.int64)
    rank[sorted_idx] = np.arange(len(flat)) - group_start
    if rank.max(initial=0) == 0:
        yield slice(None)
        return
    for r in range(int(rank.max()) + 1):
        yield np.nonzero(rank == r)[0]


@lru_cache(maxsize=None)
def cell_overhang(cp: int, cell_w: int, cell_h: int) -> tuple[int, int, int, int]:
    """How far a Silver-shape glyph's inked pixels reach past its own cell (left, top, right,
    bottom), in px, with one pixel of slack for the float rounding of its top edge.

    The frame renderer uses it to find the rare glyphs that paint into a neighbouring cell."""
    sprite = _silver_sprite(int(cp), cell_w, cell_h)
    if not len(sprite.ys):
        return (0, 0, 0, 0)
    top = sprite.top(0)
    y0, y1 = top + int(sprite.ys.min()) - 1, top + int(sprite.ys.max()) + 1
    x0, x1 = sprite.dx + int(sprite.xs.min()), sprite.dx + int(sprite.xs.max())
    return (max(0, -x0), max(0, -y0), max(0, x1 - (cell_w - 1)), max(0, y1 - (cell_h - 1)))
