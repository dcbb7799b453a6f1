"""Probe kinds for a user's session file: exact, gist and never-stated, from distinct lines.

Why a second pass over ``session_probes``' candidates: a bare draw could take three probes from
one ``git show --stat`` line and ask the value of a loop counter (``let i = 0``), which a
reader guesses without reading. Here:

- **Trivial values go.** A ``count`` or ``number`` whose value has fewer than
  :data:`MIN_NUMBER_DIGITS` digits (0-9: guessed one time in ten), and a labelled number whose
  label ends in a one-letter word (a loop variable: ``let i``), are not asked.
- **One probe per line.** No two probes share an evidence line (message and line number), the
  lure of a never-stated probe included.
- **Kinds** (``evals.items.probes``): every extracted fact is ``exact``; an error line with at
  least :data:`GIST_MIN_WORDS` words is also a ``gist`` candidate ("what went wrong", graded by
  its words); a never-stated probe asks a counted or labelled line's call for a label the whole
  session never prints (:data:`UNSTATED_LABELS`), with that line as its lure.

The draw (:func:`sample_kinds`) takes ``n // 5`` (at least one) never-stated and gist probes
when the session supports them, the rest exact, each kind drawn by ``seed`` as before.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from evals.items.probes import EXACT, GIST, NEVER_STATED, NEVER_STATED_ANSWER
from evals.items.qa_items import Question, content_id

MIN_NUMBER_DIGITS = 2
GIST_MIN_WORDS = 4
#: Labels a never-stated probe asks for; one the session never prints is used.
UNSTATED_LABELS = ("peak memory", "retry budget", "cache hit rate", "worker count",
                   "queue depth", "exit status", "shard count", "max connections")
_NUMBER_KINDS = frozenset({"count", "number"})


def is_trivial(kind: str, value: str, question: str) -> bool:
    """A value a reader could guess, or a loop variable's (see the module docstring)."""
    if kind in _NUMBER_KINDS and sum(c.isdigit() for c in value) < MIN_NUMBER_DIGITS:
        return True
    if kind == "number" and "`" in question:
        label = question.rsplit("`", 2)[-2].split()
        return bool(label) and len(label[-1]) == 1
    return False


def _line_of(c) -> tuple[int, int]:
    return c.message_index, c.line_number


def _phrase(c) -> str:
    """'In the output of ..., ' -- the part of the question naming the call."""
    return c.question.split("), ", 1)[0] + "), " if "), " in c.question else c.question


def _keywords(message: str) -> list[str]:
    words = [w.strip(".,;:'\"()[]`").lower() for w in message.split()]
    return list(dict.fromkeys(w for w in words if len(w) >= 4 and w.isalpha()))[:4]


def _exact(c) -> Question:
    qid = "probe-" + content_id(c.message_index, c.line_number, c.kind, c.value)
    return Question(
        question_id=qid, question=c.question, answers=(c.value,), evidence=c.line,
        meta={"kind": f"probe-{c.kind}", "probe": EXACT, "evidence_message": c.message_index,
              "evidence_line": c.line_number, "answer_check": "exact_form"})


def _gist(c) -> Question | None:
    keywords = _keywords(c.value)
    if c.kind != "error" or len(keywords) < 2 or len(c.value.split()) < GIST_MIN_WORDS:
        return None
    question = _phrase(c) + "what went wrong, in a few words?"
    return Question(
        question_id="probe-" + content_id(c.message_index, c.line_number, "gist", c.value),
        question=question, answers=(c.value,), evidence=c.line,
        meta={"kind": "probe-gist", "probe": GIST, "keywords": keywords,
              "evidence_message": c.message_index, "evidence_line": c.line_number})


def _never(c, whole: str) -> Question | None:
    if c.kind not in _NUMBER_KINDS:
        return None
    label = next((lab for lab in UNSTATED_LABELS if lab not in whole.lower()), None)
    if label is None:
        return None
    question = _phrase(c) + f"what value does it give for `{label}`?"
    return Question(
        question_id="probe-" + content_id(c.message_index, c.line_number, "never", label),
        question=question, answers=(NEVER_STATED_ANSWER,), evidence=c.line,
        meta={"kind": "probe-never-stated", "probe": NEVER_STATED, "lure_answer": c.value,
              "evidence_message": c.message_index, "evidence_line": c.line_number})


def sample_kinds(candidates: Sequence, n: int, seed: int, whole: str,
                 sample_exact) -> list[Question]:
    """``n`` probes of the three kinds from distinct, non-trivial lines, in session order.

    ``sample_exact(candidates, n, seed)`` is ``session_probes.sample_probes`` (kind by kind)."""
    pool = [c for c in candidates if not is_trivial(c.kind, c.value, c.question)]
    rng = random.Random(f"session-probe-kinds:{seed}")
    used: set[tuple[int, int]] = set()
    picked: list[tuple[tuple[int, int], Question]] = []
    share = max(1, n // 5)
    for make in (lambda c: _never(c, whole), _gist):
        made = [(c, q) for c in pool if (q := make(c)) is not None]
        rng.shuffle(made)
        for c, q in made[:share]:
            if _line_of(c) not in used and len(picked) < n:
                used.add(_line_of(c))
                picked.append((_line_of(c), q))
    rest = [c for c in pool if _line_of(c) not in used]
    one_per_line = list({_line_of(c): c for c in reversed(rest)}.values())[::-1]
    for c in sample_exact(one_per_line, n - len(picked), seed):
        picked.append((_line_of(c), _exact(c)))
    return [q for _, q in sorted(picked, key=lambda lq: lq[0])]
