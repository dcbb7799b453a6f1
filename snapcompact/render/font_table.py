"""The bitmap fonts' glyphs pre-parsed into arrays (``fonts/bitmap-glyphs.npz``).

Why: parsing a BDF file (thousands of ``STARTCHAR`` blocks through regular expressions and hex
decoding) cost 40-160 ms in every new process that draws a frame or compacts an archive, for a
result that is a pure function of three vendored files: the font, ``fonts/coverage.json`` (which
code points the reference draws with it) and ``fonts/glyph-patches.txt``.  So the parsed glyphs
are derived once by ``scripts/make_font_table.py`` and loaded here in a few milliseconds;
``tests/render/test_font_table.py`` checks the stored glyphs against a fresh parse.

Each font's entry names the SHA-256 of its three source files; when any of them differs (or the
table is missing), nothing is served from it and :mod:`snapcompact.render.fonts` parses the
files as before, so a stale table can cost speed, never pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from snapcompact.core import fonts_dir

TABLE_FILE = "bitmap-glyphs.npz"
#: Files besides the font itself that decide which glyphs a font has and how they look.
SHARED_SOURCES = ("coverage.json", "glyph-patches.txt")


@dataclass(frozen=True)
class GlyphArrays:
    """A font's covered glyphs, sorted by code point, as parallel arrays.

    Glyph ``i`` (code point ``cps[i]``) is ``heights[i]`` rows of ``widths[i]`` pixels at BDF
    offsets ``xoffs[i]``/``yoffs[i]``; its rows are ``rows[starts[i] : starts[i] + heights[i]]``,
    bits packed most significant first, padded on the right to a common byte count.
    """

    cps: np.ndarray
    widths: np.ndarray
    heights: np.ndarray
    xoffs: np.ndarray
    yoffs: np.ndarray
    rows: np.ndarray

    @property
    def starts(self) -> np.ndarray:
        """Index of each glyph's first row in ``rows``."""
        return np.cumsum(self.heights) - self.heights


@dataclass(frozen=True)
class StoredFont:
    """One font's entry in the table: cell size, ascent and glyphs."""

    cell_width: int
    cell_height: int
    ascent: int
    glyphs: GlyphArrays


def sources_sha256(font_file: str) -> str:
    """SHA-256 over a font file and the shared source files, each preceded by its name."""
    import hashlib  # here, not at import: it maps OpenSSL (~3.5 MB) into every process

    digest = hashlib.sha256()
    for name in (font_file, *SHARED_SOURCES):
        digest.update(name.encode() + b"\0")
        digest.update((fonts_dir() / name).read_bytes())
    return digest.hexdigest()


def to_members(name: str, font_file: str, font: StoredFont) -> dict[str, np.ndarray]:
    """The npz members that store ``font`` (the generator script writes these)."""
    g = font.glyphs
    return {
        f"{name}_sha256": np.array(sources_sha256(font_file)),
        f"{name}_metrics": np.array([font.cell_width, font.cell_height, font.ascent], np.int32),
        f"{name}_cps": g.cps.astype(np.int32),
        f"{name}_boxes": np.stack([g.widths, g.heights, g.xoffs, g.yoffs]).astype(np.int16),
        f"{name}_rows": g.rows.astype(np.uint8),
    }


@lru_cache(maxsize=None)
def stored_font(name: str, font_file: str) -> StoredFont | None:
    """The stored glyphs of font ``name``; ``None`` when absent or made from other sources.

    The file is opened and closed on each call (once per font per process): an open file
    shared with forked page workers would share its read position with them.
    """
    path = fonts_dir() / TABLE_FILE
    if not path.is_file():
        return None
    with np.load(path) as archive:
        if f"{name}_sha256" not in archive.files:
            return None
        if str(archive[f"{name}_sha256"]) != sources_sha256(font_file):
            return None
        cell_w, cell_h, ascent = (int(v) for v in archive[f"{name}_metrics"])
        widths, heights, xoffs, yoffs = archive[f"{name}_boxes"].astype(np.int64)
        glyphs = GlyphArrays(
            cps=archive[f"{name}_cps"].astype(np.int64),
            widths=widths,
            heights=heights,
            xoffs=xoffs,
            yoffs=yoffs,
            rows=archive[f"{name}_rows"],
        )
    return StoredFont(cell_w, cell_h, ascent, glyphs)
