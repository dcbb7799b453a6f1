"""Silver.ttf's sfnt tables, read into fontdue's px-independent outline geometry.

Why a reader of our own: the reference draws Silver with the Rust crate fontdue 0.9.4, which
takes its outlines from ttf-parser (see :mod:`snapcompact.render.silver_raster` for the
rasterizer that follows it).  fontTools' glyph decoding made a cold CJK page several times
slower, so this module reads only what Silver needs, with a few vectorized passes per batch of
glyphs: simple, on-curve-only, rectilinear glyphs and a format-12 cmap; anything else raises
``ValueError``.

What it reproduces (fontdue 0.9.4 over ttf-parser, confirmed against reference frames):
ttf-parser's contour walk, one segment per pair of consecutive points plus the closing
segment.  Segments with equal y (horizontal) are dropped; Silver is rectilinear, so every kept
segment is vertical (fontdue's "v_lines").  The sign of the summed ``(y1 - y0) * (x1 + x0)``
decides whether every line is reversed; lines are then moved to a y-down frame whose origin is
the outline's (xmin, ymax).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from snapcompact.core import fonts_dir

FONT_FILE = "Silver.ttf"
_F32 = np.float32


def segment_starts(counts: np.ndarray) -> np.ndarray:
    """Index of each segment's first entry in the concatenation of segments of ``counts``."""
    return np.cumsum(counts) - counts


@dataclass(frozen=True)
class Outlines:
    """fontdue's px-independent geometry of a batch of glyphs, in font units.

    Lines are fontdue's repositioned vertical lines (x from the outline's xmin, y down from
    its ymax, start/end already swapped when the glyph is reversed), grouped by glyph in order.
    """

    line_counts: np.ndarray  # int64 per glyph
    x: np.ndarray  # float32 per line
    y0: np.ndarray
    y1: np.ndarray
    xmin: np.ndarray  # float32 per glyph (outline bounds; zero for an empty glyph)
    ymin: np.ndarray
    width: np.ndarray
    height: np.ndarray
    advance: np.ndarray


class Face:
    """The parts of Silver.ttf fontdue uses, read straight from the sfnt tables.

    A small reader of our own rather than fontTools: it loads in milliseconds and decodes a
    batch of glyphs with a few vectorized passes, which keeps a cold frame of CJK fast.
    """

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._bytes = np.frombuffer(data, dtype=np.uint8)
        tables = {}
        (num_tables,) = struct.unpack_from(">H", data, 4)
        for i in range(num_tables):
            tag, _checksum, offset, length = struct.unpack_from(">4sIII", data, 12 + 16 * i)
            tables[tag.decode("latin-1")] = (offset, length)
        missing = {"head", "hhea", "hmtx", "cmap", "loca", "glyf", "maxp"} - tables.keys()
        if missing:
            raise ValueError(f"{FONT_FILE}: missing tables {sorted(missing)}")
        self._tables = tables
        head = tables["head"][0]
        self.units_per_em = _F32(struct.unpack_from(">H", data, head + 18)[0])
        (loc_format,) = struct.unpack_from(">h", data, head + 50)
        (num_glyphs,) = struct.unpack_from(">H", data, tables["maxp"][0] + 4)
        hhea = tables["hhea"][0]
        (self.ascender,) = struct.unpack_from(">h", data, hhea + 4)
        (num_hmetrics,) = struct.unpack_from(">H", data, hhea + 34)
        # ttf-parser prefers the OS/2 typo ascender when USE_TYPO_METRICS (fsSelection bit 7)
        # is set.
        if "OS/2" in tables:
            os2 = tables["OS/2"][0]
            if struct.unpack_from(">H", data, os2 + 62)[0] & 0x80:
                (self.ascender,) = struct.unpack_from(">h", data, os2 + 68)
        loca = tables["loca"][0]
        if loc_format == 0:
            self._loca = np.frombuffer(data, ">u2", num_glyphs + 1, loca).astype(np.int64) * 2
        else:
            self._loca = np.frombuffer(data, ">u4", num_glyphs + 1, loca).astype(np.int64)
        self._loca += tables["glyf"][0]
        advances = np.frombuffer(data, ">u2", num_hmetrics * 2, tables["hmtx"][0])[0::2]
        padding = np.full(num_glyphs - num_hmetrics, advances[-1], dtype=np.int64)
        self._advances = np.concatenate([advances.astype(np.int64), padding])
        self.cmap = self._read_cmap()

    def _read_cmap(self) -> dict[int, int]:
        """Code point -> glyph id from the format-12 subtables (fontdue: the last mapping wins)."""
        data, base = self._data, self._tables["cmap"][0]
        (count,) = struct.unpack_from(">H", data, base + 2)
        all_spans = []
        for i in range(count):
            (offset,) = struct.unpack_from(">I", data, base + 8 + 8 * i)
            sub = base + offset
            if struct.unpack_from(">H", data, sub)[0] != 12:
                continue
            (groups,) = struct.unpack_from(">I", data, sub + 12)
            all_spans.append(np.frombuffer(data, ">u4", groups * 3, sub + 16).reshape(-1, 3))
        if not all_spans:
            raise ValueError(f"{FONT_FILE}: no format-12 cmap subtable")
        # Every (first, last, first glyph) group expanded to one entry per code point, in
        # table order, so that building the dict keeps the last mapping of a code point.
        first, last, glyph = np.concatenate(all_spans).astype(np.int64).T
        lengths = np.maximum(last - first + 1, 0)
        step = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        cps = np.repeat(first, lengths) + step
        gids = np.repeat(glyph, lengths) + step
        cmap = dict(zip(cps.tolist(), gids.tolist()))
        return {cp: gid for cp, gid in cmap.items() if gid != 0}

    def _flags(self, gid: int) -> tuple[list[int], list[int], int]:
        """(point flags, contour ends, offset of the x coordinates) of a simple glyph."""
        data = self._data
        start = int(self._loca[gid])
        if self._loca[gid + 1] == start:
            return [], [], start
        (contours,) = struct.unpack_from(">h", data, start)
        if contours < 0:
            raise ValueError(f"glyph {gid}: composite glyphs are not supported")
        ends = list(struct.unpack_from(f">{contours}H", data, start + 10))
        n = ends[-1] + 1 if ends else 0
        (instructions,) = struct.unpack_from(">H", data, start + 10 + 2 * contours)
        pos = start + 12 + 2 * contours + instructions
        flags: list[int] = []
        while len(flags) < n:
            flag = data[pos]
            pos += 1
            if flag & 0x08:
                flags.extend([flag] * (data[pos] + 1))
                pos += 1
            else:
                flags.append(flag)
        del flags[n:]
        return flags, ends, pos

    def _decode_axis(self, flags, owner, first, start, short_bit, same_bit):
        """Absolute coordinates of one axis for all points, and each glyph's end offset."""
        short = (flags & short_bit) != 0
        same = (flags & same_bit) != 0
        size = np.where(short, 1, np.where(same, 0, 2))
        before = np.cumsum(size) - size
        point_first = first[owner]
        offset = start[owner] + before - before[point_first]
        hi = self._bytes[np.minimum(offset, len(self._bytes) - 1)].astype(np.int64)
        lo = self._bytes[np.minimum(offset + 1, len(self._bytes) - 1)].astype(np.int64)
        long_delta = ((hi << 8) | lo).astype(np.uint16).view(np.int16).astype(np.int64)
        delta = np.where(short, np.where(same, hi, -hi), np.where(same, 0, long_delta))
        total = np.cumsum(delta)
        coords = total - (total[point_first] - delta[point_first])
        end = start + np.bincount(owner, weights=size, minlength=len(start)).astype(np.int64)
        return coords, end

    def outlines(self, cps: list[int]) -> Outlines:
        """fontdue's vertical lines and bounds of each code point's glyph, in ``cps`` order."""
        gids = []
        for cp in cps:
            gid = self.cmap.get(cp)
            if gid is None:
                raise ValueError(f"code point U+{cp:04X} has no glyph in {FONT_FILE}")
            gids.append(gid)
        flag_lists, end_lists, starts = (zip(*(self._flags(gid) for gid in gids)) if gids
                                         else ((), (), ()))
        counts = np.array([len(f) for f in flag_lists], dtype=np.int64)
        flags = np.fromiter((f for fl in flag_lists for f in fl), dtype=np.int64,
                            count=int(counts.sum()))
        if np.any((flags & 0x01) == 0):
            raise ValueError(f"{FONT_FILE}: off-curve points; the rasterizer expects rectilinear "
                             "glyphs")
        owner = np.repeat(np.arange(len(gids)), counts)
        first = segment_starts(counts)
        x, x_end = self._decode_axis(flags, owner, first, np.array(starts, dtype=np.int64), 0x02,
                                     0x10)
        y, _ = self._decode_axis(flags, owner, first, x_end, 0x04, 0x20)

        # ttf-parser walks each contour point to point and closes it back to its first point.
        successor = np.arange(len(flags)) + 1
        for g, ends in enumerate(end_lists):
            contour_first = int(first[g])
            for end in ends:
                successor[first[g] + end] = contour_first
                contour_first = int(first[g]) + end + 1
        bx, by = x[successor], y[successor]
        if np.any((x != bx) & (y != by)):
            raise ValueError(f"{FONT_FILE}: diagonal segment; the rasterizer expects rectilinear "
                             "glyphs")
        kept = y != by  # fontdue drops horizontal segments
        line_owner = owner[kept]
        ax, ay, ey = x[kept], y[kept], by[kept]
        # Orientation: fontdue reverses every line of a glyph when sum((y1-y0)*(x1+x0)) > 0.
        # The terms are integers far from cancelling, so this exact sum has the f32 sum's sign.
        area = np.bincount(line_owner, weights=(ey - ay) * (2 * ax), minlength=len(gids))
        reverse = (area > 0)[line_owner]
        ay, ey = np.where(reverse, ey, ay), np.where(reverse, ay, ey)

        line_counts = np.bincount(line_owner, minlength=len(gids)).astype(np.int64)
        has_lines = line_counts > 0
        bounds = np.zeros((4, len(gids)), dtype=np.int64)
        if len(ax):
            line_first = segment_starts(line_counts)[has_lines]
            bounds[0, has_lines] = np.minimum.reduceat(ax, line_first)
            bounds[1, has_lines] = np.maximum.reduceat(ax, line_first)
            bounds[2, has_lines] = np.minimum.reduceat(np.minimum(ay, ey), line_first)
            bounds[3, has_lines] = np.maximum.reduceat(np.maximum(ay, ey), line_first)
        xmin, xmax, ymin, ymax = bounds
        return Outlines(
            line_counts=line_counts,
            x=(ax - xmin[line_owner]).astype(_F32),
            y0=(ymax[line_owner] - ay).astype(_F32),
            y1=(ymax[line_owner] - ey).astype(_F32),
            xmin=xmin.astype(_F32),
            ymin=ymin.astype(_F32),
            width=(xmax - xmin).astype(_F32),
            height=(ymax - ymin).astype(_F32),
            advance=self._advances[gids].astype(_F32) if gids else np.zeros(0, _F32),
        )


@lru_cache(maxsize=1)
def load_face() -> Face:
    """Silver.ttf from the shipped fonts, read once per process."""
    return Face((fonts_dir() / FONT_FILE).read_bytes())


def has_glyph(cp: int) -> bool:
    """Whether Silver.ttf maps ``cp`` to a glyph (the reference may still normalize it away)."""
    return cp in load_face().cmap
