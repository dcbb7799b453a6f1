"""Lanczos3 stretch for the squeezed shapes (6x6u), bit-exact with the reference renderer.

Why this module exists: a shape whose cell differs from its font's natural cell (only 6x6u among
the named shapes: unscii 8x8 glyphs squeezed to 6x6) is rendered by rasterizing the page at
the natural cell and resampling the whole canvas.  Pillow's ``LANCZOS`` looks similar but rounds
to 8 bits between its passes and uses fixed-point weights, which puts it up to 36 grey levels
away from the reference.  Readers are compared on the *same pixels*, so we reproduce the
reference arithmetic exactly:

* weights per output sample, all float32: ``scale = n_in / n_out``, ``filt = max(scale, 1)``,
  ``centre = (i + 0.5) * scale``, taps ``trunc(centre - 3 filt) .. ceil(centre + 3 filt)``
  clamped to the input, weight ``lanczos3(((x + 0.5) - centre) / filt)`` where
  ``lanczos3(x) = sinc(x) * sinc(x / 3)`` (1 below 1e-6, 0 from 3 on) with the C library's
  ``sinf``; weights summed left to right, then divided by the sum;
* horizontal pass first, then vertical; each output accumulates its taps left to right with a
  *fused* float32 multiply-add starting from 0; float32 intermediate, no rounding in between;
* round half away from zero, clamp to 0..255.

The fused multiply-add chain is the hard part: numpy has no float32 FMA, an exact emulation
costs ~10 array operations per tap, and BLAS kernels use FMA but in an order that depends on
the CPU and the matrix shape.  So the fast path splits the work by what can change a pixel:

1. an *approximate* resample with float32 sgemm over narrow bands of the banded weight
   matrices (any summation order);
2. a rigorous bound ``delta`` on the distance between that result and the reference chain
   (standard floating-point error bounds from the weights' absolute sums and tap counts);
3. only outputs within ``delta`` of a rounding boundary ``n + 0.5`` can round differently; those
   (well under 1% of pixels) are recomputed with the exact FMA-chain emulation.

The result is pixel-identical to the reference by construction, whatever BLAS does.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

Method = Literal["fast", "exact"]

_F32 = np.float32
_PI = np.float32(math.pi)
_THREE = np.float32(3.0)
_HALF = np.float32(0.5)
_TINY = np.float32(1e-6)
#: Unit roundoff of float32.
_U32 = 2.0**-24
#: float64 bits dropped when rounding to float32, and their pattern at an exact float32 tie.
_LOW_BITS = np.uint64((1 << 29) - 1)
_TIE_BITS = np.uint64(1 << 28)
#: Below this float32 is subnormal and drops more bits: such sums take the careful path.
_NORMAL32 = 2.0**-125
#: Output samples per sgemm band: small bands waste few zero taps (a band of B outputs reads
#: about 4B/3 + 10 inputs), large bands make fewer calls.
_BAND = 24


def _load_sinf():
    """The C library's single-precision ``sin``: what the reference's ``f32::sin`` calls."""
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        sinf = libm.sinf
    except (OSError, AttributeError):
        return None
    sinf.restype = ctypes.c_float
    sinf.argtypes = [ctypes.c_float]
    return sinf


_SINF = _load_sinf()


def _sin32(values: np.ndarray) -> np.ndarray:
    """float32 ``sin`` elementwise, from ``sinf`` (else the correctly rounded value)."""
    flat = np.asarray(values, _F32).ravel()
    if _SINF is not None:
        out = np.fromiter((_SINF(v) for v in flat.tolist()), _F32, count=flat.size)
    else:
        out = np.sin(flat.astype(np.float64)).astype(_F32)
    return out.reshape(np.shape(values))


def lanczos3(x: np.ndarray | float) -> np.ndarray:
    """The reference's float32 Lanczos3 kernel, elementwise."""
    ax = np.abs(np.asarray(x, _F32))
    live = (ax >= _TINY) & (ax < _THREE)
    pix = (_PI * np.where(live, ax, _F32(1.0))).astype(_F32)
    third = (pix / _THREE).astype(_F32)
    ratio = ((_sin32(pix) / pix).astype(_F32) * (_sin32(third) / third).astype(_F32)).astype(_F32)
    return np.where(ax < _TINY, _F32(1.0), np.where(live, ratio, _F32(0.0))).astype(_F32)


@dataclass(frozen=True)
class AxisWeights:
    """Resampling weights of one axis, ``n_in`` samples to ``n_out``.

    ``starts[i]`` is the first input sample of output ``i`` and ``taps[i, :counts[i]]`` its
    normalized float32 weights (zero beyond ``counts[i]``).  ``bands`` cuts the banded weight
    matrix into dense blocks ``(out_start, out_stop, in_start, matrix)`` for sgemm.
    ``abs_sum`` (largest sum of absolute weights of one output) and ``max_span`` (widest band)
    feed the error bound of the fast path.
    """

    n_in: int
    n_out: int
    starts: np.ndarray
    counts: np.ndarray
    taps: np.ndarray
    bands: tuple[tuple[int, int, int, np.ndarray], ...]
    abs_sum: float
    max_span: int

    def dense(self) -> np.ndarray:
        """The full ``n_out x n_in`` weight matrix."""
        full = np.zeros((self.n_out, self.n_in), _F32)
        for i in range(self.n_out):
            s, c = int(self.starts[i]), int(self.counts[i])
            full[i, s : s + c] = self.taps[i, :c]
        return full


@lru_cache(maxsize=64)
def axis_weights(n_in: int, n_out: int) -> AxisWeights:
    """Reference weights for resampling ``n_in`` samples to ``n_out`` (cached per size pair)."""
    if n_in < 1 or n_out < 1:
        raise ValueError(f"axis sizes must be positive, got n_in={n_in}, n_out={n_out}")
    scale = _F32(_F32(n_in) / _F32(n_out))
    filt = max(scale, _F32(1.0))
    support = _F32(_THREE * filt)
    centre = ((np.arange(n_out, dtype=_F32) + _HALF) * scale).astype(_F32)
    # Rust `as isize` truncates toward zero; `as usize` of the ceiling, then clamp.
    starts = np.maximum(np.trunc(centre - support), 0).astype(np.int64)
    stops = np.minimum(np.ceil(centre + support), n_in).astype(np.int64)
    counts = np.maximum(stops - starts, 0)
    width = max(1, int(counts.max(initial=1)))
    k = np.arange(width)
    live = k[None, :] < counts[:, None]
    x = (starts[:, None] + k[None, :]).astype(_F32)
    offset = (((x + _HALF).astype(_F32) - centre[:, None]).astype(_F32) / filt).astype(_F32)
    raw = np.where(live, lanczos3(np.where(live, offset, _F32(3.0))), _F32(0.0)).astype(_F32)
    total = np.zeros(n_out, _F32)
    for j in range(width):  # left to right, as the reference sums
        total = (total + raw[:, j]).astype(_F32)
    divisor = np.where(total != 0, total, _F32(1.0))[:, None]
    taps = np.where(live, (raw / divisor).astype(_F32), _F32(0.0)).astype(_F32)
    bands = []
    for lo in range(0, n_out, _BAND):
        hi = min(lo + _BAND, n_out)
        in_lo = int(starts[lo:hi].min())
        in_hi = max(int((starts[lo:hi] + counts[lo:hi]).max()), in_lo + 1)
        block = np.zeros((hi - lo, in_hi - in_lo), _F32)
        for i in range(lo, hi):
            s = int(starts[i]) - in_lo
            block[i - lo, s : s + counts[i]] = taps[i, : counts[i]]
        bands.append((lo, hi, in_lo, block))
    return AxisWeights(
        n_in=n_in,
        n_out=n_out,
        starts=starts,
        counts=counts,
        taps=taps,
        bands=tuple(bands),
        abs_sum=float(np.abs(taps.astype(np.float64)).sum(axis=1).max()),
        max_span=max(b[3].shape[1] for b in bands),
    )


# --------------------------------------------------------------------------- exact emulation


def _fma32(a: np.ndarray, w: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Correctly rounded float32 ``a * w + acc``, elementwise (a, w, acc float32).

    The float64 product of two float32 values is exact, and so is rounding the float64 sum to
    float32 unless that sum sits exactly on a float32 tie (bits below the float32 mantissa equal
    to one half) while the float64 addition itself was inexact: only then does the exact error
    of the addition (two-sum) decide the direction.
    """
    prod = a.astype(np.float64) * w.astype(np.float64)
    total = prod + acc
    rounded = total.astype(_F32)
    low = total.view(np.uint64) & _LOW_BITS
    suspect = (low == _TIE_BITS) | (np.abs(total) < _NORMAL32)
    if suspect.any():
        idx = np.nonzero(suspect)
        p, c, t, r = prod[idx], acc[idx].astype(np.float64), total[idx], rounded[idx]
        back = t - p
        error = (p - (t - back)) + (c - back)
        off = t - r.astype(np.float64)
        other = np.nextafter(r, np.where(off > 0, _F32(np.inf), _F32(-np.inf)).astype(_F32))
        tie = (off != 0) & (t == (r.astype(np.float64) + other.astype(np.float64)) / 2)
        rounded[idx] = np.where(tie & (error != 0) & (np.sign(error) == np.sign(off)), other, r)
    return rounded


def _pass_exact(plane: np.ndarray, weights: AxisWeights) -> np.ndarray:
    """Resample axis 0 of ``plane`` (n_in x ...) with the reference FMA chain, exactly."""
    out = np.zeros((weights.n_out,) + plane.shape[1:], _F32)
    for k in range(weights.taps.shape[1]):
        rows = np.nonzero(weights.counts > k)[0]
        w = weights.taps[rows, k].reshape((-1,) + (1,) * (plane.ndim - 1))
        out[rows] = _fma32(plane[weights.starts[rows] + k], w, out[rows])
    return out


def _resample_exact(planes: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """planes (H, W, C) float32 -> the reference float32 result (out_h, out_w, C)."""
    by_cols = np.ascontiguousarray(planes.transpose(1, 0, 2))
    horiz = _pass_exact(by_cols, axis_weights(planes.shape[1], out_w))
    by_rows = np.ascontiguousarray(horiz.transpose(1, 0, 2))
    return _pass_exact(by_rows, axis_weights(planes.shape[0], out_h))


def _exact_points(
    planes: np.ndarray,
    wh: AxisWeights,
    wv: AxisWeights,
    ys: np.ndarray,
    xs: np.ndarray,
    cs: np.ndarray,
) -> np.ndarray:
    """The reference float32 value at output points (ys, xs, cs) only: both chains, exactly.

    ``planes`` is the (H, W, C) float32 source.
    """
    n_h, n_w, n_c = planes.shape
    flat_planes = planes.reshape(-1)
    rows = np.minimum(wv.starts[ys][:, None] + np.arange(wv.taps.shape[1]), n_h - 1)
    # Flat index of (row, first tap column, channel); each tap k adds k columns, clamped.
    row_base = rows * (n_w * n_c) + cs[:, None]
    cols_start = wh.starts[xs][:, None]
    horiz = np.zeros(rows.shape, _F32)
    for k in range(wh.taps.shape[1]):  # zero weights past a sample's taps leave acc unchanged
        src = flat_planes.take(row_base + np.minimum(cols_start + k, n_w - 1) * n_c)
        horiz = _fma32(src, wh.taps[xs, k][:, None], horiz)
    out = np.zeros(len(ys), _F32)
    for k in range(wv.taps.shape[1]):
        out = _fma32(horiz[:, k], wv.taps[ys, k], out)
    return out


# --------------------------------------------------------------------------- fast path


def _pass_rows_blas(plane: np.ndarray, weights: AxisWeights) -> np.ndarray:
    """Approximate axis-0 resample of a 2-D float32 ``plane``: band matrices times row blocks."""
    out = np.empty((weights.n_out, plane.shape[1]), _F32)
    for lo, hi, in_lo, block in weights.bands:
        np.matmul(block, plane[in_lo : in_lo + block.shape[1]], out=out[lo:hi])
    return out


@lru_cache(maxsize=16)
def _interleaved_bands(n_in: int, n_out: int, channels: int) -> tuple:
    """Transposed bands acting on ``channels``-interleaved columns (kron with the identity)."""
    eye = np.eye(channels, dtype=_F32)
    return tuple(
        (lo * channels, hi * channels, in_lo * channels, np.kron(block.T, eye).astype(_F32))
        for lo, hi, in_lo, block in axis_weights(n_in, n_out).bands
    )


def _pass_cols_blas(plane: np.ndarray, n_in: int, n_out: int, channels: int) -> np.ndarray:
    """Approximate resample along axis 1 of an (H, n_in * channels) interleaved float32 plane."""
    out = np.empty((plane.shape[0], n_out * channels), _F32)
    for lo, hi, in_lo, block in _interleaved_bands(n_in, n_out, channels):
        np.matmul(plane[:, in_lo : in_lo + block.shape[0]], block, out=out[:, lo:hi])
    return out


def error_bound(wh: AxisWeights, wv: AxisWeights, peak: float = 255.0) -> float:
    """Bound on |fast approximate value - reference chain value| for inputs in [0, peak].

    A sum of n products evaluated in float32 in any order (sgemm) or as the reference's FMA
    chain is within ``gamma(n) * sum|a w|`` of the exact sum, ``gamma(n) = n u / (1 - n u)``.
    Zero weights of a band add exact zeros, so n is the tap count, not the band width.  The
    horizontal error then passes through the vertical weights.
    """

    def gamma(n: int) -> float:
        return n * _U32 / (1 - n * _U32)

    partial = peak * wh.abs_sum * (1 + 1e-3)  # bounds every horizontal partial sum and result
    horiz_err = 2 * gamma(wh.taps.shape[1] + 1) * partial  # chain and sgemm, each vs exact
    partial_v = wv.abs_sum * (partial + horiz_err)
    vert_err = 2 * gamma(wv.taps.shape[1] + 1) * partial_v
    return 1.25 * (wv.abs_sum * horiz_err + vert_err) + 1e-6


@lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's handle on the BLAS library, if threadpoolctl is installed (built once:
    it scans the loaded libraries, ~0.1-0.3 s)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # optional: without it BLAS keeps its own thread count
        return None
    return ThreadpoolController()


def _single_blas_thread():
    """Run the band products on one BLAS thread.

    Each band is a small sgemm; waking BLAS worker threads for each of ~130 calls costs more
    than it saves, and on a busy machine (parallel renders, eval workers) oversubscription made
    a full sent frame 5x slower.  The previous thread count is restored on exit.
    """
    controller = _blas_controller()
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


def _resample_fast(planes: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """planes (H, W, C) float32 -> uint8 (out_h, out_w, C), identical to rounding the reference."""
    n_h, n_w, n_c = planes.shape
    wh, wv = axis_weights(n_w, out_w), axis_weights(n_h, out_h)
    with _single_blas_thread():
        horiz = _pass_cols_blas(planes.reshape(n_h, n_w * n_c), n_w, out_w, n_c)
        approx = _pass_rows_blas(horiz, wv).reshape(out_h, out_w, n_c)
        del horiz
    # Rounded in place: a full frame's float temporaries stay at two output-sized arrays.
    rounded = np.floor(approx)
    frac = approx
    frac -= rounded
    rounded += frac >= _HALF
    np.clip(rounded, 0, 255, out=rounded)
    result = rounded.astype(np.uint8)
    del rounded
    # Only values within `delta` of a boundary n + 0.5 can round differently from the reference
    # (boundaries below 0 or above 255 do not matter; re-checking them is merely wasted work).
    frac -= _HALF
    np.abs(frac, out=frac)
    near = np.flatnonzero(frac <= error_bound(wh, wv, float(planes.max(initial=0.0))))
    del frac
    ys, rest = np.divmod(near, out_w * n_c)
    xs, cs = np.divmod(rest, n_c)
    if len(ys):
        result[ys, xs, cs] = _round_to_u8(_exact_points(planes, wh, wv, ys, xs, cs))
    return result


def _round_to_u8(values: np.ndarray) -> np.ndarray:
    """Round half away from zero, clamp to 0..255 (all negatives land on 0)."""
    floor = np.floor(values)
    return np.clip(floor + ((values - floor) >= _HALF), 0, 255).astype(np.uint8)


def lanczos3_resize(rgb: np.ndarray, out_w: int, out_h: int, method: Method = "fast") -> np.ndarray:
    """Resize a uint8 ``H x W x 3`` image to ``out_h x out_w x 3`` exactly like the reference.

    ``method="fast"`` (sgemm plus exact fix-up near rounding boundaries) and ``"exact"`` (full
    FMA-chain emulation, ~50x slower) return the same pixels; tests check both.
    """
    if not isinstance(rgb, np.ndarray) or rgb.dtype != np.uint8:
        raise ValueError(f"rgb must be a uint8 array, got {getattr(rgb, 'dtype', type(rgb))}")
    if rgb.ndim != 3 or rgb.shape[2] not in (1, 3):
        raise ValueError(f"rgb must be H x W x 3 (or x 1 for grey), got shape {rgb.shape}")
    if rgb.shape[0] < 1 or rgb.shape[1] < 1:
        raise ValueError(f"rgb must not be empty, got shape {rgb.shape}")
    if any(isinstance(n, bool) or int(n) != n for n in (out_w, out_h)):
        raise ValueError(f"output size must be integers, got {out_w!r} x {out_h!r}")
    if out_w < 1 or out_h < 1:
        raise ValueError(f"output size must be positive, got {out_w} x {out_h}")
    if method not in ("fast", "exact"):
        raise ValueError(f"method must be 'fast' or 'exact', got {method!r}")
    out_w, out_h = int(out_w), int(out_h)
    if rgb.shape[2] == 1:  # a grey image: its one channel
        return _resize_planes(rgb, out_w, out_h, method)
    # Identical channels (black or grey ink on white) resample identically: do one, copy.
    grey = np.array_equal(rgb[:, :, 0], rgb[:, :, 1]) and np.array_equal(rgb[:, :, 0], rgb[:, :, 2])
    if grey:
        return np.repeat(_resize_planes(rgb[:, :, :1], out_w, out_h, method), 3, axis=2)
    # Channels are independent: one at a time keeps the float32 temporaries a third as large
    # (a full 6x6u-sent frame peaks near 100 MB instead of 300 MB) for the same pixels.
    result = np.empty((out_h, out_w, 3), dtype=np.uint8)
    for channel in range(3):
        result[:, :, channel : channel + 1] = _resize_planes(
            rgb[:, :, channel : channel + 1], out_w, out_h, method
        )
    return result


def _resize_planes(src: np.ndarray, out_w: int, out_h: int, method: Method) -> np.ndarray:
    planes = src.astype(_F32)  # (H, W, C), contiguous
    if method == "fast":
        return _resample_fast(planes, out_w, out_h)
    return _round_to_u8(_resample_exact(planes, out_w, out_h))


def stretch_frame(
    canvas: np.ndarray,
    frame_width: int,
    natural_cell: tuple[int, int],
    target_cell: tuple[int, int],
    method: Method = "fast",
) -> np.ndarray:
    """Squeeze a natural-cell canvas to the target cell and paste it top-left on a white frame.

    ``canvas`` is the page rasterized at the natural cell (``cols * nat_w`` wide,
    ``used_rows * repeat * nat_h`` tall, palette colours as uint8 RGB).  The result is
    ``frame_width`` wide and ``used_rows * repeat * target_h`` tall; pixels right of
    ``cols * target_w`` stay white, as in the reference.
    """
    nat_w, nat_h = natural_cell
    tgt_w, tgt_h = target_cell
    if min(nat_w, nat_h, tgt_w, tgt_h) < 1:
        raise ValueError(f"cells must be positive, got natural {natural_cell} target {target_cell}")
    if not isinstance(canvas, np.ndarray) or canvas.ndim != 3 or canvas.shape[2] not in (1, 3):
        raise ValueError(f"canvas must be H x W x 3 (or x 1 for grey), got "
                         f"{getattr(canvas, 'shape', None)}")
    height, width = canvas.shape[:2]
    if width % nat_w or height % nat_h or not width or not height:
        raise ValueError(f"canvas {width}x{height} is not a whole number of {nat_w}x{nat_h} cells")
    if frame_width < 1:
        raise ValueError(f"frame_width must be positive, got {frame_width}")
    out_w, out_h = width // nat_w * tgt_w, height // nat_h * tgt_h
    frame = np.full((out_h, frame_width, canvas.shape[2]), 255, np.uint8)
    keep = min(out_w, frame_width)
    frame[:, :keep] = lanczos3_resize(canvas, out_w, out_h, method)[:, :keep]
    return frame
