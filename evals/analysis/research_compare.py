"""Research settings against production's, paired on the same questions.

Why a module of its own: the winner rule (:mod:`evals.analysis.winner`) ranks *shapes* among
production-valid arms. A research setting (``research=NAME``, ``configs/research/``) is a
different question: on sessions the search never saw, does it read back more of what the
compactions discarded than production does, and at what billed cost? That needs the two runs
paired question by question, with every context production would not send kept visible.

The unit of evidence is the session (``dataset, seed, item``): the questions of one session
share its compaction history, so every interval that compares two labels is a paired cluster
bootstrap over sessions (:mod:`evals.analysis.session_bootstrap`), printed with the number of
sessions and the per-session record (wins-losses-ties of the research label). Per label:

* recall on discarded evidence (``evidence_round >= 1`` in that arm): over several sessions
  with a session-level bootstrap interval, within one session with Wilson's; recall on every
  question, the mean billed tokens (the question's prompt tokens plus its share of its session's
  compaction calls, shown beside them), how many contexts fit the window (a row that does
  not say counts as unknown, never as fitting) and the verdicts (valid / stand-in / not sent);
* against the baseline label (default ``production``), over the questions both were asked
  (same dataset, seed, item and question): the difference in recall over all of them and over
  those the *baseline* lost to a compaction (the facts production discarded), and the
  difference in mean billed tokens, each with its session-level interval and record;
* the same rows per verdict the baseline had (``subset``: "production valid", "production
  stand-in", ...). The markdown puts the sessions where production's own context was valid
  first (the comparison a claim may rest on), the stand-in sessions apart (offline, production's
  summary there is a fixed text naming no fact, so its recall is a floor, not production's), and
  the pooled rows last, marked as mixing both.

    python -m evals.analysis.research_compare RUN_DIR... [--baseline production] [--out DIR]
    python -m evals.analysis.research_compare --sessions DIR/research_sessions.csv --out DIR
    python -m evals.analysis.research_compare --check --out DIR

prints the markdown tables and, with ``--out``, writes ``research_compare.csv`` and ``.md`` and
``research_sessions.csv`` (each session's own figures per label); the markdown's first line is
the command with every option, which ``--check`` reruns (writing nothing) to compare.
``--sessions`` rebuilds from the committed per-session figures alone
(:mod:`evals.analysis.research_rederive`).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from evals.analysis.aggregate import dedupe_records, production_status, reader_id, reader_label
from evals.analysis.diff_lines import compare_text
from evals.analysis.intervals import wilson_interval
from evals.analysis.research_records import RECORDS_TABLE, read_records_table, records_table
from evals.analysis.research_rederive import WITHHELD, rows_from_sessions
from evals.analysis.research_rows import CEILING, ResearchRow, ceiling_label
from evals.analysis.session_bootstrap import (
    MIN_SESSIONS_FOR_CLAIM,
    SessionDiff,
    claim_supported,
    interval_excludes_zero,
    session_mean,
    session_paired_bootstrap,
)
from evals.store.records import RECORDS_FILE, Record, is_oracle_summarizer, iter_records

__all__ = ["CEILING", "ResearchRow", "bracket_rows", "bracket_sentences", "ceiling_label",
           "check", "claim_sentences", "command_line", "compare_research",
           "format_markdown", "main", "per_session",
           "research_label"]

QuestionKey = tuple[str, int, str, str]
#: A session: (dataset, seed, item).
SessionKey = tuple[str, int, str]
#: An arm of a research run: (research label, policy, shape asked for, context window).
ArmKey = tuple[str, str, str, int]


def research_label(r: Record) -> str:
    """The row's research label; ``production (perfect summarizer)`` when an oracle wrote its
    summaries (summarizer=perfect: the ceiling of production's own summary, not production)."""
    return f"{r.research} ({CEILING})" if is_oracle_summarizer(r.summarizer) else r.research


def _key(r: Record) -> QuestionKey:
    return (r.dataset, r.seed, r.item_id, r.question_id)


def _asked(records: Iterable[Record]) -> dict[ArmKey, dict[QuestionKey, Record]]:
    """arm -> question -> its row (snapcompact rows that were asked)."""
    out: dict[ArmKey, dict[QuestionKey, Record]] = {}
    for r in dedupe_records(list(records))[0]:
        if r.strategy != "snapcompact" or r.error is not None or r.skipped is not None:
            continue
        arm = (research_label(r), r.policy, r.shape_requested, int(r.context_window or 0))
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


def _session(k: QuestionKey) -> SessionKey:
    return k[:3]


def _paired(asked: dict[QuestionKey, Record], base: dict[QuestionKey, Record],
            keys: Sequence[QuestionKey], value, n_boot: int, seed: int) -> SessionDiff:
    """``value(label's row) - value(baseline's row)`` over ``keys``, bootstrapped by session."""
    return session_paired_bootstrap([_session(k) for k in keys],
                                    [float(value(base[k])) for k in keys],
                                    [float(value(asked[k])) for k in keys],
                                    n_boot=n_boot, seed=seed)


def _mean_known(values: Sequence[float | None]) -> float:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else float("nan")


def _verdict(r: Record) -> str:
    return production_status(r.strategy, r.production_valid, r.summary_stand_in)


def _row(label: str, arm: ArmKey, asked: dict[QuestionKey, Record],
         base: dict[QuestionKey, Record] | None, baseline: str, subset: str, n_boot: int,
         seed: int) -> ResearchRow:
    """One label's figures over ``asked``, paired with ``base`` when it is another label."""
    rs = list(asked.values())
    disc = {k: r for k, r in asked.items() if (r.evidence_round or 0) >= 1}
    hits = sum(r.correct for r in disc.values())
    disc_sessions = {_session(k) for k in disc}
    if len(disc_sessions) >= 2:
        spread = session_mean([_session(k) for k in disc],
                              [float(r.correct) for r in disc.values()], n_boot=n_boot, seed=seed)
        lo, hi, how = spread.lo, spread.hi, "session bootstrap"
    else:
        lo, hi = wilson_interval(hits / len(disc) if disc else 0.0, len(disc))
        how = "Wilson (1 session)" if disc else ""
    verdicts = Counter(_verdict(r) for r in rs)
    said = [r.fits_window for r in rs if r.fits_window is not None]
    row = ResearchRow(
        research=label, arm=f"{arm[1]} {arm[2]} @{arm[3] // 1000}k", questions=len(rs),
        recall=float(np.mean([r.correct for r in rs])),
        discarded=len(disc), recall_discarded=hits / len(disc) if disc else float("nan"),
        recall_discarded_lo=lo, recall_discarded_hi=hi,
        billed_tokens=float(np.mean([r.billed_tokens for r in rs])),
        compaction_tokens=float(np.mean([r.compaction_tokens_per_question for r in rs])),
        session_cost_usd=_mean_known([r.session_cost_usd for r in rs]),
        compaction_token_method=", ".join(sorted({r.compaction_token_method for r in rs
                                                  if r.compaction_token_method})),
        fits_window_share=float(np.mean([f is True for f in said])) if said else float("nan"),
        verdicts=", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())), subset=subset,
        sessions=len({_session(k) for k in asked}), recall_interval=how,
        fits_window_unknown=len(rs) - len(said),
        answered_by="; ".join(sorted({reader_label(reader_id(r.model)) for r in rs})))
    if base is None or label == baseline:
        return row
    shared = sorted(set(asked) & set(base))
    lost = [k for k in shared if (base[k].evidence_round or 0) >= 1]
    d_all = _paired(asked, base, shared, lambda r: r.correct, n_boot, seed)
    d_lost = _paired(asked, base, lost, lambda r: r.correct, n_boot, seed)
    d_tok = _paired(asked, base, shared, lambda r: r.billed_tokens, n_boot, seed)
    costed = [k for k in shared if asked[k].session_cost_usd is not None
              and base[k].session_cost_usd is not None]
    d_usd = _paired(asked, base, costed, lambda r: r.session_cost_usd, n_boot, seed)
    return ResearchRow(**{**asdict(row), "shared": len(shared),
                          "shared_sessions": d_all.n_sessions, "diff_recall": d_all.mean,
                          "diff_recall_lo": d_all.lo, "diff_recall_hi": d_all.hi,
                          "diff_recall_record": d_all.record if shared else "",
                          "baseline_discarded": len(lost),
                          "baseline_discarded_sessions": d_lost.n_sessions,
                          "diff_on_baseline_discarded": d_lost.mean,
                          "diff_on_baseline_discarded_lo": d_lost.lo,
                          "diff_on_baseline_discarded_hi": d_lost.hi,
                          "diff_on_baseline_discarded_record": d_lost.record if lost else "",
                          "diff_billed_tokens": d_tok.mean,
                          "diff_billed_tokens_lo": d_tok.lo, "diff_billed_tokens_hi": d_tok.hi,
                          "diff_billed_tokens_record": d_tok.record if shared else "",
                          "diff_session_cost_usd": d_usd.mean,
                          "diff_session_cost_usd_lo": d_usd.lo,
                          "diff_session_cost_usd_hi": d_usd.hi,
                          "diff_session_cost_usd_record": d_usd.record if costed else ""})


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


def bracket_rows(records: Iterable[Record], *, baseline: str = "production",
                 n_boot: int = 2000, seed: int = 0) -> list[ResearchRow]:
    """Every label against the baseline's ceiling, on the ceiling's questions.

    With a run of the baseline under summarizer=perfect (label ``<baseline> (perfect
    summarizer)``), the sessions where the baseline handed over to an LLM summary have a
    bracket: the offline stand-in's fixed text is the floor of what production's summary keeps,
    the oracle's (every evidence line its prompt showed) the ceiling. Each label (the floor
    itself included) is paired with the ceiling question by question (``subset`` ``vs
    <ceiling>``): a research setting that beats the ceiling would beat any summarizer
    production could call there. No ceiling run: no rows.
    """
    by_arm = _asked(records)
    top = ceiling_label(baseline)
    rows = []
    for ceiling in sorted(a for a in by_arm if a[0] == top):
        base = by_arm[ceiling]
        for arm in sorted(a for a in by_arm if a[0] != top and a[1] == ceiling[1]
                          and a[3] == ceiling[3]):
            asked = {k: r for k, r in by_arm[arm].items() if k in base}
            if asked:
                rows.append(_row(arm[0], arm, asked, base, top, f"vs {top}", n_boot, seed))
    return rows


def per_session(records: Iterable[Record], *, baseline: str = "production") -> pd.DataFrame:
    """One row per (session, research label, arm): the figures behind every session-level
    interval, so a per-session statement in prose has committed data under it."""
    rows = []
    for arm, asked in _asked(records).items():
        by_session: dict[SessionKey, list[Record]] = {}
        for k, r in asked.items():
            by_session.setdefault(_session(k), []).append(r)
        for (dataset, seed, item), rs in sorted(by_session.items()):
            disc = [r for r in rs if (r.evidence_round or 0) >= 1]
            rows.append({
                "dataset": dataset, "seed": seed, "item_id": item, "research": arm[0],
                "arm": f"{arm[1]} {arm[2]} @{arm[3] // 1000}k", "questions": len(rs),
                "verdict": ", ".join(sorted({_verdict(r) for r in rs})),
                "compactions": max((r.compactions or 0) for r in rs),
                "frames": max((r.frames or 0) for r in rs),
                "recall": float(np.mean([r.correct for r in rs])),
                "discarded": len(disc),
                "recall_discarded": (float(np.mean([r.correct for r in disc])) if disc
                                     else float("nan")),
                "billed_tokens": float(np.mean([r.billed_tokens for r in rs])),
                "question_tokens": float(np.mean([r.predicted_prompt_tokens for r in rs])),
                # the session's compaction calls (paid once) and its questions' share of them
                "compaction_calls": max((r.compaction_calls or 0) for r in rs),
                "compaction_billed_tokens": rs[0].compaction_billed_tokens,
                "compaction_tokens_per_question": float(np.mean(
                    [r.compaction_tokens_per_question for r in rs])),
                "compaction_token_method": rs[0].compaction_token_method or "",
                "text_token_method": ", ".join(sorted({str(r.text_token_method)
                                                       for r in rs})),
            })
    return pd.DataFrame(rows)


def _diff(mean: float, lo: float, hi: float, sessions: int, record: str, fmt: str) -> str:
    """``+m [lo, hi] (n sessions; W-L-T)``, or the point alone when there is no interval."""
    if math.isnan(mean):
        return ""
    if math.isnan(lo):
        return f"{mean:{fmt}} (1 session: no interval)"
    return f"{mean:{fmt}} [{lo:{fmt}}, {hi:{fmt}}] ({sessions} sessions; {record})"


def _section_of(subset: str, baseline: str) -> tuple[int, str]:
    """Where a subset's rows go in the markdown, and the section's heading."""
    if subset == f"{baseline} valid":
        return 0, (f"Sessions where {baseline}'s own context was valid (the comparison a claim "
                   "may rest on)")
    if subset == "all":
        return 3, "All sessions pooled"
    if subset == f"{baseline} stand-in":
        return 1, (f"Sessions where {baseline} handed over to an LLM summary (offline the "
                   "summary is the stand-in's fixed text naming no fact: its recall there is a "
                   "floor, not what a real summarizer would keep; never a headline)")
    return 2, f"Sessions where {baseline} was {subset.removeprefix(baseline + ' ')}"


TABLE_NOTE = (
    "95 % intervals. Comparisons: paired cluster bootstrap over sessions (a session's questions "
    "share its compactions, so the session is the unit of evidence), with the number of "
    "sessions and the record W-L-T: sessions where the label is higher-lower-equal (for "
    "tokens: dearer-cheaper-equal). Per-arm recall: bootstrap over sessions, Wilson within one "
    f"session. A finding needs a pre-registered study plan (configs/study/), >= "
    f"{MIN_SESSIONS_FOR_CLAIM} sessions and an interval clear of 0. "
    "fits: share of contexts within the window among rows that say (unknown: rows that do not). "
    "Billed tokens/q: the question's predicted prompt tokens (text counter and image rule as "
    "recorded on each row) plus its share of its session's compaction calls (summary / handoff "
    "requests, input + output, made once per session: the session's bill over the questions "
    "asked after that context; snapcompact makes none), the column beside it. Cost is ranked "
    "on billed tokens/q; what a session costs from its first compaction on (session_cost_usd: "
    "every turn request with the prompt cache as the provider applies it, the replies, the "
    "compaction calls) is stated beside it where the records carry it.")


def _counters(rows: Sequence[ResearchRow]) -> str:
    """The counters of the compaction calls in ``rows`` (named in the column header)."""
    names = sorted({m for r in rows for m in r.compaction_token_method.split(", ") if m})
    return ", ".join(names) or "no call"


def _num(value: float) -> str:
    return "not recorded" if math.isnan(value) else f"{value:,.0f}"


def _table(part: Sequence[ResearchRow], against: str) -> list[str]:
    """Markdown rows of one section; the differences are against label ``against``."""
    out = ["| research | arm | subset | sessions | questions | recall | recall, discarded "
           f"[95 %] (n) | billed tokens/q | of which compaction calls ({_counters(part)}) | "
           f"fits | verdicts | vs {against}: recall diff | on facts {against} lost | "
           "billed tokens diff |",
           "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | --- "
           "| --- | --- |"]
    for r in part:
        recall_d = (f"{r.recall_discarded:.3f} [{r.recall_discarded_lo:.3f}, "
                    f"{r.recall_discarded_hi:.3f}] ({r.discarded})"
                    if r.discarded else "")
        fits = ("unknown" if math.isnan(r.fits_window_share)
                else f"{r.fits_window_share:.0%}")
        if r.fits_window_unknown and not math.isnan(r.fits_window_share):
            fits += f" ({r.fits_window_unknown} unknown)"
        out.append(
            f"| {r.research} | {r.arm} | {r.subset} | {r.sessions} | {r.questions} | "
            f"{r.recall:.3f} | {recall_d} | {r.billed_tokens:,.0f} | "
            f"{_num(r.compaction_tokens)} | {fits} | {r.verdicts} | "
            + _diff(r.diff_recall, r.diff_recall_lo, r.diff_recall_hi, r.shared_sessions,
                    r.diff_recall_record, "+.3f") + " | "
            + _diff(r.diff_on_baseline_discarded, r.diff_on_baseline_discarded_lo,
                    r.diff_on_baseline_discarded_hi, r.baseline_discarded_sessions,
                    r.diff_on_baseline_discarded_record, "+.3f") + " | "
            + _diff(r.diff_billed_tokens, r.diff_billed_tokens_lo, r.diff_billed_tokens_hi,
                    r.shared_sessions, r.diff_billed_tokens_record, "+,.0f") + " |")
    return out


def format_markdown(rows: Sequence[ResearchRow], baseline: str,
                    bracket: Sequence[ResearchRow] = ()) -> str:
    """The comparison as markdown: one table per subset, production-valid sessions first;
    with ``bracket`` (:func:`bracket_rows`), the floor-ceiling section after them."""
    pooled_only = all(r.subset == "all" for r in rows)
    sections: dict[tuple[int, str], list[ResearchRow]] = {}
    for r in rows:
        key = (0, "All sessions") if pooled_only else _section_of(r.subset, baseline)
        if not pooled_only and r.subset == "all":
            key = (3, "All sessions pooled (mixes the subsets above: not a headline)")
        sections.setdefault(key, []).append(r)
    out = [TABLE_NOTE]
    for (_, heading), part in sorted(sections.items()):
        out += ["", f"### {heading}", ""] + _table(part, baseline)
    if bracket:
        top = bracket[0].subset.removeprefix("vs ")
        out += ["", f"### Bracket: {baseline}'s summary between the offline stand-in (floor) and "
                f"a perfect summarizer (ceiling), on the sessions the ceiling ran", "",
                f"`{top}`: {baseline}'s path with every summary written by an oracle that keeps "
                "the evidence line of every question its prompt showed (an upper bound of any "
                f"summarizer {baseline} could call there; never ranked). Differences are each "
                "label minus the ceiling.", ""] + _table(bracket, top)
    claims = claim_sentences(rows, baseline) + bracket_sentences(bracket)
    if claims:
        out += ["", "### What the evidence supports", ""] + [f"- {c}" for c in claims]
    return "\n".join(out)


def _strength(n: int, lo: float, hi: float) -> str:
    if math.isnan(lo):
        return "no session-level interval (one session): no claim"
    if claim_supported(n, lo, hi):
        # issue 46: a finding needs a design committed before its run (evals.analysis.study); these
        # comparisons have none, so they are exploratory whatever their interval
        return (f"interval clear of 0 on {n} sessions, but exploratory: no pre-registered "
                "study plan (configs/study/) fixed these sessions before their run")
    if interval_excludes_zero(lo, hi):
        return (f"interval clear of 0, but {n} < {MIN_SESSIONS_FOR_CLAIM} sessions: suggestive, "
                "not a finding")
    return "interval includes 0: no evidence of a difference"


def claim_sentences(rows: Sequence[ResearchRow], baseline: str) -> list[str]:
    """One sentence per claim a reader may draw, on the sessions a claim may rest on.

    Comparisons use the baseline-valid subset when the table has one (else every session);
    each sentence gives the estimate, its interval, the sessions and what that amounts to.
    """
    subsets = {r.subset for r in rows}
    where = f"{baseline} valid" if f"{baseline} valid" in subsets else "all"
    scope = (f"{baseline}-valid sessions" if where != "all" else "all sessions")
    out = []
    for r in rows:
        if r.subset != where or r.research == baseline or not r.shared:
            continue
        who = f"{r.research} ({r.arm})"
        for what, m, lo, hi, n, rec, fmt in (
                (f"recall on the facts {baseline} discarded", r.diff_on_baseline_discarded,
                 r.diff_on_baseline_discarded_lo, r.diff_on_baseline_discarded_hi,
                 r.baseline_discarded_sessions, r.diff_on_baseline_discarded_record, "+.3f"),
                ("recall on every question", r.diff_recall, r.diff_recall_lo, r.diff_recall_hi,
                 r.shared_sessions, r.diff_recall_record, "+.3f"),
                ("billed tokens per question (compaction calls included)", r.diff_billed_tokens,
                 r.diff_billed_tokens_lo,
                 r.diff_billed_tokens_hi, r.shared_sessions, r.diff_billed_tokens_record,
                 "+,.0f"),
                ("dollars per session from its first compaction on (beside the ranking)",
                 r.diff_session_cost_usd, r.diff_session_cost_usd_lo,
                 r.diff_session_cost_usd_hi, r.shared_sessions,
                 r.diff_session_cost_usd_record, "+,.2f")):
            if math.isnan(m):
                continue
            out.append(f"{who} vs {baseline}, {what}, on {scope}: "
                       f"{_diff(m, lo, hi, n, rec, fmt)}: {_strength(n, lo, hi)}.")
    return out


def bracket_sentences(bracket: Sequence[ResearchRow]) -> list[str]:
    """One sentence per label on where it stands against the ceiling (recall on the facts the
    ceiling's path discarded)."""
    out = []
    for r in bracket:
        top = r.subset.removeprefix("vs ")
        m, lo, hi = (r.diff_on_baseline_discarded, r.diff_on_baseline_discarded_lo,
                     r.diff_on_baseline_discarded_hi)
        if math.isnan(m):
            continue
        n = r.baseline_discarded_sessions
        out.append(f"{r.research} ({r.arm}) vs the ceiling {top}, recall on the facts its path "
                   f"discarded: {_diff(m, lo, hi, n, r.diff_on_baseline_discarded_record, '+.3f')}"
                   f": {_strength(n, lo, hi)}.")
    return out


def command_line(args: argparse.Namespace) -> str:
    """The command that writes these files, every option spelled out (it heads the markdown, and
    ``--check`` reruns it from there). Made from run folders with ``--out``, it names the
    records table written beside the tables, not the folders (which are not committed)."""
    if args.sessions is not None:
        source = f"--sessions {args.sessions}"
    elif args.out is not None and any(r.suffix != ".parquet" for r in args.runs):
        source = str(args.out / RECORDS_TABLE)
    else:
        source = " ".join(str(r) for r in args.runs)
    return (f"python -m evals.analysis.research_compare {source} --baseline {args.baseline} "
            f"--bootstrap {args.bootstrap} --seed {args.seed} --out {args.out}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evals.analysis.research_compare",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path, help="run folders (records.jsonl inside)")
    parser.add_argument("--sessions", type=Path, default=None,
                        help="rebuild from a committed research_sessions.csv instead of runs "
                             "(evals.analysis.research_rederive: cells that pair questions stay "
                             "empty)")
    parser.add_argument("--baseline", default="production")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--check", action="store_true",
                        help="rebuild the files in --out with the command written in their "
                             "research_compare.md, write nothing, exit 1 on any difference")
    return parser


def _load(runs: Sequence[Path]) -> list[Record]:
    """Records of run folders (``records.jsonl`` inside) and committed records tables."""
    records: list[Record] = []
    for run in runs:
        if run.suffix == ".parquet" and run.is_file():
            records.extend(read_records_table(run))
            continue
        files = sorted(run.rglob(RECORDS_FILE)) if run.is_dir() else []
        if not files:
            raise ValueError(f"no {RECORDS_FILE} under {run}")
        for f in files:
            records.extend(iter_records(f))
    return records


def build(args: argparse.Namespace, records: list[Record] | None = None,
          root: Path = Path(".")) -> dict[str, str]:
    """File name -> text of every file the command writes (nothing written here), its input
    paths read under ``root``; ``records`` (when given) receives the records read."""
    if args.sessions is not None:
        sessions = pd.read_csv(root / args.sessions)
        rows, bracket = rows_from_sessions(sessions, baseline=args.baseline,
                                           n_boot=args.bootstrap, seed=args.seed)
        head, table_of_sessions = [WITHHELD], None
    else:
        read = _load([root / r for r in args.runs])
        if records is not None:
            records.extend(read)
        rows = compare_research(read, baseline=args.baseline, n_boot=args.bootstrap,
                                seed=args.seed)
        bracket = bracket_rows(read, baseline=args.baseline, n_boot=args.bootstrap,
                               seed=args.seed)
        head, table_of_sessions = [], per_session(read, baseline=args.baseline)
    table = "\n\n".join([f"Command: `{command_line(args)}`", *head,
                          format_markdown(rows, args.baseline, bracket)])
    out = {"research_compare.md": table + "\n",
           "research_compare.csv": pd.DataFrame([asdict(r) for r in [*rows, *bracket]])
           .to_csv(index=False)}
    if table_of_sessions is not None:
        out["research_sessions.csv"] = table_of_sessions.to_csv(index=False)
    return out


def check(folder: Path, root: Path = Path(".")) -> list[str]:
    """Rerun the command ``folder/research_compare.md`` names (its paths read under ``root``,
    the checkout) and compare every file it writes with the committed one; one line per
    difference (file, line, both values)."""
    md = folder / "research_compare.md"
    first = md.read_text(encoding="utf-8").split("\n", 1)[0] if md.is_file() else ""
    if not first.startswith("Command: `python -m evals.analysis.research_compare "):
        return [f"{md}:1: no `Command:` line naming how it was made: regenerate it"]
    args = _parser().parse_args(first.removeprefix("Command: `").rstrip("`").split()[3:])
    try:
        files = build(args, root=root)
    except (OSError, ValueError) as exc:
        return [f"{md}:1: its command cannot be rerun from committed files: {exc}"]
    return [p for name, text in files.items() for p in compare_text(folder / name, text)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.check:
        if args.out is None:
            parser.error("--check needs --out (the folder of the committed files)")
        problems = check(args.out)
        for line in problems:
            print(f"research_compare: check: {line}", file=sys.stderr)
        return 1 if problems else 0
    if not args.runs and args.sessions is None:
        parser.error("give run folders or --sessions")
    records: list[Record] = []
    try:
        files = build(args, records)
    except ValueError as exc:
        print(f"research_compare: {exc}", file=sys.stderr)
        return 2
    print(files["research_compare.md"], end="")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (args.out / name).write_text(text, encoding="utf-8")
        if records and any(r.suffix != ".parquet" for r in args.runs):
            records_table(records).to_parquet(args.out / RECORDS_TABLE, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
