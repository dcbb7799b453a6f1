"""Frame shapes: the table of research variants and the geometry each implies.

Why a table: which shape a model reads best is an empirical result that the eval harness
re-measures, so the variants live in ``shapes.toml`` (data) while the arithmetic that turns a
shape and a frame side into a character grid lives here (code).  Geometry follows the reference
exactly: no margins, leftover pixels stay white, two-column "doc" shapes keep a 3-cell gutter.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Literal, Mapping

Font = Literal["5x8", "6x12", "8x13", "8x8", "silver"]
Ink = Literal["bw", "sent"]

FONTS: tuple[str, ...] = ("5x8", "6x12", "8x13", "8x8", "silver")
INKS: tuple[str, ...] = ("bw", "sent")
#: Natural cell (width, height) of each font: the stretch path resamples only away from it.
NATURAL_CELL: Mapping[str, tuple[int, int]] = {
    "5x8": (5, 8),
    "6x12": (6, 12),
    "8x13": (8, 13),
    "8x8": (8, 8),
    "silver": (16, 16),
}
DOC_GUTTER_CELLS = 3
MAX_FRAME_SIZE = 16384


@dataclass(frozen=True)
class Shape:
    """One frame shape: font, cell pitch, ink and layout at a frame side of ``frame_size`` px."""

    name: str
    font: str
    cell_width: int
    cell_height: int
    ink: str = "bw"
    line_repeat: int = 1
    frame_size: int = 1568
    stretch: bool | None = None
    columns: int = 1
    stopword_dim: bool = False

    def __post_init__(self) -> None:
        problems = []
        if self.font not in FONTS:
            problems.append(f"unknown font {self.font!r} (known: {', '.join(FONTS)})")
        if self.ink not in INKS:
            problems.append(f"unknown ink {self.ink!r} (known: {', '.join(INKS)})")
        for field in ("cell_width", "cell_height", "line_repeat"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{field} must be a positive integer, got {value!r}")
        if self.columns not in (1, 2):
            problems.append(f"columns must be 1 or 2, got {self.columns!r}")
        if self.stretch not in (None, True, False):
            problems.append(f"stretch must be true, false or absent, got {self.stretch!r}")
        if problems:
            raise ValueError(f"invalid shape {self.name!r}: " + "; ".join(problems))
        check_frame_size(self.frame_size)

    @property
    def is_doc(self) -> bool:
        """Whether the shape lays text out in two columns (the doc shapes)."""
        return self.columns == 2

    @property
    def stretches(self) -> bool:
        """True when glyphs are resampled (Lanczos3) from the font's natural cell."""
        if self.font == "silver" or self.stretch is False:
            return False
        return (self.cell_width, self.cell_height) != NATURAL_CELL[self.font]

    def at_size(self, frame_size: int | None) -> "Shape":
        """The same shape at another frame side (``None`` keeps the research size)."""
        if frame_size is None or frame_size == self.frame_size:
            return self
        check_frame_size(frame_size)
        return replace(self, frame_size=frame_size)


@dataclass(frozen=True)
class Geometry:
    """Character grid of a shape at one frame side.

    ``cols`` is characters per line (per column for doc shapes), ``rows`` text rows per frame,
    ``capacity`` the characters one frame holds, ``grid_cols`` cells across the whole frame.
    """

    cols: int
    rows: int
    capacity: int
    grid_cols: int


def check_frame_size(size: object) -> int:
    """``size`` checked as a frame side in pixels (1 .. ``MAX_FRAME_SIZE``)."""
    if not isinstance(size, int) or isinstance(size, bool):
        raise ValueError(f"frame size must be an integer number of pixels, got {size!r}")
    if size < 1 or size > MAX_FRAME_SIZE:
        raise ValueError(f"frame size must be between 1 and {MAX_FRAME_SIZE} px, got {size}")
    return size


def geometry(shape: Shape, size: int | None = None) -> Geometry:
    """Grid geometry of ``shape`` at ``size`` px (default: the shape's frame size)."""
    size = check_frame_size(shape.frame_size if size is None else size)
    grid_cols = size // shape.cell_width
    rows = size // shape.cell_height // shape.line_repeat
    if shape.is_doc:
        cols = max(0, (grid_cols - DOC_GUTTER_CELLS) // 2)
        return Geometry(cols=cols, rows=rows, capacity=2 * cols * rows, grid_cols=grid_cols)
    return Geometry(cols=grid_cols, rows=rows, capacity=grid_cols * rows, grid_cols=grid_cols)


def _table_bytes() -> bytes:
    return resources.files("snapcompact.core").joinpath("shapes.toml").read_bytes()


def parse_shape_table(raw: bytes | str) -> dict[str, Shape]:
    """Parse and validate a shape table (TOML with a ``[variants.NAME]`` table per shape)."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"shape table is not valid TOML: {exc}") from exc
    variants = data.get("variants")
    if not isinstance(variants, dict) or not variants:
        raise ValueError("shape table has no [variants.NAME] entries")
    allowed = {f for f in Shape.__dataclass_fields__ if f != "name"}
    out: dict[str, Shape] = {}
    for name, fields in variants.items():
        if not isinstance(fields, dict):
            raise ValueError(f"shape {name!r}: expected a table, got {type(fields).__name__}")
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"shape {name!r}: unknown field(s) {', '.join(sorted(unknown))}")
        missing = {"font", "cell_width", "cell_height", "frame_size"} - set(fields)
        if missing:
            raise ValueError(f"shape {name!r}: missing field(s) {', '.join(sorted(missing))}")
        out[name] = Shape(name=name, **fields)
    return out


@lru_cache(maxsize=1)
def _variants() -> dict[str, Shape]:
    return parse_shape_table(_table_bytes())


SHAPE_VARIANTS: Mapping[str, Shape] = _variants()
SHAPE_VARIANT_NAMES: tuple[str, ...] = tuple(SHAPE_VARIANTS)


def shape_table_sha256() -> str:
    """Hash of the shape table, recorded with every eval result."""
    return hashlib.sha256(_table_bytes()).hexdigest()


def get_shape(name: str, frame_size: int | None = None) -> Shape:
    """Look a variant up by name, optionally at another frame size."""
    try:
        shape = SHAPE_VARIANTS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown shape {name!r}; known shapes: {', '.join(SHAPE_VARIANT_NAMES)}"
        ) from None
    return shape.at_size(frame_size)
