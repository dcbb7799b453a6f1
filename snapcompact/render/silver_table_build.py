"""Building the shipped Silver glyph table (``fonts/silver-glyphs.npz``) from the rasterizer.

Why apart from :mod:`snapcompact.render.silver_table`: building needs the rasterizer, which reads
the table at run time; keeping the build here keeps the import arrows pointing one way.
``scripts/make_silver_table.py`` writes the file; ``tests/render/test_silver_table.py`` checks it.
"""

from __future__ import annotations

import numpy as np

from snapcompact.core import NATURAL_CELL, SHAPE_NAMES, get_shape
from snapcompact.render import silver_face, silver_raster
from snapcompact.render.silver_glyph import pixel_size
from snapcompact.render.silver_table import _font_sha256, _key


def build(pixel_sizes: list[float]) -> dict[str, np.ndarray]:
    """The table's arrays: every code point of Silver's cmap rasterized at each of ``pixel_sizes``.

    Rasterizes with :mod:`snapcompact.render.silver_raster` directly (never from an existing table).
    """
    cps = sorted(silver_face.load_face().cmap)
    arrays: dict[str, np.ndarray] = {
        "font_sha256": np.array(_font_sha256()),
        "cps": np.asarray(cps, dtype=np.int32),
        "pixel_sizes": np.asarray(sorted(set(pixel_sizes)), dtype=np.float32),
    }
    for px in sorted(set(pixel_sizes)):
        rasterized = silver_raster.rasterize_batch(cps, silver_raster.as_px(px))
        extremes = [(g.width, g.height, g.xmin, g.ymin) for g in rasterized]
        if max(max(w, h) for w, h, _, _ in extremes) > 255 or not all(
            -128 <= v <= 127 for _, _, x, y in extremes for v in (x, y)
        ):
            raise ValueError(f"Silver glyphs at {px:g} px do not fit the table's 8-bit metrics")
        key = _key(px)
        arrays[f"{key}_width"] = np.array([g.width for g in rasterized], dtype=np.uint8)
        arrays[f"{key}_height"] = np.array([g.height for g in rasterized], dtype=np.uint8)
        arrays[f"{key}_xmin"] = np.array([g.xmin for g in rasterized], dtype=np.int8)
        arrays[f"{key}_ymin"] = np.array([g.ymin for g in rasterized], dtype=np.int8)
        arrays[f"{key}_advance"] = np.array([g.advance for g in rasterized], dtype=np.float32)
        arrays[f"{key}_coverage"] = np.concatenate(
            [g.coverage.reshape(-1) for g in rasterized]
        ).astype(np.uint8)
    return arrays


def shape_pixel_sizes() -> list[float]:
    """Every Silver pixel size the named shapes draw with (Silver shapes and bitmap fallbacks)."""

    sizes = set()
    for name in SHAPE_NAMES:
        shape = get_shape(name)
        if shape.font == "silver":
            sizes.add(pixel_size(shape.cell_width, shape.cell_height))
            continue
        cell = (
            NATURAL_CELL[shape.font] if shape.stretches else (shape.cell_width, shape.cell_height)
        )
        sizes.update(pixel_size(*cell, units) for units in (1, 2))
    return sorted(sizes)
