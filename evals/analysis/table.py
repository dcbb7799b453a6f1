"""``snapcompact-eval-table``: records of many runs -> tables, plots, the model -> shape table.

Why one command: the decision (which shape each model line gets) and the evidence behind it
(tables, intervals, figures, the diff against the library's current table) should come out of
the same invocation, so what is committed under ``results/`` always agrees with itself.

    snapcompact-eval-table RUN [RUN ...] --dry-run            # the rows that would change and
                                                              # the diff; writes nothing at all
    snapcompact-eval-table RUN [RUN ...] --out results        # tables, plots, report, diff
    snapcompact-eval-table RUN [RUN ...] --out results --apply  # ... and write the rows the
                                                              # evidence supports (apply_gate)
    snapcompact-eval-table --check       # re-derive every committed file; writes nothing
    snapcompact-eval-table --rederive    # rewrite results/, results/shapetable/ and
                                         # results/outcomes/ from their committed records,
                                         # as --check re-derives them

Records are found by walking the given files and directories
(``evals.store.records.find_record_files``); nothing is read from their names. Each path holds
one experiment at one window (:mod:`evals.analysis.table_sources`): runs to combine are named
one path each, and the command says what each held.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evals.analysis.aggregate import GROUP_COLUMNS, arm_labels, records_frame
from evals.analysis.apply_gate import RowVerdict, format_verdicts
from evals.analysis.docs_blocks import check_docs, write_docs
from evals.analysis.outcomes import stated_probes
from evals.analysis.report import build_report
from evals.analysis.table_outputs import (
    PER_RUN_COLUMNS,
    TableOptions,
    committed_passes,
    committed_records,
    derive,
    render,
    write_outputs,
)
from evals.analysis.table_sources import RunSource, read_sources
from evals.analysis.write_model_shapes import TableProposal, apply_table, library_table_path
from evals.replay.passes import load_passes, passes_frame
from snapcompact.pricing import parse_shape_rules

#: The committed records table's row order: a measurement's identity, not the order the
#: concurrent requests happened to finish in.
RECORD_ORDER = ("experiment", "dataset", "seed", "item_id", "target_model", "strategy", "policy",
                "shape_requested", "context_window", "research", "shape", "frame_size",
                "reader", "model", "question_id")

#: Exit status of ``--apply`` when a proposed row was refused and kept (see apply_gate).
EXIT_REFUSED = 3


@dataclass(frozen=True)
class TableRun:
    """What one invocation decided: the report, the verdicts, the table it would write (or
    wrote) and the runs it read."""

    report: str
    verdicts: tuple[RowVerdict, ...]
    written: TableProposal
    sources: tuple[RunSource, ...]
    applied: Path | None


def _passes_csv(paths: Sequence[str | Path], df: pd.DataFrame) -> str:
    """``passes.csv``'s text: every maintenance pass of the runs' stored contexts, in a stable
    order (the run's contexts finish in no fixed order)."""
    labelled = df.assign(arm_label=arm_labels(df))
    passes = passes_frame(labelled, load_passes(paths, df["context_hash"]))
    if len(passes):
        passes = passes.sort_values(
            [c for c in ("context_window", "arm_label", "item_id", "pass_index") if c in passes],
            kind="stable", ignore_index=True)
    return passes.to_csv(index=False)


def make_tables(paths: Sequence[str | Path], out: str | Path = "results", apply: bool = False,
           n_boot: int = 2000, seed: int = 0, alpha: float = 0.05, min_questions: int = 30,
           reader: str | None = None, table_path: str | Path | None = None,
           plots: bool = True, force: bool = False, dry_run: bool = False) -> TableRun:
    """Everything the command does. ``dry_run`` writes nothing at all (no table, no --out
    file); ``apply`` writes the rows :mod:`evals.analysis.apply_gate` accepts into the library
    table (``force``: every proposed row). What is written is computed from the records and
    passes as committed (:mod:`evals.analysis.table_outputs`), the way ``--check`` re-derives
    it."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is a file, not a folder")
    table_path = Path(table_path) if table_path else library_table_path()
    current = table_path.read_text()
    records, sources = read_sources(paths)
    # rows in measurement order, not in the order concurrent requests finished: every table
    # (and every float sum behind it) is then the same for a warm rerun and a fresh clone
    # recall counts the stated probes only (never-stated ones: results/outcomes, outcomes.py)
    df = stated_probes(records_frame(records, parse_shape_rules(current)))
    order = [c for c in RECORD_ORDER if c in df]
    if order:
        df = df.sort_values(order, kind="mergesort", na_position="first", ignore_index=True)
    committed, blob = committed_records(df)
    passes_text = _passes_csv(paths, df)
    options = TableOptions(n_boot=n_boot, seed=seed, alpha=alpha, min_questions=min_questions,
                           reader=reader, force=force)
    outputs = derive(committed, committed_passes(passes_text), current, options)
    applied = None
    if apply and outputs.written.text != current:  # changed rows, or kept ones saying why
        applied = apply_table(outputs.written, table_path)
    texts = render(outputs, options, apply=apply, applied=applied)
    if not dry_run:
        write_outputs(out, outputs, {**texts, "passes.csv": passes_text}, plots=plots,
                      records_blob=blob)
    return TableRun(texts["report.md"], outputs.verdicts, outputs.written, sources, applied)


def run(paths: Sequence[str | Path], out: str | Path = "results", apply: bool = False,
        n_boot: int = 2000, seed: int = 0, alpha: float = 0.05, min_questions: int = 30,
        reader: str | None = None, table_path: str | Path | None = None,
        plots: bool = True, force: bool = False, verdicts_out: list | None = None,
        dry_run: bool = False) -> str:
    """:func:`make_tables`, returning the report (verdicts appended to ``verdicts_out``)."""
    result = make_tables(paths, out=out, apply=apply, n_boot=n_boot, seed=seed, alpha=alpha,
                    min_questions=min_questions, reader=reader, table_path=table_path,
                    plots=plots, force=force, dry_run=dry_run)
    if verdicts_out is not None:
        verdicts_out.extend(result.verdicts)
    return result.report


def _docs(root: Path, *, check: bool, write: bool) -> int:
    """``--write-docs`` then (or only) ``--check``: see :mod:`evals.analysis.docs_blocks`."""
    try:
        if write:
            changed = write_docs(root)
            print(f"snapcompact-eval-table: generated blocks rewritten: "
                  f"{', '.join(changed) or 'none changed'}")
        problems = check_docs(root) if check else []
    except (OSError, ValueError) as exc:
        print(f"snapcompact-eval-table: error: {exc}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"snapcompact-eval-table: check: {line}", file=sys.stderr)
    if check and not problems:
        print("snapcompact-eval-table: check: every generated file re-derives from its committed "
              "records, every generated block matches its source and no figure is typed "
              "outside one")
    return 1 if problems else 0


def _rederive(root: Path, *, plots: bool) -> int:
    """``--rederive``: see :func:`evals.analysis.rederive.rewrite_all`."""
    # local (cost): rederive loads the research comparison; only --rederive needs it here
    from evals.analysis.rederive import rewrite_all

    try:
        changed = rewrite_all(root, plots=plots)
    except (OSError, ValueError, KeyError) as exc:
        print(f"snapcompact-eval-table: error: {exc}", file=sys.stderr)
        return 2
    print(f"snapcompact-eval-table: rederived from committed records: "
          f"{', '.join(changed) or 'no file changed'}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block); ``-h`` still prints the usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> _Parser:
    parser = _Parser(
        prog="snapcompact-eval-table",
        description="Aggregate eval records into recall-per-token tables, plots and the "
                    "model -> shape table.")
    parser.add_argument("results", nargs="*", help="records files or directories (searched "
                        "recursively for records.jsonl)")
    parser.add_argument("--write-docs", action="store_true",
                        help="rewrite the generated blocks of README.md from the committed "
                             "tables under results/ (evals.analysis.docs_blocks)")
    parser.add_argument("--check", action="store_true",
                        help="fail (exit 1) when a generated file under results/ no longer "
                             "re-derives from its committed records, a generated block of "
                             "README.md is stale, or a figure in README, docs/, results/ or "
                             "configs/ comments is neither generated, quoted from a committed "
                             "file nor given its command (evals.analysis.rederive, "
                             "evals.analysis.docs_blocks); writes nothing")
    parser.add_argument("--rederive", action="store_true",
                        help="rewrite every results folder the command wrote (results/, "
                             "results/shapetable/) and the outcome tables (results/outcomes/) "
                             "from their committed records, exactly as "
                             "--check re-derives it (tables, report, table and diff, plots "
                             "unless --no-plots): regenerates them after the analysis code "
                             "changed when the runs are not at hand (evals.analysis.rederive)")
    parser.add_argument("--root", default=".", help="the checkout holding README.md and "
                        "results/ (for --write-docs / --check; default: the current folder)")
    parser.add_argument("--out", default="results", help="output directory (default: results)")
    parser.add_argument("--apply", action="store_true",
                        help="write the rows of the regenerated model -> shape table that the "
                             "evidence supports into the library (refused rows keep the "
                             f"current entry; exit status {EXIT_REFUSED} when any was refused)")
    parser.add_argument("--force", action="store_true",
                        help="with --apply: write every proposed row, refused or not")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the report, the rows that would change and the diff; "
                             "write nothing (neither the library table nor --out)")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="two-sided level: intervals are (1 - alpha)")
    parser.add_argument("--min-questions", type=int, default=30,
                        help="fewer questions behind a winner is called thin evidence")
    parser.add_argument("--reader", default=None,
                        help="write the table from this reader's decisions only (e.g. snapocr)")
    parser.add_argument("--table", default=None,
                        help="model -> shape table to compare with and apply to "
                             "(default: the library's snapcompact/pricing/model_shapes.toml)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.rederive:
        return _rederive(Path(args.root), plots=not args.no_plots)
    if args.check or args.write_docs:
        return _docs(Path(args.root), check=args.check, write=args.write_docs)
    if not args.results:
        parser.error("give records files or directories (or --check / --write-docs)")
    if args.force and not args.apply:
        parser.error("--force only goes with --apply")
    if args.dry_run and args.apply:
        parser.error("--dry-run writes nothing: drop --apply (or --dry-run)")
    try:
        result = make_tables(args.results, out=args.out, apply=args.apply,
                             n_boot=args.bootstrap, seed=args.seed, alpha=args.alpha,
                             min_questions=args.min_questions, reader=args.reader,
                             table_path=args.table, plots=not args.no_plots, force=args.force,
                             dry_run=args.dry_run)
    except (ValueError, OSError, KeyError) as exc:
        if isinstance(exc, OSError) and exc.strerror:
            message = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
        else:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        print(f"snapcompact-eval-table: error: {message}", file=sys.stderr)
        return 2
    sys.stdout.write(result.report)
    for source in result.sources:
        sys.stderr.write(f"snapcompact-eval-table: read {source.path}: {source.describe()}\n")
    if args.apply or args.dry_run:
        # the decision, where it is read even when the report goes to a file
        sys.stderr.write(format_verdicts(result.verdicts, force=args.force) + "\n")
        if args.dry_run:
            sys.stderr.write(result.written.diff() or "(no change)\n")
            sys.stderr.write("snapcompact-eval-table: dry run: nothing written\n")
        elif args.force and any(not v.accepted for v in result.verdicts):
            sys.stderr.write("snapcompact-eval-table: --force: refused rows written anyway\n")
    if args.apply and not args.force and any(not v.accepted for v in result.verdicts):
        return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["GROUP_COLUMNS", "PER_RUN_COLUMNS", "TableRun", "build_report", "main", "make_tables",
           "run"]
