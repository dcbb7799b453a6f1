"""Gist and never-stated probes planted beside a generated session's facts (``probes=[...]``).

Why beside the facts: every depth then carries the three kinds (``evals.items.probes``), so a
depth bin compares exact, gist and never-stated on the same stretch of the session. At each
planted fact (a needle, the ``exact`` probe) this module adds:

- ``gist``: a decision and its reason about another subject (``evals.items.probes.draw_gist``),
  written into the same turn's assistant explanation (``For the record: ...``); graded by its
  reason's keywords;
- ``never-stated``: the fact's question about a subject the session never names (same
  template); the fact itself is the lure (its evidence, its value ``lure_answer``), so a reader
  that answers with the lure's value confabulates.

Draws come from their own ``random.Random`` (``agent_session:probes:{seed}:{index}``), so the
session's base draws (files, tool calls, needles) are those of a session without them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from evals.items.datasets.needles import TEMPLATES
from evals.items.probes import (
    EXACT,
    GIST,
    NEVER_STATED,
    NEVER_STATED_ANSWER,
    GistFact,
    check_probe_kinds,
    draw_gist,
)
from evals.items.qa_items import Question, content_id

GIST_LEAD = "For the record:"
#: One subject per gist fact, so every gist question names its own system: at least as many as
#: the main job's 40 depths (``configs/dataset/agent-session-long.yaml``).
_GIST_SUBJECTS = ("billing", "search", "reporting", "payroll", "mailer", "scheduler",
                  "inventory", "analytics", "ledger", "gateway", "archive", "telemetry",
                  "checkout", "catalog", "invoicing", "shipping", "warehouse", "helpdesk",
                  "wiki", "forum", "calendar", "booking", "pricing", "identity", "storage",
                  "metrics", "alerting", "logging", "queue", "firewall", "chat", "video",
                  "uploads", "notifications", "recommendations", "translation", "geocoding",
                  "sandbox", "staging", "kiosk", "intranet", "survey", "loyalty", "refunds",
                  "onboarding", "procurement", "timesheet", "dispatch")


def plan_gists(seed: int, index: int, depths: Sequence[float],
               probes: Sequence[str] | None) -> dict[float, GistFact]:
    """The gist fact planted at each depth (none unless ``gist`` is asked for)."""
    if probes is None or GIST not in check_probe_kinds(probes):
        return {}
    rng = random.Random(f"agent_session:probes:{seed}:{index}")
    used: set[str] = set()
    return {depth: draw_gist(rng, _GIST_SUBJECTS, used) for depth in depths}


#: Subjects no fact template draws, added to a template's own pool for never-stated probes: the
#: 40 facts of a main-job session name most of the 20 places and 20 people, which alone left a
#: never-stated probe at only a quarter of its depths.
_UNSTATED_PLACES = (
    "amber quarry", "copper mine", "ferry terminal", "hill chapel", "iron bridge",
    "lantern shop", "marble hall", "orchard barn", "paper mill", "quay stores",
    "reed marsh hut", "silk exchange", "tide office", "violin workshop", "wool market",
    "canal lock", "dye works", "fire station", "grain silo", "hop kiln",
    "ice house", "jetty shed", "kiln yard", "lime works", "moss garden",
    "nut orchard", "oak lodge", "pier cafe", "rope walk", "slate depot",
)
#: The fact templates whose subject is a person (the rest name a place).
_PEOPLE_TEMPLATES = ("tracking_number", "passphrase")
_UNSTATED_PEOPLE = (
    "Adaeze Nwosu", "Bjorn Aas", "Chiara Esposito", "Dara Kelly", "Emeka Obi",
    "Fatima Zahra", "Goran Ilic", "Hiroshi Kato", "Ilse Vogel", "Jonas Berg",
    "Kavya Iyer", "Lars Dahl", "Maren Solberg", "Nikos Pappas", "Olga Ivanova",
    "Priya Nair", "Quentin Moreau", "Rosa Jimenez", "Sven Ek", "Tariq Aziz",
    "Ursula Brandt", "Vera Kowalska", "Wiktor Zielinski", "Ximena Rojas", "Yusuf Kaya",
)


def _unstated_subject(template: str, session_text: str, taken: set[str],
                      rng: random.Random) -> str | None:
    own = next(t.subjects for t in TEMPLATES if t.name == template)
    extra = _UNSTATED_PEOPLE if template in _PEOPLE_TEMPLATES else _UNSTATED_PLACES
    pool = (*own, *extra)
    free = [s for s in pool if s not in taken and s not in session_text]
    return rng.choice(free) if free else None


def extra_questions(dataset: str, seed: int, index: int, placed: Sequence[tuple[Any, str]],
                    gists: Mapping[float, GistFact], probes: Sequence[str] | None,
                    session_text: str) -> list[Question]:
    """The gist and never-stated questions of every placed fact (``placed``: (needle, place))."""
    if probes is None:
        return []
    kinds = check_probe_kinds(probes)
    rng = random.Random(f"agent_session:never:{seed}:{index}")
    taken: set[str] = set()
    out: list[Question] = []
    for needle, place in placed:
        base = {"template": needle.template, "depth": needle.depth, "place": place}
        gist = gists.get(needle.depth)
        if GIST in kinds and gist is not None:
            out.append(Question(
                question_id=content_id(dataset, gist.question, gist.answer, gist.sentence),
                question=gist.question, answers=(gist.answer,), evidence=gist.sentence,
                meta={**base, "kind": "gist", "probe": GIST, "place": "assistant",
                      "keywords": list(gist.keywords), "template": "gist"}))
        subject = (_unstated_subject(needle.template, session_text, taken, rng)
                   if NEVER_STATED in kinds else None)
        if subject is not None:
            taken.add(subject)
            template = next(t for t in TEMPLATES if t.name == needle.template)
            question = template.question.format(subject=subject)
            out.append(Question(
                question_id=content_id(dataset, question, NEVER_STATED_ANSWER, needle.sentence),
                question=question, answers=(NEVER_STATED_ANSWER,), evidence=needle.sentence,
                meta={**base, "kind": "never-stated", "probe": NEVER_STATED,
                      "lure_answer": needle.value, "subject": subject}))
    return out


def exact_meta(probes: Sequence[str] | None) -> dict[str, str]:
    """The planted fact's probe kind, when kinds are asked for (old items carry none)."""
    return {} if probes is None else {"probe": EXACT}
