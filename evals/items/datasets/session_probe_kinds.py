"""Probe kinds for a user's session file: exact, gist and never-stated, from distinct lines.

Why a second pass over ``session_probes``' candidates: a bare draw could take three probes from
one ``git show --stat`` line and ask the value of a loop counter (``let i = 0``), which a
reader guesses without reading. Here:

- **Trivial values go.** A ``count`` or ``number`` whose value has fewer than
  :data:`MIN_NUMBER_DIGITS` digits (0-9: guessed one time in ten), and a labelled number whose
  label ends in a one-letter word (a loop variable: ``let i``), are not asked.
- **Tool notices go.** A line that is the read or grep tool's own paging notice
  (``[890 more lines in file. Use offset=201 to continue.]``, ``[40 matches limit reached. Use
  limit=80 ...]``: :func:`is_tool_notice`) states no fact of the work, and its value follows
  from the notice itself; it is neither asked nor used as a lure.
- **One probe per line.** No two probes share an evidence line (message and line number), the
  lure of a never-stated probe included.
- **Kinds** (``evals.items.probes``): every extracted fact is ``exact``; an error line with at
  least :data:`GIST_MIN_WORDS` words is also a ``gist`` candidate ("what went wrong", graded by
  its words); a never-stated probe asks a counted or labelled line's call for a label the whole
  session never prints (:data:`UNSTATED_LABELS`), with that line as its lure.

- **Spread over the session.** A probe's depth is where its evidence line sits in the session's
  text (0: the first character, 1: the last; :func:`evidence_depths`), recorded as the
  question's ``depth`` (the outcome tables' depth bins read it). No quarter of the session gets
  more than ``ceil(n / 4)`` probes while another quarter still has a candidate: without this a
  draw followed wherever the tool output was densest (kimchi-dev's ten: 5/1/2/2 by quarter),
  and a reading model's recall then measured mostly one depth.

The draw (:func:`sample_kinds`) takes ``n // 5`` (at least one) never-stated and gist probes
when the session supports them, the rest exact, each kind drawn by ``seed`` as before; the
exact ones are shared out over the quarters, fewest first (:func:`quarter_quotas`), and each
quarter's drawn kind by kind.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from evals.items.probes import EXACT, GIST, NEVER_STATED, NEVER_STATED_ANSWER
from evals.items.qa_items import Question, content_id

MIN_NUMBER_DIGITS = 2
GIST_MIN_WORDS = 4
#: Labels a never-stated probe asks for; one the session never prints is used.
UNSTATED_LABELS = ("peak memory", "retry budget", "cache hit rate", "worker count",
                   "queue depth", "exit status", "shard count", "max connections")
_NUMBER_KINDS = frozenset({"count", "number"})
#: The parts of the session the probes are spread over (quarters).
DEPTH_PARTS = 4


def is_trivial(kind: str, value: str, question: str) -> bool:
    """A value a reader could guess, or a loop variable's (see the module docstring)."""
    if kind in _NUMBER_KINDS and sum(c.isdigit() for c in value) < MIN_NUMBER_DIGITS:
        return True
    if kind == "number" and "`" in question:
        label = question.rsplit("`", 2)[-2].split()
        return bool(label) and len(label[-1]) == 1
    return False


_NOTICE = re.compile(r"^\[.*\bUse (?:offset|limit)=\d+")


def is_tool_notice(line: str) -> bool:
    """A tool's paging notice (see the module docstring), not output of the work."""
    return _NOTICE.match(line.strip()) is not None


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


def evidence_depths(candidates: Sequence, texts: Sequence[str]) -> dict[tuple[int, int], float]:
    """Evidence line (message, line number) -> its depth: the offset of the line in the
    session's text (the messages' texts joined by newlines) over that text's length."""
    starts, offset = [], 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    total = max(1, offset - 1)
    return {_line_of(c): min(1.0, (starts[c.message_index]
                                   + max(0, texts[c.message_index].find(c.line))) / total)
            for c in candidates}


def depth_part(depth: float) -> int:
    """The quarter (0-3) a depth falls in; 1.0 is in the last."""
    return min(DEPTH_PARTS - 1, int(depth * DEPTH_PARTS))


def quarter_quotas(taken: Sequence[int], available: Sequence[int], n: int, cap: int) -> list[int]:
    """How many more probes each quarter gets: ``n`` handed out one at a time to the quarter
    with the fewest so far (``taken`` plus what it was given; ties: the earlier quarter) that
    still has a candidate and is under ``cap``; when every quarter with a candidate is at
    ``cap``, the cap gives way (a session whose facts sit in one quarter still yields ``n``)."""
    quotas = [0] * len(available)
    for _ in range(n):
        open_ = [q for q in range(len(available)) if quotas[q] < available[q]]
        under = [q for q in open_ if taken[q] + quotas[q] < cap]
        pool = under or open_
        if not pool:
            break
        q = min(pool, key=lambda q: (taken[q] + quotas[q], q))
        quotas[q] += 1
    return quotas


def _with_depth(question: Question, depth: float) -> Question:
    return replace(question, meta={**question.meta, "depth": round(depth, 4)})


def sample_kinds(candidates: Sequence, n: int, seed: int, texts: Sequence[str],
                 sample_exact) -> list[Question]:
    """``n`` probes of the three kinds from distinct, non-trivial lines spread over the
    session's quarters, in session order; ``texts``: every message's text, in order.

    ``sample_exact(candidates, n, seed)`` is ``session_probes.sample_probes`` (kind by kind)."""
    whole = "\n".join(texts)
    pool = [c for c in candidates
            if not is_trivial(c.kind, c.value, c.question) and not is_tool_notice(c.line)]
    depths = evidence_depths(pool, texts)
    cap = math.ceil(n / DEPTH_PARTS)
    rng = random.Random(f"session-probe-kinds:{seed}")
    used: set[tuple[int, int]] = set()
    per_part: Counter[int] = Counter()
    picked: list[tuple[tuple[int, int], Question]] = []
    share = max(1, n // 5)
    for make in (lambda c: _never(c, whole), _gist):
        made = [(c, q) for c in pool if (q := make(c)) is not None]
        rng.shuffle(made)
        taken = 0
        for c, q in made:
            if taken == share or len(picked) == n:
                break
            part = depth_part(depths[_line_of(c)])
            if _line_of(c) in used or per_part[part] >= cap:
                continue
            used.add(_line_of(c))
            per_part[part] += 1
            taken += 1
            picked.append((_line_of(c), _with_depth(q, depths[_line_of(c)])))
    rest = [c for c in pool if _line_of(c) not in used]
    one_per_line = list({_line_of(c): c for c in reversed(rest)}.values())[::-1]
    parts: list[list] = [[] for _ in range(DEPTH_PARTS)]
    for c in one_per_line:
        parts[depth_part(depths[_line_of(c)])].append(c)
    quotas = quarter_quotas([per_part[q] for q in range(DEPTH_PARTS)],
                            [len(p) for p in parts], n - len(picked), cap)
    for part, quota in zip(parts, quotas):
        for c in sample_exact(part, quota, seed) if quota else []:
            picked.append((_line_of(c), _with_depth(_exact(c), depths[_line_of(c)])))
    return [q for _, q in sorted(picked, key=lambda lq: lq[0])]
