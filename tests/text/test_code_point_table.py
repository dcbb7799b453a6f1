"""The shipped code point table (snapcompact/text/code_point_table.json) against its rules.

The table is derived data: ``scripts/make_code_point_table.py`` evaluates
``snapcompact/text/code_point_rules.py`` over the whole code space.  These tests fail until it
is regenerated after a change to those rules or to the Unicode tables they read.  What the rules
decide is checked against the reference's own answers, code point by code point, in
``test_normalize.py`` (``test_every_code_point_matches_reference_in_every_font``).
"""

from __future__ import annotations

import bisect
import importlib.util
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from locations import REPO

from snapcompact.text import code_points as cp
from snapcompact.text.code_points import font_table, load_table_json, shared_entries

SCRIPT = REPO / "scripts" / "make_code_point_table.py"
TABLE = Path(cp.__file__).with_name(cp.TABLE_FILE)


def _generator():
    spec = importlib.util.spec_from_file_location("make_code_point_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_table_is_the_rules_over_the_whole_code_space() -> None:
    made_with = load_table_json()["unidata_version"]
    if unicodedata.unidata_version != made_with:
        pytest.skip(f"the table was made with Unicode {made_with}; this Python has "
                    f"{unicodedata.unidata_version}, whose answers differ by design")
    generator = _generator()
    assert TABLE.read_text(encoding="utf-8") == generator.render(generator.build()), (
        "code_point_table.json is stale: run scripts/make_code_point_table.py")


# Unicode facts, read from the Unicode Character Database, not from the rules.
@pytest.mark.parametrize(("code_point", "kind", "bits"), [
    (ord("A"), cp.KEEP, 0),
    (0xE9, cp.KEEP, 0),  # é: Latin-1 prints itself
    (0x4E00, cp.CANDIDATE, cp.WIDE),  # 一: CJK, two cells, drawn only if a font has it
    (0xAC00, cp.CANDIDATE, cp.WIDE),  # 가: Hangul syllable, decomposes to Jamo, never folds
    (0x0301, cp.FOLD, cp.UNRENDERABLE),  # combining acute: a bare mark folds to ""
    (0x0007, cp.DROP, cp.UNRENDERABLE),  # BEL: a control
    (0xFB01, cp.FOLD, 0),  # ﬁ ligature: NFKD to "fi"
    (0x0A, cp.DROP, cp.UNRENDERABLE | cp.IN_RUN | cp.LINE_BREAK | cp.REAL_SPACE),
    (0x2028, cp.CANDIDATE, cp.IN_RUN | cp.LINE_BREAK | cp.REAL_SPACE),  # line separator
    # Format characters are collapsed before the per-code-point step ever sees them.
    (0x200B, cp.CANDIDATE, cp.IN_RUN),  # zero width space: Cf, not whitespace
    (0xFEFF, cp.CANDIDATE, cp.IN_RUN),  # BOM: whitespace to JavaScript, but Cf
    (0x3000, cp.FOLD, cp.WIDE | cp.IN_RUN | cp.REAL_SPACE),  # ideographic space
    (0x1F600, cp.DROP, 0),  # 😀: Extended_Pictographic without an ASCII fold
])
def test_entries_follow_unicode_properties(code_point: int, kind: int, bits: int) -> None:
    runs = load_table_json()["runs"]
    entry = runs[bisect.bisect_right([start for start, _ in runs], code_point) - 1][1]
    assert entry & cp.KIND_MASK == kind
    assert entry & ~cp.KIND_MASK == bits


def test_folds_are_stored_with_their_text() -> None:
    folds = font_table("5x8").folds
    def fold(code_point: int) -> str:
        i = int(folds.code_points.searchsorted(code_point))
        assert int(folds.code_points[i]) == code_point
        start = int(folds.offsets[i])
        return "".join(map(chr, folds.chars[start : start + int(folds.lengths[i])].tolist()))
    assert fold(0xFB01) == "fi"
    assert fold(0x2460) == "1"  # circled digit one: NFKD "1"
    assert fold(0x0301) == ""


def test_loaded_entries_keep_the_stored_ones_but_candidates() -> None:
    runs = load_table_json()["runs"]
    starts = [start for start, _ in runs] + [cp.CODE_SPACE]
    for (start, entry), end in zip(runs, starts[1:]):
        loaded = shared_entries()[start:end]
        want = entry + 1 if entry & cp.KIND_MASK == cp.CANDIDATE else entry  # candidate -> "?"
        assert (loaded == want).all(), hex(start)


def test_a_font_decides_its_candidates() -> None:
    # 5x8 draws Latin-1 only; Silver draws Cyrillic and Hangul but no Egyptian hieroglyphs.
    for code_point, kind in ((0x0416, cp.KEEP), (0xAC00, cp.KEEP), (0x13000, cp.FALLBACK)):
        assert int(font_table("5x8").kinds(np.array([code_point]))[0]) == kind
