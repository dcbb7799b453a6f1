"""Every committed table, report and research comparison rebuilt from committed records.

Why: ``--check`` used to compare the README's blocks with the committed tables, so a number
changed consistently in both, or a hand edit of ``results/report.md``, passed. Here each
generated file is made again, in memory, from the per-question records committed beside it
(``records.parquet``) and compared with the committed text, line by line
(:mod:`evals.analysis.diff_lines`); nothing is written. It is made by the very functions the
table command writes with (:func:`evals.analysis.table_outputs.derive` and ``render``), so the
two cannot drift: what ``snapcompact-eval-table RUNS --out DIR`` writes is what this re-derives.

A results folder made by ``snapcompact-eval-table`` is found by its ``report.md`` beside a
``records.parquet``. The invocation is read from the committed files, since it is not in the
records: the options from the report's rule text (bootstrap resamples, seed, interval level,
thin-evidence bar, and the reader when ``--reader`` chose one), ``--apply``/``--force`` from the
first line of its ``model_shapes.toml``. The maintenance passes (``passes.csv``: read from the
run's stored contexts, which are not committed) are an input, read as committed. The research
comparison reruns the command its markdown names (:func:`evals.analysis.research_compare.check`).
The "where frames pay" table (``results/frame_pay/``) is made again from the main job's
generated sessions, which its dataset config makes at its seed
(:func:`evals.analysis.frame_pay.rebuild_frame_pay`, about 20 s: every content type drawn).

:func:`rewrite_table_folder` writes the rebuild (``snapcompact-eval-table --rederive``): the
way to regenerate a folder whose runs are not at hand after the analysis code changed; the
outcome tables (``results/outcomes/``) are rewritten the same way from their own committed
``records.parquet`` (:func:`rewrite_outcomes`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from evals.analysis.diff_lines import compare_text
from evals.analysis.research_compare import check as check_research
from evals.analysis.table_outputs import (
    TableOptions,
    TableOutputs,
    committed_passes,
    derive,
    render,
    write_outputs,
)
from evals.analysis.write_model_shapes import library_table_path

if TYPE_CHECKING:
    from evals.analysis.study.plan import StudyPlan

__all__ = ["TABLE_FOLDERS", "check_all", "check_frame_pay", "check_outcomes",
           "check_study_plans", "check_study_reports", "check_table_folder",
           "rebuild_table_folder", "report_options", "rewrite_all", "rewrite_outcomes",
           "rewrite_table_folder", "study_record_folders"]

#: the folders ``snapcompact-eval-table`` wrote (records.parquet + report.md), and the
#: research comparisons (research_compare.md), relative to the checkout
TABLE_FOLDERS = ("results", "results/shapetable")
RESEARCH_FOLDERS = ("results/research",)
#: the outcome tables (correct / abstained / wrong by probe kind, told vs blind reader)
OUTCOME_FOLDERS = ("results/outcomes",)
#: where frames pay on the main job's sessions (characters per billed token, text vs frames)
FRAME_PAY_FOLDERS = ("results/frame_pay",)
#: inputs of the rebuild, not outputs: compared with nothing, never rewritten
INPUTS = ("records.parquet", "passes.csv")


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


def _invocation(folder: Path) -> tuple[TableOptions, bool]:
    """The options and ``--apply`` the folder's files were written with."""
    report = (folder / "report.md").read_text(encoding="utf-8")
    opts = report_options(report)
    reader = re.search(r"written from reader (\S+)'s decisions only", report)
    table = folder / "model_shapes.toml"
    first = table.read_text(encoding="utf-8").split("\n", 1)[0] if table.is_file() else ""
    if first.startswith("# APPLIED"):
        # the library table now holds what was written: the table it was compared with is gone
        raise ValueError("its model_shapes.toml was applied to the library table, so the table "
                         "it was compared with is no longer there: rerun the table command")
    return (TableOptions(n_boot=int(opts["n_boot"]), seed=int(opts["seed"]),
                         alpha=float(opts["alpha"]), min_questions=int(opts["min_questions"]),
                         reader=reader.group(1) if reader else None,
                         force="--force" in first),
            first.startswith("# snapcompact-eval-table --apply"))


def rebuild_table_folder(folder: Path, table_path: Path | None = None
                         ) -> tuple[TableOutputs, dict[str, str]]:
    """What ``snapcompact-eval-table`` writes into ``folder`` (file name -> text) and the
    outputs behind it, from the committed ``records.parquet`` and ``passes.csv``; nothing is
    written."""
    options, apply = _invocation(folder)
    records = pd.read_parquet(folder / "records.parquet")
    passes_file = folder / "passes.csv"
    passes = committed_passes(passes_file.read_text(encoding="utf-8")
                              if passes_file.is_file() else "")
    current = (table_path or library_table_path()).read_text()
    outputs = derive(records, passes, current, options)
    return outputs, render(outputs, options, apply=apply, applied=None)


def _committed_names(folder: Path, texts: dict[str, str]) -> list[str]:
    """The files compared: every text the command writes, ``records.csv`` only where the
    folder commits it (``results/shapetable`` keeps its records as Parquet only)."""
    return [n for n in texts if n != "records.csv" or (folder / n).is_file()]


def check_table_folder(folder: Path, table_path: Path | None = None) -> list[str]:
    """One line per difference between ``folder``'s committed files and their rebuild."""
    try:
        _, texts = rebuild_table_folder(folder, table_path)
    except (OSError, ValueError, KeyError) as exc:
        return [f"{folder}: cannot be re-derived from its committed records: {exc}"]
    return [p for name in _committed_names(folder, texts)
            for p in compare_text(folder / name, texts[name])]


def rewrite_table_folder(folder: Path, table_path: Path | None = None, *,
                         plots: bool = True) -> list[str]:
    """Write the rebuild into ``folder`` (its tables, their Parquet twins, the report, the
    table and diff, the plots); its inputs stay as committed. Returns the files whose bytes
    changed."""
    outputs, texts = rebuild_table_folder(folder, table_path)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    write_outputs(folder, outputs, {n: texts[n] for n in _committed_names(folder, texts)},
                  plots=plots, records_blob=(folder / "records.parquet").read_bytes())
    return sorted(str(p) for p in folder.rglob("*")
                  if p.is_file() and before.get(p) != p.read_bytes())


def check_all(root: Path) -> list[str]:
    """Every results folder and research comparison under ``root``, re-derived."""
    problems: list[str] = []
    for rel in TABLE_FOLDERS:
        if (root / rel / "report.md").is_file():
            problems += check_table_folder(root / rel, _library(root))
    for rel in RESEARCH_FOLDERS:
        if (root / rel / "research_compare.md").is_file():
            problems += check_research(root / rel, root)
    for rel in OUTCOME_FOLDERS:
        if (root / rel / "outcomes.md").is_file():
            problems += check_outcomes(root / rel)
    for rel in FRAME_PAY_FOLDERS:
        if (root / rel / "frame_pay.md").is_file():
            problems += check_frame_pay(root / rel)
    problems += check_study_plans(root)
    problems += check_study_reports(root)
    prefix = f"{root}/"
    return [p.removeprefix(prefix) for p in problems]


def check_outcomes(folder: Path) -> list[str]:
    """One line per difference between ``folder``'s outcome files and their rebuild from its
    committed ``records.parquet`` (:func:`evals.analysis.outcomes.rebuild_outcomes`)."""
    from evals.analysis.outcomes import rebuild_outcomes

    try:
        texts = rebuild_outcomes(folder)
    except (OSError, ValueError, KeyError) as exc:
        return [f"{folder}: cannot be re-derived from its committed records: {exc}"]
    return [p for name, text in sorted(texts.items()) for p in compare_text(folder / name, text)]


def check_study_plans(root: Path) -> list[str]:
    """Every pre-registered study plan (``configs/study/*.yaml``): its power analysis
    re-derived from its committed pilot, and git's word that it preceded its records
    (:func:`evals.analysis.study.cli.verify_plan`). A copy without git history (an unpacked archive)
    cannot say; there only the power analysis is checked (CI's git checkout checks both)."""
    from evals.analysis.study.cli import verify_plan
    from evals.analysis.study.plan import PlanError, load_plan
    from evals.analysis.study.power import power_analysis

    plans = sorted((root / "configs" / "study").glob("*.yaml"))
    has_git = subprocess.run(["git", "-C", str(root), "rev-parse", "--git-dir"],
                             capture_output=True, check=False).returncode == 0
    problems: list[str] = []
    for path in plans:
        try:
            plan = load_plan(path)
            problems += (verify_plan(plan, root) if has_git else
                         [f"{path}: {d}" for d in power_analysis(plan, root).differences(plan)])
        except (PlanError, OSError, ValueError) as exc:
            problems.append(f"{path}: {exc}")
    return problems


def study_record_folders(root: Path) -> list[tuple[StudyPlan, Path]]:
    """Each study plan under ``root`` (``configs/study/*.yaml``) whose records are committed,
    with their folder (``results/study/NAME``): the studies :func:`check_study_reports`
    re-derives. A plan that does not load is left to :func:`check_study_plans`."""
    from evals.analysis.study.cli import records_dir
    from evals.analysis.study.plan import PlanError, load_plan

    out = []
    for path in sorted((root / "configs" / "study").glob("*.yaml")):
        try:
            plan = load_plan(path)
        except PlanError:
            continue
        folder = root / records_dir(plan)
        if (folder / "records.parquet").is_file():
            out.append((plan, folder))
    return out


def check_study_reports(root: Path) -> list[str]:
    """Every study whose records are committed (:func:`study_record_folders`): its report
    files made again from those records by the plan's analysis
    (:func:`evals.analysis.study.report.rebuild_report`) and compared line by line."""
    from evals.analysis.study.report import rebuild_report

    problems: list[str] = []
    for plan, folder in study_record_folders(root):
        try:
            texts = rebuild_report(folder, plan)
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f"{folder}: cannot be re-derived from its committed records: {exc}")
            continue
        problems += [p for name, text in sorted(texts.items())
                     for p in compare_text(folder / name, text)]
    return problems


def check_frame_pay(folder: Path) -> list[str]:
    """One line per difference between ``folder``'s ``frame_pay.md`` / ``.csv`` and their
    rebuild from the main job's generated sessions (the figure is not compared: its pixels
    depend on matplotlib's version)."""
    from evals.analysis.frame_pay import rebuild_frame_pay

    try:
        texts = rebuild_frame_pay()
    except (OSError, ValueError, KeyError) as exc:
        return [f"{folder}: cannot be re-derived from the main job's sessions: {exc}"]
    return [p for name, text in sorted(texts.items()) for p in compare_text(folder / name, text)]


def _library(root: Path) -> Path | None:
    table = root / "snapcompact" / "pricing" / "model_shapes.toml"
    return table if table.is_file() else None


def rewrite_all(root: Path, *, plots: bool = True) -> list[str]:
    """Every results folder under ``root`` rewritten from its committed records
    (:func:`rewrite_table_folder`); the files that changed, relative to ``root``."""
    changed: list[str] = []
    for rel in TABLE_FOLDERS:
        if (root / rel / "report.md").is_file():
            changed += rewrite_table_folder(root / rel, _library(root), plots=plots)
    for rel in OUTCOME_FOLDERS:
        if (root / rel / "outcomes.md").is_file():
            changed += rewrite_outcomes(root / rel)
    return [c.removeprefix(f"{root}/") for c in changed]


def rewrite_outcomes(folder: Path) -> list[str]:
    """Write the outcome files of ``folder`` again from its committed ``records.parquet``, as
    :func:`check_outcomes` re-derives them (the records stay as committed). Returns the files
    whose bytes changed."""
    from evals.analysis.outcomes import rebuild_outcomes

    changed = []
    for name, text in sorted(rebuild_outcomes(folder).items()):
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(str(path))
    return changed
