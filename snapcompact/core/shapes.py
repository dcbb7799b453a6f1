"""Frame shapes: the table of named research shapes and the geometry each implies.

Why a table: which shape a model reads best is an empirical result that the eval harness
re-measures, so the named shapes live in ``shapes.toml`` (data) while the arithmetic that turns a
shape and a frame side into a character grid lives here (code).  Geometry follows the reference
exactly: no margins, leftover pixels stay white, two-column "doc" shapes keep a 3-cell gutter.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
import warnings
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Literal, Mapping

from snapcompact.core.old_spellings import rename_old_keys, renamed_keys

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
    """Parse and validate a shape table (TOML with a ``[shapes.NAME]`` table per shape).

    A table in an old spelling (``snapcompact.core.old_spellings``, the reference's word) still
    loads, with a ``DeprecationWarning`` naming the new one.
    """
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"shape table is not valid TOML: {exc}") from exc
    data, old = rename_old_keys("shape_table", data, "shape table")
    for key in old:
        warnings.warn(f"shape table: [{key}.NAME] is the old spelling; use "
                      f"[{renamed_keys('shape_table')[key]}.NAME]", DeprecationWarning,
                      stacklevel=2)
    shapes = data.get("shapes")
    if not isinstance(shapes, dict) or not shapes:
        raise ValueError("shape table has no [shapes.NAME] entries")
    allowed = {f for f in Shape.__dataclass_fields__ if f != "name"}
    out: dict[str, Shape] = {}
    for name, fields in shapes.items():
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
def _named_shapes() -> dict[str, Shape]:
    return parse_shape_table(_table_bytes())


#: The named shapes of ``shapes.toml``, in the reference's declaration order.
NAMED_SHAPES: Mapping[str, Shape] = _named_shapes()
SHAPE_NAMES: tuple[str, ...] = tuple(NAMED_SHAPES)


def shape_table_sha256() -> str:
    """Hash of the shape table, recorded with every eval result."""
    return hashlib.sha256(_table_bytes()).hexdigest()


def get_shape(name: str, frame_size: int | None = None) -> Shape:
    """Look a named shape up (or build a parametric shape from its ``px-`` name,
    :func:`parse_parametric_name`), optionally at another frame size."""
    if isinstance(name, str) and name.startswith(PARAMETRIC_PREFIX):
        return parse_parametric_name(name, frame_size)
    try:
        shape = NAMED_SHAPES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown shape {name!r}; known shapes: {', '.join(SHAPE_NAMES)} (or a "
            f"parametric name such as {parametric_name(NAMED_SHAPES['11on16-bw'])!r})"
        ) from None
    return shape.at_size(frame_size)


# ---------------------------------------------------------------------------------------------
# Parametric shapes: any point of the space the 17 named shapes are drawn from

#: Names of parametric shapes start with this; the rest spells the parameters.
PARAMETRIC_PREFIX = "px-"
#: Frame side of a parametric shape when none is given (the research size of most named shapes).
PARAMETRIC_FRAME_SIZE = 1568
#: Bounds of the parametric space: a cell of 4..32 px each way (the named shapes use 5..16), each
#: text row printed 1..4 times (named shapes: 1 or 2).
CELL_RANGE = (4, 32)
LINE_REPEAT_RANGE = (1, 4)
LAYOUTS: tuple[str, ...] = ("grid", "doc")
_PARAM_NAME = re.compile(
    r"^px-(?P<font>[0-9a-z]+)-(?P<w>[0-9]+)x(?P<h>[0-9]+)-(?P<ink>[a-z]+)"
    r"(?:-r(?P<repeat>[0-9]+))?(?P<doc>-doc)?(?P<dim>-dim)?(?P<stretch>-stretch|-nostretch)?$")


def parametric_shape(font: str, cell_width: int, cell_height: int, *, ink: str = "bw",
                     line_repeat: int = 1, layout: str = "grid", stopword_dim: bool = False,
                     stretch: bool | None = None,
                     frame_size: int = PARAMETRIC_FRAME_SIZE) -> Shape:
    """The shape with these parameters, named by them (:func:`parametric_name`).

    ``font`` is one of the bundled fonts, ``cell_width``/``cell_height`` the cell advance and
    line pitch in px, ``layout`` ``grid`` (row-major, no wrap) or ``doc`` (two word-wrapped
    columns), ``stretch`` None (resample glyphs when the cell differs from the font's natural
    cell), False (natural glyphs on the larger pitch) or True. The renderer draws it exactly as
    the named shape with the same parameters (the named shapes are points of this space); a
    ValueError names a parameter out of range or a frame too small to hold one cell.
    """
    problems = []
    for label, value, (low, high) in (("cell_width", cell_width, CELL_RANGE),
                                      ("cell_height", cell_height, CELL_RANGE),
                                      ("line_repeat", line_repeat, LINE_REPEAT_RANGE)):
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            problems.append(f"{label} must be an integer in {low}..{high}, got {value!r}")
    if layout not in LAYOUTS:
        problems.append(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if not isinstance(stopword_dim, bool):
        problems.append(f"stopword_dim must be true or false, got {stopword_dim!r}")
    if font == "silver" and stretch is not None:
        problems.append("stretch does not apply to the silver font (leave it unset)")
    natural = NATURAL_CELL.get(font)
    if (stretch is False and natural is not None and isinstance(cell_width, int)
            and isinstance(cell_height, int)
            and (cell_width < natural[0] or cell_height < natural[1])):
        problems.append(f"stretch false draws the {font} font's natural {natural[0]}x"
                        f"{natural[1]} glyphs: the cell must be at least that large, got "
                        f"{cell_width}x{cell_height} (let it stretch)")
    if problems:
        raise ValueError("invalid parametric shape: " + "; ".join(problems))
    probe = Shape(name="px", font=font, cell_width=cell_width, cell_height=cell_height,
                  ink=ink, line_repeat=line_repeat, frame_size=frame_size, stretch=stretch,
                  columns=2 if layout == "doc" else 1, stopword_dim=stopword_dim)
    shape = replace(probe, name=parametric_name(probe))
    geo = geometry(shape)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(f"invalid parametric shape {shape.name}: a {frame_size} px frame holds "
                         f"no {cell_width}x{cell_height} cell (x{line_repeat} rows)")
    return shape


def parametric_name(shape: Shape) -> str:
    """The ``px-`` name spelling ``shape``'s drawing parameters (not its frame size, which is
    given apart as for the named shapes): ``px-<font>-<W>x<H>-<ink>``, then ``-r<N>`` for a
    line repeat above 1, ``-doc`` for two columns, ``-dim`` for stopword dimming, ``-stretch`` /
    ``-nostretch`` for an explicit stretch. ``11on16-bw`` is ``px-8x13-11x16-bw-nostretch``."""
    name = f"{PARAMETRIC_PREFIX}{shape.font}-{shape.cell_width}x{shape.cell_height}-{shape.ink}"
    if shape.line_repeat != 1:
        name += f"-r{shape.line_repeat}"
    if shape.is_doc:
        name += "-doc"
    if shape.stopword_dim:
        name += "-dim"
    if shape.stretch is not None:
        name += "-stretch" if shape.stretch else "-nostretch"
    return name


def parse_parametric_name(name: str, frame_size: int | None = None) -> Shape:
    """The shape a ``px-`` name spells (:func:`parametric_name`), at ``frame_size`` (default
    :data:`PARAMETRIC_FRAME_SIZE`); a ValueError says what is wrong with the name."""
    match = _PARAM_NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"parametric shape name {name!r} must read px-<font>-<W>x<H>-<ink>"
                         "[-r<N>][-doc][-dim][-stretch|-nostretch], e.g. "
                         "px-8x13-11x16-bw-nostretch")
    stretch = {None: None, "-stretch": True, "-nostretch": False}[match["stretch"]]
    shape = parametric_shape(
        match["font"], int(match["w"]), int(match["h"]), ink=match["ink"],
        line_repeat=int(match["repeat"] or 1), layout="doc" if match["doc"] else "grid",
        stopword_dim=bool(match["dim"]), stretch=stretch,
        frame_size=PARAMETRIC_FRAME_SIZE if frame_size is None else frame_size)
    if shape.name != name:
        raise ValueError(f"parametric shape name {name!r} is not canonical: write "
                         f"{shape.name!r}")
    return shape
