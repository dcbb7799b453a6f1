"""Name the shape each archived frame was drawn in.

Why: a persisted frame records its font, ink, line repeat, columns and dimming, not the
shape's name, and the foveated planner draws the archive's middle in a denser companion
shape whatever shape was asked for. A report that says "11on16-bw" about frames that are
8on16-bw measures a configuration production never sends, so every round and record counts
frames by the shape they were actually drawn in.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterable, Sequence

from snapcompact.archive import ArchiveFrame
from snapcompact.core import NAMED_SHAPES, Shape, geometry, get_shape

__all__ = ["frame_shape_name", "frames_by_shape"]


def frame_shape_name(frame: ArchiveFrame, preferred: str | Sequence[str] | None = None) -> str:
    """The named shape whose drawing parameters the frame carries (``preferred`` first when it
    matches, since two named shapes can share them; a preferred parametric ``px-`` name counts
    too); ``unknown`` when none does."""
    wanted = [preferred] if isinstance(preferred, str) else list(preferred or ())
    candidates: dict[str, Shape] = {}
    for name in wanted:
        try:
            candidates[name] = get_shape(name)
        except ValueError:
            continue
    for name, shape in NAMED_SHAPES.items():
        candidates.setdefault(name, shape)
    matching: list[tuple[str, Shape]] = []
    for name, shape in candidates.items():
        if (shape.font == frame.font and shape.ink == frame.ink
                and (shape.line_repeat or None) == (frame.line_repeat or None)
                and bool(shape.is_doc) == bool(frame.columns)
                and bool(shape.stopword_dim) == bool(frame.stopword_dim)):
            matching.append((name, shape))
    # Shapes sharing a font and ink differ in cell pitch: the frame's grid (columns and rows)
    # tells them apart at the size the frame was drawn (8x13-bw, 8on16-bw and 8on22-bw all
    # draw 8x13, with the same columns at one width and different rows). The width is read
    # from the PNG; a frame without one is compared at each shape's own frame size.
    width = _png_width(frame.data)
    for sized in (True, False):
        for name, shape in matching:
            if sized and width is None:
                break
            grid = geometry(shape.at_size(width) if sized else shape)
            if (grid.cols, grid.rows) == (frame.cols, frame.rows):
                return name
    return matching[0][0] if matching else "unknown"


def _png_width(data: str) -> int | None:
    """The width in the IHDR chunk of a base64 PNG (None when ``data`` is not one)."""
    try:
        head = base64.b64decode(data[:32], validate=True)
    except (ValueError, TypeError):
        return None
    if len(head) < 24 or not head.startswith(b"\x89PNG\r\n\x1a\n") or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big")


def frames_by_shape(frames: Iterable[ArchiveFrame],
                    preferred: str | Sequence[str] | None = None) -> dict[str, int]:
    """Frame counts keyed by the shape they were drawn in, in first-seen order."""
    return dict(Counter(frame_shape_name(f, preferred) for f in frames))
