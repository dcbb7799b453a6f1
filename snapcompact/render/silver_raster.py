"""Silver glyphs rasterized bit-for-bit like the reference's native renderer (fontdue 0.9.4).

Why a rasterizer of our own: the reference (pi-natives 18.2.3) draws the Silver pixel font
(``fonts/Silver.ttf``, unitsPerEm 1900, 100 font units per design pixel, so it is *not* crisp at
16 px) with the Rust crate fontdue 0.9.4, and its anti-aliased coverage ends up in the frames
(see :mod:`snapcompact.render.silver` for how it is placed and drawn).  Any other rasterizer
(FreeType, Pillow) differs by a few coverage levels on most edge pixels, so frames would not be
byte-identical.  This module reproduces fontdue's arithmetic step by step in float32, on the
outlines :mod:`snapcompact.render.silver_face` reads.

What fontdue 0.9.4 does (facts from its public source, each confirmed against reference frames):

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

Speed: glyphs are rasterized in vectorized batches (:func:`rasterize_many`) and cached per
(code point, px); sizes stored in the shipped table (:mod:`snapcompact.render.silver_table`)
are read from it instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from snapcompact.render import silver_table  # pre-rasterized glyphs, when the size is stored
from snapcompact.render.silver_face import Outlines, load_face, segment_starts
from snapcompact.render.silver_glyph import SilverGlyph

_F32 = np.float32
_COVERAGE_GAIN = _F32(255.9)
_INT32_MIN = np.iinfo(np.int32).min


# --- fontdue's float helpers (x86 build), on float32 numpy values -----------------------------


def _bits(v) -> np.ndarray:
    return np.asarray(v, dtype=_F32).view(np.int32)


def _from_bits(b) -> np.ndarray:
    return np.asarray(b, dtype=np.int32).view(_F32)


def _cvtt(v) -> np.ndarray:
    """``cvttps2dq``: truncate to int32; NaN and out-of-range give INT_MIN."""
    v = np.asarray(v, dtype=_F32)
    ok = np.isfinite(v) & (v > _F32(-2147483648.0)) & (v < _F32(2147483648.0))
    return np.where(ok, np.trunc(np.where(ok, v, 0)).astype(np.int32), np.int32(_INT32_MIN))


def _trunc(v) -> np.ndarray:
    return _cvtt(v).astype(_F32)


def _fract(v) -> np.ndarray:
    v = np.asarray(v, dtype=_F32)
    return v - _trunc(v)


def _is_negative(v) -> np.ndarray:
    return _bits(v) < 0


def _ceil(v) -> np.ndarray:
    """fontdue's ceil: for x >= +0, trunc of the float just below x + 1; else trunc."""
    v = np.asarray(v, dtype=_F32)
    up = _from_bits(_bits(v + _F32(1.0)) - 1)
    return _trunc(np.where(_is_negative(v), v, up))


def _floor(v) -> np.ndarray:
    """fontdue's floor: for x <= -0, trunc of the float just above x - 1; else trunc."""
    v = np.asarray(v, dtype=_F32)
    down = _from_bits(_bits(v - _F32(1.0)) - 1)
    return _trunc(np.where(_is_negative(v), down, v))


def _copysign_one(v) -> np.ndarray:
    return np.where(_is_negative(v), _F32(-1.0), _F32(1.0)).astype(_F32)


# --- rasterization -----------------------------------------------------------------------------


def as_px(px: float) -> np.float32:
    """``px`` as fontdue's f32 pixel size; anything but a positive finite number is refused."""
    value = _F32(px)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"pixel size must be a positive finite number, got {px!r}")
    return value


@dataclass(frozen=True)
class _Metrics:
    """fontdue's ``metrics_raw`` for a batch of glyphs at one size.

    ``offset_x``/``offset_y`` are the f32 sub-pixel offsets of the outline inside its bitmap,
    ``widths``/``heights`` the bitmap sizes (int64), the rest the glyphs' whole-pixel bounds
    and f32 advances as Python numbers.
    """

    offset_x: np.ndarray
    offset_y: np.ndarray
    widths: np.ndarray
    heights: np.ndarray
    xmins: list[int]
    ymins: list[int]
    advances: list[float]


def _metrics(geo: Outlines, scale: np.float32) -> _Metrics:
    """Bounds, sub-pixel offsets and bitmap size of every glyph, in fontdue's f32 steps."""
    bxmin, bymin = geo.xmin * scale, geo.ymin * scale
    bwidth, bheight = geo.width * scale, geo.height * scale
    offset_x = _fract(bxmin + _F32(0.0))
    offset_y = _fract(_F32(1.0) - _fract(bheight) - _fract(bymin))
    offset_x = np.where(_is_negative(offset_x), offset_x + _F32(1.0), offset_x).astype(_F32)
    offset_y = np.where(_is_negative(offset_y), offset_y + _F32(1.0), offset_y).astype(_F32)
    return _Metrics(
        offset_x=offset_x,
        offset_y=offset_y,
        widths=_cvtt(_ceil(bwidth + offset_x)).astype(np.int64),
        heights=_cvtt(_ceil(bheight + offset_y)).astype(np.int64),
        xmins=_cvtt(_floor(bxmin)).tolist(),
        ymins=_cvtt(_floor(bymin)).tolist(),
        advances=(scale * geo.advance).astype(_F32).tolist(),
    )


@dataclass(frozen=True)
class _LineWalks:
    """Where each vertical line starts and ends in its glyph's accumulation buffer.

    Per line (f32 unless noted): scaled ``y0``/``y1``; ``target_y``, the first whole row
    boundary it crosses; ``sy``, +1 or -1 by direction; ``mid_x``, the fraction of the line's x
    inside its cell; and (int64) the buffer ``index`` of its first cell, the step
    ``index_inc`` per row, the ``end_index`` of its last cell, the rows crossed ``dist`` and
    the glyph that ``owner``s it.
    """

    y0: np.ndarray
    y1: np.ndarray
    target_y: np.ndarray
    sy: np.ndarray
    mid_x: np.ndarray
    index: np.ndarray
    index_inc: np.ndarray
    end_index: np.ndarray
    dist: np.ndarray
    owner: np.ndarray


def _line_walks(geo: Outlines, scale: np.float32, metrics: _Metrics) -> _LineWalks:
    """Scale each line into its bitmap and find its first and last cell (fontdue's ``Line::new``).

    Separate multiply and add, as the SSE code does; the row nudges are one ulp down.
    """
    owner = np.repeat(np.arange(len(metrics.widths)), geo.line_counts)
    width = metrics.widths.astype(_F32)[owner]
    x0 = geo.x * scale + metrics.offset_x[owner]
    y0 = geo.y0 * scale + metrics.offset_y[owner]
    y1 = geo.y1 * scale + metrics.offset_y[owner]
    down = y1 >= y0  # y-down frame; Line::new's "end >= start"
    start_y = _trunc(_from_bits(_bits(y0) - np.where(down, 0, 1).astype(np.int32)))
    end_y = _trunc(_from_bits(_bits(y1) - np.where(y1 > y0, 1, 0).astype(np.int32)))
    start_x = _trunc(x0)  # vertical lines: both x nudges are "floor", i.e. none
    sy = _copysign_one(y1 - y0)
    return _LineWalks(
        y0=y0,
        y1=y1,
        target_y=(start_y + np.where(down, _F32(1.0), _F32(0.0))).astype(_F32),
        sy=sy,
        mid_x=_fract(x0),
        index=_cvtt(start_x + start_y * width).astype(np.int64),
        index_inc=_cvtt(sy * width).astype(np.int64),
        end_index=_cvtt(start_x + end_y * width).astype(np.int64),
        dist=_cvtt(np.abs(start_y - end_y)).astype(np.int64),
        owner=owner,
    )


def _v_line_adds(walks: _LineWalks, row: int) -> tuple[np.ndarray, np.ndarray]:
    """fontdue's ``v_line``: the (flat buffer cell, f32 value) adds of every line, in line order.

    One add pair per crossed row, then the final partial one; each pair puts
    ``height * (1 - fract(x))`` into the line's cell and ``height * fract(x)`` into the next.
    """
    steps = walks.dist + 1
    line_of = np.repeat(np.arange(len(steps)), steps)
    k = np.arange(int(steps.sum())) - segment_starts(steps)[line_of]
    dist_l, sy_l, target_l = walks.dist[line_of], walks.sy[line_of], walks.target_y[line_of]
    y0_l = walks.y0[line_of]
    last = k == dist_l
    before_last = np.where(
        dist_l == 0, y0_l, target_l + (dist_l - 1).astype(_F32) * sy_l
    ).astype(_F32)  # y where the final partial step starts (exact: whole numbers)
    h = np.where(last, before_last - walks.y1[line_of], np.where(k == 0, y0_l - target_l, -sy_l))
    h = h.astype(_F32)
    cells = np.where(last, walks.end_index[line_of],
                     walks.index[line_of] + k * walks.index_inc[line_of])
    m = h * walks.mid_x[line_of]
    flat = walks.owner[line_of] * row + cells
    targets = np.empty(2 * len(flat), dtype=np.int64)
    values = np.empty(2 * len(flat), dtype=_F32)
    targets[0::2], targets[1::2] = flat, flat + 1
    values[0::2], values[1::2] = h - m, m
    return targets, values


def _get_bitmap(buffers: np.ndarray) -> np.ndarray:
    """fontdue's ``get_bitmap``: SSE prefix sum in blocks of four lanes, then u8 coverage.

    The carry into a block is the previous block's last lane, summed sequentially like the SSE
    loop; ``u8(trunc(|x * 255.9|))`` saturates as packs/packus do.
    """
    n, row = buffers.shape
    blocks = buffers.reshape(n, row // 4, 4)
    zero = np.zeros_like(blocks[..., :1])
    step1 = blocks + np.concatenate([zero, blocks[..., :3]], axis=-1)
    step2 = step1 + np.concatenate([zero, zero, step1[..., :2]], axis=-1)
    carry = np.cumsum(step2[..., 3], axis=1, dtype=_F32)  # sequential, like the SSE loop
    carry = np.concatenate([np.zeros_like(carry[:, :1]), carry[:, :-1]], axis=1)
    scaled = np.abs((step2 + carry[..., None]) * _COVERAGE_GAIN)
    ints = _cvtt(scaled)  # then packs/packus saturation to 0..255
    return np.where(ints < 0, 0, np.minimum(ints, 255)).astype(np.uint8).reshape(n, row)


def _glyphs(coverage: np.ndarray, metrics: _Metrics) -> list[SilverGlyph]:
    """Each glyph's read-only ``height x width`` bitmap cut from its row of the flat buffers."""
    glyphs = []
    for i in range(len(coverage)):
        glyph_w, glyph_h = int(metrics.widths[i]), int(metrics.heights[i])
        bitmap = coverage[i, : glyph_w * glyph_h].reshape(glyph_h, glyph_w).copy()
        bitmap.setflags(write=False)
        glyphs.append(SilverGlyph(coverage=bitmap, xmin=metrics.xmins[i], ymin=metrics.ymins[i],
                                  advance=metrics.advances[i]))
    return glyphs


def rasterize_batch(cps: list[int], px: np.float32) -> list[SilverGlyph]:
    """fontdue's ``rasterize`` for many glyphs at one size, vectorized (same bits as one by one).

    Never reads the shipped table (:mod:`snapcompact.render.silver_table_build` builds it from
    here); :func:`rasterize_many` is the cached entry point.
    """
    face = load_face()
    scale = px / face.units_per_em
    geo = face.outlines(cps)
    metrics = _metrics(geo, scale)
    lengths = metrics.widths * metrics.heights
    row = int(((lengths.max(initial=0) + 3 + 3) // 4) * 4)  # >= w*h + 3, whole SSE blocks
    buffers = np.zeros((len(cps), row), dtype=_F32)
    if len(geo.x):
        targets, values = _v_line_adds(_line_walks(geo, scale, metrics), row)
        np.add.at(buffers.reshape(-1), targets, values)  # in-order f32 adds, as the raster loop
    return _glyphs(_get_bitmap(buffers), metrics)


_CACHE: dict[tuple[int, float], SilverGlyph] = {}


def rasterize_many(cps: Iterable[int], px: float) -> dict[int, SilverGlyph]:
    """Rasterize (and cache) every code point in ``cps`` at ``px`` in one vectorized pass.

    The frame renderer can call this once per page with the page's distinct code points, so a
    cold frame of distinct CJK costs one batch rather than one pass per glyph.
    """
    size = as_px(px)
    key_px = float(size)
    wanted = list(dict.fromkeys(int(cp) for cp in cps))
    missing = [cp for cp in wanted if (cp, key_px) not in _CACHE]
    if missing:
        made = silver_table.glyphs(missing, key_px) or rasterize_batch(missing, size)
        for cp, glyph in zip(missing, made):
            _CACHE[(cp, key_px)] = glyph
    return {cp: _CACHE[(cp, key_px)] for cp in wanted}


def rasterize(cp: int, px: float) -> SilverGlyph:
    """fontdue's ``Font::rasterize(char, px)`` for Silver: coverage bitmap plus metrics (cached)."""
    glyph = _CACHE.get((cp, float(_F32(px))))
    return glyph if glyph is not None else rasterize_many((cp,), px)[int(cp)]


def line_ascent(px: float) -> float:
    """Silver's line ascent at ``px`` (fontdue ``horizontal_line_metrics(px).ascent``), f32."""
    face = load_face()
    return float(_F32(face.ascender) * (as_px(px) / face.units_per_em))
