"""ctok's Claude token count, summed over pieces of the text that tile on their own, memoized.

Why: ``ctok`` (the Claude counter, :mod:`text_counters`) is pure Python at ~60k characters a
second, and a long session holds millions of characters: counting each message once still took
~40 % of a 60,000-message replay. Natural text repeats words and lines, so a memo of what a
*piece* of text costs gives the same count without redoing the work, provided the count of a
text is exactly the sum of the counts of its pieces. This module cuts a text only where that
holds for ctok 1.3.0's model, and computes each piece with ctok's own functions (the same
normalization, marked stream and min-cost tiling ``ctok.token_count`` runs), so the result is
ctok's count, not an approximation; ``tests/compaction/test_ctok_pieces.py`` compares the two on
mixed, non-Latin and adversarial texts.

How ctok counts (read from its source): the text is NFC-normalized (:func:`ctok.normalize.nfc`),
turned into a *marked stream* (word boundaries, case and absorbed spaces written in as marker
characters: ``stream_norm``), and the stream is tiled at minimum cost over the vocabulary
(``engine.min_vocab_tile``, every piece costing one token, a character no piece covers costing
its byte-floor tiling); a run of trailing newlines is priced against the frame
(``engine.frame_tail``). The count is the tiling cost plus that tail (plus the message frame,
which :mod:`text_counters` subtracts).

Where the sum is exact. A minimum-cost tiling splits into independent tilings at any stream
position that no vocabulary piece spans. Two such positions are used:

- *Line breaks*: every vocabulary piece holding a newline is made of newlines only, so a
  maximal newline run is tiled on its own. What the stream writes for the text on either side
  depends on the whitespace run around the newlines only through that run's first two and last
  characters; a line is computed as ``"\\n" + line`` (which puts the same run in front of it; the
  frame's ``⟨bow⟩`` and the newline that this writes first are dropped again).
- *Single spaces between two non-space characters* whose streams meet as ``…⟨eow⟩`` and
  ``⟨bow⟩…`` (possibly with case markers before the ``⟨bow⟩``): ctok's seam rule deletes that
  space, and no vocabulary piece holds ``⟨eow⟩`` anywhere but at its end, so the tiling splits
  right after it. Each side is computed with the space kept (``piece + " "``, ``" " + piece``),
  which gives its runs the same neighbours as in the whole text; whether the two edges are
  ``⟨eow⟩`` and ``⟨bow⟩`` is read from those streams, and where they are not (an ASCII number, an
  ideograph, an emoji: they write no border marker), the two pieces are tiled as one. Their
  joint stream is the two streams joined by the space: ctok splits text into runs reading one
  character of state, the space is a run of its own on both sides, and no stream rule looks
  further across it than the run beside it (contraction seams, word-opening quotes and border
  markers all stop at the space run), while the seam rule, the one rule that rewrites across
  it, is exactly the case that makes a cut.

A plain ASCII word (lowercase, or capitalized) is written without running the stream rules:
its marked form is ``⟨bow⟩word⟨eow⟩`` (``⟨shift⟩`` in front when capitalized) in every place a
piece can stand. The first piece of a text keeps the message-start rules (the frame's absorbed
leading space); the trailing newlines are priced on the whole text, as ctok does. The module
checks the stream shapes it relies on and falls back to ``ctok.token_count`` if one does not
hold.

Below the piece memo, three exact memos for the pieces it misses (tens of thousands in a long
session, each ~100 µs in ctok's stream step): the tiling cost of a marked stream (a function of
that string alone: the same word is tiled once for its three places), and two of ctok's pure
per-word helpers that its stream step calls for every run, ``mark_case`` (a word's case
markers: a function of the word, the all-caps minimum and the head-mark flag) and
``_marks_like_punct`` (one character's border kind). Those two are wrapped in place in
``ctok.normalize`` (:data:`CACHED_HELPERS`; the original stays as ``__wrapped__``), so every ctok
call in the process uses them; they read only their arguments and ctok's constant tables, and
``tests/compaction/test_ctok_pieces.py`` checks each against the original on the corpus and
compares the counter with ctok run on its original helpers.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["CACHED_HELPERS", "install_helper_caches", "piecewise_ctok_counter"]

#: A single space with a non-space character on each side: a candidate cut.
_SPACE_CUT = re.compile(r"(?<=\S) (?=\S)")
_NEWLINE_RUN = re.compile(r"\n+")
#: A whole ASCII word, lowercase or capitalized (two letters or more: no all-caps reading).
_PLAIN_WORD = re.compile(r"[a-z]+|[A-Z][a-z]+")
#: Where a piece starts: the message start (with or without a raw leading space), after a
#: single space, after a newline run. Where it ends: the message end or a newline run, or a space.
_START, _START_RAW_SPACE, _AFTER_SPACE, _AFTER_NEWLINE = 0, 1, 2, 3
_BEFORE_END, _BEFORE_SPACE = 0, 1
#: Distinct pieces remembered per counter (a piece is a word or a short group of words).
PIECE_CACHE_SIZE = 1 << 18
#: ctok.normalize's pure per-word helpers memoized in place -> memo size (None: one entry per
#: distinct character, a bounded set).
CACHED_HELPERS: dict[str, int | None] = {"mark_case": 1 << 18, "_marks_like_punct": None}


def install_helper_caches() -> None:
    """Wrap :data:`CACHED_HELPERS` in ``ctok.normalize`` with exact memos (once per process)."""
    normalize = importlib.import_module("ctok.normalize")
    for name, size in CACHED_HELPERS.items():
        helper = getattr(normalize, name)
        if not hasattr(helper, "cache_info"):
            setattr(normalize, name, lru_cache(maxsize=size)(helper))


def _stream_tiler(model: Any) -> Callable[[str], int]:
    """The minimum-cost tiling of a marked stream over ``model``'s vocabulary (a function of
    the string alone: the same word is tiled once for its three places), memoized."""
    from ctok.constants import MARKER_GLYPHS
    from ctok.engine import char_cost, min_vocab_tile

    trie = model.trie

    @lru_cache(maxsize=PIECE_CACHE_SIZE)
    def tiling_cost(s: str) -> int:
        if not s:
            return 0

        def unit_floor(j: int) -> int:
            ch = s[j]
            return 1 if ch in MARKER_GLYPHS else char_cost(model, ch)

        return int(min_vocab_tile(s, trie, unit_floor)[0])

    return tiling_cost


def _piece_streams(model: Any) -> Callable[[str, int, int], tuple[str, bool, bool] | None]:
    """One piece's marked stream in its place (where it starts, where it ends), memoized."""
    from ctok.constants import BOW_G, CAPS_G, EOW_G, SHIFT_G
    from ctok.normalize import stream_norm

    newline_head = (BOW_G if model.frame_bow else "") + "\n"
    opens_word = re.compile(f"[{SHIFT_G}{CAPS_G}]*{BOW_G}")

    @lru_cache(maxsize=PIECE_CACHE_SIZE)
    def piece(text: str, start: int, end: int) -> tuple[str, bool, bool] | None:
        """(marked stream, opens with ⟨bow⟩, closes with ⟨eow⟩) of one piece in its place (the
        space on either side left out), or None when its stream does not have the expected
        shape."""
        if start != _START_RAW_SPACE and _PLAIN_WORD.fullmatch(text):
            # A lowercase ASCII word is written ⟨bow⟩word⟨eow⟩ wherever it stands, a capitalized
            # one ⟨shift⟩⟨bow⟩word⟨eow⟩ (ctok's case and boundary rules for a whole word run).
            lowered = text.lower()
            s = (BOW_G if lowered == text else SHIFT_G + BOW_G) + lowered + EOW_G
            return s, start == _AFTER_SPACE, end == _BEFORE_SPACE
        head = " " if start == _AFTER_SPACE else "\n" if start == _AFTER_NEWLINE else ""
        tail = " " if end == _BEFORE_SPACE else ""
        s = stream_norm(head + text + tail, model, raw_head_space=start == _START_RAW_SPACE)
        if start == _AFTER_SPACE:
            if s[:1] != " ":
                return None
            s = s[1:]
        elif start == _AFTER_NEWLINE:
            if not s.startswith(newline_head):
                return None
            s = s[len(newline_head):]
        closes = False
        if end == _BEFORE_SPACE:
            if s[-1:] != " ":
                return None
            s = s[:-1]
            closes = s[-1:] == EOW_G
        opens = start == _AFTER_SPACE and opens_word.match(s) is not None
        return s, opens, closes

    return piece


def _line_coster(piece: Callable[[str, int, int], tuple[str, bool, bool] | None],
                 tiling_cost: Callable[[str], int]) -> Callable[[str, int], int | None]:
    """A line's tiling cost from its pieces, cut at the single spaces where an ⟨eow⟩ meets a
    ⟨bow⟩ (None when a piece's stream does not have the expected shape)."""

    def line_cost(line: str, start: int) -> int | None:
        words = _SPACE_CUT.split(line)
        end_of_line = _BEFORE_END
        if len(words) == 1:
            got = piece(line, start, end_of_line)
            return None if got is None else tiling_cost(got[0])
        # Words between two cuts form a group: its stream is theirs joined by the space (no
        # stream rule looks across a single space further than the runs beside it, and the seam
        # rule is what makes a cut), and it is tiled as one.
        total = 0
        prev = piece(words[0], start, _BEFORE_SPACE)
        if prev is None:
            return None
        group = [prev[0]]
        for i in range(1, len(words)):
            last = i == len(words) - 1
            cur = piece(words[i], _AFTER_SPACE, end_of_line if last else _BEFORE_SPACE)
            if cur is None:
                return None
            if prev[2] and cur[1]:  # ⟨eow⟩ | ⟨bow⟩: a cut; close the group before it
                total += tiling_cost(group[0] if len(group) == 1 else " ".join(group))
                group = [cur[0]]
            else:
                group.append(cur[0])
            prev = cur
        return total + tiling_cost(group[0] if len(group) == 1 else " ".join(group))

    return line_cost


def piecewise_ctok_counter(version: str) -> Callable[[str], int]:
    """``text -> ctok.token_count(text, version)`` minus the message frame (content tokens),
    computed piece by piece with a memo (see the module docstring).

    The steps: the text's lines (cut at newline runs, each run tiled on its own) and its
    trailing newlines priced against the frame; each line's cost from its pieces
    (:func:`_line_coster`); each piece's marked stream (:func:`_piece_streams`) and its tiling
    (:func:`_stream_tiler`). A line whose pieces do not have the expected shape sends the
    whole text to ``ctok.token_count``.
    """
    import ctok
    from ctok.engine import frame_tail
    from ctok.main import _family, _model
    from ctok.normalize import nfc, raw_head_space

    install_helper_caches()
    model = _model(_family(version))
    frame = model.message_overhead
    tiling_cost = _stream_tiler(model)
    line_cost = _line_coster(_piece_streams(model), tiling_cost)

    @lru_cache(maxsize=64)
    def newline_run(n: int) -> int:
        return tiling_cost("\n" * n)

    def count(text: str) -> int:
        norm = nfc(text, fold_quotes=model.fold_quotes)
        body = norm.rstrip("\n")
        n_tail = len(norm) - len(body)
        tail = len(frame_tail(n_tail, model)) if n_tail else 0
        first = _START_RAW_SPACE if raw_head_space(text) else _START
        total = 0
        at = 0
        start = first
        for m in _NEWLINE_RUN.finditer(body):
            got = line_cost(body[at:m.start()], start)
            if got is None:
                return int(ctok.token_count(text, version)) - frame
            total += got + newline_run(m.end() - m.start())
            at, start = m.end(), _AFTER_NEWLINE
        got = line_cost(body[at:], start)
        if got is None:
            return int(ctok.token_count(text, version)) - frame
        return total + got + tail

    return count
