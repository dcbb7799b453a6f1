"""The serializer's fast paths answer exactly as the general code they short-cut.

``truncate_middle`` of ASCII text takes ``js_slice``'s no-astral path, and the surrogate
test behind ``_rejoin_surrogates`` uses a strict UTF-8 encode instead of a character-class
search. The expectations here are the general routines themselves (``js_slice`` over UTF-16 code
units, a regex over the surrogate block), which the reference goldens of ``test_serialize.py``
already pin down.
"""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from snapcompact.archive.serialize import (
    _has_surrogate,
    _strip_dim,
    truncate_middle,
)
from snapcompact.core import js_number_to_string, js_slice


@given(text=st.text(st.characters(codec="utf-8") | st.characters(min_codepoint=0xD800,
                                                              max_codepoint=0xDFFF), max_size=30))
def test_surrogate_test_matches_a_search(text: str) -> None:
    assert _has_surrogate(text) == (re.search("[\ud800-\udfff]", text) is not None)


@given(text=st.text(st.sampled_from("ab \x0e\x0f\n"), max_size=30))
def test_strip_dim_removes_only_the_toggles(text: str) -> None:
    assert _strip_dim(text) == text.replace("\x0e", "").replace("\x0f", "")


@given(body=st.text(st.characters(max_codepoint=0x7F), max_size=60),
       cap=st.integers(0, 40).map(float) | st.just(math.inf) | st.floats(0, 40, width=32),
       ratio=st.floats(-1, 2, width=32))
def test_truncate_middle_of_ascii_cuts_like_js_slice(body: str, cap: float, ratio: float) -> None:
    # The documented rule, restated over the general js_slice: head = round(cap * ratio) units
    # (halves up, ratio clamped to [0, 1]), tail = cap - head units, the rest elided.
    if len(body) <= cap:
        assert truncate_middle(body, cap, ratio) == body
        return
    head = math.floor(cap * min(max(ratio, 0), 1) + 0.5)
    tail = cap - head
    expected = (f"{js_slice(body, 0, head)} [\u2026{js_number_to_string(len(body) - cap)}ch "
                f"elided\u2026] {js_slice(body, -tail) if tail > 0 else ''}")
    assert truncate_middle(body, cap, ratio) == expected
