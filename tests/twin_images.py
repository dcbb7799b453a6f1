"""Test images for the provider twins: PNGs of a given size, and their base64 form."""

from __future__ import annotations

import base64
import functools
import io

import numpy as np
from PIL import Image


@functools.lru_cache(maxsize=16)
def png(width: int, height: int, *, noise: bool = False) -> bytes:
    """A ``width`` x ``height`` PNG: blank (tiny) or random RGB noise (incompressible)."""
    if noise:
        pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
        image = Image.fromarray(pixels, "RGB")
    else:
        image = Image.new("1", (width, height), 1)
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()


def b64(data: bytes) -> str:
    """``data`` as base64 text, as an image block carries it."""
    return base64.b64encode(data).decode("ascii")
