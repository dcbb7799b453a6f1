"""PNG encoding of frames: indexed with the smallest bit depth, or plain RGB.

Why indexed: a frame uses at most ten colours (white, black, six sentence hues, the pale band,
dim gray), and a 1-bit black-and-white frame is a fraction of an 8-bit one, which matters under
the per-request byte budgets.  As the reference does, the palette is narrowed to the colours a
frame actually uses, kept in global index order, so a plain black-on-white frame is 1 bit deep.

Why zlib-ng at level 9 by default: the bytes are what the coding agent's 3 MB payload guard,
the request sizes and a provider's 413 read, so a frame must be no larger than the reference's
PNG of the same pixels.  The reference deflates the same unfiltered rows at maximum compression;
ISA-L level 2 (the ``fast`` effort) made palette frames 1.1-1.55x its bytes, zlib-ng level 9
makes every frame measured 0.97-0.99x of them (8-bit frames 0.37-0.73x, stored grey where the
reference stores RGB) at ~40-170 ms of CPU for a full 1568 px palette frame, against ~1 ms
(figures and cost in benchmarks/README.md; ``tests/render/test_png_bytes.py`` holds every shape
to the reference's bytes).  ``fast`` is for renders nobody sends: same pixels, bigger files.
"""

from __future__ import annotations

import io
import struct
import zlib
from functools import lru_cache
from typing import Literal, get_args

import numpy as np
from isal import isal_zlib
from zlib_ng import zlib_ng

#: Global palette (index -> RGB): background, six sentence hues, black ink, band, dim ink.
PALETTE = np.array(
    [
        (255, 255, 255),  # 0 white background
        (109, 2, 2),  # 1 red
        (109, 53, 2),  # 2 amber
        (24, 109, 2),  # 3 green
        (2, 109, 109),  # 4 teal
        (2, 32, 109),  # 5 blue
        (75, 2, 109),  # 6 violet
        (0, 0, 0),  # 7 black ink
        (255, 247, 194),  # 8 pale band behind repeated lines
        (128, 128, 128),  # 9 dim gray ink
    ],
    dtype=np.uint8,
)
WHITE, BLACK, BAND, DIM = 0, 7, 8, 9
#: How hard a frame is deflated: ``production`` (the default wherever frames are sent, billed
#: or guarded: bytes no larger than the reference's) or ``fast`` (same pixels, bigger files).
PngEffort = Literal["production", "fast"]
PNG_EFFORTS: tuple[str, ...] = get_args(PngEffort)
#: zlib-ng level of the ``production`` effort (read at every call).
PRODUCTION_LEVEL = 9
#: ISA-L level of the ``fast`` effort: ~1 ms for a full palette frame, 1.1-1.55x the bytes.
FAST_ISAL_LEVEL = 2
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Canvas bytes packed per band at depth 2 (bounds the packer's temporaries).
_PACK_BAND_BYTES = 1 << 18


def deflate(raw: bytes | np.ndarray, effort: PngEffort = "production") -> bytes:
    """The zlib stream of a PNG's filtered rows, at ``effort``."""
    if effort == "production":
        return zlib_ng.compress(raw, PRODUCTION_LEVEL)
    if effort == "fast":
        return isal_zlib.compress(raw, FAST_ISAL_LEVEL)
    raise ValueError(f"PNG effort must be one of {', '.join(PNG_EFFORTS)}, got {effort!r}")


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind))
    return b"".join((struct.pack(">I", len(data)), kind, data, struct.pack(">I", crc)))


def _pack_rows(indices: np.ndarray, depth: int) -> np.ndarray:
    """Pack palette indices ``depth`` bits each, most significant first, per row."""
    if depth == 8:
        return indices
    per_byte = 8 // depth
    h, w = indices.shape
    pad = (-w) % per_byte
    if pad:
        indices = np.pad(indices, ((0, 0), (0, pad)))
    if depth == 1:
        return np.packbits(indices.astype(bool, copy=False), axis=1)
    groups = indices.reshape(h, -1, per_byte)
    packed = groups[:, :, 0] << np.uint8(depth * (per_byte - 1))
    for k in range(1, per_byte):
        packed |= groups[:, :, k] << np.uint8(depth * (per_byte - 1 - k))
    return packed


@lru_cache(maxsize=64)
def _pair_table(lut_bytes: bytes, depth: int) -> np.ndarray:
    """Two adjacent global indices (one little-endian uint16) -> their two packed local indices."""
    lut = np.frombuffer(lut_bytes, dtype=np.uint8)
    pairs = np.arange(1 << 16, dtype=np.uint32)
    first, second = lut[pairs & 0xFF], lut[pairs >> 8]
    return ((first << np.uint8(depth)) | second).astype(np.uint8)


@lru_cache(maxsize=64)
def _quad_table(lut_bytes: bytes) -> np.ndarray:
    """Four global indices below 16, as nibbles ``a | b << 4 | c << 8 | d << 12`` -> their four
    local indices packed 2 bits each (``a`` in the top bits)."""
    lut = np.frombuffer(lut_bytes, dtype=np.uint8)
    quads = np.arange(1 << 16, dtype=np.uint32)
    packed = np.zeros(quads.shape, dtype=np.uint8)
    for k in range(4):
        packed |= lut[(quads >> np.uint32(4 * k)) & np.uint32(15)] << np.uint8(6 - 2 * k)
    return packed


def _pack_indexed(canvas: np.ndarray, lut: np.ndarray, depth: int) -> np.ndarray:
    """Map global palette indices (all below 16) through ``lut`` and pack them ``depth`` (2 or
    4) bits each.

    Depth 4: pixels go two at a time through a 65,536-entry table (one gather instead of a
    gather, shifts and ORs per pixel).  Depth 2: four pixels (one little-endian uint32) fold
    into one 16-bit key of four nibbles (``x | x >> 4`` puts pixels 0-1 in byte 0 and 2-3 in
    byte 2), which one table lookup turns into the packed byte.
    """
    per_byte = 8 // depth
    pad = (-canvas.shape[1]) % per_byte
    if pad:
        canvas = np.pad(canvas, ((0, 0), (0, pad)))
    canvas = np.ascontiguousarray(canvas)
    if depth == 4:
        return _pair_table(lut.tobytes(), depth)[canvas.view("<u2")]
    quads = canvas.view("<u4")
    table = _quad_table(lut.tobytes())
    packed = np.empty(quads.shape, dtype=np.uint8)
    # In bands of rows, so the temporaries stay small (and in cache) on large frames.
    band = max(1, _PACK_BAND_BYTES // max(1, canvas.shape[1]))
    for top in range(0, quads.shape[0], band):
        block = quads[top : top + band]
        folded = block >> np.uint32(4)
        folded |= block
        folded_bytes = folded.view(np.uint8)
        keys = np.empty(block.shape, dtype="<u2")
        key_bytes = keys.view(np.uint8)
        key_bytes[:, 0::2] = folded_bytes[:, 0::4]
        key_bytes[:, 1::2] = folded_bytes[:, 2::4]
        table.take(keys, out=packed[top : top + band])
    return packed


def encode_indexed(canvas: np.ndarray, used: np.ndarray | None = None,
                   effort: PngEffort = "production") -> bytes:
    """Encode a 2-D array of global palette indices as an indexed PNG (smallest bit depth).

    ``used`` (the sorted palette indices present) may be passed by a caller that knows it;
    otherwise every pixel is counted.  ``effort``: :data:`PngEffort` (same pixels either way).
    """
    if canvas.ndim != 2 or canvas.dtype != np.uint8:
        raise ValueError("indexed canvas must be a 2-D uint8 array")
    if used is None:
        counts = np.bincount(canvas.ravel(), minlength=len(PALETTE))
        if counts.size > len(PALETTE):
            raise ValueError(f"palette index {counts.size - 1} out of range")
        used = np.flatnonzero(counts)
    h, w = canvas.shape
    depth = 1 if used.size <= 2 else 2 if used.size <= 4 else 4 if used.size <= 16 else 8
    if depth == 1:
        # Two colours: the second one's pixels are the set bits; no index remap needed.
        bits = canvas == used[-1] if used.size == 2 else np.zeros(canvas.shape, dtype=bool)
        packed = np.packbits(bits, axis=1)
    else:
        lut = np.zeros(256, dtype=np.uint8)
        lut[used] = np.arange(used.size, dtype=np.uint8)
        packed = _pack_rows(lut[canvas], depth) if depth == 8 else _pack_indexed(canvas, lut, depth)
    header = struct.pack(">IIBBBBB", w, h, depth, 3, 0, 0, 0)
    return _png(header, packed, effort, PALETTE[used].tobytes())


def _png(header: bytes, rows: np.ndarray, effort: PngEffort,
         palette: bytes | None = None) -> bytes:
    """A PNG file from its IHDR fields and its packed rows (filter type None on every row)."""
    raw = np.empty((rows.shape[0], rows.shape[1] + 1), dtype=np.uint8)
    raw[:, 0] = 0  # no filter, as the reference writes indexed frames
    raw[:, 1:] = rows
    chunks = [_PNG_SIGNATURE, _chunk(b"IHDR", header)]
    if palette is not None:
        chunks.append(_chunk(b"PLTE", palette))
    chunks += [_chunk(b"IDAT", deflate(raw, effort)), _chunk(b"IEND", b"")]
    return b"".join(chunks)


def encode_rgb(rgb: np.ndarray, effort: PngEffort = "production") -> bytes:
    """Encode an H x W x 3 uint8 array as a PNG: 8-bit grey when all channels are equal.

    Black or gray ink on white (silver16-bw, 6x6u-bw) has equal channels everywhere; storing
    one channel decodes to the same RGB pixels in a third of the raw size.  Coloured frames
    stay RGB.  Rows are not filtered: on these frames (anti-aliased text on flat colour) the
    None filter deflates smaller than Sub or Up, and skipping Pillow's per-row filter search
    makes a full 6x6u-sent frame 13x faster to encode (25 ms vs 320 ms, 3.1 MB vs 3.6 MB).
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError("RGB canvas must be an H x W x 3 uint8 array")
    h, w, _ = rgb.shape
    red = rgb[:, :, 0]
    if np.array_equal(red, rgb[:, :, 1]) and np.array_equal(red, rgb[:, :, 2]):
        return encode_grey(red, effort)
    return _png(struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0), rgb.reshape(h, w * 3), effort)


def encode_grey(grey: np.ndarray, effort: PngEffort = "production") -> bytes:
    """Encode an H x W uint8 array as an 8-bit greyscale PNG (``encode_rgb`` of a frame whose
    three channels all equal it gives the same bytes)."""
    if grey.ndim != 2 or grey.dtype != np.uint8:
        raise ValueError("grey canvas must be a 2-D uint8 array")
    h, w = grey.shape
    return _png(struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0), grey, effort)


def decode_rgb(png: bytes) -> np.ndarray:
    """Decode any PNG to an H x W x 3 uint8 array (for comparisons and readers)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))
