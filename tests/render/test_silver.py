"""Silver glyphs against frames rendered by the reference (tests/golden/silver, make_golden.py).

Every frame packs thousands of glyphs, so each comparison covers every Silver code point the
reference draws (13,778, listed by the reference itself) at one pixel size (Silver shape), or
every fallback glyph of one bitmap shape.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache

import numpy as np
import pytest
from locations import GOLDEN
from PIL import Image

from snapcompact.core import fonts_dir
from snapcompact.render import silver
from snapcompact.text import supported

GOLDEN = GOLDEN / "silver"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
#: Upstream palette (digest section e), RGB -> global index.
PALETTE = {
    (255, 255, 255): 0, (109, 2, 2): 1, (109, 53, 2): 2, (24, 109, 2): 3, (2, 109, 109): 4,
    (2, 32, 109): 5, (75, 2, 109): 6, (0, 0, 0): 7, (255, 247, 194): 8, (128, 128, 128): 9,
}
BAND_RGB = (255, 247, 194)
HUE_RED = (109, 2, 2)
#: FONT_ASCENT of each bitmap font (the BDF headers; unscii: 7).
BITMAP_ASCENT = {"5x8": 7, "6x12": 10, "8x13": 11, "8x8": 7}
#: Code points the renderer interprets itself (make_golden.CONTROL), never drawn as glyphs.
CONTROL = {0x09, 0x0A, 0x0D, 0x0E, 0x0F, 0x2588}


def text_of(entry: dict) -> list[int]:
    return [ord(c) for c in MANIFEST["texts"][entry["text"]]]


@cache
def reference_indexed(file: str) -> np.ndarray:
    rgb = np.asarray(Image.open(GOLDEN / file).convert("RGB"))
    out = np.full(rgb.shape[:2], 255, dtype=np.uint8)
    for color, index in PALETTE.items():
        out[(rgb == color).all(axis=-1)] = index
    assert (out != 255).all(), f"{file}: colours outside the palette"
    return out


def grid_cells(cps: list[int], cols: int) -> list[tuple[int, int, bool]]:
    """(col, row, wide) per code point: wide glyphs take two cells and never straddle a row."""
    cells, cursor = [], 0
    for cp in cps:
        wide = silver.is_wide(cp)
        if wide and cursor % cols == cols - 1:
            cursor += 1
        cells.append((cursor % cols, cursor // cols, wide))
        cursor += 2 if wide else 1
    return cells


def describe_mismatch(ours: np.ndarray, ref: np.ndarray) -> str:
    diff = np.argwhere(ours != ref)
    return f"{len(diff)} pixels differ, first at (y, x) = {tuple(diff[0]) if len(diff) else None}"


# --- Coverage: the goldens hold every code point the reference draws -----------------------------


def test_goldens_cover_every_silver_code_point_the_reference_draws():
    drawn = text_of({"text": "silver"})
    assert len(drawn) == len(set(drawn)) == 13_778  # reference snapcompactSupportedChars, 18.2.3
    assert set(drawn) == set(supported("silver")) - CONTROL
    for entry in MANIFEST["silver"]:
        assert entry["text"] == "silver"
    for entry in MANIFEST["fallback"]:
        # every Silver code point the bitmap font lacks, by the reference's own coverage
        assert set(text_of(entry)) == set(drawn) - set(supported(entry["font"]))


# --- Silver shape (RGB alpha blend) --------------------------------------------------------------


@pytest.mark.parametrize("entry", MANIFEST["silver"], ids=lambda e: f"px{e['px']}")
def test_silver_frame_is_pixel_identical(entry):
    px, cols = entry["px"], entry["cols"]
    ref = np.asarray(Image.open(GOLDEN / entry["file"]))  # gray = 255 - coverage
    cps = text_of(entry)
    rgb = np.full(ref.shape + (3,), 255, dtype=np.uint8)
    xs = [(i % cols) * px for i in range(len(cps))]
    ys = [(i // cols) * px for i in range(len(cps))]
    silver.draw_silver_cells(rgb, cps, xs, ys, px, px, (0, 0, 0))
    assert (rgb[..., 0] == rgb[..., 1]).all() and (rgb[..., 0] == rgb[..., 2]).all()
    assert np.array_equal(rgb[..., 0], ref), describe_mismatch(rgb[..., 0], ref)


@pytest.mark.parametrize("entry", MANIFEST["silver"], ids=lambda e: f"px{e['px']}")
def test_grey_canvas_draws_the_reference_frame_on_one_channel(entry):
    # The renderer draws black-and-grey Silver frames on one channel: the reference frame is
    # the same, and so is the RGB path's frame with dim gray cells among the black ones.
    px, cols = entry["px"], entry["cols"]
    ref = np.asarray(Image.open(GOLDEN / entry["file"]))
    cps = text_of(entry)
    xs = [(i % cols) * px for i in range(len(cps))]
    ys = [(i // cols) * px for i in range(len(cps))]
    grey = np.full(ref.shape + (1,), 255, dtype=np.uint8)
    silver.draw_silver_cells(grey, cps, xs, ys, px, px, (0,))
    assert np.array_equal(grey[..., 0], ref), describe_mismatch(grey[..., 0], ref)
    inks = np.where((np.arange(len(cps)) % 3 == 0)[:, None], 128, 0)
    rgb = np.full(ref.shape + (3,), 255, dtype=np.uint8)
    silver.draw_silver_cells(rgb, cps, xs, ys, px, px, np.repeat(inks, 3, axis=1))
    grey[...] = 255
    silver.draw_silver_cells(grey, cps, xs, ys, px, px, inks)
    assert np.array_equal(grey[..., 0], rgb[..., 0]) and np.array_equal(rgb[..., 0], rgb[..., 2])


@pytest.mark.parametrize("entry", [e for e in MANIFEST["silver"] if e["px"] in (5, 16)],
                         ids=lambda e: f"px{e['px']}")
def test_single_cell_path_draws_the_same_frame(entry):
    px, cols = entry["px"], entry["cols"]
    ref = np.asarray(Image.open(GOLDEN / entry["file"]))
    rgb = np.full(ref.shape + (3,), 255, dtype=np.uint8)
    for i, cp in enumerate(text_of(entry)):
        silver.draw_silver_cell(rgb, cp, (i % cols) * px, (i // cols) * px, px, px, (0, 0, 0))
    assert np.array_equal(rgb[..., 0], ref), describe_mismatch(rgb[..., 0], ref)


def test_hue_ink_blends_over_the_repeat_band():
    entry = MANIFEST["band"][0]
    ref = np.asarray(Image.open(GOLDEN / entry["file"]).convert("RGB"))
    opts = entry["options"]
    cell, repeat, cols = opts["cellWidth"], opts["lineRepeat"], opts["size"] // opts["cellWidth"]
    cps = text_of(entry)
    rgb = np.full(ref.shape, 255, dtype=np.uint8)
    for row in range(opts["size"] // cell // repeat):
        rgb[(row * repeat + 1) * cell : (row * repeat + 2) * cell] = BAND_RGB
    for copy in range(repeat):
        xs = [(i % cols) * cell for i in range(len(cps))]
        ys = [((i // cols) * repeat + copy) * cell for i in range(len(cps))]
        silver.draw_silver_cells(rgb, cps, xs, ys, cell, cell, HUE_RED)
    assert np.array_equal(rgb, ref), describe_mismatch(rgb, ref)


# --- Fallback inside bitmap shapes (thresholded palette indices) ---------------------------------


def draw_fallback_frame(entry: dict, batch: bool) -> np.ndarray:
    ref = reference_indexed(entry["file"])
    opts = entry["options"]
    cw, ch, repeat = opts["cellWidth"], opts["cellHeight"], opts["lineRepeat"]
    cols = opts["size"] // cw
    canvas = np.zeros_like(ref)
    for row in range(opts["size"] // ch // repeat):
        for copy in range(1, repeat):
            canvas[(row * repeat + copy) * ch : (row * repeat + copy + 1) * ch] = 8
    ink = 9 if entry["dim"] else (7 if opts["variant"] == "bw" else 1)
    cps = text_of(entry)
    draws = [
        (cp, col * cw, (row * repeat + copy) * ch, wide)
        for cp, (col, row, wide) in zip(cps, grid_cells(cps, cols))
        for copy in range(repeat)
    ]
    ascent = BITMAP_ASCENT[entry["font"]]
    if batch:
        c, x, top, wide = zip(*draws)
        silver.draw_fallback_glyphs(canvas, c, x, top, cw, ch, wide, [ink] * len(draws), ascent=ascent)
    else:
        for cp, x, top, wide in draws:
            span = (2 if wide else 1) * cw
            silver.draw_fallback_glyph(canvas, cp, x, top, span, ch, cw, wide, ink, ascent=ascent)
    return canvas


@pytest.mark.parametrize("entry", MANIFEST["fallback"], ids=lambda e: e["name"])
def test_fallback_frame_is_index_identical(entry):
    ours, ref = draw_fallback_frame(entry, batch=True), reference_indexed(entry["file"])
    assert np.array_equal(ours, ref), describe_mismatch(ours, ref)


@pytest.mark.parametrize("name", ["8on16-bw", "6x12-dim", "8x8r-bw"])
def test_single_fallback_path_draws_the_same_frame(name):
    entry = next(e for e in MANIFEST["fallback"] if e["name"] == name)
    ours, ref = draw_fallback_frame(entry, batch=False), reference_indexed(entry["file"])
    assert np.array_equal(ours, ref), describe_mismatch(ours, ref)


# --- Rasterizer properties -------------------------------------------------------------------------


def pixel_art(cp: int) -> np.ndarray:
    """The glyph's design pixels straight from the outline (100 font units per pixel), via fontTools.

    Even-odd test of each design pixel's centre: count the vertical outline edges to its right.
    """
    from fontTools.pens.recordingPen import RecordingPen

    font = _ttfont()
    pen = RecordingPen()
    font.getGlyphSet()[font.getBestCmap()[cp]].draw(pen)
    contours, current = [], []
    for op, args in pen.value:
        if op in ("moveTo", "lineTo"):
            current.append(args[0])
        elif op in ("closePath", "endPath"):
            contours.append(current)
            current = []
    edges = [(a, b) for c in contours for a, b in zip(c, c[1:] + c[:1]) if a[0] == b[0] and a[1] != b[1]]
    xs = [x for c in contours for x, _ in c]
    ys = [y for c in contours for _, y in c]
    x0, y_top = min(xs), max(ys)
    w, h = (max(xs) - x0) // 100, (y_top - min(ys)) // 100
    cx = x0 + 50 + 100 * np.arange(w)[None, :]
    cy = y_top - 50 - 100 * np.arange(h)[:, None]
    inside = np.zeros((h, w), dtype=bool)
    for (ex, ya), (_, yb) in edges:
        inside ^= (ex > cx) & (min(ya, yb) < cy) & (cy < max(ya, yb))
    return inside


@lru_cache(maxsize=1)
def _ttfont():
    from fontTools.ttLib import TTFont

    return TTFont(str(fonts_dir() / silver.FONT_FILE))


@pytest.mark.parametrize("char", ["A", "g", "@", "Ж", "你", "한", "€", "ぁ"])
def test_at_19px_the_design_grid_is_hit_exactly(char):
    # 1900 units per em and 100 units per design pixel: at 19 px every edge lands on a pixel
    # boundary, so coverage is the pixel art itself (0 or 255), an expectation independent of fontdue.
    glyph = silver.rasterize(ord(char), 19)
    assert set(np.unique(glyph.coverage)) <= {0, 255}
    assert np.array_equal(glyph.coverage == 255, pixel_art(ord(char)))


def test_metrics_follow_the_font_at_design_size():
    glyph = silver.rasterize(ord("A"), 19)  # 'A': advance 600, box 0..500 x 0..900 units
    assert (glyph.width, glyph.height, glyph.xmin, glyph.ymin, glyph.advance) == (5, 9, 0, 0, 6.0)
    assert silver.line_ascent(19) == pytest.approx(12.0)  # OS/2 typo ascender 1200
    assert silver.rasterize(ord(" "), 16).coverage.shape == (0, 0)


def test_glyphs_are_cached_and_read_only():
    first = silver.rasterize(0x4F60, 16)
    assert silver.rasterize(0x4F60, 16) is first
    assert silver.rasterize_many([0x4F60, 0x41], 16)[0x4F60] is first
    with pytest.raises(ValueError):
        first.coverage[0, 0] = 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: silver.rasterize(0xE000, 16), "no glyph"),
        (lambda: silver.rasterize(ord("A"), 0), "pixel size"),
        (lambda: silver.rasterize(ord("A"), float("nan")), "pixel size"),
        (lambda: silver.pixel_size(0, 16), "cell_w"),
        (lambda: silver.draw_silver_cell(np.zeros((4, 4), np.uint8), 65, 0, 0, 16, 16, (0, 0, 0)), "rgb canvas"),
        (lambda: silver.draw_silver_cell(np.zeros((4, 4, 3), np.uint8), 65, 0, 0, 16, 16, (0, 0)), "ink_rgb"),
        (lambda: silver.draw_fallback_glyph(np.zeros((4, 4, 3), np.uint8), 65, 0, 0, 8, 16, 8, False, 7,
                                            ascent=11), "indexed canvas"),
    ],
)
def test_bad_input_is_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_drawing_clips_at_every_canvas_edge():
    # A wide glyph pushed past each edge draws only its visible part and never raises.
    full = np.full((40, 40, 3), 255, dtype=np.uint8)
    silver.draw_silver_cell(full, 0x4F60, 12, 12, 16, 16, (0, 0, 0))
    inked = full[..., 0] < 255
    for dx, dy in ((-20, 0), (20, 0), (0, -20), (0, 20)):
        moved = np.full((40, 40, 3), 255, dtype=np.uint8)
        silver.draw_silver_cell(moved, 0x4F60, 12 + dx, 12 + dy, 16, 16, (0, 0, 0))
        expected = np.roll(full[..., 0], (dy, dx), axis=(0, 1))
        visible = np.roll(inked, (dy, dx), axis=(0, 1))
        keep = np.ones_like(visible)
        if dx < 0:
            keep[:, 40 + dx :] = False
        if dx > 0:
            keep[:, :dx] = False
        if dy < 0:
            keep[40 + dy :, :] = False
        if dy > 0:
            keep[:dy, :] = False
        assert np.array_equal(moved[..., 0][keep], expected[keep])
        assert (moved[..., 0][~keep] == 255).all()
        assert (moved[..., 0] < 255).sum() == (visible & keep).sum() > 0


# --- The regeneration script refuses a text its frame cannot hold ---------------------------------


def _make_golden():
    import importlib.util

    spec = importlib.util.spec_from_file_location("silver_make_golden", GOLDEN / "make_golden.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regeneration_fails_loudly_instead_of_capping():
    make = _make_golden()
    cps = text_of({"text": "silver"})
    # 64 x 64 cells (the old layout) hold 4,096 of the 13,778 code points: the reference would
    # drop the rest without a word, the script stops.
    capped = {"file": "x.png", "cols": 64, "options": {"size": 64 * 16, "font": "silver",
                                                      "cellWidth": 16, "cellHeight": 16}}
    with pytest.raises(SystemExit, match="silently drop"):
        make.expected_height(capped, cps)
    # Wide glyphs take two cells in a bitmap shape: 2 wide glyphs do not fit a 3-cell grid.
    wide = {"file": "y.png", "cols": 3, "options": {"size": 24, "font": "8x8", "cellWidth": 8,
                                                   "cellHeight": 24}}
    with pytest.raises(SystemExit, match="silently drop"):
        make.expected_height(wide, [0x4F60, 0x597D])
    # Every stored frame is as high as the rows its text needs: nothing was dropped.
    for kind in ("silver", "band", "fallback"):
        for entry in MANIFEST[kind]:
            with Image.open(GOLDEN / entry["file"]) as img:
                assert img.height == make.expected_height(entry, text_of(entry)), entry["file"]
