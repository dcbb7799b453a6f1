"""Frames are named by the shape they were drawn in, at the size they were drawn."""

from __future__ import annotations

import base64

import pytest

from snapcompact import render_many
from snapcompact.agent import frame_shape_name, frames_by_shape
from snapcompact.archive import ArchiveFrame
from snapcompact.core import NAMED_SHAPES, get_shape

TEXT = "The release branch is rb-harbor-42; the staging password rotated on Tuesday. " * 400


def _archived(name: str, size: int) -> ArchiveFrame:
    shape = get_shape(name, size)
    frame = render_many(TEXT, shape)[0]
    return ArchiveFrame(data=base64.b64encode(frame.png).decode(), mime_type="image/png",
                        cols=frame.cols, rows=frame.rows, chars=frame.chars, font=shape.font,
                        ink=shape.ink, line_repeat=shape.line_repeat,
                        columns=2 if shape.is_doc else None,
                        stopword_dim=True if shape.stopword_dim else None)


@pytest.mark.parametrize("size", [512, 1092, 1568])
@pytest.mark.parametrize("name", sorted(NAMED_SHAPES))
def test_every_shape_is_named_as_drawn_whatever_was_preferred(name: str, size: int) -> None:
    # the case: at 512 px an 8on16-bw frame was reported as the 11on16-bw or 8on22-bw
    # asked for (same font and ink; the grid was compared at the research size only)
    frame = _archived(name, size)
    same_font = [n for n, s in NAMED_SHAPES.items() if s.font == NAMED_SHAPES[name].font]
    for preferred in same_font:
        assert frame_shape_name(frame, preferred) == name or (
            # two named shapes with identical drawing parameters cannot be told apart: the
            # preferred one is taken then
            _same_drawing(name, preferred, size) and frame_shape_name(frame, preferred)
            == preferred)


def _same_drawing(a: str, b: str, size: int) -> bool:
    sa, sb = get_shape(a, size), get_shape(b, size)
    keys = ("font", "cell_width", "cell_height", "ink", "line_repeat", "columns", "stopword_dim")
    return all(getattr(sa, k) == getattr(sb, k) for k in keys)


def test_frames_by_shape_counts_the_companion_not_the_asked_shape() -> None:
    frames = [_archived("11on16-bw", 512), _archived("8on16-bw", 512), _archived("8on16-bw", 512)]
    assert frames_by_shape(frames, "11on16-bw") == {"11on16-bw": 1, "8on16-bw": 2}
    assert frames_by_shape(frames[1:], "8on22-bw") == {"8on16-bw": 2}
