"""Facts every stage shares: control glyphs, frame shapes, JavaScript text semantics, the
token estimate, where the fonts live, and the old spellings persisted data may carry
(``old_spellings``: the one converter, its table in ``old_spellings.toml``). Imports nothing
else from snapcompact.

Modules: ``glyphs`` (control glyphs), ``shapes`` (the named shapes and their geometry, from
``shapes.toml``), ``js`` (JavaScript text semantics), ``estimate`` (the characters-per-token
estimate), ``assets`` (where the fonts live), ``checks`` (argument checks), ``json_text``
(``JSON.stringify`` with indentation, without the encoder's generators), ``collector`` (the
garbage collector paused for a block of work), ``lazy`` (lazy public names for every package
``__init__``), ``old_spellings`` (the converter).

The names below are the public API; everything else is internal and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core.lazy import lazy_exports

if TYPE_CHECKING:
    from snapcompact.core.assets import fonts_dir
    from snapcompact.core.checks import check_text
    from snapcompact.core.collector import collector_paused
    from snapcompact.core.estimate import CHARS_PER_TOKEN, estimate_text_tokens
    from snapcompact.core.glyphs import (
        DIM_OFF,
        DIM_ON,
        NEWLINE_GLYPH,
        WIDE_RANGES,
        is_wide,
    )
    from snapcompact.core.js import (
        JS_WHITESPACE,
        JS_WS,
        js_number_to_string,
        js_round,
        js_slice,
        utf16_len,
    )
    from snapcompact.core.json_text import indented_json
    from snapcompact.core.lazy import lazy_exports  # noqa: F811
    from snapcompact.core.old_spellings import on_disk_key, rename_old_keys, renamed_keys
    from snapcompact.core.shapes import (
        FONTS,
        NAMED_SHAPES,
        NATURAL_CELL,
        PARAMETRIC_PREFIX,
        SHAPE_NAMES,
        Geometry,
        Shape,
        check_frame_size,
        geometry,
        get_shape,
        parametric_name,
        parametric_shape,
        parse_parametric_name,
        shape_table_sha256,
    )

#: Public name -> the module that defines it (imported on first use, so importing one stage
#: does not load the others).
_WHERE: dict[str, str] = {
    "lazy_exports": "lazy",
    "CHARS_PER_TOKEN": "estimate",
    "check_frame_size": "shapes",
    "check_text": "checks",
    "DIM_OFF": "glyphs",
    "DIM_ON": "glyphs",
    "estimate_text_tokens": "estimate",
    "FONTS": "shapes",
    "fonts_dir": "assets",
    "Geometry": "shapes",
    "geometry": "shapes",
    "get_shape": "shapes",
    "collector_paused": "collector",
    "indented_json": "json_text",
    "is_wide": "glyphs",
    "js_number_to_string": "js",
    "js_round": "js",
    "js_slice": "js",
    "JS_WHITESPACE": "js",
    "JS_WS": "js",
    "NATURAL_CELL": "shapes",
    "on_disk_key": "old_spellings",
    "rename_old_keys": "old_spellings",
    "renamed_keys": "old_spellings",
    "NEWLINE_GLYPH": "glyphs",
    "Shape": "shapes",
    "shape_table_sha256": "shapes",
    "NAMED_SHAPES": "shapes",
    "SHAPE_NAMES": "shapes",
    "PARAMETRIC_PREFIX": "shapes",
    "parametric_name": "shapes",
    "parametric_shape": "shapes",
    "parse_parametric_name": "shapes",
    "utf16_len": "js",
    "WIDE_RANGES": "glyphs",
}

__all__ = [
    "lazy_exports",
    "CHARS_PER_TOKEN",
    "DIM_OFF",
    "DIM_ON",
    "FONTS",
    "Geometry",
    "JS_WHITESPACE",
    "JS_WS",
    "NATURAL_CELL",
    "NEWLINE_GLYPH",
    "NAMED_SHAPES",
    "PARAMETRIC_PREFIX",
    "SHAPE_NAMES",
    "Shape",
    "WIDE_RANGES",
    "check_frame_size",
    "check_text",
    "estimate_text_tokens",
    "fonts_dir",
    "collector_paused",
    "indented_json",
    "geometry",
    "get_shape",
    "is_wide",
    "js_number_to_string",
    "js_round",
    "js_slice",
    "on_disk_key",
    "parametric_name",
    "parametric_shape",
    "parse_parametric_name",
    "rename_old_keys",
    "renamed_keys",
    "shape_table_sha256",
    "utf16_len",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
