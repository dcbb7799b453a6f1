"""The winner per model line: which shape production should get, under ``WINNER_RULE``.

Why a module: the point of every run is a decision, and a decision needs error bars. The rule
compares shapes with a *paired* bootstrap on the sessions both were asked in, so the shared
difficulty of a question cancels out; only contexts production would send are ranked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

from evals.analysis.aggregate import (
    PRODUCTION_VALID,
    SHAPE_ASKED_COLUMN,
    SHAPE_NOT_RECORDED,
    UNMATCHED_LINE,
    arm_labels,
    format_counts,
    reader_label,
    shape_label,
    summed_counts,
)
from evals.analysis.intervals import wilson_interval
from evals.analysis.resampling import (
    SESSION_UNIT,
    UNIT,
    check_settings,
    percentile_interval,
    stable_seed,
)
from evals.analysis.session_bootstrap import session_draws
from evals.analysis.summary import per_1k

WINNER_RULE = (
    "Only contexts production would send are ranked: snapcompact rows whose production_valid is "
    "True (the coding agent's maintenance produced them and they fit the window); rows "
    "production would not send are shown apart, and full / truncate are labelled bounds. Each "
    "model line is decided at the largest window measured for it, shapes named by what the arm "
    "asked for (auto: the shape production picks), with the frames they were measured on. "
    "Winner per model line (and reader): among those shapes, take "
    "the one with the highest recall (mean correct) as the reference. A shape is significantly "
    "below it when, in a paired bootstrap over the sessions both shapes were asked in (the "
    "session is the unit of evidence: its questions share one compaction history; {n_boot} "
    "resamples, seed {seed}), the {lo:g}th percentile of (reference recall - shape recall) is "
    "above zero, i.e. the two-sided {conf:g}% interval of the difference excludes zero; with "
    "one session there is no interval and no shape is significantly below. Among the shapes "
    "not significantly below the reference, the winner has the most recall per 1k predicted "
    "billed tokens (a question's prompt tokens plus its share of its session's compaction "
    "calls; ties: higher recall, then fewer tokens, then name). "
    "More than one such shape is reported as a tie. Evidence is called thin when the winner "
    "rests on fewer than {min_q} questions, fewer than 2 sessions, a single seed, errored "
    "requests, or a recall interval (Wilson score, {conf:g}%) overlapping another shape's."
)


def rule_text(n_boot: int, seed: int, alpha: float, min_questions: int) -> str:
    return WINNER_RULE.format(n_boot=n_boot, seed=seed, lo=100 * alpha / 2,
                              conf=100 * (1 - alpha), min_q=min_questions)


@dataclass(frozen=True)
class Candidate:
    shape: str
    frame_size: int
    n_questions: int
    recall: float
    recall_lo: float
    recall_hi: float
    predicted_prompt_tokens: float  # the question requests' prompt tokens
    #: billed tokens per question: the prompt tokens plus the share of the compaction calls
    billed_tokens: float
    recall_per_1k_tokens: float  # recall per 1k billed tokens (compaction calls included)
    #: paired comparison with the best-recall shape: questions shared, interval of the
    #: difference (best - this), share of resamples where this shape was at least as good
    shared_questions: int = 0
    #: sessions those shared questions come from (the unit the paired interval resamples)
    shared_sessions: int = 0
    diff_lo: float = float("nan")
    diff_hi: float = float("nan")
    p_not_below: float = float("nan")
    significantly_below: bool = False
    #: the frames this shape's contexts carried, by the shape drawn, per context (the foveated
    #: middle is drawn in the dense companion whatever was asked for); "" for schema-1 rows
    measured_on: str = ""

    @property
    def label(self) -> str:
        return shape_label(self.shape, self.frame_size)


@dataclass(frozen=True)
class Decision:
    """The winning shape of one model line under ``WINNER_RULE``, with everything it rests on."""

    line: str
    reader_id: str
    target_models: tuple[str, ...]
    winner: Candidate
    best_recall: Candidate
    candidates: tuple[Candidate, ...]
    tie: tuple[str, ...]  # labels of every shape not significantly below the best (if > 1)
    flags: tuple[str, ...]
    seeds: tuple[int, ...]
    errors: int = 0
    notes: tuple[str, ...] = field(default=())
    sessions: int = 0  # sessions (model, dataset, item) the winner was measured on
    rows: int = 0  # records the decision was made from (every shape, errors included)

    @property
    def thin(self) -> bool:
        return bool(self.flags)

    def to_row(self) -> dict:
        w = self.winner
        return {
            "line": self.line, "reader_id": self.reader_id,
            "reader_label": reader_label(self.reader_id),
            "target_models": ",".join(self.target_models), "winner": w.shape,
            "winner_frame_size": w.frame_size, "recall": w.recall, "recall_lo": w.recall_lo,
            "recall_hi": w.recall_hi, "predicted_prompt_tokens": w.predicted_prompt_tokens,
            "billed_tokens": w.billed_tokens,
            "recall_per_1k_tokens": w.recall_per_1k_tokens, "n_questions": w.n_questions,
            "best_recall_shape": self.best_recall.label, "tie": ",".join(self.tie),
            "not_significantly_below_best": ",".join(
                c.label for c in self.candidates if not c.significantly_below),
            "significantly_below_best": ",".join(
                c.label for c in self.candidates if c.significantly_below),
            "flags": "; ".join(self.flags), "seeds": ",".join(map(str, self.seeds)),
            "measured_on": w.measured_on, "notes": " | ".join(self.notes),
            "sessions": self.sessions,
        }


def choose_winners(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05,
                   min_questions: int = 30) -> list[Decision]:
    """One decision per (model line, reader) under ``WINNER_RULE``.

    Snapcompact rows take part only when production would send their context (``production``
    is ``valid``), at the largest window measured for the line; each shape is the one the arm
    asked for (``shape_decided``, as the record carries it). Rows production would not send,
    and ``auto`` rows whose resolved shape was not recorded, are listed in the decision's
    notes and never ranked. Schema-1 rows (rendered items, reader image_qa) are compared as
    they are.
    """
    check_settings(n_boot, alpha)
    snap = df[df["strategy"] == "snapcompact"]
    if snap.empty:
        image = df[(df["reader"] == "image_qa") & (df["arm"] == "image")]
        return [_decide(line, reader, rows, n_boot, seed, alpha, min_questions)
                for (line, reader), rows in image.groupby(["line", "reader_id"], sort=True)]
    recorded = snap["shape_decided"] != SHAPE_NOT_RECORDED
    valid = snap[(snap["production"] == PRODUCTION_VALID) & recorded]
    decisions = []
    for (line, reader), rows in valid.groupby(["line", "reader_id"], sort=True):
        rows, notes = _at_largest_window(rows)
        rows = rows.assign(shape=rows["shape_decided"],
                           frame_size=rows.groupby("shape_decided")["frame_size"]
                           .transform("max"))
        mine = snap[(snap["line"] == line) & (snap["reader_id"] == reader)]
        notes += _not_ranked_notes(mine[mine["production"] != PRODUCTION_VALID])
        notes += _unrecorded_notes(mine[(mine["production"] == PRODUCTION_VALID) & ~recorded])
        decision = _decide(line, reader, rows, n_boot, seed, alpha, min_questions)
        decisions.append(replace(decision, notes=decision.notes + tuple(notes)))
    return decisions


def _at_largest_window(rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A line's rows at the largest window measured for it, and a note naming the smaller
    windows left out (each window is its own arm; production's decision is for the largest)."""
    windows = pd.to_numeric(rows["context_window"], errors="coerce")
    if not windows.notna().any():
        return rows, []
    largest = windows.max()
    smaller = sorted({int(w) for w in windows.dropna() if w != largest})
    if not smaller:
        return rows[windows == largest], []
    return rows[windows == largest], [
        f"decided at the {int(largest):,}-token window; production-valid rows at "
        f"{', '.join(f'{w:,}' for w in smaller)} not ranked here"]


def _not_ranked_notes(excluded: pd.DataFrame) -> list[str]:
    """One note per arm production would not send, with production's reason."""
    notes = []
    for label, part in excluded.assign(label=arm_labels(excluded)).groupby("label"):
        why = "; ".join(sorted({str(n) for n in part["production_note"].dropna()}))
        notes.append(f"not ranked: {label} ({part['item_id'].nunique()} context(s) "
                     f"production would not send: {why or part['production'].iloc[0]})")
    return notes


def _unrecorded_notes(unrecorded: pd.DataFrame) -> list[str]:
    """One note per ``auto`` arm whose records carry no resolved shape (written before the
    column existed): which shape they measured is not known, so they are not ranked."""
    return [f"not ranked: {label} ({part['item_id'].nunique()} context(s): {SHAPE_NOT_RECORDED}; "
            f"the records predate the {SHAPE_ASKED_COLUMN} column)"
            for label, part in unrecorded.assign(label=arm_labels(unrecorded)).groupby("label")]


def _measured_on(rows: pd.DataFrame) -> str:
    """Frames by drawn shape per context, e.g. ``11on16-bw 6, 8on16-bw 11 (companion)``."""
    if "frames_by_shape" not in rows:
        return ""
    contexts = rows.drop_duplicates("item_id")
    counts = summed_counts(contexts["frames_by_shape"])
    asked = str(rows["shape"].iloc[0])
    text = format_counts(counts, len(contexts))
    if not counts:
        return "no frames (text only)"
    others = [n for n in counts if n != asked]
    if others:
        text += f" per context ({', '.join(others)}: the foveated companion or another tier)"
    else:
        text += " per context"
    return text


def _decide(line: str, reader: str, rows: pd.DataFrame, n_boot: int, seed: int, alpha: float,
            min_questions: int) -> Decision:
    """One line's decision: the candidates, each compared with the best recall, the winner
    among those not significantly below it, and the flags and notes it rests on."""
    ok = rows[rows["ok"]]
    candidates, scores = _candidates(ok, alpha)
    if not candidates:
        raise ValueError(f"model line {line!r} ({reader}): every request errored")
    best = max(candidates, key=lambda c: (c.recall, -c.billed_tokens, c.label))
    best_scores = scores[(best.shape, best.frame_size)]
    compared = [
        _with(c, shared_questions=len(best_scores), shared_sessions=_session_count(best_scores),
              diff_lo=0.0, diff_hi=0.0, p_not_below=1.0)
        if c is best else
        _paired(c, best_scores, scores[(c.shape, c.frame_size)], n_boot, alpha,
                seed=stable_seed(seed, line, reader, "paired", c.shape, c.frame_size) % 2**32)
        for c in candidates]
    eligible = [c for c in compared if not c.significantly_below and c.shared_questions > 0]
    winner = max(eligible, key=lambda c: (c.recall_per_1k_tokens, c.recall,
                                          -c.billed_tokens, c.label))
    tie = tuple(c.label for c in eligible) if len(eligible) > 1 else ()
    seeds = tuple(sorted(int(s) for s in rows["seed"].unique()))
    errors = int((~rows["ok"]).sum())
    sessions = int(ok[ok["shape"] == winner.shape].drop_duplicates(SESSION_UNIT).shape[0])
    flags = _flags(winner, compared, min_questions, sessions, seeds, errors)
    notes = _notes(line, winner, best, tie, compared)
    return Decision(
        line=line, reader_id=reader,
        target_models=tuple(sorted(rows["target_model"].unique())), winner=winner,
        best_recall=next(c for c in compared if c.label == best.label),
        candidates=tuple(sorted(compared, key=lambda c: c.billed_tokens)), tie=tie,
        flags=tuple(flags), seeds=seeds, errors=errors, notes=tuple(notes), sessions=sessions,
        rows=len(rows))


def _candidates(ok: pd.DataFrame,
                alpha: float) -> tuple[list[Candidate], dict[tuple[str, int], pd.Series]]:
    """Each (shape, frame size) measured: its recall (Wilson interval), tokens and frames,
    and its per-question scores (seeds averaged) for the paired comparison."""
    per_q = ok.groupby(["shape", "frame_size", "target_model", *UNIT])["correct"].mean()
    candidates: list[Candidate] = []
    scores: dict[tuple[str, int], pd.Series] = {}
    for (shape, size), part in ok.groupby(["shape", "frame_size"], sort=True):
        s = per_q.loc[(shape, size)]
        scores[(shape, size)] = s
        recall_lo, recall_hi = wilson_interval(float(s.mean()), len(s), alpha)
        tokens = part["predicted_prompt_tokens"].mean()
        billed = part["billed_tokens"].mean()
        candidates.append(Candidate(
            shape=shape, frame_size=int(size), n_questions=len(s), recall=float(s.mean()),
            recall_lo=recall_lo, recall_hi=recall_hi, predicted_prompt_tokens=float(tokens),
            billed_tokens=float(billed),
            recall_per_1k_tokens=per_1k(float(s.mean()), float(billed)),
            measured_on=_measured_on(part)))
    return candidates, scores


def _session_count(scores: pd.Series) -> int:
    """Sessions behind per-question scores (indexed by model and ``UNIT``)."""
    return len(set(zip(*(scores.index.get_level_values(k) for k in SESSION_UNIT), strict=True)))


def _paired(c: Candidate, best: pd.Series, mine: pd.Series, n_boot: int, alpha: float, *,
            seed: int) -> Candidate:
    """``c`` with its paired comparison against the best recall: on the questions both were
    asked, a bootstrap over *sessions* (their questions share one compaction history) of the
    difference best - ``c``; significantly below when the interval's lower end is above 0."""
    shared = best.index.intersection(mine.index)
    if len(shared) == 0:
        return _with(c, shared_questions=0)
    diff = (best[shared] - mine[shared]).to_numpy()
    sessions = list(zip(*(shared.get_level_values(k) for k in SESSION_UNIT), strict=True))
    boots = session_draws(sessions, diff, n_boot=n_boot, seed=seed)
    if boots is None:  # one session: no interval, so nothing is significantly below
        return _with(c, shared_questions=len(shared), shared_sessions=len(set(sessions)))
    lo, hi = percentile_interval(boots, alpha)
    return _with(c, shared_questions=len(shared), shared_sessions=len(set(sessions)),
                 diff_lo=float(lo), diff_hi=float(hi),
                 p_not_below=float((boots <= 0).mean()), significantly_below=bool(lo > 0))


def _flags(winner: Candidate, compared: list[Candidate], min_questions: int, sessions: int,
           seeds: tuple[int, ...], errors: int) -> list[str]:
    """Why the evidence behind ``winner`` is thin (empty: it is not)."""
    flags = []
    if winner.n_questions < min_questions:
        flags.append(f"few questions: {winner.label} rests on {winner.n_questions} "
                     f"(< {min_questions})")
    if sessions < 2:
        flags.append(f"{sessions} session: no session-level interval")
    if len(seeds) == 1:
        flags.append(f"single seed ({seeds[0]})")
    if errors:
        flags.append(f"{errors} errored request(s) excluded")
    overlapping = [c.label for c in compared if c is not winner
                   and c.recall_lo <= winner.recall_hi and winner.recall_lo <= c.recall_hi]
    if overlapping:
        flags.append(f"recall interval of {winner.label} overlaps: {', '.join(overlapping)}")
    if len(compared) == 1:
        flags.append("only one shape measured")
    uncompared = [c.label for c in compared if c.shared_questions == 0]
    if uncompared:
        flags.append(f"no questions shared with the best shape: {', '.join(uncompared)}")
    return flags


def _notes(line: str, winner: Candidate, best: Candidate, tie: tuple[str, ...],
           compared: list[Candidate]) -> list[str]:
    """What a reader of the decision should know: a tie, a winner other than the best
    recall, cheaper shapes dropped for significantly lower recall, an unmatched line."""
    notes = []
    if tie:
        notes.append(f"tie: {len(tie)} shapes not significantly below the best recall "
                     f"({', '.join(tie)}); {winner.label} has the most recall per 1k tokens")
    if winner.label != best.label:
        notes.append(f"{winner.label} chosen over the best-recall shape {best.label} "
                     f"(recall {best.recall:.3f} vs {winner.recall:.3f}, not significantly higher)")
    dropped = [c for c in compared if c.significantly_below
               and c.recall_per_1k_tokens > winner.recall_per_1k_tokens]
    for c in dropped:
        notes.append(f"{c.label} has more recall per token ({c.recall_per_1k_tokens:.3f}/1k) but "
                     f"significantly lower recall ({c.recall:.3f}; difference interval "
                     f"[{c.diff_lo:.3f}, {c.diff_hi:.3f}]): not chosen")
    if line == UNMATCHED_LINE:
        notes.append("no row of the shape table matches these models: not written; "
                     "add a rule by hand")
    return notes


def _with(c: Candidate, **changes) -> Candidate:
    return replace(c, **changes)
