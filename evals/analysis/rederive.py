"""Every committed table, report and research comparison rebuilt from committed records.

Why: ``--check`` used to compare the README's blocks with the committed tables, so a number
changed consistently in both, or a hand edit of ``results/report.md``, passed. Here each
generated file is made again, in memory, from the per-question records committed beside it
(``records.parquet``) and compared with the committed text, line by line
(:mod:`evals.analysis.diff_lines`); nothing is written.

A results folder made by ``snapcompact-eval-table`` is found by its ``report.md`` beside a
``records.parquet``. The options it was made with are read from the report's rule text (it
states the bootstrap resamples, the seed, the interval level and the thin-evidence bar), so a
table made with ``--bootstrap 4000`` is rebuilt with 4000. Two inputs are not records: the
maintenance passes (``passes.csv``: read from the run's stored contexts, which are not
committed) are read as committed, and the date in the ``measured`` provenance (the newest
record's ``created_at``, a per-run column the committed table leaves out) is taken from the
committed ``model_shapes.toml``. The research comparison reruns the command its markdown names
(:func:`evals.analysis.research_compare.check`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from evals.analysis.apply_gate import format_verdicts, judge_changes
from evals.analysis.diff_lines import compare_text
from evals.analysis.recall_breakdown import recall_by_depth, recall_by_round
from evals.analysis.report import build_report, code_hashes
from evals.analysis.research_compare import check as check_research
from evals.analysis.summary import summarize
from evals.analysis.winner import choose_winners, rule_text
from evals.analysis.write_model_shapes import library_table_path, propose_table

__all__ = ["TABLE_FOLDERS", "check_all", "check_table_folder", "report_options"]

#: the folders ``snapcompact-eval-table`` wrote (records.parquet + report.md), and the
#: research comparisons (research_compare.md), relative to the checkout
TABLE_FOLDERS = ("results", "results/shapetable")
RESEARCH_FOLDERS = ("results/research",)


def report_options(report: str) -> dict[str, float | int]:
    """``n_boot``, ``seed``, ``alpha``, ``min_questions`` as the report's rule states them."""
    boot = re.search(r"(\d+) resamples, seed (\d+)", report)
    conf = re.search(r"two-sided (\d+(?:\.\d+)?)% interval", report)
    thin = re.search(r"rests on fewer than (\d+) questions", report)
    if not (boot and conf and thin):
        raise ValueError("its rule text does not state the bootstrap, seed, level and bar")
    return {"n_boot": int(boot.group(1)), "seed": int(boot.group(2)),
            "alpha": round(1 - float(conf.group(1)) / 100, 10),
            "min_questions": int(thin.group(1))}


def _csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.6g")


def rebuild_table_folder(folder: Path, table_path: Path | None = None) -> dict[str, str]:
    """File name -> the text ``snapcompact-eval-table`` writes there, from the committed
    ``records.parquet`` (and ``passes.csv``); nothing is written."""
    report = (folder / "report.md").read_text(encoding="utf-8")
    opts = report_options(report)
    n_boot, seed, alpha = int(opts["n_boot"]), int(opts["seed"]), float(opts["alpha"])
    min_q = int(opts["min_questions"])
    df = pd.read_parquet(folder / "records.parquet")
    current = (table_path or library_table_path()).read_text()
    summary = summarize(df, n_boot=n_boot, seed=seed, alpha=alpha)
    decisions = choose_winners(df, n_boot=n_boot, seed=seed, alpha=alpha, min_questions=min_q)
    committed = (folder / "model_shapes.toml").read_text(encoding="utf-8") \
        if (folder / "model_shapes.toml").is_file() else ""
    date = re.search(r"records up to (\S+?),", committed)
    provenance = (f"snapcompact-eval-table, records up to "
                  f"{date.group(1) if date else 'date not recorded'}, code {code_hashes(df)}")
    proposal = propose_table(current, decisions, reader=None, provenance=provenance)
    passes = pd.read_csv(folder / "passes.csv") if (folder / "passes.csv").is_file() \
        else pd.DataFrame()
    verdicts = judge_changes(proposal, decisions, min_questions=min_q)
    out = {"summary.csv": _csv(summary), "recall_by_round.csv": _csv(recall_by_round(df)),
           "recall_by_depth.csv": _csv(recall_by_depth(df)),
           "decisions.csv": _csv(pd.DataFrame([d.to_row() for d in decisions])),
           "model_shapes.toml": proposal.text, "model_shapes.diff": proposal.diff(),
           "report.md": build_report(df, summary, decisions, proposal,
                                     rule_text(n_boot, seed, alpha, min_q), None, passes,
                                     format_verdicts(verdicts, force=False))}
    if (folder / "records.csv").is_file():
        out["records.csv"] = _csv(df)
    return out


def check_table_folder(folder: Path, table_path: Path | None = None) -> list[str]:
    """One line per difference between ``folder``'s committed files and their rebuild."""
    try:
        files = rebuild_table_folder(folder, table_path)
    except (OSError, ValueError, KeyError) as exc:
        return [f"{folder}: cannot be re-derived from its committed records: {exc}"]
    return [p for name, text in files.items() for p in compare_text(folder / name, text)]


def check_all(root: Path) -> list[str]:
    """Every results folder and research comparison under ``root``, re-derived."""
    problems: list[str] = []
    table = root / "snapcompact" / "pricing" / "model_shapes.toml"
    for rel in TABLE_FOLDERS:
        if (root / rel / "report.md").is_file():
            problems += check_table_folder(root / rel, table if table.is_file() else None)
    for rel in RESEARCH_FOLDERS:
        if (root / rel / "research_compare.md").is_file():
            problems += check_research(root / rel, root)
    prefix = f"{root}/"
    return [p.removeprefix(prefix) for p in problems]
