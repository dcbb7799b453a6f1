"""Frames against golden frames rendered by the reference (tests/golden/render/make_golden.py).

Every shape variant x every input case: the decoded RGB pixels must be identical (PNG bytes may
differ), the frame count must match, and the normalized text must match the reference's.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from locations import GOLDEN
from PIL import Image

from snapcompact.core import SHAPE_NAMES, geometry, get_shape
from snapcompact.render import Frame, decode_rgb, frames, render, render_many
from snapcompact.text import normalize

GOLDEN = GOLDEN / "render"
CASES = sorted(p.stem for p in (GOLDEN / "cases").glob("*.txt"))


def _case_text(case: str) -> str:
    # The reference reads the file as UTF-8 with replacement characters for invalid bytes.
    return (GOLDEN / "cases" / f"{case}.txt").read_bytes().decode("utf-8", "replace")


def _golden(case: str, variant: str) -> tuple[dict, list[np.ndarray], str]:
    folder = GOLDEN / "frames" / case / variant
    meta = json.loads((folder / "meta.json").read_text())
    pngs = sorted(folder.glob("frame*.png"), key=lambda p: int(p.stem[5:]))
    arrays = [np.asarray(Image.open(p).convert("RGB")) for p in pngs]
    return meta, arrays, json.loads((folder / "normalized.json").read_text())


@pytest.mark.parametrize("variant", SHAPE_NAMES)
@pytest.mark.parametrize("case", CASES)
def test_frames_match_reference(case: str, variant: str) -> None:
    meta, expected, normalized = _golden(case, variant)
    size = meta["shape"]["frameSize"]
    text = _case_text(case)
    assert normalize(text, get_shape(variant).font) == normalized
    got = render_many(text, variant, size)
    assert len(got) == len(expected) == meta["frames"] == frames(text, variant, size)
    for i, (frame, want) in enumerate(zip(got, expected)):
        pixels = decode_rgb(frame.png)
        assert pixels.shape == want.shape, f"frame {i}: size {pixels.shape} != {want.shape}"
        diff = np.argwhere((pixels != want).any(axis=2))
        assert diff.size == 0, f"frame {i}: {len(diff)} pixels differ, first at (y, x) {diff[0]}"
        assert (frame.width, frame.height) == (want.shape[1], want.shape[0])


@pytest.mark.parametrize("variant", SHAPE_NAMES)
def test_geometry_matches_reference(variant: str) -> None:
    meta, _, _ = _golden("prose-full", variant)
    geo = geometry(get_shape(variant, meta["shape"]["frameSize"]))
    assert {"cols": geo.cols, "rows": geo.rows, "capacity": geo.capacity} == meta["geometry"]


def _png_header(png: bytes) -> tuple[int, int]:
    """(bit depth, colour type) from the IHDR chunk."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return png[24], png[25]


@pytest.mark.parametrize("variant", SHAPE_NAMES)
def test_png_kind_and_smallest_bit_depth(variant: str) -> None:
    shape = get_shape(variant, 320)
    frame = render_many(_case_text("prose"), shape)[0]
    depth, colour_type = _png_header(frame.png)
    if shape.font == "silver" or shape.stretches:
        # Anti-aliased paths: RGB, or 8-bit grey when every pixel is grey (black/dim ink).
        assert (depth, colour_type) == ((8, 2) if shape.ink == "sent" else (8, 0))
        return
    assert colour_type == 3
    with Image.open(io.BytesIO(frame.png)) as image:
        colours = len(image.getpalette()) // 3
        present = len(image.convert("RGB").getcolors())
    assert colours == present  # the palette holds exactly the colours the frame uses
    assert depth == (1 if colours <= 2 else 2 if colours <= 4 else 4)


def test_newline_glyph_fills_its_cell_black() -> None:
    # digest §k 31: legacy "a█b" -> cell x 5..9, y 0..7 entirely black.
    frame = render("a\u2588b", get_shape("5x8-sent", 320))
    pixels = decode_rgb(frame.png)
    assert frame.chars == 3 and pixels.shape == (8, 320, 3)
    assert (pixels[0:8, 5:10] == 0).all()


def test_empty_and_whitespace_give_no_frames() -> None:
    for text in ("", "   ", "\n\t\n", "\u200b\ufeff"):
        assert render_many(text, "11on16-bw") == []
        assert frames(text, "11on16-bw") == 0


def test_over_capacity_is_clipped_to_capacity() -> None:
    shape = get_shape("11on16-bw", 320)
    cap = geometry(shape).capacity
    frame = render("x" * (cap + 50), shape)
    assert frame.chars == cap and frame.height == 320


def test_frame_counts_follow_capacity() -> None:
    shape = get_shape("8on16-bw", 64)  # 8 x 4 = 32 cells
    assert frames("a" * 32, shape) == 1
    assert frames("a" * 33, shape) == 2
    assert frames("你" * 16, shape) == 1  # wide glyphs take two cells
    assert frames("你" * 17, shape) == 2


def test_max_frames_keeps_the_first_pages() -> None:
    shape = get_shape("8on16-bw", 64)
    got = render_many("abcd" * 40, shape, max_frames=2)
    assert len(got) == 2 and all(isinstance(f, Frame) for f in got)


@pytest.mark.parametrize("size", [0, -5, 16385, 10**9])
def test_frame_size_out_of_range_is_a_clear_error(size: int) -> None:
    with pytest.raises(ValueError, match="frame size"):
        render_many("hello", "11on16-bw", size)


def test_unknown_shape_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown shape 'nope'"):
        render_many("hello", "nope")


def test_frame_too_small_for_one_cell_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="too small"):
        render_many("hello", "8on22-bw", 7)


@pytest.mark.parametrize(
    "text",
    ["\ud800\udfff lone surrogates \udc00", "nul\x00 and \x7f del", "x" * 1_000_000, "\U0010ffff\ufffe"],
    ids=["surrogates", "controls", "1MB-line", "noncharacters"],
)
def test_any_python_string_renders_deterministically(text: str) -> None:
    first = render_many(text, "8on16-bw", 320, max_frames=2)
    second = render_many(text, "8on16-bw", 320, max_frames=2)
    assert [f.png for f in first] == [f.png for f in second]


@pytest.mark.parametrize(("page", "font", "needs"), [
    ("plain ascii\u2588next line", "5x8", False),  # the newline glyph is drawn by every shape
    ("caf\u00e9 na\u00efve", "5x8", False),  # 5x8 covers Latin-1
    ("\u0416\u0416", "5x8", True),  # Cyrillic: not in 5x8, drawn from Silver
    ("\u4e00", "8x13", True),
    ("\U00010000", "8x8", True),  # above the BMP: never in a bitmap font
])
def test_silver_is_loaded_before_forking_only_for_pages_that_need_it(page, font, needs):
    from snapcompact.render.fonts import atlas
    from snapcompact.render.renderer import _needs_silver

    cell = {"5x8": (5, 8), "8x13": (8, 13), "8x8": (8, 8)}[font]
    assert _needs_silver(page, atlas(font, *cell)) is needs
