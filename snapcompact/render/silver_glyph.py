"""Silver glyph facts shared by the rasterizer, the shipped glyph table and the fallback sprites.

Why a floor of its own: :mod:`snapcompact.render.silver` reads pre-rasterized glyphs from
:mod:`snapcompact.render.silver_table` and builds fallback sprites in
:mod:`snapcompact.render.silver_fallback`; those need the glyph record, the pixel size rule, the
coverage thresholds and ink indices, so they live here and nothing imports back up.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_F32 = np.float32

#: Silver's design size and square cell: pixel sizes scale from it.
DESIGN_PX = 16
#: Palette indices the fallback path needs to know (the frame renderer owns the palette).
INK_BLACK = 7
INK_DIM = 9
#: Coverage thresholds of the reference's two-level indexed anti-aliasing.
SOLID_COVERAGE = 170
FRINGE_COVERAGE = 56
COLORED_COVERAGE = 110


@dataclass(frozen=True)
class SilverGlyph:
    """One glyph rasterized at one pixel size, with fontdue's metrics.

    ``coverage`` is ``height x width`` uint8 (row 0 at the top, read-only); ``xmin``/``ymin``
    are the whole-pixel offsets of the bitmap's left and bottom edges from the pen origin
    (y up); ``advance`` is the f32 advance width in pixels.
    """

    coverage: np.ndarray
    xmin: int
    ymin: int
    advance: float

    @property
    def width(self) -> int:
        """Bitmap width in pixels."""
        return int(self.coverage.shape[1])

    @property
    def height(self) -> int:
        """Bitmap height in pixels."""
        return int(self.coverage.shape[0])


@lru_cache(maxsize=None)
def pixel_size(cell_w: int, cell_h: int, units: int = 1) -> float:
    """Reference pixel size, f32: ``16 * min(units * cell_w / 16, cell_h / 16)``."""
    for name, value in (("cell_w", cell_w), ("cell_h", cell_h), ("units", units)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    sx = _F32(units * cell_w) / _F32(DESIGN_PX)
    sy = _F32(cell_h) / _F32(DESIGN_PX)
    return float(_F32(DESIGN_PX) * min(sx, sy))
