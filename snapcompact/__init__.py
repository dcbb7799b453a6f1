"""snapcompact: archive long LLM conversation history as dense bitmap-font PNG frames.

The package is laid out as the pipeline runs (see ``docs/architecture.md``)::

    core -> text -> render            (text -> printable text -> pixels)
                 -> pricing           (model -> shape; the tables bills apply)
    archive                           (history -> frames archive -> request blocks)
    compaction                        (sessions, cut points, summaries, strategies, replay)
    billing                           (image, request, prompt cache, compaction calls -> tokens)
    agent                             (the coding agent's session maintenance that drives them)
    cli                               (``python -m snapcompact``)

The names below are the everyday entry points; each stage's package (``snapcompact.render``,
``snapcompact.pricing``, ...) lists its full public API in ``__all__``. Names are imported on
first use, so ``import snapcompact`` stays cheap.
"""

from __future__ import annotations

import logging as _logging
from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.archive import (
        Archive,
        CompactionResult,
        compact,
        history_blocks,
        serialize_conversation,
    )
    from snapcompact.billing import ImageBill, bill_image
    from snapcompact.compaction import CompactionPipeline, Session, Settings
    from snapcompact.core import (
        NAMED_SHAPES,
        SHAPE_NAMES,
        Geometry,
        Shape,
        geometry,
        get_shape,
    )
    from snapcompact.pricing import ResolvedShape, resolve_shape
    from snapcompact.render import Frame, frames, render, render_many
    from snapcompact.text import normalize

# The library logs under "snapcompact.*" and never configures output: the application decides
# (Hydra's job log for the eval harness). The NullHandler keeps Python's last-resort handler from
# printing the library's warnings when the application has configured nothing.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

#: Public name -> the stage package that owns it.
_WHERE: dict[str, str] = {
    "Archive": "archive",
    "CompactionPipeline": "compaction",
    "CompactionResult": "archive",
    "Frame": "render",
    "Geometry": "core",
    "ImageBill": "billing",
    "ResolvedShape": "pricing",
    "NAMED_SHAPES": "core",
    "SHAPE_NAMES": "core",
    "Session": "compaction",
    "Settings": "compaction",
    "Shape": "core",
    "bill_image": "billing",
    "compact": "archive",
    "frames": "render",
    "geometry": "core",
    "get_shape": "core",
    "history_blocks": "archive",
    "normalize": "text",
    "render": "render",
    "render_many": "render",
    "resolve_shape": "pricing",
    "serialize_conversation": "archive",
}

__all__ = [
    "NAMED_SHAPES",
    "SHAPE_NAMES",
    "Archive",
    "CompactionPipeline",
    "CompactionResult",
    "Frame",
    "Geometry",
    "ImageBill",
    "ResolvedShape",
    "Session",
    "Settings",
    "Shape",
    "bill_image",
    "compact",
    "frames",
    "geometry",
    "get_shape",
    "history_blocks",
    "normalize",
    "render",
    "render_many",
    "resolve_shape",
    "serialize_conversation",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
