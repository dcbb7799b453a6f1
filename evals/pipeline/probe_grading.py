"""Grading by probe kind: one of three outcomes per reply, correct / abstained / wrong.

Why three outcomes: for a coding agent a confident wrong value (3->9 in a hash) is worse than
"I don't know", so a wrong reply must never hide inside "not correct" next to abstentions. The
rules, per kind (``evals.items.probes``):

- ``exact`` (identifiers, hashes, numbers, paths, error strings): the reply and each gold answer
  are put in *exact form* -- surrounding whitespace, quotes and backticks and one trailing ``.``
  dropped, a leading article (``the``/``a``/``an``) dropped, inner whitespace squeezed to one
  space, case folded -- and must be equal. Punctuation inside stays: ``KX7-20481`` is not
  ``KX720481`` and ``02.30`` is not ``02:30`` (SQuAD's normalization would accept both).
- ``gist`` (a paraphrasable fact): the reply's tokens (SQuAD-normalized, then stemmed by
  dropping one suffix of ``ing``/``ed``/``es``/``s`` when three letters remain) must contain at
  least :data:`GIST_MIN_SHARE` of the gold keywords, stemmed the same way. Keywords are the
  question's ``meta["keywords"]``, else the first gold answer's tokens that are not stopwords.
- ``never-stated``: correct iff the reply is an abstention that does not carry the lure's value
  (``meta["lure_answer"]``); any value is wrong, and that wrong reply is a *confabulation*.

An abstention is :func:`evals.pipeline.scoring.is_abstention`: an empty reply, or one matching
its phrase families (the offline readers' ``unanswerable``; "cannot read/find/determine",
"don't know", "not visible/stated/mentioned/given", and a model's free-text "does not mention",
"was never stated", "I don't have that information", "no record of", "is unknown"), unless the
reply still contains a gold answer (for a never-stated probe: the lure's value) as a whole
token run.

For the stated kinds an abstention (``evals.pipeline.scoring.is_abstention``) is ``abstained``.
A question without a kind (recorded before kinds existed) keeps the old rule: correct when
SQuAD EM is 1 or F1 >= 0.8. EM and F1 stay SQuAD's on every row (the primary figures of the
older tables); for a never-stated probe they are 1.0 for a correct abstention, else 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evals.items.probes import (
    ABSTAINED,
    CORRECT,
    EXACT,
    GIST,
    NEVER_STATED,
    WRONG,
    probe_of,
)
from evals.pipeline.scoring import is_abstention, normalize_answer, score

#: Share of a gist probe's keywords a reply must contain to be correct.
GIST_MIN_SHARE = 0.5
_QUOTES = " \t\r\n\"'`\u2018\u2019\u201c\u201d"
_ARTICLE_PREFIXES = ("the ", "a ", "an ")
_SUFFIXES = ("ing", "ed", "es", "s")
STOPWORDS = frozenset(
    "a an the is are was were be been of to in on at for by with and or it its that this as "
    "from what which who when where why how did does do had has have not no".split())


@dataclass(frozen=True)
class Graded:
    """One reply graded under its probe kind."""

    probe: str
    outcome: str  # correct | abstained | wrong
    em: float
    f1: float

    @property
    def correct(self) -> bool:
        return self.outcome == CORRECT

    @property
    def abstained(self) -> bool:
        """True when the reply abstained (for a never-stated probe: the right reply)."""
        return self.outcome == ABSTAINED or (self.probe == NEVER_STATED and self.correct)


def exact_form(text: str) -> str:
    """The form an exact probe compares (see the module docstring)."""
    form = text.strip(_QUOTES)
    if form.endswith("."):
        form = form[:-1].strip(_QUOTES)
    form = " ".join(form.split()).casefold()
    for article in _ARTICLE_PREFIXES:
        if form.startswith(article):
            form = form[len(article):]
            break
    return form


def stem(token: str) -> str:
    """Drop one of ``ing``/``ed``/``es``/``s`` when at least three letters remain."""
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def gist_keywords(answers: Sequence[str], keywords: Sequence[str] = ()) -> tuple[str, ...]:
    """The stemmed keywords a gist reply is checked for."""
    words = list(keywords) or [t for t in normalize_answer(answers[0]).split()
                               if t not in STOPWORDS]
    return tuple(dict.fromkeys(stem(w) for w in (normalize_answer(k) for k in words) if w))


def gist_share(prediction: str, answers: Sequence[str], keywords: Sequence[str] = ()) -> float:
    """Share of the gold keywords the reply contains (stemmed tokens)."""
    wanted = gist_keywords(answers, keywords)
    if not wanted:
        raise ValueError("a gist probe needs at least one keyword")
    have = {stem(t) for t in normalize_answer(prediction).split()}
    return sum(1 for k in wanted if k in have) / len(wanted)


def grade(prediction: str | None, answers: Sequence[str],
          meta: Mapping | None = None) -> Graded:
    """Grade one reply against its question's gold answers under the question's probe kind."""
    kind, defaulted = probe_of(meta)
    text = prediction or ""
    if kind == NEVER_STATED:
        # a hedge that still carries the lure's value ("not stated, but probably 4417") is a
        # confabulation, as a stated probe's hedge carrying the gold answer is an answer
        lure = (meta or {}).get("lure_answer")
        right = is_abstention(prediction, (str(lure),) if lure else ())
        return Graded(kind, CORRECT if right else WRONG, float(right), float(right))
    squad = score(prediction, answers)
    if squad.abstained:
        return Graded(kind, ABSTAINED, 0.0, 0.0)
    if defaulted:
        right = squad.correct
    elif kind == EXACT:
        right = any(exact_form(text) == exact_form(a) for a in answers)
    else:
        assert kind == GIST
        keywords = tuple((meta or {}).get("keywords") or ())
        right = gist_share(text, answers, keywords) >= GIST_MIN_SHARE
    return Graded(kind, CORRECT if right else WRONG, squad.em, squad.f1)

