"""The piecewise Claude counter gives ctok's own count on every text.

The expectation is ``ctok.token_count(text, version)`` less the single-message frame, ctok called
directly (the package the counter reuses pieces of), never a value this code computed. Texts:
a slice of every category of the recorded token corpus (prose, code, JSON, numbers, logs, CJK,
emoji, agent sessions), the benchmarks' mixed corpus (prose, code, one-sentence lines, non-Latin
with combining marks, emoji and ZWJ sequences), and seeded random texts built from the cases
ctok's stream rules treat specially (case markers, contractions, digit borders, stray marks,
marker glyphs, stripped controls, curly quotes, odd spaces, newline runs, leading and trailing
whitespace, words longer than any vocabulary piece) joined by the separators the counter cuts at
and the ones it must not.

The counter wraps two of ctok's pure helpers with memos in place (``CACHED_HELPERS``), which ctok
itself then calls too; so the expectation is computed with ctok's original helpers put back for
the call, and each memoized helper is compared with its original on every word and character of
the texts.
"""

from __future__ import annotations

import gzip
import importlib
import json
import random
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import pytest
from locations import GOLDEN, REPO

ctok = pytest.importorskip("ctok")

from snapcompact.compaction.ctok_pieces import (  # noqa: E402
    CACHED_HELPERS,
    install_helper_caches,
    piecewise_ctok_counter,
)

_NORMALIZE = importlib.import_module("ctok.normalize")


@contextmanager
def _original_helpers() -> Iterator[None]:
    """ctok.normalize with its own helpers for the block (the memoized ones put back after)."""
    wrapped = {name: getattr(_NORMALIZE, name) for name in CACHED_HELPERS}
    for name, helper in wrapped.items():
        setattr(_NORMALIZE, name, getattr(helper, "__wrapped__", helper))
    try:
        yield
    finally:
        for name, helper in wrapped.items():
            setattr(_NORMALIZE, name, helper)


def _frame(version: str) -> int:
    return sum(1 for piece in ctok.tokenize("a", version) if piece == "⟨pad⟩")


def _ctok_content(text: str, version: str) -> int:
    with _original_helpers():
        return int(ctok.token_count(text, version)) - _frame(version)


@cache
def _corpus_texts() -> list[str]:
    """Up to ~2,000 characters of text fragments from each category of the recorded corpus."""
    data = json.loads(gzip.open(GOLDEN / "tokens" / "corpus.json.gz").read())
    taken: dict[str, int] = {}
    out: list[str] = []
    for message, category in zip(data["messages"], data["categories"]):
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else [
            b.get("text") for b in content or () if isinstance(b, dict) and b.get("type") == "text"]
        for text in blocks:
            if not isinstance(text, str) or taken.get(category, 0) > 2000:
                continue
            out.append(text[:1200])
            taken[category] = taken.get(category, 0) + len(out[-1])
    return out


@cache
def _mixed_texts() -> list[str]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from corpus import mixed

    text = mixed(10_000)
    rng = random.Random(3)
    cuts = sorted(rng.sample(range(len(text)), 60))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


_ATOMS = (
    "a", "Z", "word", "Hello", "HELLO", "HeLLo", "ABC", "WiFi", "x" * 140, "naïve", "straße",
    "ẞIG", "İstanbul", "ΣΑΣ", "Σοφία", "ℳx", "Ⅻ", "Ⓐⓑ", "данные", "ДАННЫЕ", "東京", "한국어",
    "ｱｲ", "'", "'s", "'t", "'ll", "'S", "don't", "it's", "rock'n'roll", "''", "('", "1", "42",
    "3.14", "١٢٣", "½", "x²", "①", "〇", ",", ".", "!", "?", "...", "—", "«", "»", "(", ")",
    "（", "）", "。", "？", "、", "==", "=>", "});", "#", "@", "\\", "/", "http://a.b/c?d=1",
    "e\u0301", "\u0301", "a\u0301\u0327", "\u0711", "\u0e4d\u0e32", "\u200b", "\u200d", "\ufeff",
    "😀", "👍🏽", "🏳️\u200d🌈", "❤\ufe0f", "\ufe0f", "⚖️", "\ufdd0", "\ufdd1", "\ufdd3",
    "\ue000", "⟨bow⟩", "“q”", "‘q’", "„", "\x01", "\x00", "\x7f", "\x85", "\r", "\r\n",
    "\u00a0", "\u3000", "\u2028", "\u2029", "\t", "\ud800",
)
_SEPARATORS = ("", " ", " ", " ", "  ", "\n", "\n\n", " \n", "\n ", "\t", " \t ", "\n\n\n  ")


@cache
def _random_texts() -> list[str]:
    rng = random.Random(26)
    out = ["", " ", "  ", "\n", "\n\n", " \n", "\n ", "a\n", "a\n\n\n", " a", "  a", "a ",
           "\x01 a", " \x01a", "\u00a0a", "'a", "' a", "a '", "1 a", "a 1", "1 1"]
    for _ in range(500):
        parts = []
        for _ in range(rng.randint(1, 9)):
            parts.append(rng.choice(_SEPARATORS))
            parts.append(rng.choice(_ATOMS))
        if rng.random() < 0.5:
            parts.append(rng.choice(_SEPARATORS))
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("version", ["3.0", "4.8"])
def test_piecewise_count_equals_ctok_on_recorded_and_mixed_text(version: str) -> None:
    count = piecewise_ctok_counter(version)
    texts = _corpus_texts() + _mixed_texts()
    assert sum(map(len, texts)) > 25_000
    mismatches = [(t[:60], count(t), _ctok_content(t, version)) for t in texts
                  if count(t) != _ctok_content(t, version)]
    assert mismatches == []


@pytest.mark.parametrize("version", ["3.0", "4.7", "4.8"])
def test_piecewise_count_equals_ctok_on_texts_built_from_its_special_cases(version: str) -> None:
    count = piecewise_ctok_counter(version)
    mismatches = [(t, count(t), _ctok_content(t, version)) for t in _random_texts()
                  if count(t) != _ctok_content(t, version)]
    assert mismatches == []


def test_a_remembered_piece_counts_the_same_in_another_place() -> None:
    """The memo is per piece and its place (message start, after a space, after a line break):
    the same words in other places, counted after the memo holds them, still match ctok."""
    count = piecewise_ctok_counter("3.0")
    texts = ["Alpha beta, GAMMA's 12 東京 delta.", " Alpha beta", "x\nAlpha beta\n",
             "beta Alpha", "'Alpha beta'", "Alpha  beta", "ALPHA BETA", "alpha\tbeta"]
    assert [count(t) for t in texts] == [_ctok_content(t, "3.0") for t in texts]
    assert [count(t) for t in reversed(texts)] == [_ctok_content(t, "3.0")
                                                    for t in reversed(texts)]


def test_the_memoized_ctok_helpers_answer_as_the_originals() -> None:
    install_helper_caches()
    mark_case, marks_like_punct = _NORMALIZE.mark_case, _NORMALIZE._marks_like_punct
    assert mark_case.__wrapped__ is not mark_case and marks_like_punct.__wrapped__
    texts = _corpus_texts() + _mixed_texts() + _random_texts() + list(_ATOMS)
    spans = {w for t in texts for w in re.findall(r"\w+|\S", ctok.normalize(t))}
    spans |= {w.upper() for w in spans} | {w.title() for w in spans}
    assert len(spans) > 2000
    for span in sorted(spans):
        for allcaps_min in (None, 2, 4):
            for head_mark in (False, True):
                for _ in range(2):  # a miss, then a hit
                    assert mark_case(span, allcaps_min, head_mark=head_mark) == \
                        mark_case.__wrapped__(span, allcaps_min, head_mark=head_mark), span
    for ch in sorted({c for t in texts for c in t} | {"\ufe0f", "\u0301", "\u3001", "\ue000"}):
        assert marks_like_punct(ch) == marks_like_punct.__wrapped__(ch), repr(ch)
        assert marks_like_punct(ch) == marks_like_punct.__wrapped__(ch), repr(ch)
