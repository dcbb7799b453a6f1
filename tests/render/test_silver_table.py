"""The shipped Silver glyph table (fonts/silver-glyphs.npz) against a fresh rasterization.

The table is derived data (scripts/make_silver_table.py); these tests fail until it is
regenerated after a change to the font, the rasterizer or the shape variants.  The rasterizer
itself is checked against the reference's frames in test_silver.py; the frames drawn through
the table are checked in test_render.py and test_frame_cap.py.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from snapcompact.core import SHAPE_NAMES, get_shape
from snapcompact.render import silver, silver_face, silver_fallback, silver_raster, silver_table
from snapcompact.render.silver_table import table
from snapcompact.render.silver_table_build import shape_pixel_sizes

SIZES = shape_pixel_sizes()


def test_every_variant_draws_with_stored_sizes() -> None:
    # 5x8 (5 and 8 px for wide), 6x12 (6, 12), 8x13 (8, 13), 8on16 (8, 16), 11on16 (11, 16),
    # unscii (8), silver16 (16): the sizes the Silver module docstring lists.
    assert SIZES == [5.0, 6.0, 8.0, 11.0, 12.0, 13.0, 16.0]
    for px in SIZES:
        assert table(px) is not None, f"{px:g} px is not in the table: regenerate it"
    assert len(SHAPE_NAMES) == 17


@pytest.mark.parametrize("px", SIZES)
def test_every_stored_glyph_is_the_rasterizers(px: float) -> None:
    stored = table(px)
    cps = sorted(silver_face.load_face().cmap)
    assert stored.cps.tolist() == cps
    fresh = silver_raster.rasterize_batch(cps, silver_raster.as_px(px))
    got = silver_table.glyphs(cps, px)
    for cp, want, have in zip(cps, fresh, got):
        assert (have.xmin, have.ymin, have.advance) == (want.xmin, want.ymin, want.advance), hex(cp)
        assert np.array_equal(have.coverage, want.coverage), f"U+{cp:04X} at {px:g} px"


def test_sizes_and_code_points_outside_the_table_are_not_served() -> None:
    assert table(7.0) is None
    assert silver_table.glyphs([0x4E00], 7.0) is None
    assert table(8.0).rows(np.array([0x4E00, 0x10FFFF])) is None
    assert silver_fallback.stored_sprites(np.array([0x10FFFF << 9 | 7]), 5, 8, 7) is None


def test_a_table_made_from_another_font_is_ignored(monkeypatch) -> None:
    silver_table._stored_keys.cache_clear()
    silver_table.table.cache_clear()
    try:
        monkeypatch.setattr(silver_table, "_font_sha256", lambda: "0" * 64)
        assert table(8.0) is None
    finally:
        monkeypatch.undo()
        silver_table._stored_keys.cache_clear()
        silver_table.table.cache_clear()
    assert table(8.0) is not None


@pytest.mark.parametrize(
    "variant", [v for v in SHAPE_NAMES if get_shape(v).font != "silver"]
)
def test_stored_fallback_sprites_place_the_pixels_of_the_sprite_path(variant: str) -> None:
    # Every fallback code point of a bitmap variant (wide and narrow), in every ink, placed at
    # cell origins that clip at all four canvas edges: the table path must give exactly the
    # pixels, draw order and values of the glyph-by-glyph sprite path.
    shape = get_shape(variant)
    from snapcompact.core import NATURAL_CELL
    from snapcompact.render.fonts import load_font

    cell_w, cell_h = (
        NATURAL_CELL[shape.font] if shape.stretches else (shape.cell_width, shape.cell_height)
    )
    own = set(load_font(shape.font).glyphs)
    rng = np.random.default_rng(12)
    silver_cps = sorted(silver_face.load_face().cmap)
    cps = rng.choice(np.array([cp for cp in silver_cps if cp not in own]), 2000)
    wides = [silver.is_wide(int(cp)) for cp in cps]
    inks = rng.choice(np.array([1, 2, 3, 4, 5, 6, 7, 9]), len(cps))
    xs = rng.integers(-2 * cell_w, 40 * cell_w, len(cps))
    tops = rng.integers(-cell_h, 20 * cell_h, len(cps))
    canvas = (18 * cell_h, 38 * cell_w)
    ascent = load_font(shape.font).ascent
    fast = silver.fallback_pixels(canvas, cps, xs, tops, cell_w, cell_h, wides, inks, ascent=ascent)
    with mock.patch.object(silver_fallback, "stored_sprites", lambda *args: None):
        slow = silver.fallback_pixels(
            canvas, cps, xs, tops, cell_w, cell_h, wides, inks, ascent=ascent
        )
    for name, a, b in zip(("pixels", "order", "values"), fast, slow):
        assert a.dtype == b.dtype and np.array_equal(a, b), name
