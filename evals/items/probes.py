"""Probe kinds: what a question asks of a reader, and so how its reply is graded.

Why kinds: a reading model fails differently on different facts. Exact strings (identifiers,
hashes, numbers, paths, error strings) fail first and silently, one glyph swapped (3->9, 0<->O);
a paraphrasable fact (gist) survives a blurry read; and a plausible question whose answer the
session never states tells a reader that abstains from one that confabulates. One recall figure
over all three hides each of these (issue 47).

Every question carries its kind in ``meta["probe"]``:

- ``exact``: graded exactly (``evals.pipeline.probe_grading``);
- ``gist``: graded leniently, by the share of the gold keywords (``meta["keywords"]``) the reply
  contains;
- ``never-stated``: the right reply is an abstention. Its gold answer is
  :data:`NEVER_STATED_ANSWER`; its evidence is the *lure*, the stated line nearest to the
  question (same template, another subject), and ``meta["lure_answer"]`` that line's value, so a
  reader that retrieves the lure and copies its value is caught confabulating.

A question written before kinds existed (no ``meta["probe"]``) reads as :data:`OLD_DEFAULT`,
labelled so (:func:`probe_of`), and keeps the grading it was recorded with.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

EXACT, GIST, NEVER_STATED = "exact", "gist", "never-stated"
PROBE_KINDS = (EXACT, GIST, NEVER_STATED)
#: The kind a question without ``meta["probe"]`` reads as (every question before issue 47 asked
#: for a value stated verbatim), and the label tables give it.
OLD_DEFAULT = EXACT
OLD_DEFAULT_LABEL = "exact (old default)"
CORRECT, ABSTAINED, WRONG = "correct", "abstained", "wrong"
#: The three outcomes of a graded reply (evals.pipeline.probe_grading), in table order.
OUTCOMES = (CORRECT, ABSTAINED, WRONG)
#: The gold answer of a never-stated probe: the abstention the offline readers reply with.
NEVER_STATED_ANSWER = "unanswerable"


def probe_of(meta: Mapping | None) -> tuple[str, bool]:
    """(kind, defaulted): the question's probe kind, and whether it was missing (old record)."""
    kind = (meta or {}).get("probe")
    if kind is None:
        return OLD_DEFAULT, True
    if kind not in PROBE_KINDS:
        raise ValueError(f"unknown probe kind {kind!r}; known: {', '.join(PROBE_KINDS)}")
    return str(kind), False


def probe_label(meta: Mapping | None) -> str:
    """The kind as tables print it: an old question's kind is labelled as the old default."""
    kind, defaulted = probe_of(meta)
    return OLD_DEFAULT_LABEL if defaulted else kind


def check_probe_kinds(kinds: Sequence[str] | str) -> tuple[str, ...]:
    """A dataset's ``probes`` parameter: known kinds, ``exact`` among them, no repeats."""
    if isinstance(kinds, str):
        kinds = (kinds,)
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in PROBE_KINDS]
    if bad or not kinds or len(set(kinds)) != len(kinds):
        raise ValueError(f"probes must list distinct kinds of {list(PROBE_KINDS)}, got {kinds!r}")
    if EXACT not in kinds:
        raise ValueError("probes must include 'exact' (the planted facts every session carries)")
    return kinds


def is_silent_wrong(outcome: str, probe: str) -> bool:
    """A wrong value where the truth was in the original session (every stated probe's
    evidence is verbatim in it): the failure a reader cannot see."""
    return outcome == WRONG and probe != NEVER_STATED


def is_confabulation(outcome: str, probe: str) -> bool:
    """A never-stated probe answered with a value."""
    return outcome == WRONG and probe == NEVER_STATED


# -- gist facts of the generated sessions ------------------------------------------------------


@dataclass(frozen=True)
class GistFact:
    """A paraphrasable fact: a decision and its reason. The answer is the reason; the keywords
    are the words a right paraphrase cannot avoid."""

    sentence: str
    question: str
    answer: str
    keywords: tuple[str, ...]


#: (statement with {subject} and {reason}, question with {subject}).
_GIST_TEMPLATES = (
    ("We moved the {subject} logs to cold storage because {reason}.",
     "Why were the {subject} logs moved to cold storage?"),
    ("The {subject} migration was postponed because {reason}.",
     "Why was the {subject} migration postponed?"),
    ("We stopped the {subject} deploy because {reason}.",
     "Why was the {subject} deploy stopped?"),
)
#: (reason clause, its keywords).
_REASONS = (
    ("the disk kept filling up every weekend", ("disk", "filling", "weekend")),
    ("the vendor contract expires in the spring", ("vendor", "contract", "spring")),
    ("the certificate on the load balancer had expired", ("certificate", "load", "balancer")),
    ("the night shift could not reach the database", ("night", "shift", "database")),
    ("the invoices were printed twice for every customer", ("invoices", "printed", "twice")),
    ("the cooling fans failed during the heatwave", ("cooling", "fans", "heatwave")),
    ("the auditors asked for a second signature", ("auditors", "second", "signature")),
    ("the nightly report timed out after the upgrade", ("report", "timed", "upgrade")),
)


def draw_gist(rng: random.Random, subjects: Sequence[str], used: set[str]) -> GistFact:
    """A gist fact about a subject not in ``used`` (which it joins)."""
    free = [s for s in subjects if s not in used]
    if not free:
        raise ValueError("no subject left for a gist fact")
    subject = rng.choice(free)
    used.add(subject)
    statement, question = rng.choice(_GIST_TEMPLATES)
    reason, keywords = rng.choice(_REASONS)
    return GistFact(statement.format(subject=subject, reason=reason),
                    question.format(subject=subject), reason, keywords)
