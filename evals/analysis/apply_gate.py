"""Whether a measured winner may replace a row of the library's model -> shape table.

Why a gate: the table decides the frames of every request a model line makes, so writing a
winner into it is a decision about production, not a by-product of aggregating a run. A winner
from a two-question smoke sweep, from arms that tied, or drawn at a frame size production never
uses for that line would silently move every user of the line. So each proposed change is
judged against explicit bars; a refused row keeps the current entry and says why, and only
``--force`` writes it anyway.

The bars (each a reason of its own, all listed when several fail):

* the current entry must be beaten: it was measured beside the winner and is significantly
  below the best recall in the session-level paired bootstrap (``significantly_below``); an
  entry not measured, or not significantly below, keeps its row ("no evidence to change");
* no tie: one shape alone is not significantly below the best;
* no thin-evidence flag (:func:`evals.analysis.winner.choose_winners`), at least
  ``min_questions`` questions and ``min_sessions`` sessions behind the winner, recall above 0;
* the winner's frame size is one production draws for the line's models (the reference table,
  ``resolve_shape(..., table="reference")``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evals.analysis.aggregate import shape_label
from evals.analysis.session_bootstrap import MIN_SESSIONS_FOR_CLAIM
from evals.analysis.winner import Candidate, Decision
from evals.analysis.write_model_shapes import RowChange, TableProposal
from snapcompact.core import NAMED_SHAPES
from snapcompact.pricing import resolve_shape

__all__ = ["MIN_QUESTIONS", "MIN_SESSIONS", "RowVerdict", "format_verdicts", "judge_changes"]

MIN_QUESTIONS = 30
#: a table row moves only on as many sessions as a claim needs (issue 36: >= 20 per line)
MIN_SESSIONS = MIN_SESSIONS_FOR_CLAIM


@dataclass(frozen=True)
class RowVerdict:
    """One proposed row change and why it may or may not be written."""

    change: RowChange
    decision: Decision
    refused: tuple[str, ...]  # empty: the change may be written

    @property
    def accepted(self) -> bool:
        return not self.refused


def _size(shape: str, frame_size: int | None) -> int:
    return frame_size if frame_size is not None else NAMED_SHAPES[shape].frame_size


def _current(decision: Decision, change: RowChange) -> Candidate | None:
    size = _size(change.old_shape, change.old_frame_size)
    return next((c for c in decision.candidates
                 if c.shape == change.old_shape and c.frame_size == size), None)


def production_frame_sizes(target_models: Iterable[str]) -> set[int]:
    """Frame sizes production (the reference table) draws for these model ids."""
    return {resolve_shape(m, table="reference").shape.frame_size for m in target_models}


def _reasons(change: RowChange, decision: Decision, min_questions: int,
             min_sessions: int) -> tuple[str, ...]:
    w = decision.winner
    current = _current(decision, change)
    old = shape_label(change.old_shape, _size(change.old_shape, change.old_frame_size))
    out = []
    if current is None:
        out.append(f"no evidence to change: the current entry {old} was not measured beside "
                   "the winner")
    elif not current.significantly_below:
        out.append(f"no evidence to change: the current entry {old} is not significantly "
                   "below the best recall")
    if decision.tie:
        out.append(f"tie within its interval: {', '.join(decision.tie)}")
    if decision.flags:
        out.append("thin evidence: " + "; ".join(decision.flags))
    if w.recall == 0:
        out.append("zero recall")
    if w.n_questions < min_questions:
        out.append(f"{w.n_questions} questions (< {min_questions})")
    if decision.sessions < min_sessions:
        out.append(f"{decision.sessions} session(s) (< {min_sessions})")
    sizes = production_frame_sizes(decision.target_models)
    if w.frame_size not in sizes:
        out.append(f"frame size {w.frame_size} px is not one production draws for "
                   f"{', '.join(decision.target_models)} ({', '.join(map(str, sorted(sizes)))} px)")
    return tuple(out)


def judge_changes(proposal: TableProposal, decisions: Sequence[Decision], *,
                  min_questions: int = MIN_QUESTIONS,
                  min_sessions: int = MIN_SESSIONS) -> list[RowVerdict]:
    """A verdict per row the proposal would change (rows it leaves as they are are omitted)."""
    by_line = {(d.line, d.reader_id): d for d in decisions}
    out = []
    for change in proposal.changes:
        if not change.changed:
            continue
        decision = by_line[(change.line, change.reader_id)]
        out.append(RowVerdict(change, decision,
                              _reasons(change, decision, min_questions, min_sessions)))
    return out


def format_verdicts(verdicts: Sequence[RowVerdict], *, force: bool = False) -> str:
    """The rows that would change, old -> new with their evidence, and what happens to each."""
    if not verdicts:
        return "model -> shape table: no row would change"
    lines = ["model -> shape table: rows that would change"]
    for v in verdicts:
        c, w = v.change, v.decision.winner
        old = f"{c.old_shape} @ {_size(c.old_shape, c.old_frame_size)} px"
        new = f"{c.shape} @ {_size(c.shape, c.frame_size)} px"
        fate = ("write" if v.accepted else
                "write (--force), although: " if force else "keep the current entry: ")
        lines.append(
            f"  {c.line}: {old} -> {new}: recall {w.recall:.3f} [{w.recall_lo:.3f}, "
            f"{w.recall_hi:.3f}] over {w.n_questions} questions, {v.decision.sessions} "
            f"session(s); {fate}{'; '.join(v.refused)}")
    return "\n".join(lines)
