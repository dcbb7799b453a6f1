"""Silver's glyphs pre-rasterized at the pixel sizes the named shapes draw with.

Why: a page of CJK, Cyrillic or other text a bitmap font lacks needs a thousand or more distinct
Silver glyphs, and decoding their outlines and rasterizing them with fontdue's arithmetic
(:mod:`snapcompact.render.silver_raster`) costs a few hundred milliseconds of CPU per page,
again in every new process and every forked page worker.  Those glyphs are a pure function of
``fonts/Silver.ttf`` and the pixel size, so they are derived once by
``scripts/make_silver_table.py`` and shipped as ``fonts/silver-glyphs.npz`` (every code point
of Silver's cmap at every pixel size of the 17 named shapes; about 2 MB).
``tests/render/test_silver_table.py`` checks every stored glyph against a fresh rasterization
and that every named shape's sizes are stored.

The table names the SHA-256 of the font it was made from; when the font file differs (or the
table is missing, or a size or code point is not in it) nothing is served from it and
:mod:`snapcompact.render.silver_raster` rasterizes as before, so a stale table can cost speed, never
pixels.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from snapcompact.core import fonts_dir
from snapcompact.render.silver_glyph import SilverGlyph

TABLE_FILE = "silver-glyphs.npz"
FONT_FILE = "Silver.ttf"


@dataclass(frozen=True)
class GlyphTable:
    """Every stored glyph at one pixel size, in code point order.

    Glyph ``i`` (code point ``cps[i]``) has a ``height[i] x width[i]`` coverage bitmap stored
    row-major at ``coverage[start[i]:]``, and fontdue's metrics ``xmin``/``ymin`` (whole pixels)
    and ``advance`` (float32 pixels), as in :class:`snapcompact.render.silver.SilverGlyph`.
    """

    px: float
    cps: np.ndarray
    width: np.ndarray
    height: np.ndarray
    xmin: np.ndarray
    ymin: np.ndarray
    advance: np.ndarray
    start: np.ndarray
    coverage: np.ndarray

    def rows(self, cps: np.ndarray) -> np.ndarray | None:
        """Index of each code point in the table, or ``None`` if any one is not stored."""
        cps = np.asarray(cps, dtype=np.int64)
        rows = np.searchsorted(self.cps, cps)
        rows = np.minimum(rows, len(self.cps) - 1)
        if len(self.cps) == 0 or not np.array_equal(self.cps[rows], cps):
            return None
        return rows


def _key(px: float) -> str:
    return f"px{float(px):g}"


@lru_cache(maxsize=1)
def _font_sha256() -> str:
    return hashlib.sha256((fonts_dir() / FONT_FILE).read_bytes()).hexdigest()


@lru_cache(maxsize=1)
def _stored_keys() -> frozenset[str]:
    """Member names of the table, or none when it is absent or was made from another font."""
    path = fonts_dir() / TABLE_FILE
    if not path.is_file():
        return frozenset()
    with np.load(path) as archive:
        if str(archive["font_sha256"]) != _font_sha256():
            return frozenset()
        return frozenset(archive.files)


@cache
def table(px: float) -> GlyphTable | None:
    """The stored glyphs at ``px``; ``None`` when this size is not stored or the table is stale.

    The file is opened for each size and closed again: an open file shared with forked page
    workers would share its read position with them.
    """
    key = _key(px)
    if f"{key}_width" not in _stored_keys():
        return None
    with np.load(fonts_dir() / TABLE_FILE) as archive:
        width = archive[f"{key}_width"].astype(np.int64)
        height = archive[f"{key}_height"].astype(np.int64)
        size = width * height
        coverage = archive[f"{key}_coverage"]
        coverage.setflags(write=False)
        return GlyphTable(
            px=float(px),
            cps=archive["cps"].astype(np.int64),
            width=width,
            height=height,
            xmin=archive[f"{key}_xmin"].astype(np.int64),
            ymin=archive[f"{key}_ymin"].astype(np.int64),
            advance=archive[f"{key}_advance"],
            start=np.cumsum(size) - size,
            coverage=coverage,
        )


def glyphs(cps: list[int], px: float) -> list | None:
    """``SilverGlyph``s for ``cps`` at ``px`` from the table; ``None`` if any one is missing."""
    stored = table(px)
    if stored is None or not cps:
        return None
    rows = stored.rows(np.asarray(cps, dtype=np.int64))
    if rows is None:
        return None
    out = []
    cov = stored.coverage
    for w, h, start, xmin, ymin, advance in zip(
        stored.width[rows].tolist(),
        stored.height[rows].tolist(),
        stored.start[rows].tolist(),
        stored.xmin[rows].tolist(),
        stored.ymin[rows].tolist(),
        stored.advance[rows].tolist(),
    ):
        out.append(SilverGlyph(cov[start : start + w * h].reshape(h, w), xmin, ymin, advance))
    return out
