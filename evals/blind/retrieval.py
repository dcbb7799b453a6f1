"""The blind reader's answer: find the question's line by BM25, then extract the value from it.

Why blind: the told reader (``evals.readers.answer``) is given the evidence sentence and the gold
answers, so retrieval is perfect and a kept-tail question is correct by construction. A reading
model is given only the question: it must find the fact in a long context (depth, length,
near-duplicate lines count) and may then copy a wrong value or answer a question the session
never answered. This reader does the same, lexically and deterministically:

1. **Segments.** The reading (text parts as text, frames as transcribed) is cut into lines
   (a newline or the frames' newline glyph) and each line into sentences (``.``, ``!``, ``?``
   before a space); a segment longer than :data:`MAX_SEGMENT_WORDS` words is cut into windows.
2. **Terms.** Lowercased alphanumeric runs, stopwords dropped, one suffix stemmed
   (``ing``/``ed``/``es``/``s`` when three letters remain, the gist grader's rule).
3. **Retrieval.** BM25 (Okapi, ``rank_bm25``) ranks the segments by the question's terms; the
   best one is kept (the first on a tie).
4. **Enough of the question?** The segment must hold at least :data:`MIN_COVERAGE` of the
   question's terms weighted by idf, ``ln(1 + (N - df + 0.5) / (df + 0.5))`` over the N segments,
   so a term the reading never contains (an unheard-of subject) weighs most. Below it: abstain
   (:data:`ABSTENTION`). Coverage also breaks BM25 ties (Okapi gives idf 0 to a term in half
   of a tiny reading).
5. **Extraction.** The answer is the segment's words after the last word sharing a term with
   the question, leading function words (``is``, ``at``, ``in`` ...) and a trailing ``.``
   dropped; when nothing follows, the words before the first shared word. Nothing left: abstain.

A never-stated probe whose lure (same template, another subject) passes step 4 is answered with
the lure's value: a confabulation, counted as such (``evals.pipeline.probe_grading``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rank_bm25 import BM25Okapi

from snapcompact.core import DIM_OFF, DIM_ON, NEWLINE_GLYPH

ABSTENTION = "unanswerable"
#: idf-weighted share of the question's terms the retrieved segment must hold.
MIN_COVERAGE = 0.6
MAX_SEGMENT_WORDS = 60
_STOPWORDS = frozenset(
    "a an the is are was were be been of to in on at for by with and or it its that this as "
    "from what which who whom whose when where why how did does do had has have not no i you "
    "we our your they their there here into than then so if".split())
#: Words dropped from the start of an extracted answer (and from the end of one taken before
#: the shared word).
_FUNCTION_WORDS = frozenset("the a an is are was were be been now at in on to of for by as = : - "
                            "kept set was: is: equals".split())
_SUFFIXES = ("ing", "ed", "es", "s")
_TERM = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FOLD = str.maketrans({NEWLINE_GLYPH: "\n", DIM_ON: None, DIM_OFF: None})


def stem(token: str) -> str:
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def terms(text: str) -> list[str]:
    """The retrieval terms of a text (lowercase alphanumeric runs, stopwords out, stemmed)."""
    return [stem(t) for t in _TERM.findall(text.lower()) if t not in _STOPWORDS]


def segments(reading: str) -> list[str]:
    """Lines, then sentences, then windows of at most MAX_SEGMENT_WORDS words (non-empty)."""
    out: list[str] = []
    for line in reading.translate(_FOLD).split("\n"):
        for sentence in _SENTENCE_END.split(line):
            words = sentence.split()
            for at in range(0, len(words), MAX_SEGMENT_WORDS):
                out.append(" ".join(words[at:at + MAX_SEGMENT_WORDS]))
    return [s for s in out if s]


@dataclass(frozen=True)
class Retrieved:
    """What the blind reader found: the segment (or None), its scores and the answer."""

    answer: str
    segment: str | None
    bm25: float
    coverage: float

    @property
    def abstained(self) -> bool:
        return self.answer == ABSTENTION


def _idf_weights(query: Sequence[str], docs: Sequence[set[str]]) -> dict[str, float]:
    n = len(docs)
    weights = {}
    for term in set(query):
        df = sum(1 for d in docs if term in d)
        weights[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return weights


def _coverage(weights: dict[str, float], segment_terms: set[str]) -> float:
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in segment_terms) / total if total else 0.0


def _shares(word: str, query: set[str]) -> bool:
    return any(t in query for t in terms(word))


def _trim(words: list[str], *, leading: bool) -> list[str]:
    words = list(words)
    while words and (words[0] if leading else words[-1]).lower() in _FUNCTION_WORDS:
        words.pop(0 if leading else -1)
    return words


def extract(segment: str, question: str) -> str:
    """The answer inside a retrieved segment (step 5 of the module docstring)."""
    query = set(terms(question))
    words = segment.split()
    shared = [i for i, w in enumerate(words) if _shares(w, query)]
    if not shared:
        return ABSTENTION
    after = _trim(words[shared[-1] + 1:], leading=True)
    if not after:
        after = _trim(words[:shared[0]], leading=False)
    answer = " ".join(after).strip()
    answer = answer[:-1].rstrip() if answer.endswith(".") else answer
    return answer or ABSTENTION


def answer_blind(reading: str, question: str, min_coverage: float = MIN_COVERAGE) -> Retrieved:
    """Answer ``question`` from ``reading`` alone: retrieve, check coverage, extract."""
    query = terms(question)
    found = segments(reading)
    if not query or not found:
        return Retrieved(ABSTENTION, None, 0.0, 0.0)
    docs = [terms(s) for s in found]
    # rank_bm25 divides by the mean length: an all-stopword reading has none to rank
    if not any(docs):
        return Retrieved(ABSTENTION, None, 0.0, 0.0)
    scores = BM25Okapi(docs).get_scores(query)
    doc_sets = [set(d) for d in docs]
    weights = _idf_weights(query, doc_sets)
    covers = [_coverage(weights, d) for d in doc_sets]
    # BM25 ranks; coverage breaks its ties (a term in half of a tiny reading has idf 0 in Okapi)
    best = max(range(len(found)), key=lambda i: (scores[i], covers[i], -i))
    bm25, coverage = float(scores[best]), covers[best]
    if coverage < min_coverage:
        return Retrieved(ABSTENTION, found[best], bm25, coverage)
    return Retrieved(extract(found[best], question), found[best], bm25, coverage)
