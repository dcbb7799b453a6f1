"""Printable text -> pixels: fonts and Silver glyphs, page layout, stretch, PNG frames.
Depends on :mod:`snapcompact.core` and :mod:`snapcompact.text`.

Rooms (one job each):

* :mod:`.renderer`: text -> pages -> frames, the three drawing paths; :mod:`.layout`: where
  each character of a page lands; :mod:`.frame_cap`: the frame-count cap checked before
  drawing; :mod:`.parallel`: pages on every core; :mod:`.png`: the palette and PNG encoding;
* :mod:`.fonts`: bitmap fonts as glyph atlases; :mod:`.font_table`: their glyphs pre-parsed;
* :mod:`.silver`: Silver glyphs placed and drawn (blended, or thresholded as fallback);
  :mod:`.silver_raster`: fontdue's float32 rasterizer; :mod:`.silver_face`: Silver.ttf's
  outlines; :mod:`.silver_glyph`: the glyph record, pixel size and thresholds;
  :mod:`.silver_table`: the shipped pre-rasterized glyphs (:mod:`.silver_table_build` makes
  them); :mod:`.silver_fallback`: a page's fallback sprites cut from that table;
* :mod:`.stretch`: the Lanczos3 stretch of the squeezed shapes.

The names below are the public API; everything else is internal and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.render.frame_cap import check_frame_count, checked_pages
    from snapcompact.render.layout import doc_pages, paginate_cells
    from snapcompact.render.parallel import parallel_map
    from snapcompact.render.png import (
        PALETTE,
        PNG_EFFORTS,
        PngEffort,
        decode_rgb,
        encode_indexed,
        encode_rgb,
    )
    from snapcompact.render.renderer import (
        RENDERER_VERSION,
        Frame,
        frames,
        pages,
        paginate,
        render,
        render_many,
        render_pages,
        warm_caches,
    )

#: Public name -> the module that defines it (imported on first use, so importing one stage
#: does not load the others).
_WHERE: dict[str, str] = {
    "check_frame_count": "frame_cap",
    "checked_pages": "frame_cap",
    "decode_rgb": "png",
    "doc_pages": "layout",
    "encode_indexed": "png",
    "encode_rgb": "png",
    "Frame": "renderer",
    "frames": "renderer",
    "pages": "renderer",
    "paginate": "renderer",
    "paginate_cells": "layout",
    "PALETTE": "png",
    "PNG_EFFORTS": "png",
    "PngEffort": "png",
    "parallel_map": "parallel",
    "render": "renderer",
    "render_many": "renderer",
    "render_pages": "renderer",
    "RENDERER_VERSION": "renderer",
    "warm_caches": "renderer",
}

__all__ = [
    "checked_pages",
    "paginate",
    "Frame",
    "PALETTE",
    "PNG_EFFORTS",
    "PngEffort",
    "RENDERER_VERSION",
    "check_frame_count",
    "decode_rgb",
    "doc_pages",
    "encode_indexed",
    "encode_rgb",
    "frames",
    "pages",
    "paginate_cells",
    "parallel_map",
    "render",
    "render_many",
    "render_pages",
    "warm_caches",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
