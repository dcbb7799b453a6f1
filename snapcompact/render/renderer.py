"""Frame renderer: normalized text -> pages -> PNG frames, pixel-identical to the reference.

Three drawing paths, as in the reference's native renderer:

* indexed (every bitmap shape at or above its font's natural cell): glyph masks from the font
  atlas, pre-coloured by ink (black, sentence hue, dim gray), are gathered one row of cells at
  a time straight into the canvas; code points the bitmap font lacks are drawn from Silver,
  thresholded into the palette;
* stretch (6x6u): the page is drawn indexed at the natural 8x8 cell, then Lanczos3-resampled
  to the target pitch and stored as RGB (as grey, on one channel, when all its colours are);
* Silver TrueType (silver16): anti-aliased glyphs alpha-blended onto an RGB frame (one grey
  channel when every ink is black or gray and no band is printed).

Frame width is always the frame size; height hugs the rows actually printed.  The newline glyph
(full block) fills its whole cell with black in every shape; with ``line_repeat`` > 1 each row
is printed again on a pale band.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from snapcompact.core import (
    NATURAL_CELL,
    NEWLINE_GLYPH,
    Geometry,
    Shape,
    geometry,
    get_shape,
)
from snapcompact.render import layout, silver, silver_table
from snapcompact.render.fonts import Atlas, atlas, load_font
from snapcompact.render.parallel import parallel_map
from snapcompact.render.png import (
    BAND,
    BLACK,
    DIM,
    PALETTE,
    WHITE,
    PngEffort,
    encode_grey,
    encode_indexed,
    encode_rgb,
)
from snapcompact.render.silver_glyph import pixel_size
from snapcompact.text import dim_stopwords, normalize, wrap

#: Bumped whenever a change alters any frame's pixels (cache keys include it).
RENDERER_VERSION = "1"
_NEWLINE = ord(NEWLINE_GLYPH)
_LF = 0x0A


@dataclass(frozen=True)
class Frame:
    """One rendered frame: PNG bytes plus the grid it was drawn on."""

    png: bytes
    width: int
    height: int
    cols: int
    rows: int
    chars: int
    shape: str

    @cached_property
    def data(self) -> str:
        """The PNG as base64, the way image blocks carry it."""
        return base64.b64encode(self.png).decode("ascii")


@dataclass(frozen=True)
class _Cells:
    """A page's glyphs resolved to grid cells (row-major over ``grid_cols``)."""

    cps: np.ndarray
    cells: np.ndarray
    wide: np.ndarray
    ink: np.ndarray
    used_rows: int


def _ink(shape: Shape, cps: np.ndarray, dim: np.ndarray, sentence: np.ndarray) -> np.ndarray:
    if shape.ink == "sent":
        ink = (1 + sentence % 6).astype(np.uint8)
    else:
        ink = np.full(cps.shape, BLACK, dtype=np.uint8)
    ink[dim] = DIM
    ink[cps == _NEWLINE] = BLACK
    return ink


def _grid_cells(page: str, shape: Shape, geo: Geometry) -> tuple[_Cells, int]:
    wide_cells = shape.font != "silver"
    placed = layout.place_grid(page, geo.cols, geo.capacity, wide_cells)
    used_rows = min(max(1, -(-placed.cells_used // geo.cols)), geo.rows) if geo.cols else 1
    ink = _ink(shape, placed.cps, placed.dim, placed.sentence)
    cells = _Cells(placed.cps, placed.cells, placed.widths == 2, ink, used_rows)
    return cells, int(placed.cps.size)


def _doc_cells(page: str, shape: Shape, geo: Geometry) -> tuple[_Cells, int]:
    cps = layout.codepoints(page)
    sentence, dim = layout.sentence_and_dim(cps, (0x20, _NEWLINE, _LF))
    is_lf = cps == _LF
    line = np.cumsum(is_lf) - is_lf
    widths = layout.cell_widths(cps, shape.font != "silver")
    widths[is_lf] = 0
    total = np.cumsum(widths) - widths
    first = np.zeros(int(line.max()) + 1 if cps.size else 1, dtype=np.int64)
    # Cell offset of each line's first character: total cells before it.
    lf_pos = np.flatnonzero(is_lf)
    first[1 : lf_pos.size + 1] = total[lf_pos]
    in_line = total - first[line]
    keep = (widths > 0) & (in_line + widths <= geo.cols) & (line < 2 * geo.rows)
    col = line // max(geo.rows, 1)
    row = line % max(geo.rows, 1)
    origin = col * (geo.cols + 3)
    cell = row * geo.grid_cols + origin + in_line
    n_lines = int(line[-1]) + 1 if cps.size else 0
    used_rows = min(max(1, n_lines), geo.rows)
    ink = _ink(shape, cps, dim, sentence)
    visible = cps.size - int(is_lf.sum()) - int(((cps == 0x0E) | (cps == 0x0F)).sum())
    cells = _Cells(cps[keep], cell[keep], widths[keep] == 2, ink[keep], used_rows)
    return cells, min(visible, geo.capacity)


@dataclass(frozen=True)
class _IndexedGrid:
    """The grid an indexed page is drawn on: the font atlas, cell size, cells per row, printed
    copies of each row, and each grid cell's mask key (ink * masks + glyph id; 0 = blank)."""

    font_atlas: Atlas
    grid_cols: int
    cell_w: int
    cell_h: int
    repeat: int
    keys: np.ndarray

    @property
    def n_masks(self) -> int:
        """Glyph masks in the atlas (the stride between inks in a key)."""
        return len(self.font_atlas.masks)


def _draw_indexed(
    shape: Shape, cells: _Cells, grid_cols: int, cell_w: int, cell_h: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Compose the indexed canvas: used_rows x line_repeat rows of cells, ``width`` px wide.

    Returns the canvas and how many pixels hold each palette index, counted from the cells
    and the fallback writes, so the encoder need not scan every pixel.
    """
    font_atlas: Atlas = atlas(shape.font, cell_w, cell_h)
    cps = cells.cps
    glyph_ids = np.zeros(cps.shape, dtype=np.int32)
    bmp = cps < 0x10000
    glyph_ids[bmp] = font_atlas.ids[cps[bmp]]
    keys = np.zeros(cells.used_rows * grid_cols, dtype=np.int32)
    keys[cells.cells] = font_atlas.key(glyph_ids, cells.ink)
    grid = _IndexedGrid(font_atlas, grid_cols, cell_w, cell_h, shape.line_repeat, keys)
    canvas = _gather_cells(grid, cells.used_rows, width)
    counts = _palette_counts(grid, canvas)
    missing = (glyph_ids == 0) & (cps != _NEWLINE)
    if missing.any():
        _overlay_fallback(grid, canvas, counts, cells, missing, load_font(shape.font).ascent)
    return canvas, counts


def _gather_cells(grid: _IndexedGrid, rows: int, width: int) -> np.ndarray:
    """The bitmap glyphs' canvas, ``rows * repeat * cell_h`` by ``width``; later copies of a
    row are its ink over the pale band."""
    cell_h, cell_w, grid_cols, repeat = grid.cell_h, grid.cell_w, grid.grid_cols, grid.repeat
    grid_w = grid_cols * cell_w
    canvas: np.ndarray = np.zeros((rows, repeat, cell_h, width), dtype=np.uint8)
    # One gather per row of cells, straight into the canvas: pixel row y of every cell of the
    # row comes from row y of the coloured masks (no page-sized temporary, no transpose).
    coloured_rows = grid.font_atlas.coloured_rows()
    key_grid = grid.keys.reshape(rows, grid_cols)
    for row in range(rows):
        target = canvas[row, 0, :, :grid_w].reshape(cell_h, grid_cols, cell_w)
        np.take(coloured_rows, key_grid[row], axis=1, out=target, mode="clip")
    for copy in range(1, repeat):
        band = canvas[:, copy]
        band[...] = BAND
        region = band[:, :, :grid_w]
        first = canvas[:, 0, :, :grid_w]
        np.copyto(region, first, where=first != 0)
    return canvas.reshape(rows * repeat * cell_h, width)


def _palette_counts(grid: _IndexedGrid, canvas: np.ndarray) -> np.ndarray:
    """Pixels per palette index of the gathered canvas, counted from the cells' keys.

    Every printed copy holds each cell's ink; the rest of the first copy is white, the rest of
    later copies the band.
    """
    font_atlas, repeat = grid.font_atlas, grid.repeat
    cells_per_key = np.bincount(grid.keys, minlength=Atlas.INKS * grid.n_masks)
    ink_pixels = np.zeros(len(PALETTE), dtype=np.int64)
    ink_pixels[: Atlas.INKS] = (
        cells_per_key.reshape(Atlas.INKS, grid.n_masks) @ font_atlas.pixel_counts
    )
    blank = canvas.size // repeat - int(ink_pixels.sum())
    counts = ink_pixels * repeat
    counts[WHITE] += blank
    counts[BAND] += blank * (repeat - 1)
    return counts


def _overlay_fallback(
    grid: _IndexedGrid, canvas: np.ndarray, counts: np.ndarray, cells: _Cells,
    missing: np.ndarray, ascent: int,
) -> None:
    """Draw the ``missing`` glyphs (the bitmap font lacks them) from Silver, in place.

    Silver fallback glyphs can reach a pixel or two into a neighbouring cell.  The reference
    draws glyph by glyph in text order, each writing only its inked pixels, so every pixel
    ends with the value of the last glyph (in text order) that inked it: bitmap ink carries
    the text index of its cell, fallback pixels the index of their glyph.  ``counts`` is kept
    equal to the canvas's pixels per palette index.
    """
    cps, repeat, cell_w, cell_h = cells.cps, grid.repeat, grid.cell_w, grid.cell_h
    text_index = np.arange(cps.size, dtype=np.int64)
    cell_owner = np.full(grid.keys.size, -1, dtype=np.int64)
    cell_owner[cells.cells[~missing]] = text_index[~missing]
    row_of, col_of = np.divmod(cells.cells[missing], grid.grid_cols)
    flat_canvas = canvas.reshape(-1)
    for copy in range(repeat):
        placed = silver.fallback_pixels(
            canvas.shape, cps[missing], col_of * cell_w, (row_of * repeat + copy) * cell_h,
            cell_w, cell_h, cells.wide[missing], cells.ink[missing], ascent=ascent,
        )
        if placed is None:
            continue
        flat, order, values = placed
        writer = text_index[missing][order]
        win = writer > _bitmap_owner(grid, cell_owner, flat, canvas.shape[1])
        flat, values = flat[win], values[win]
        keep = silver.last_writer(flat)
        flat, values = flat[keep], values[keep]
        counts -= np.bincount(flat_canvas[flat], minlength=len(PALETTE))
        counts += np.bincount(values, minlength=len(PALETTE))
        flat_canvas[flat] = values


def _bitmap_owner(
    grid: _IndexedGrid, cell_owner: np.ndarray, flat: np.ndarray, width: int
) -> np.ndarray:
    """Text index of the bitmap glyph inking each canvas pixel of ``flat`` (-1: none).

    Every printed copy of a row holds the same glyphs' ink: the bitmap owner of a pixel is its
    cell's glyph where that glyph inks the pixel.
    """
    cell_w, cell_h = grid.cell_w, grid.cell_h
    y, x = np.divmod(flat, width)
    inside = np.flatnonzero(x < grid.grid_cols * cell_w)
    cell_y = y[inside] % cell_h
    cell = (y[inside] // (cell_h * grid.repeat)) * grid.grid_cols + x[inside] // cell_w
    inked = grid.font_atlas.masks[grid.keys[cell] % grid.n_masks, cell_y, x[inside] % cell_w] != 0
    owner = np.full(flat.shape, -1, dtype=np.int64)
    owner[inside[inked]] = cell_owner[cell[inked]]
    return owner


def _draw_silver(shape: Shape, cells: _Cells, grid_cols: int, width: int) -> np.ndarray:
    cw, ch, repeat = shape.cell_width, shape.cell_height, shape.line_repeat
    inks = PALETTE[cells.ink]
    # Black or dim ink on white (no pale band): every channel blends alike, so one is drawn.
    channels = 1 if repeat == 1 and bool((inks == inks[:, :1]).all()) else 3
    inks = inks[:, :channels]
    rgb = np.full((cells.used_rows * repeat * ch, width, channels), 255, dtype=np.uint8)
    if repeat > 1:
        for used_row in range(cells.used_rows):
            for copy in range(1, repeat):
                y = (used_row * repeat + copy) * ch
                rgb[y : y + ch] = PALETTE[BAND]
    # The reference draws cells in text order: a newline cell is a solid black fill, so glyphs
    # drawn before it that reach into it are wiped, and glyphs drawn after it (an accented
    # capital in the next row, say) blend over the black.  Here all glyphs go to Silver in one
    # batch, then newline cells are filled, then the few later glyphs that reach back into a
    # filled cell (up or left) are blended again, clipped to that cell, in text order.
    row, col = np.divmod(cells.cells, grid_cols)
    block = cells.cps == _NEWLINE
    glyph = np.flatnonzero(~block)
    block_cells = {int(c): i for i,
                   c in zip(np.flatnonzero(block).tolist(), cells.cells[block].tolist())}
    for copy in range(repeat):
        ys = (row * repeat + copy) * ch
        xs = col * cw
        silver.draw_silver_cells(rgb, cells.cps[glyph], xs[glyph], ys[glyph], cw, ch, inks[glyph])
        for y, x in zip(ys[block].tolist(), xs[block].tolist()):
            rgb[y : y + ch, x : x + cw] = 0
        if not block_cells:
            continue
        if copy == 0:
            distinct, which = np.unique(cells.cps[glyph], return_inverse=True)
            reach = np.array([silver.cell_overhang(cp, cw, ch) for cp in distinct.tolist()],
                             dtype=np.int64).reshape(-1, 4)[which.reshape(-1)]
            reaching = glyph[(reach[:, 0] > 0) | (reach[:, 1] > 0)]  # left or up
        for j in reaching.tolist():
            left, up, right, _ = silver.cell_overhang(int(cells.cps[j]), cw, ch)
            r, c = int(row[j]), int(col[j])
            reach_x = range(c - (left + cw - 1) // cw, c + (right + cw - 1) // cw + 1)
            targets = [(r, c - 1)] if left else []
            if up:
                targets += [(r - 1 - k, cx) for k in range((up + ch - 1) // ch) for cx in reach_x]
            for tr, tc in targets:
                i = (block_cells.get(tr * grid_cols + tc) if 0 <= tc < grid_cols and tr >= 0
                     else None)
                if i is None or i > j:
                    continue
                by, bx = (tr * repeat + copy) * ch, tc * cw
                patch = np.ascontiguousarray(rgb[by : by + ch, bx : bx + cw])
                silver.draw_silver_cells(patch, cells.cps[j : j + 1], [xs[j] - bx], [ys[j] - by],
                                         cw, ch, inks[j : j + 1])
                rgb[by : by + ch, bx : bx + cw] = patch
    return rgb


def _render_page(page: str, shape: Shape, size: int,
                 effort: PngEffort = "production") -> Frame:
    geo = geometry(shape, size)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(
            f"frame size {size} px is too small for shape {shape.name!r} "
            f"({shape.cell_width}x{shape.cell_height} cells)"
        )
    cells, chars = (_doc_cells if shape.is_doc else _grid_cells)(page, shape, geo)
    if shape.font == "silver":
        drawn = _draw_silver(shape, cells, geo.grid_cols, size)
        png = (encode_grey(drawn[:, :, 0], effort) if drawn.shape[2] == 1
               else encode_rgb(drawn, effort))
        height = cells.used_rows * shape.line_repeat * shape.cell_height
    elif shape.stretches:
        # local (cost): stretch runs ldconfig at import, +14-28 ms on the renderer's 217 ms
        from snapcompact.render.stretch import stretch_frame

        natural_cell = NATURAL_CELL[shape.font]
        natural, counts = _draw_indexed(
            shape, cells, geo.grid_cols, *natural_cell, geo.grid_cols * natural_cell[0]
        )
        colours = PALETTE[np.flatnonzero(counts)]
        if (colours == colours[:, :1]).all():  # black or grey on white: one channel
            grey = stretch_frame(PALETTE[:, :1][natural], size, natural_cell,
                                 (shape.cell_width, shape.cell_height))
            height, png = grey.shape[0], encode_grey(grey[:, :, 0], effort)
        else:
            rgb = stretch_frame(PALETTE[natural], size, natural_cell,
                                (shape.cell_width, shape.cell_height))
            height, png = rgb.shape[0], encode_rgb(rgb, effort)
    else:
        canvas, counts = _draw_indexed(
            shape, cells, geo.grid_cols, shape.cell_width, shape.cell_height, size
        )
        height = canvas.shape[0]
        png = encode_indexed(canvas, np.flatnonzero(counts), effort)
    return Frame(png, size, height, geo.cols, geo.rows, chars, shape.name)


def _as_shape(shape: Shape | str, size: int | None) -> Shape:
    if isinstance(shape, str):
        return get_shape(shape, size)
    if not isinstance(shape, Shape):
        raise ValueError(f"shape must be a Shape or a shape name, got {type(shape).__name__}")
    return shape.at_size(size)


def render(text: str, shape: Shape | str, size: int | None = None,
           effort: PngEffort = "production") -> Frame:
    """Render one frame from already-normalized page text (extra characters are clipped).

    Doc shapes expect one page of newline-joined, pre-wrapped lines.  ``effort`` is the PNG's
    deflate effort (:data:`snapcompact.render.png.PngEffort`): same pixels, other bytes.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    shape = _as_shape(shape, size)
    return _render_page(text, shape, shape.frame_size, effort)


def pages(text: str, shape: Shape | str, size: int | None = None) -> list[str]:
    """Normalize ``text`` and split it into the page texts ``render_many`` draws."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    shape = _as_shape(shape, size)
    geo = geometry(shape)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(
            f"frame size {shape.frame_size} px is too small for shape {shape.name!r} "
            f"({shape.cell_width}x{shape.cell_height} cells)"
        )
    return paginate(normalize(text, shape.font), shape)


def paginate(normalized: str, shape: Shape) -> list[str]:
    """Split text already normalized for ``shape``'s font into the page texts to draw.

    ``pages`` is ``paginate(normalize(text, shape.font), shape)``; a caller that needs the
    normalized text anyway (the CLI's frame cap) normalizes once and paginates here.
    """
    geo = geometry(shape)
    if not normalized:
        return []
    wide_cells = shape.font != "silver"
    if shape.is_doc:
        out = layout.reopen_dim_spans(layout.doc_pages(wrap(normalized, geo.cols, wide_cells),
                                                       geo.rows))
    else:
        out = layout.paginate_cells(normalized, geo.capacity, geo.cols, wide_cells)
    if shape.stopword_dim:
        out = [dim_stopwords(p) for p in out]
    return out


def render_pages(page_texts: list[str], shape: Shape, workers: int | None = None,
                 effort: PngEffort = "production") -> list[Frame]:
    """Render already-paginated page texts, several at a time (:mod:`snapcompact.render.parallel`).

    ``workers`` defaults to the usable cores; 1 renders in this thread.  ``effort``: as for
    :func:`render` (``production``, the default, wherever frames are sent, billed or guarded).
    """
    if len(page_texts) > 1:
        warm_caches(shape, page_texts)  # built once here, inherited by forked workers
    return parallel_map(lambda page: _render_page(page, shape, shape.frame_size, effort),
                        page_texts, workers)


def _needs_silver(page: str, font_atlas: Atlas) -> bool:
    """Whether ``page`` holds a code point the bitmap font lacks (drawn from Silver instead).

    The newline glyph is not one: every shape fills its cell itself.
    """
    if page.isascii():
        return False
    cps = layout.codepoints(page)
    cps = cps[(cps >= 0x80) & (cps != _NEWLINE)]
    if cps.size == 0:
        return False
    if cps.max() >= 0x10000:
        return True
    return bool(np.any(font_atlas.ids[cps] == 0))


def warm_caches(shape: Shape, page_texts: Sequence[str] = ()) -> None:
    """Load what every page of ``shape`` draws with, before forking workers so it is loaded once.

    That is the font atlas and, for the Silver shape or when a page holds a code point the
    bitmap font lacks, Silver's stored glyphs at the shape's pixel sizes.
    """
    if shape.font == "silver":
        sizes = [pixel_size(shape.cell_width, shape.cell_height)]
    else:
        cell = (NATURAL_CELL[shape.font] if shape.stretches
                else (shape.cell_width, shape.cell_height))
        font_atlas = atlas(shape.font, *cell)
        font_atlas.coloured_rows()
        if not any(_needs_silver(page, font_atlas) for page in page_texts):
            return
        sizes = [pixel_size(*cell, units) for units in (1, 2)]
    for px in sizes:
        silver_table.table(px)
    if shape.font == "silver":
        silver.line_ascent(sizes[0])  # reads the font's tables


def render_many(
    text: str,
    shape: Shape | str,
    size: int | None = None,
    max_frames: int | None = None,
    workers: int | None = None,
    effort: PngEffort = "production",
) -> list[Frame]:
    """Normalize, paginate and render ``text`` into frames (first page first).

    Empty or whitespace-only text gives no frames.  ``max_frames`` keeps the first pages only.
    ``effort``: as for :func:`render`.
    """
    if max_frames is not None and (not isinstance(max_frames, int) or max_frames < 0):
        raise ValueError(f"max_frames must be a non-negative integer, got {max_frames!r}")
    shape = _as_shape(shape, size)
    page_texts = pages(text, shape)
    if max_frames is not None:
        page_texts = page_texts[:max_frames]
    return render_pages(page_texts, shape, workers, effort)


def frames(text: str, shape: Shape | str, size: int | None = None) -> int:
    """How many frames ``render_many`` would produce, without drawing them."""
    return len(pages(text, shape, size))

