"""Research settings against production's, paired on the same questions.

Why a module of its own: the winner rule (:mod:`evals.analysis.aggregate`) ranks *shapes* among
production-valid arms. A research setting (``research=NAME``, ``configs/research/``) is a
different question: on sessions the search never saw, does it read back more of what the
compactions discarded than production does, and at what billed cost? That needs the two runs
paired question by question, with every context production would not send kept visible.

Per research label (snapcompact rows that were asked: no error, not skipped):

* recall on discarded evidence (``evidence_round >= 1`` in that arm) with a Wilson interval,
  recall on every question, the mean billed prompt tokens, the share of contexts that fit the
  window and the verdicts (valid / stand-in / not sent);
* against the baseline label (default ``production``): a paired percentile bootstrap of the
  difference in recall over the questions both were asked (same dataset, seed, item and
  question), over all of them and over those the *baseline* lost to a compaction (the facts
  production discarded), and the difference in mean billed tokens;
* the same rows again per verdict the baseline had (``subset``: "production valid",
  "production stand-in", ...) when it had more than one: a pooled win can come from the
  sessions where production handed over to a summary alone.

    python -m evals.analysis.research_compare RUN_DIR... [--baseline production] [--out DIR]

prints a markdown table and, with ``--out``, writes ``research_compare.csv`` and ``.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from evals.analysis.aggregate import (
    bootstrap_means,
    dedupe_records,
    percentile_interval,
    production_status,
)
from evals.analysis.intervals import wilson_interval
from evals.store.records import RECORDS_FILE, Record, iter_records

__all__ = ["ResearchRow", "compare_research", "format_markdown", "main"]

QuestionKey = tuple[str, int, str, str]
#: An arm of a research run: (research label, policy, shape asked for, context window).
ArmKey = tuple[str, str, str, int]


@dataclass(frozen=True)
class ResearchRow:
    """One research label's figures, and its paired difference from the baseline label."""

    research: str
    arm: str  # "policy shape @window" (snapcompact)
    questions: int
    recall: float
    discarded: int
    recall_discarded: float
    recall_discarded_lo: float
    recall_discarded_hi: float
    billed_tokens: float
    fits_window_share: float
    verdicts: str
    #: "all", or "<baseline> <verdict>": only the sessions where the baseline had that verdict
    subset: str = "all"
    shared: int = 0
    diff_recall: float = float("nan")
    diff_recall_lo: float = float("nan")
    diff_recall_hi: float = float("nan")
    baseline_discarded: int = 0
    diff_on_baseline_discarded: float = float("nan")
    diff_on_baseline_discarded_lo: float = float("nan")
    diff_on_baseline_discarded_hi: float = float("nan")
    diff_billed_tokens: float = float("nan")


def _key(r: Record) -> QuestionKey:
    return (r.dataset, r.seed, r.item_id, r.question_id)


def _asked(records: Iterable[Record]) -> dict[ArmKey, dict[QuestionKey, Record]]:
    """arm -> question -> its row (snapcompact rows that were asked)."""
    out: dict[ArmKey, dict[QuestionKey, Record]] = {}
    for r in dedupe_records(list(records))[0]:
        if r.strategy != "snapcompact" or r.error is not None or r.skipped is not None:
            continue
        arm = (r.research, r.policy, r.shape_requested, int(r.context_window or 0))
        out.setdefault(arm, {})[_key(r)] = r
    return out


def _baseline_arm(arm: ArmKey, arms: Iterable[ArmKey], baseline: str) -> ArmKey | None:
    """The baseline's arm to pair ``arm`` with: same policy and window, the shape production
    picks (``auto``) or else the same shape."""
    _, policy, shape, window = arm
    arms = set(arms)
    for candidate in ((baseline, policy, "auto", window), (baseline, policy, shape, window)):
        if candidate in arms:
            return candidate
    return None


def _paired(diffs: np.ndarray, n_boot: int, seed: int) -> tuple[float, float, float]:
    """Mean of ``diffs`` and its 95 % percentile-bootstrap interval (nan when empty), with the
    winner rule's resampling (:func:`evals.analysis.aggregate.bootstrap_means`)."""
    if len(diffs) == 0:
        return float("nan"), float("nan"), float("nan")
    means = bootstrap_means(diffs, n_boot, np.random.default_rng(seed))[:, 0]
    lo, hi = percentile_interval(means, 0.05)
    return float(diffs.mean()), float(lo), float(hi)


def _verdict(r: Record) -> str:
    return production_status(r.strategy, r.production_valid, r.summary_stand_in)


def _row(label: str, arm: ArmKey, asked: dict[QuestionKey, Record],
         base: dict[QuestionKey, Record] | None, baseline: str, subset: str, n_boot: int,
         seed: int) -> ResearchRow:
    """One label's figures over ``asked``, paired with ``base`` when it is another label."""
    rs = list(asked.values())
    disc = [r for r in rs if (r.evidence_round or 0) >= 1]
    hits = sum(r.correct for r in disc)
    lo, hi = wilson_interval(hits / len(disc) if disc else 0.0, len(disc))
    verdicts = Counter(_verdict(r) for r in rs)
    row = ResearchRow(
        research=label, arm=f"{arm[1]} {arm[2]} @{arm[3] // 1000}k", questions=len(rs),
        recall=float(np.mean([r.correct for r in rs])),
        discarded=len(disc), recall_discarded=hits / len(disc) if disc else float("nan"),
        recall_discarded_lo=lo, recall_discarded_hi=hi,
        billed_tokens=float(np.mean([r.predicted_prompt_tokens for r in rs])),
        fits_window_share=float(np.mean([r.fits_window is not False for r in rs])),
        verdicts=", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())), subset=subset)
    if base is None or label == baseline:
        return row
    shared = sorted(set(asked) & set(base))
    d_all = np.array([float(asked[k].correct) - float(base[k].correct) for k in shared])
    lost = [k for k in shared if (base[k].evidence_round or 0) >= 1]
    d_lost = np.array([float(asked[k].correct) - float(base[k].correct) for k in lost])
    m, lo_a, hi_a = _paired(d_all, n_boot, seed)
    m2, lo_l, hi_l = _paired(d_lost, n_boot, seed)
    tokens = (float(np.mean([asked[k].predicted_prompt_tokens
                             - base[k].predicted_prompt_tokens for k in shared]))
              if shared else float("nan"))
    return ResearchRow(**{**asdict(row), "shared": len(shared), "diff_recall": m,
                          "diff_recall_lo": lo_a, "diff_recall_hi": hi_a,
                          "baseline_discarded": len(lost), "diff_on_baseline_discarded": m2,
                          "diff_on_baseline_discarded_lo": lo_l,
                          "diff_on_baseline_discarded_hi": hi_l,
                          "diff_billed_tokens": tokens})


def compare_research(records: Iterable[Record], *, baseline: str = "production",
                     n_boot: int = 2000, seed: int = 0) -> list[ResearchRow]:
    """One :class:`ResearchRow` per research label, the baseline first (``subset`` "all").

    When the baseline's questions carry more than one verdict (production kept snapcompact on
    some sessions and handed over to a summary on others), the rows are repeated per verdict
    (``subset`` "production valid", ...), each over the questions of the sessions where the
    baseline had that verdict: an average over both kinds can hide that a setting wins only
    where production handed over, or costs more where production's frames were sent.
    """
    by_arm = _asked(records)
    if not by_arm:
        raise ValueError("no snapcompact row was asked in these records")
    order = sorted(by_arm, key=lambda a: (a[0] != baseline, a))
    rows = []
    for arm in order:
        base_arm = _baseline_arm(arm, by_arm, baseline)
        base = by_arm[base_arm] if base_arm is not None else None
        rows.append(_row(arm[0], arm, by_arm[arm], base, baseline, "all", n_boot, seed))
    for arm in order:
        base_arm = _baseline_arm(arm, by_arm, baseline)
        if base_arm is None:
            continue
        base = by_arm[base_arm]
        by_verdict: dict[str, set[QuestionKey]] = {}
        for k, r in base.items():
            by_verdict.setdefault(_verdict(r), set()).add(k)
        if len(by_verdict) < 2:
            continue
        for verdict, keys in sorted(by_verdict.items()):
            asked = {k: r for k, r in by_arm[arm].items() if k in keys}
            if asked:
                rows.append(_row(arm[0], arm, asked, {k: base[k] for k in keys}, baseline,
                                 f"{baseline} {verdict}", n_boot, seed))
    return rows


def format_markdown(rows: Sequence[ResearchRow], baseline: str) -> str:
    """The comparison as a markdown table (95 %: Wilson per arm, paired bootstrap)."""
    out = ["| research | arm | sessions | questions | recall | recall, discarded [95 % CI] (n) "
           f"| billed tokens/q | fits | verdicts | vs {baseline}: recall diff [95 % CI] "
           f"(shared) | on facts {baseline} lost [95 % CI] (n) | tokens diff |",
           "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- | --- | ---: |"]
    for r in rows:
        paired = (f"{r.diff_recall:+.3f} [{r.diff_recall_lo:+.3f}, {r.diff_recall_hi:+.3f}] "
                  f"({r.shared})" if r.shared else "")
        lost = (f"{r.diff_on_baseline_discarded:+.3f} [{r.diff_on_baseline_discarded_lo:+.3f}, "
                f"{r.diff_on_baseline_discarded_hi:+.3f}] ({r.baseline_discarded})"
                if r.baseline_discarded else "")
        tokens = f"{r.diff_billed_tokens:+,.0f}" if r.shared else ""
        out.append(
            f"| {r.research} | {r.arm} | {r.subset} | {r.questions} | {r.recall:.3f} | "
            f"{r.recall_discarded:.3f} "
            f"[{r.recall_discarded_lo:.3f}, {r.recall_discarded_hi:.3f}] ({r.discarded}) | "
            f"{r.billed_tokens:,.0f} | {r.fits_window_share:.0%} | {r.verdicts} | {paired} | "
            f"{lost} | {tokens} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.analysis.research_compare",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (records.jsonl inside)")
    parser.add_argument("--baseline", default="production")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    records: list[Record] = []
    for run in args.runs:
        files = sorted(run.rglob(RECORDS_FILE)) if run.is_dir() else []
        if not files:
            print(f"research_compare: no {RECORDS_FILE} under {run}", file=sys.stderr)
            return 2
        for f in files:
            records.extend(iter_records(f))
    try:
        rows = compare_research(records, baseline=args.baseline, n_boot=args.bootstrap,
                                seed=args.seed)
    except ValueError as exc:
        print(f"research_compare: {exc}", file=sys.stderr)
        return 2
    table = format_markdown(rows, args.baseline)
    print(table)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame([asdict(r) for r in rows]).to_csv(args.out / "research_compare.csv",
                                                       index=False)
        (args.out / "research_compare.md").write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
