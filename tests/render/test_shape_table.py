"""The shape table's spelling: ``[shapes.NAME]``; a table in the old ``[variants.NAME]`` spelling
still loads, with a warning naming the new one; the reference's names are retired (issue 38)."""

from __future__ import annotations

from importlib import resources

import pytest

import snapcompact
import snapcompact.core
from snapcompact.core import NAMED_SHAPES, SHAPE_NAMES
from snapcompact.core.shapes import parse_shape_table


def _shipped() -> str:
    return resources.files("snapcompact.core").joinpath("shapes.toml").read_text()


def test_old_spelling_loads_the_same_shapes_with_a_warning() -> None:
    text = _shipped()
    assert "[variants." not in text and text.count("[shapes.") == 17
    old = text.replace("[shapes.", "[variants.")
    with pytest.warns(DeprecationWarning, match=r"\[variants.NAME\] is the old spelling; use "
                                                r"\[shapes.NAME\]"):
        assert parse_shape_table(old) == parse_shape_table(text) == dict(NAMED_SHAPES)
    with pytest.raises(ValueError, match="both"):
        parse_shape_table(text + '\n[variants."x"]\nfont = "5x8"\n')


def test_reference_names_are_retired() -> None:
    """One word: the project says shape; the reference's word is no public name (issue 38)."""
    old = "SHAPE_" + "VARIANT"
    for package in (snapcompact, snapcompact.core):
        assert not [n for n in package.__all__ if n.startswith(old)]
        with pytest.raises(AttributeError):
            getattr(package, old + "S")
    assert SHAPE_NAMES[:3] == ("8x8r-bw", "8x8r-sent", "8x8u-bw")  # the reference's order
