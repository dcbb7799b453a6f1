"""Parametric shapes: the 17 named variants are points of the parameter space.

Each variant's parameters are read from the reference's own record of the shape it rendered
(``meta.json`` beside the golden frames, tests/golden/render/make_golden.py), a parametric
shape is built from them alone, and its frames must equal the reference's golden frames pixel
for pixel: same renderer, same guarantees, whatever the shape is called.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from locations import GOLDEN
from PIL import Image

from snapcompact.billing import bill_image
from snapcompact.core import (
    SHAPE_NAMES,
    get_shape,
    parametric_name,
    parametric_shape,
    parse_parametric_name,
)
from snapcompact.render import decode_rgb, render_many

GOLDEN = GOLDEN / "render"
#: Prose at the research frame size, and mixed scripts (Silver fallbacks, wide cells) small.
CASES = ("prose-full", "mixed-scripts")


def _from_reference(meta: dict) -> object:
    shape = meta["shape"]
    return parametric_shape(
        shape["font"], shape["cellWidth"], shape["cellHeight"], ink=shape["variant"],
        line_repeat=shape["lineRepeat"], layout="doc" if shape.get("columns") == 2 else "grid",
        stopword_dim=bool(shape.get("stopwordDim")), stretch=shape.get("stretch"),
        frame_size=shape["frameSize"])


@pytest.mark.parametrize("variant", SHAPE_NAMES)
@pytest.mark.parametrize("case", CASES)
def test_parametric_shape_draws_the_variants_frames(case: str, variant: str) -> None:
    folder = GOLDEN / "frames" / case / variant
    shape = _from_reference(json.loads((folder / "meta.json").read_text()))
    assert shape.name.startswith("px-")
    text = (GOLDEN / "cases" / f"{case}.txt").read_bytes().decode("utf-8", "replace")
    got = render_many(text, shape)
    want = [np.asarray(Image.open(p).convert("RGB"))
            for p in sorted(folder.glob("frame*.png"), key=lambda p: int(p.stem[5:]))]
    assert len(got) == len(want)
    for i, (frame, pixels) in enumerate(zip(got, want)):
        assert np.array_equal(decode_rgb(frame.png), pixels), f"frame {i} differs"


@pytest.mark.parametrize("variant", SHAPE_NAMES)
def test_every_variant_has_a_parametric_name_that_reads_back(variant: str) -> None:
    named = get_shape(variant)
    shape = get_shape(parametric_name(named), named.frame_size)
    assert shape.name == parametric_name(named) != variant
    assert {k: v for k, v in shape.__dict__.items() if k != "name"} == {
        k: v for k, v in named.__dict__.items() if k != "name"}


def test_names_spell_the_parameters() -> None:
    assert parametric_name(get_shape("11on16-bw")) == "px-8x13-11x16-bw-nostretch"
    assert parametric_name(get_shape("8x8r-sent")) == "px-8x8-8x8-sent-r2"
    assert parametric_name(get_shape("doc-8on16-sent-dim")) == "px-8x13-8x16-sent-doc-dim-nostretch"
    assert get_shape("px-5x8-7x9-bw").frame_size == 1568  # the research size unless given


@pytest.mark.parametrize(("name", "problem"), [
    ("px-8x13-11x16", "must read"), ("px-9x9-8x8-bw", "unknown font"),
    ("px-8x13-2x16-bw", "cell_width"), ("px-8x13-11x16-bw-r1", "not canonical"),
    ("px-8x8-8x8-bw-r9", "line_repeat"), ("px-silver-16x16-bw-nostretch", "stretch"),
    ("px-8x13-7x16-bw-nostretch", "at least that large")])
def test_a_bad_name_says_what_is_wrong(name: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        get_shape(name)


def test_a_frame_too_small_for_one_cell_is_refused() -> None:
    with pytest.raises(ValueError, match="holds no"):
        parse_parametric_name("px-8x13-32x32-bw", 20)


def test_parametric_frames_are_billed_like_any_frame() -> None:
    # 7 px cells: 224 columns; 24,000 characters fill 108 rows = 756 px of a 1568 px frame;
    # claude-sonnet-4-5 bills it unresized: ceil(1568/28) * ceil(756/28) = 56 * 27 = 1,512
    frame = render_many("hello " * 4000, "px-8x8-7x7-bw")[0]
    assert (frame.width, frame.height) == (1568, 756)
    assert bill_image("claude-sonnet-4-5", frame.width, frame.height).tokens == 1512
