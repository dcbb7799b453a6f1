"""Fallback sprites for a whole page at once, cut from the pre-rasterized Silver table.

Why: a bitmap shape draws the code points its font lacks with Silver, thresholded into the
palette (see :mod:`snapcompact.render.silver`).  Building those sprites one glyph at a time in
Python (threshold, ``nonzero``, centring) cost more than drawing the page once the glyphs themselves
came from :mod:`snapcompact.render.silver_table`; here every distinct (code point, wide, ink) sprite
of a page is built with a handful of array operations over the table's coverage buffers.

The thresholds and placement are those of ``silver._fallback_sprite`` (the reference's
two-level indexed anti-aliasing): coverage >= 170 prints the ink; black ink prints coverage
56..169 as dim gray; other inks print coverage >= 110.  Pixels come out in each sprite's
row-major order, as ``np.nonzero`` gives them.
"""

from __future__ import annotations

import numpy as np

from snapcompact.render.silver_glyph import (
    COLORED_COVERAGE,
    FRINGE_COVERAGE,
    INK_BLACK,
    INK_DIM,
    SOLID_COVERAGE,
    pixel_size,
)
from snapcompact.render.silver_table import table

SpriteArrays = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]


def stored_sprites(keys: np.ndarray, cell_w: int, cell_h: int, ascent: int) -> SpriteArrays | None:
    """Sprites for distinct keys ``cp << 9 | wide << 8 | ink``, as ``silver.place_arrays`` takes
    them: (pixel count, rows, columns, palette values, glyph height, ymin, dx, f32 ascent).

    ``None`` when a needed pixel size or code point is not in the table (the caller rasterizes).
    """
    keys = np.asarray(keys, dtype=np.int64)
    m = len(keys)
    cps, wide, ink = keys >> 9, (keys >> 8) & 1, keys & 0xFF
    width = np.zeros(m, dtype=np.int64)
    height = np.zeros(m, dtype=np.int64)
    xmin = np.zeros(m, dtype=np.int64)
    ymin = np.zeros(m, dtype=np.int64)
    advance = np.zeros(m, dtype=np.float32)
    start = np.zeros(m, dtype=np.int64)
    sources = []
    for units in (1, 2):
        chosen = np.flatnonzero(wide == units - 1)
        if not chosen.size:
            continue
        stored = table(pixel_size(cell_w, cell_h, units))
        if stored is None:
            return None
        rows = stored.rows(cps[chosen])
        if rows is None:
            return None
        width[chosen], height[chosen] = stored.width[rows], stored.height[rows]
        xmin[chosen], ymin[chosen] = stored.xmin[rows], stored.ymin[rows]
        advance[chosen], start[chosen] = stored.advance[rows], stored.start[rows]
        sources.append((chosen, stored.coverage))
    # Every sprite's whole bitmap, row-major, sprites in key order.
    size = width * height
    owner = np.repeat(np.arange(m), size)
    local = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
    coverage = np.empty(local.size, dtype=np.uint8)
    for chosen, buffer in sources:
        mine = np.zeros(m, dtype=bool)
        mine[chosen] = True
        at = mine[owner]
        coverage[at] = buffer[start[owner[at]] + local[at]]
    black = (ink == INK_BLACK)[owner]
    inked = (coverage >= COLORED_COVERAGE) | (black & (coverage >= FRINGE_COVERAGE))
    owner, local, coverage, black = owner[inked], local[inked], coverage[inked], black[inked]
    values = np.where(black & (coverage < SOLID_COVERAGE), INK_DIM, ink[owner]).astype(np.uint8)
    ys, xs = np.divmod(local, width[owner])
    span = (1 + wide) * cell_w
    dx = np.maximum(0, span - np.ceil(advance).astype(np.int64)) // 2 + xmin
    counts = np.bincount(owner, minlength=m).astype(np.int64)
    ascents = np.full(m, ascent, dtype=np.float32)
    return counts, ys, xs, values, height, ymin, dx, ascents
