"""The CLI's render path: pages normalized once under the frame cap, then drawn.

``checked_pages`` + ``render_pages`` is what ``python -m snapcompact render`` runs; its frames
must be the reference's golden frames (tests/golden/render), in every shape variant, and the
cap must count exactly the reference's frames.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from locations import GOLDEN
from PIL import Image

from snapcompact.core import SHAPE_NAMES, get_shape
from snapcompact.render import decode_rgb, render_pages
from snapcompact.render.frame_cap import TooManyFrames, check_frame_count, checked_pages

GOLDEN = GOLDEN / "render"
#: Cases with several frames at their golden size, non-Latin fallback glyphs and tool output.
CASES = ("fallback-spill", "tool-output", "cjk")


def _golden(case: str, variant: str) -> tuple[str, int, list[np.ndarray]]:
    folder = GOLDEN / "frames" / case / variant
    meta = json.loads((folder / "meta.json").read_text())
    pngs = sorted(folder.glob("frame*.png"), key=lambda p: int(p.stem[5:]))
    frames = [np.asarray(Image.open(io.BytesIO(p.read_bytes())).convert("RGB")) for p in pngs]
    text = (GOLDEN / "cases" / f"{case}.txt").read_bytes().decode("utf-8", "replace")
    return text, meta["shape"]["frameSize"], frames


@pytest.mark.parametrize("variant", SHAPE_NAMES)
@pytest.mark.parametrize("case", CASES)
def test_checked_pages_draw_the_reference_frames(case: str, variant: str) -> None:
    text, size, expected = _golden(case, variant)
    shape = get_shape(variant, size)
    page_texts = checked_pages(text, shape, len(expected))
    got = render_pages(page_texts, shape)
    assert len(got) == len(expected)
    for i, (frame, want) in enumerate(zip(got, expected)):
        assert np.array_equal(decode_rgb(frame.png), want), f"frame {i} differs"


@pytest.mark.parametrize("variant", SHAPE_NAMES)
def test_cap_one_below_the_reference_count_refuses(variant: str) -> None:
    text, size, expected = _golden("fallback-spill", variant)
    shape = get_shape(variant, size)
    assert check_frame_count(text, shape, len(expected)) == len(expected)
    with pytest.raises(TooManyFrames, match=f"more than the cap of {len(expected) - 1}"):
        checked_pages(text, shape, len(expected) - 1)


def test_bad_cap_and_text_are_clear_errors() -> None:
    shape = get_shape("8on16-bw")
    with pytest.raises(ValueError, match="frame cap must be an integer >= 1"):
        checked_pages("text", shape, 0)
    with pytest.raises(ValueError, match="text must be a str, got bytes"):
        checked_pages(b"text", shape, 5)
