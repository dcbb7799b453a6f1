"""Name the shape each archived frame was drawn in.

Why: a persisted frame records its font, ink, line repeat, columns and dimming, not the
shape's name, and the foveated planner draws the archive's middle in a denser companion
shape whatever shape was asked for. A report that says "11on16-bw" about frames that are
8on16-bw measures a configuration production never sends, so every round and record counts
frames by the shape they were actually drawn in.
"""

from __future__ import annotations

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
    # tells them apart at the shape's own frame size (8x13-bw and 8on16-bw both draw 8x13).
    for name, shape in matching:
        grid = geometry(shape)
        if (grid.cols, grid.rows) == (frame.cols, frame.rows):
            return name
    return matching[0][0] if matching else "unknown"


def frames_by_shape(frames: Iterable[ArchiveFrame],
                    preferred: str | Sequence[str] | None = None) -> dict[str, int]:
    """Frame counts keyed by the shape they were drawn in, in first-seen order."""
    return dict(Counter(frame_shape_name(f, preferred) for f in frames))
