"""Name the shape each archived frame was drawn in.

Why: a persisted frame records its font, ink, line repeat, columns and dimming, not the
variant's name, and the foveated planner draws the archive's middle in a denser companion
shape whatever shape was asked for. A report that says "11on16-bw" about frames that are
8on16-bw measures a configuration production never sends, so every round and record counts
frames by the shape they were actually drawn in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from snapcompact.archive import ArchiveFrame
from snapcompact.core import SHAPE_VARIANTS, geometry

__all__ = ["frame_shape_name", "frames_by_shape"]


def frame_shape_name(frame: ArchiveFrame, preferred: str | None = None) -> str:
    """The variant whose drawing parameters the frame carries (``preferred`` first when it
    matches, since two variants can share them); ``unknown`` when none does."""
    names = ([preferred] if preferred is not None and preferred in SHAPE_VARIANTS else []) + [
        n for n in SHAPE_VARIANTS if n != preferred]
    matching: list[str] = []
    for name in names:
        shape = SHAPE_VARIANTS[name]
        if (shape.font == frame.font and shape.ink == frame.variant
                and (shape.line_repeat or None) == (frame.line_repeat or None)
                and bool(shape.is_doc) == bool(frame.columns)
                and bool(shape.stopword_dim) == bool(frame.stopword_dim)):
            matching.append(name)
    # Shapes sharing a font and ink differ in cell pitch: the frame's grid (columns and rows)
    # tells them apart at the shape's own frame size (8x13-bw and 8on16-bw both draw 8x13).
    for name in matching:
        grid = geometry(SHAPE_VARIANTS[name])
        if (grid.cols, grid.rows) == (frame.cols, frame.rows):
            return name
    return matching[0] if matching else "unknown"


def frames_by_shape(frames: Iterable[ArchiveFrame], preferred: str | None = None
                    ) -> dict[str, int]:
    """Frame counts keyed by the shape they were drawn in, in first-seen order."""
    return dict(Counter(frame_shape_name(f, preferred) for f in frames))
