"""A cap on how many frames a text may render to, checked before any frame is drawn.

Why: the frame count grows with the text and shrinks with the square of the frame size, so a
small ``--size`` on a long input asks for an absurd number of frames (300 KB of text at 16 px
is 300,000 one-character frames; 10 MB would need about 28 GB of PNGs). ``render_many``'s
``max_frames`` silently keeps the first pages, which is right for a budget and wrong for a
typo. Callers that take sizes from users (the CLI, the eval harness) check the count here
first and refuse with one clear line.

The check is cheap where it matters: a frame holds at most ``capacity`` cells and every
character takes at least one, so the normalized length alone proves most absurd requests too
big without paginating; otherwise the exact page count decides.
"""

from __future__ import annotations

from snapcompact.core import Shape, geometry
from snapcompact.render.renderer import paginate
from snapcompact.text import normalize

__all__ = ["TooManyFrames", "check_frame_count", "checked_pages"]


class TooManyFrames(ValueError):
    """The text would render to more frames than the caller allows."""


def check_frame_count(text: str, shape: Shape, max_frames: int) -> int:
    """The number of frames ``text`` renders to at ``shape``; ``TooManyFrames`` past the cap."""
    return len(checked_pages(text, shape, max_frames))


def checked_pages(text: str, shape: Shape, max_frames: int) -> list[str]:
    """The page texts ``render_many`` would draw for ``text``; ``TooManyFrames`` past the cap.

    The text is normalized once, for the bound and the pages both, so a caller that goes on to
    draw the pages (``render_pages``) pays for normalization and pagination only once.
    """
    if isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < 1:
        raise ValueError(f"the frame cap must be an integer >= 1, got {max_frames!r}")
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")  # noqa: TRY004
    geo = geometry(shape)
    if geo.capacity < 1 or geo.cols < 1 or geo.rows < 1:
        raise ValueError(f"frame size {shape.frame_size} px is too small for shape "
                         f"{shape.name!r} ({shape.cell_width}x{shape.cell_height} cells)")
    normalized = normalize(text, shape.font)
    at_least = -(-len(normalized) // geo.capacity)
    if at_least > max_frames:
        raise TooManyFrames(_message(shape, f"at least {at_least:,}", max_frames))
    page_texts = paginate(normalized, shape)
    if len(page_texts) > max_frames:
        raise TooManyFrames(_message(shape, f"{len(page_texts):,}", max_frames))
    return page_texts


def _message(shape: Shape, count: str, max_frames: int) -> str:
    return (f"shape {shape.name} at {shape.frame_size} px would render {count} frames, more "
            f"than the cap of {max_frames:,}: use a larger frame size or raise the cap")
