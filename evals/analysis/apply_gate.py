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

And one bar for every row whose text would change, a kept row's evidence or an unchanged
entry's included: the stronger evidence stays. A run resting on fewer sessions than the row's
current evidence (``evidence_sessions``) never replaces it; such a row is left exactly as it
is (not even its evidence moves) and says why, and only ``--force`` replaces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evals.analysis.aggregate import shape_label
from evals.analysis.session_bootstrap import MIN_SESSIONS_FOR_CLAIM
from evals.analysis.winner import Candidate, Decision
from evals.analysis.write_model_shapes import RowChange, TableProposal, row_evidence_sessions
from snapcompact.core import NAMED_SHAPES
from snapcompact.pricing import resolve_shape

__all__ = ["MIN_QUESTIONS", "MIN_SESSIONS", "RowVerdict", "format_verdicts", "judge_changes",
           "proposal_banner", "weaker_evidence"]

MIN_QUESTIONS = 30
#: a table row moves only on as many sessions as a claim needs (issue 36: >= 20 per line)
MIN_SESSIONS = MIN_SESSIONS_FOR_CLAIM


@dataclass(frozen=True)
class RowVerdict:
    """One proposed row change and why it may or may not be written."""

    change: RowChange
    decision: Decision
    refused: tuple[str, ...]  # empty: the change may be written
    #: why the row's current evidence stays ("": the new evidence is not weaker); such a row is
    #: left as it is, evidence included, rather than kept with the new evidence
    weaker: str = ""

    @property
    def accepted(self) -> bool:
        return not self.refused


def weaker_evidence(decision: Decision, current_sessions: int | None) -> str:
    """Why ``decision`` may not replace a row whose evidence rests on ``current_sessions``
    sessions (None: not recorded), or "" when it may."""
    if current_sessions is None:
        return ("the row's current evidence does not record how many sessions it rests on: "
                "it stays")
    if decision.sessions < current_sessions:
        return (f"weaker evidence: {decision.sessions} session(s) < the {current_sessions} the "
                "row's current evidence rests on: the stronger evidence stays")
    return ""


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
    """A verdict per row whose text the proposal would change, its entry or only its evidence
    (rows it leaves as they are are omitted)."""
    by_line = {(d.line, d.reader_id): d for d in decisions}
    out = []
    for change in proposal.changes:
        if not change.rewrites:
            continue
        decision = by_line[(change.line, change.reader_id)]
        weaker = weaker_evidence(decision,
                                 row_evidence_sessions(proposal.current_text, change.line))
        reasons = (_reasons(change, decision, min_questions, min_sessions)
                   if change.changed else ())
        out.append(RowVerdict(change, decision, ((weaker,) if weaker else ()) + reasons,
                              weaker))
    return out


def _fate(v: RowVerdict, force: bool) -> str:
    if v.accepted:
        return "write"
    if force:
        return "write (--force), although: "
    return "leave the row as it is: " if v.weaker else "keep the current entry: "


def format_verdicts(verdicts: Sequence[RowVerdict], *, force: bool = False) -> str:
    """The rows whose text would change, old -> new with their evidence (or only the evidence,
    the entry unchanged), and what happens to each."""
    if not verdicts:
        return "model -> shape table: no row would change"
    lines = ["model -> shape table: rows that would change"]
    for v in verdicts:
        c, w = v.change, v.decision.winner
        old = f"{c.old_shape} @ {_size(c.old_shape, c.old_frame_size)} px"
        new = f"{c.shape} @ {_size(c.shape, c.frame_size)} px"
        what = f"{old} -> {new}" if c.changed else f"{old} unchanged, new evidence"
        lines.append(
            f"  {c.line}: {what}: recall {w.recall:.3f} [{w.recall_lo:.3f}, "
            f"{w.recall_hi:.3f}] over {w.n_questions} questions, {v.decision.sessions} "
            f"session(s); {_fate(v, force)}{'; '.join(v.refused)}")
    return "\n".join(lines)


def proposal_banner(verdicts: Sequence[RowVerdict], *, apply: bool, written: bool,
                    force: bool = False) -> str:
    """The first line of the table the command writes beside its report (a file named like the
    library's): whether it was applied, and the gate's verdict on each row, in one line."""
    if not verdicts:
        verdict = "no row would change"
    else:
        verdict = "; ".join(
            f"{v.change.line} {'entry' if v.change.changed else 'evidence'} "
            + ("written" if v.accepted or force else "refused")
            + (f" (--force, although: {'; '.join(v.refused)})" if force and v.refused
               else f" ({'; '.join(v.refused)})" if v.refused else "")
            for v in verdicts)
    flags = "--apply --force" if force else "--apply"
    state = (f"APPLIED by snapcompact-eval-table {flags}" if written else
             f"snapcompact-eval-table {flags}: nothing written into the library table"
             if apply else
             "NOT APPLIED: proposed by snapcompact-eval-table (what --apply would write)")
    return f"# {state}; the gate's verdict: {verdict}\n"
