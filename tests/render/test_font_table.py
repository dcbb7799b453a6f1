"""The shipped bitmap glyph table (fonts/bitmap-glyphs.npz) against a fresh parse of the fonts.

The table is derived data (scripts/make_font_table.py); these tests fail until it is regenerated
after a change to a font file, fonts/coverage.json, fonts/glyph-patches.txt or the parser.  The
atlas drawn from it is checked against the BDF text and the patch file here, and every frame
drawn through it against the reference's frames in test_render.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from snapcompact.render import font_table, fonts
from snapcompact.render.font_table import stored_font
from snapcompact.render.fonts import BITMAP_FONTS, FONT_FILES, atlas, load_font, parse_font


def _caches_clear() -> None:
    for cached in (stored_font, load_font, atlas, fonts._coloured_rows):
        cached.cache_clear()


@pytest.fixture
def fresh_caches():
    _caches_clear()
    yield
    _caches_clear()


@pytest.mark.parametrize("name", BITMAP_FONTS)
def test_every_stored_glyph_is_the_parsers(name: str) -> None:
    stored = stored_font(name, FONT_FILES[name])
    assert stored is not None, "fonts/bitmap-glyphs.npz is stale: run scripts/make_font_table.py"
    fresh = parse_font(name)
    assert (stored.cell_width, stored.cell_height, stored.ascent) == (
        fresh.cell_width, fresh.cell_height, fresh.ascent)
    for field in ("cps", "widths", "heights", "xoffs", "yoffs", "rows"):
        have, want = getattr(stored.glyphs, field), getattr(fresh.glyphs, field)
        assert np.array_equal(have, want), f"{name}: {field} differs"


def test_glyph_counts_match_the_documented_coverage() -> None:
    # fonts/README.md: 5x8 covers 195 code points, 6x12 4,534 and 8x13 3,706 with the four
    # newline/dim markers, which are drawn by the renderer rather than from a glyph; unscii
    # covers U+0001-U+00FF, of which it has 252 glyphs besides the markers.
    counts = {name: load_font(name).arrays.cps.size for name in BITMAP_FONTS}
    assert counts == {"5x8": 191, "6x12": 4530, "8x13": 3702, "8x8": 252}


def test_a_table_made_from_other_sources_is_ignored(monkeypatch, fresh_caches) -> None:
    from_table = atlas("6x12", 6, 12).masks
    _caches_clear()
    monkeypatch.setattr(font_table, "sources_sha256", lambda font_file: "0" * 64)
    assert stored_font("6x12", "6x12.bdf") is None
    parsed = atlas("6x12", 6, 12).masks  # parsed from the files instead: the same masks
    assert np.array_equal(parsed, from_table)


def test_a_missing_table_is_ignored(monkeypatch, fresh_caches) -> None:
    monkeypatch.setattr(font_table, "TABLE_FILE", "no-such-table.npz")
    assert stored_font("5x8", "5x8.bdf") is None
    assert load_font("5x8").arrays.cps.size == 191


def _picture(mask: np.ndarray) -> list[str]:
    return ["".join("#" if v else "." for v in row) for row in mask]


def test_atlas_places_a_bdf_glyph_by_its_box() -> None:
    # 5x8.bdf, ENCODING 65: BBX 5 8 0 -1, rows 00 60 90 90 F0 90 90 00; FONT_ASCENT 7, so the
    # top row sits at 7 - 8 - (-1) = 0.
    a = atlas("5x8", 5, 8)
    assert _picture(a.masks[a.ids[ord("A")]]) == [
        ".....", ".##..", "#..#.", "#..#.", "####.", "#..#.", "#..#.", ".....",
    ]


def test_atlas_uses_the_patched_zero_and_pads_taller_cells_below() -> None:
    # fonts/glyph-patches.txt: the reference's 5x8 zero has a bar.  In a cell taller than the
    # font's (8x13 on a 22 px pitch) the extra rows stay blank below the glyph.
    a = atlas("5x8", 5, 8)
    assert _picture(a.masks[a.ids[ord("0")]]) == [
        ".....", "..#..", ".#.#.", ".###.", ".#.#.", ".#.#.", "..#..", ".....",
    ]
    natural, tall = atlas("8x13", 8, 13), atlas("8x13", 8, 22)
    glyph = ord("g")
    assert np.array_equal(tall.masks[tall.ids[glyph], :13], natural.masks[natural.ids[glyph]])
    assert tall.masks[a.FULL].all() and not tall.masks[a.FULL + 1 :, 13:].any()


@pytest.mark.parametrize("cell", [(5, 8), (8, 22), (11, 16)])
def test_coloured_rows_are_masks_times_ink(cell: tuple[int, int]) -> None:
    name = "5x8" if cell == (5, 8) else "8x13"
    a = atlas(name, *cell)
    rows = a.coloured_rows()
    glyph_ids = np.array([0, 1, a.ids[ord("A")], a.ids[ord("~")]])
    for ink in range(a.INKS):
        keys = a.key(glyph_ids, np.full(glyph_ids.shape, ink))
        for glyph, key in zip(glyph_ids, keys):
            assert np.array_equal(rows[:, key], a.masks[glyph] * ink)
