"""A study's committed evidence and its report: records in, one sentence per endpoint out.

Why the records sit beside the report (``results/study/NAME/records.parquet``): a finding is
what an outsider re-derives from the repository, so the report is made from the committed
per-question rows by one command (``python -m evals.analysis.study report PLAN``) and
``snapcompact-eval-table --check`` makes it again and compares (:func:`rebuild_report`). The
report names the command, the plan and the bootstrap; the plan's commit precedes the records'
(``python -m evals.analysis.study verify PLAN``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from evals.analysis.study.endpoints import EndpointResult, StudyResult, analyse
from evals.analysis.study.plan import StudyPlan

__all__ = ["REPORT_FILES", "committed_study_records", "endpoint_sentence", "rebuild_report",
           "report_files", "write_report"]

#: The files the report command writes beside ``records.parquet``.
REPORT_FILES = ("report.md", "endpoints.csv", "sessions.csv")
#: Per-run columns left out of the committed records: when and how fast a row was made, not
#: what it measured (the code hash and git commit stay: they say which code made it).
_PER_RUN = ("created_at", "latency_s", "cached", "attempts")
_ORDER = ("seed", "item_id", "research", "model", "question_id")


def committed_study_records(records: pd.DataFrame) -> pd.DataFrame:
    """The records as committed: a stable row order, no per-run columns."""
    order = [c for c in _ORDER if c in records]
    out = records.sort_values(order, kind="mergesort", ignore_index=True)
    return out.drop(columns=[c for c in _PER_RUN if c in out])


def _num(value: float, unit: str, signed: bool = False) -> str:
    if math.isnan(value):
        return "n/a"
    sign = "+" if signed else ""
    if unit == "tokens":
        return f"{value:{sign},.0f}"
    if unit == "usd":
        return f"{value:{sign}.4f} $"
    return f"{value:{sign}.3f}"


def _probes(e: EndpointResult) -> str:
    return ", ".join(e.probes)


_READER_WORDS = {"qa": "told reader", "blind": "blind reader"}
_SUBSET_WORDS = {"baseline_valid": "sessions where {b} was valid",
                 "baseline_stand_in": "sessions where {b} handed over (stand-in)"}


def endpoint_sentence(e: EndpointResult, plan: StudyPlan) -> str:
    """One sentence: what was measured, on what, the difference, its interval and the verdict."""
    a = plan.arms
    d = e.diff
    where = _SUBSET_WORDS[e.subset].format(b=a.baseline)
    interval = (f"[{_num(d.lo, e.unit, True)}, {_num(d.hi, e.unit, True)}]"
                if not math.isnan(d.lo) else "(no interval below 2 sessions)")
    unit_of = "sessions" if e.statistic == "paired_session_cost_usd" else "questions"
    treat_note = (f"; {e.treatment_not_valid} of them with {a.treatment} not valid"
                  if e.treatment_not_valid else "")
    return (f"{e.name} ({_READER_WORDS[e.reader]}; {_probes(e)}; {where}): "
            f"{a.treatment} - {a.baseline} = {_num(d.mean, e.unit, True)} {interval} "
            f"({a.baseline} {_num(e.baseline_mean, e.unit)}, {a.treatment} "
            f"{_num(e.treatment_mean, e.unit)}; {d.n_sessions} sessions"
            + (f", {d.n_questions:,} {unit_of}" if unit_of == "questions" else "")
            + f"; W-L-T {d.record}{treat_note}). {e.decision}.")


def _verdict_line(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _markdown(result: StudyResult, records: pd.DataFrame) -> str:
    plan = result.plan
    p = plan.primary
    draw = plan.sessions
    n = len(draw.seeds())
    codes = sorted({str(c) for c in records.get("code_sha256", pd.Series(dtype=str)).dropna()})
    commits = sorted({str(c) for c in records.get("git_sha", pd.Series(dtype=str)).dropna()})
    lines = [
        f"# Study `{plan.name}`",
        "",
        f"Question: {plan.question}",
        "",
        f"Plan: `configs/study/{plan.name}.yaml`, committed before these records "
        f"(`python -m evals.analysis.study verify configs/study/{plan.name}.yaml`).",
        f"Made by: `python -m evals.analysis.study report configs/study/{plan.name}.yaml` from "
        f"`records.parquet` beside this file (session bootstrap: {p.bootstrap} resamples, "
        f"seed {p.seed}, {p.confidence:.0%} percentile interval).",
        f"Records: {len(records):,} rows; code sha256 {', '.join(c[:12] for c in codes)}; "
        f"git {', '.join(c[:12] for c in commits)}.",
        "",
        "## Sessions",
        "",
        f"{len(result.seeds_complete)} of {n} seeds ({draw.first_seed}-"
        f"{draw.first_seed + n - 1}, {draw.dataset}, {draw.first_tokens:,} + "
        f"{draw.step_tokens:,} tokens a seed) have both arms and every reader"
        + (f"; missing: {', '.join(map(str, result.seeds_missing))}" if result.seeds_missing
           else "") + ".",
        f"{plan.arms.baseline}'s verdicts: {_verdict_line(result.baseline_verdicts)}; "
        f"{plan.arms.treatment}'s: {_verdict_line(result.treatment_verdicts)}.",
        "",
        "## Primary endpoint (pre-registered; the only one that can be a finding)",
        "",
    ]
    primary = [e for e in result.endpoints if e.role == "primary"]
    secondary = [e for e in result.endpoints if e.role == "secondary"]
    lines += [f"- {endpoint_sentence(e, plan)}" for e in primary]
    lines += ["", "## Secondary endpoints (pre-registered; reported, never a finding)", ""]
    lines += [f"- {endpoint_sentence(e, plan)}" for e in secondary]
    lines += ["", "Readers: the told reader is given each question's evidence (the legibility "
              "floor); the blind reader only the question (BM25 over what it read). Every "
              "figure is the offline OCR reader's, not a vision model's. W-L-T counts the "
              "sessions whose difference is above, below and at zero: for silent wrong and "
              "confabulated answers, billed tokens and the session bill, above zero is worse "
              "for the treatment.", ""]
    return "\n".join(lines)


def _endpoints_csv(result: StudyResult) -> str:
    rows = [{"role": e.role, "name": e.name, "statistic": e.statistic, "subset": e.subset,
             "reader": e.reader, "probes": " ".join(e.probes),
             "baseline": e.baseline_mean, "treatment": e.treatment_mean,
             "difference": e.diff.mean, "lo": e.diff.lo, "hi": e.diff.hi,
             "sessions": e.diff.n_sessions, "questions": e.diff.n_questions,
             "wins": e.diff.wins, "losses": e.diff.losses, "ties": e.diff.ties,
             "treatment_not_valid": e.treatment_not_valid, "decision": e.decision}
            for e in result.endpoints]
    return pd.DataFrame(rows).to_csv(index=False, float_format="%.6g")


def _sessions_csv(records: pd.DataFrame, result: StudyResult) -> str:
    """One row per session and arm: verdict, compactions, frames, context and session bill."""
    from evals.analysis.study.endpoints import study_frame

    frame = study_frame(records, result.plan)
    frame = frame[frame["study_reader"] == result.plan.primary.reader]
    cols = {"production": "first", "compactions": "first", "frames": "first",
            "billed_tokens": "mean", "session_cost_usd": "first", "correct": "mean"}
    cols = {k: v for k, v in cols.items() if k in frame}
    out = frame.groupby(["seed", "item_id", "study_arm"], as_index=False).agg(cols)
    out = out.rename(columns={"production": "verdict", "billed_tokens": "billed_tokens_per_q",
                              "correct": "recall_all_probes"})
    return out.to_csv(index=False, float_format="%.6g")


def report_files(records: pd.DataFrame, plan: StudyPlan) -> dict[str, str]:
    """File name -> text of every report file, from the study's records frame."""
    result = analyse(records, plan)
    return {"report.md": _markdown(result, records), "endpoints.csv": _endpoints_csv(result),
            "sessions.csv": _sessions_csv(records, result)}


def write_report(records: pd.DataFrame, plan: StudyPlan, out: Path) -> str:
    """Write ``records.parquet`` and the report files into ``out``; return the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    committed = committed_study_records(records)
    committed.to_parquet(out / "records.parquet", index=False)
    files = report_files(pd.read_parquet(out / "records.parquet"), plan)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    return files["report.md"]


def rebuild_report(folder: Path, plan: StudyPlan) -> dict[str, str]:
    """What ``--check`` compares: the report files made again from ``folder/records.parquet``."""
    return report_files(pd.read_parquet(folder / "records.parquet"), plan)
