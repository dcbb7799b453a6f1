"""The analysis a study plan fixed: each of its endpoints computed from the study's records.

Why a module of its own and not a mode of ``research_compare``: a pre-registered study is judged
by whether its analysis is the one written down before the data, so the statistics here are
exactly the ones the plan file defines (its comment block spells each out) and nothing else,
and only the plan's primary endpoint, on its whole draw, arms and reader, can be called a
finding; every other figure is labelled secondary. The decision rule is the plan's, applied
once: at least ``min_sessions`` baseline-valid sessions and an interval clear of 0. A study
whose draw is not complete (a seed missing for an arm or a reader) is reported as incomplete
and never decided.

The input is a records frame (:func:`evals.analysis.aggregate.records_frame`, or the committed
``records.parquet``); rows are paired across the two arms by session and question id, asked of
the endpoint's reader (``qa``: told its evidence, the legibility floor; ``blind``: told only
the question).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from evals.analysis.aggregate import PRODUCTION_STAND_IN, PRODUCTION_VALID
from evals.analysis.outcomes import outcome_frame
from evals.analysis.session_bootstrap import SessionDiff, session_paired_bootstrap
from evals.analysis.study.plan import Endpoint, Secondary, StudyPlan
from evals.blind.provider import BLIND_LABEL, TOLD_LABEL

__all__ = ["EndpointResult", "READER_LABELS", "StudyResult", "analyse", "study_frame"]

#: The plan's reader names and the label their rows carry (``reader_name`` of the outcomes).
READER_LABELS = {"qa": TOLD_LABEL, "blind": BLIND_LABEL}
#: The plan's subsets and the baseline verdict each keeps.
_SUBSET_VERDICT = {"baseline_valid": PRODUCTION_VALID, "baseline_stand_in": PRODUCTION_STAND_IN}
#: What each statistic measures, for the report's units and sentences.
UNITS = {"paired_recall_on_baseline_discarded": "recall",
         "paired_recall": "recall",
         "paired_billed_tokens_per_question": "tokens",
         "paired_session_cost_usd": "usd",
         "paired_silent_wrong_rate": "rate",
         "paired_confabulation_rate": "rate"}
_SESSION = ["seed", "item_id"]
_QUESTION = [*_SESSION, "question_id"]


def _arm_of(label: object, plan: StudyPlan) -> str | None:
    """``baseline``/``treatment`` for a row's research label (``name`` or ``name-<hash>``)."""
    text = str(label)
    for role, name in (("baseline", plan.arms.baseline), ("treatment", plan.arms.treatment)):
        if text == name or text.startswith(name + "-"):
            return role
    return None


def _reader_of(label: object) -> str | None:
    return next((k for k, v in READER_LABELS.items() if v == label), None)


def study_frame(records: pd.DataFrame, plan: StudyPlan) -> pd.DataFrame:
    """The answered rows with the study's columns: ``study_arm`` (baseline / treatment),
    ``study_reader`` (qa / blind), and the outcomes' probe kind, outcome and ``discarded``."""
    frame = outcome_frame(records)
    frame["study_arm"] = [_arm_of(r, plan) for r in frame["research"]]
    frame["study_reader"] = [_reader_of(r) for r in frame["reader_name"]]
    stray = frame[frame["study_arm"].isna() | frame["study_reader"].isna()]
    if not stray.empty:
        first = stray.iloc[0]
        raise ValueError(f"a record outside the plan's arms and readers: research "
                         f"{first['research']!r}, reader {first['reader_name']!r}")
    outside = sorted(set(frame["seed"].astype(int)) - set(plan.sessions.seeds()))
    if outside:
        raise ValueError(f"records of seed {outside[0]}, outside the plan's draw")
    return frame


@dataclass(frozen=True)
class EndpointResult:
    """One endpoint: treatment minus baseline with its session interval, and its verdict."""

    role: str  # primary / secondary
    name: str
    statistic: str
    subset: str
    reader: str
    probes: tuple[str, ...]
    diff: SessionDiff
    baseline_mean: float
    treatment_mean: float
    #: sessions in the subset where the treatment's context was not production-valid
    treatment_not_valid: int
    decision: str

    @property
    def unit(self) -> str:
        """recall / rate / tokens / usd."""
        return UNITS[self.statistic]


@dataclass(frozen=True)
class StudyResult:
    """The study as its records show it: the draw's coverage, the verdicts, every endpoint."""

    plan: StudyPlan
    seeds_complete: tuple[int, ...]
    seeds_missing: tuple[int, ...]
    baseline_verdicts: dict[str, int]
    treatment_verdicts: dict[str, int]
    endpoints: tuple[EndpointResult, ...]

    @property
    def complete(self) -> bool:
        """Every seed of the draw has rows for both arms and every reader."""
        return not self.seeds_missing


def _complete_seeds(frame: pd.DataFrame, plan: StudyPlan) -> tuple[int, ...]:
    cells = frame.groupby("seed")[["study_arm", "study_reader"]].apply(
        lambda g: set(zip(g["study_arm"], g["study_reader"])))
    wanted = {(a, r) for a in ("baseline", "treatment") for r in plan.run.readers}
    return tuple(int(s) for s in plan.sessions.seeds() if s in cells and cells[s] >= wanted)


def _verdicts(frame: pd.DataFrame, arm: str) -> pd.Series:
    """Production's verdict of ``arm``'s context, per session."""
    rows = frame[frame["study_arm"] == arm]
    per = rows.groupby(_SESSION)["production"].agg(lambda v: sorted(set(v)))
    mixed = per[per.map(len) > 1]
    if not mixed.empty:
        raise ValueError(f"session {mixed.index[0]} of the {arm} has more than one verdict: "
                         f"{mixed.iloc[0]}")
    return per.map(lambda v: v[0])


def _value(rows: pd.DataFrame, statistic: str) -> pd.Series:
    if statistic in ("paired_recall_on_baseline_discarded", "paired_recall"):
        return rows["correct"].astype(bool).astype(float)
    if statistic == "paired_billed_tokens_per_question":
        return pd.to_numeric(rows["billed_tokens"], errors="coerce")
    if statistic == "paired_silent_wrong_rate":
        return rows["silent_wrong"].astype(bool).astype(float)
    if statistic == "paired_confabulation_rate":
        return rows["confabulated"].astype(bool).astype(float)
    if statistic == "paired_session_cost_usd":
        return pd.to_numeric(rows["session_cost_usd"], errors="coerce")
    raise ValueError(f"statistic {statistic!r} is not one the analysis computes")


def _decide(plan: StudyPlan, role: str, diff: SessionDiff, complete: bool) -> str:
    if role != "primary":
        return "secondary: reported, never a finding"
    if not complete:
        return "incomplete: the draw has not run to its end; not decided"
    need = plan.primary.min_sessions
    if diff.n_sessions < need:
        return (f"inconclusive by design: {diff.n_sessions} baseline-valid sessions < the "
                f"plan's {need}")
    if diff.excludes_zero:
        side = "higher" if diff.mean > 0 else "lower"
        return f"finding: {plan.arms.treatment} {side} than {plan.arms.baseline}"
    return "no difference shown: the interval contains 0"


def _endpoint(frame: pd.DataFrame, plan: StudyPlan, e: Endpoint | Secondary, role: str,
              seeds: tuple[int, ...], verdicts: tuple[pd.Series, pd.Series],
              complete: bool) -> EndpointResult:
    base_verdict, treat_verdict = verdicts
    keep = base_verdict[base_verdict == _SUBSET_VERDICT[e.subset]].index
    rows = frame[(frame["study_reader"] == e.reader) & frame["probe_kind"].isin(e.probes)
                 & frame["seed"].isin(seeds)]
    rows = rows[pd.MultiIndex.from_frame(rows[_SESSION]).isin(keep)]
    value = _value(rows, e.statistic)
    rows = rows.assign(value=value)
    base = rows[rows["study_arm"] == "baseline"]
    treat = rows[rows["study_arm"] == "treatment"]
    if e.statistic == "paired_session_cost_usd":
        base = base.groupby(_SESSION, as_index=False).agg(value=("value", "first"))
        treat = treat.groupby(_SESSION, as_index=False).agg(value=("value", "first"))
        on = _SESSION
    else:
        on = _QUESTION
        if e.statistic == "paired_recall_on_baseline_discarded":
            base = base[base["discarded"].astype(bool)]
    pairs = base[[*on, "value"]].merge(treat[[*on, "value"]], on=on, suffixes=("_b", "_t"))
    missing = pairs["value_b"].isna() | pairs["value_t"].isna()
    if missing.any():
        first = pairs[missing].iloc[0]
        raise ValueError(f"{e.name}: no value for question {first[on[-1]]!r} of seed "
                         f"{first['seed']} (a record without {e.statistic}'s column)")
    sessions = list(zip(pairs["seed"], pairs["item_id"]))
    p = plan.primary
    diff = session_paired_bootstrap(sessions, pairs["value_b"].tolist(),
                                    pairs["value_t"].tolist(), n_boot=p.bootstrap, seed=p.seed,
                                    alpha=1 - p.confidence)
    in_subset = set(zip(*[pairs[c] for c in _SESSION]))
    not_valid = sum(1 for s in in_subset if treat_verdict.get(s) != PRODUCTION_VALID)
    mean_b = float(pairs["value_b"].mean()) if len(pairs) else math.nan
    mean_t = float(pairs["value_t"].mean()) if len(pairs) else math.nan
    return EndpointResult(role=role, name=e.name, statistic=e.statistic, subset=e.subset,
                          reader=e.reader, probes=tuple(e.probes), diff=diff,
                          baseline_mean=mean_b, treatment_mean=mean_t,
                          treatment_not_valid=not_valid,
                          decision=_decide(plan, role, diff, complete))


def analyse(records: pd.DataFrame, plan: StudyPlan) -> StudyResult:
    """Every endpoint of ``plan`` from ``records`` (a records frame of the study's runs)."""
    frame = study_frame(records, plan)
    seeds = _complete_seeds(frame, plan)
    missing = tuple(s for s in plan.sessions.seeds() if s not in seeds)
    verdicts = (_verdicts(frame[frame["seed"].isin(seeds)], "baseline"),
                _verdicts(frame[frame["seed"].isin(seeds)], "treatment"))
    complete = not missing
    endpoints = [_endpoint(frame, plan, plan.primary, "primary", seeds, verdicts, complete)]
    endpoints += [_endpoint(frame, plan, e, "secondary", seeds, verdicts, complete)
                  for e in plan.secondary]
    return StudyResult(plan=plan, seeds_complete=seeds, seeds_missing=missing,
                       baseline_verdicts=dict(sorted(verdicts[0].value_counts().items())),
                       treatment_verdicts=dict(sorted(verdicts[1].value_counts().items())),
                       endpoints=tuple(endpoints))
