"""PNG encoding of frames: indexed with the smallest bit depth, or plain RGB.

Why indexed: a frame uses at most ten colours (white, black, six sentence hues, the pale band,
dim gray), and a 1-bit black-and-white frame is a fraction of an 8-bit one, which matters under
the per-request byte budgets.  As the reference does, the palette is narrowed to the colours a
frame actually uses, kept in global index order, so a plain black-on-white frame is 1 bit deep.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

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
#: zlib level: 6 is within a few percent of the smallest output at a fraction of level 9's time.
COMPRESS_LEVEL = 6


def encode_indexed(canvas: np.ndarray) -> bytes:
    """Encode a 2-D array of global palette indices as an indexed PNG."""
    if canvas.ndim != 2 or canvas.dtype != np.uint8:
        raise ValueError("indexed canvas must be a 2-D uint8 array")
    counts = np.bincount(canvas.ravel(), minlength=len(PALETTE))
    if counts.size > len(PALETTE):
        raise ValueError(f"palette index {counts.size - 1} out of range")
    used = np.flatnonzero(counts)
    if used.size == len(PALETTE) or np.array_equal(used, np.arange(used.size)):
        narrowed = canvas
    else:
        lut = np.zeros(len(PALETTE), dtype=np.uint8)
        lut[used] = np.arange(used.size, dtype=np.uint8)
        narrowed = lut[canvas]
    h, w = canvas.shape
    image = Image.frombuffer("P", (w, h), np.ascontiguousarray(narrowed), "raw", "P", 0, 1)
    image.putpalette(PALETTE[used].tobytes())
    buf = io.BytesIO()
    image.save(buf, "PNG", compress_level=COMPRESS_LEVEL)
    return buf.getvalue()


def encode_rgb(rgb: np.ndarray) -> bytes:
    """Encode an H x W x 3 uint8 array as an RGB PNG."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError("RGB canvas must be an H x W x 3 uint8 array")
    h, w, _ = rgb.shape
    image = Image.frombuffer("RGB", (w, h), np.ascontiguousarray(rgb), "raw", "RGB", 0, 1)
    buf = io.BytesIO()
    image.save(buf, "PNG", compress_level=COMPRESS_LEVEL)
    return buf.getvalue()


def decode_rgb(png: bytes) -> np.ndarray:
    """Decode any PNG to an H x W x 3 uint8 array (for comparisons and readers)."""
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))
