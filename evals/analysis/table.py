"""``snapcompact-eval-table``: records of many runs -> tables, plots, the model -> shape table.

Why one command: the decision (which shape each model line gets) and the evidence behind it
(tables, intervals, figures, the diff against the library's current table) should come out of
the same invocation, so what is committed under ``results/`` always agrees with itself.

    snapcompact-eval-table RUN [RUN ...] --dry-run            # the rows that would change and
                                                              # the diff; writes nothing at all
    snapcompact-eval-table RUN [RUN ...] --out results        # tables, plots, report, diff
    snapcompact-eval-table RUN [RUN ...] --out results --apply  # ... and write the rows the
                                                              # evidence supports (apply_gate)

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
from evals.analysis.apply_gate import (
    RowVerdict,
    format_verdicts,
    judge_changes,
    proposal_banner,
)
from evals.analysis.docs_blocks import check_docs, write_docs
from evals.analysis.outcomes import stated_probes
from evals.analysis.recall_breakdown import recall_by_depth, recall_by_round
from evals.analysis.report import build_report, code_hashes
from evals.analysis.summary import summarize
from evals.analysis.table_sources import RunSource, read_sources, sources_lines
from evals.analysis.winner import Decision, choose_winners, rule_text
from evals.analysis.write_model_shapes import (
    TableProposal,
    apply_table,
    library_table_path,
    propose_table,
)
from evals.replay.passes import load_passes, passes_frame
from snapcompact.pricing import parse_shape_rules

#: Record fields that change from run to run of the same code on the same data: the checkout's
#: commit, when and how fast a row was written, and whether its answer came from the response
#: cache (a fresh clone sends what a warm checkout reads back: same answer, other ``cached``).
PER_RUN_COLUMNS = ("git_sha", "created_at", "latency_s", "cached", "attempts")
#: The committed records table's row order: a measurement's identity, not the order the
#: concurrent requests happened to finish in.
RECORD_ORDER = ("experiment", "dataset", "seed", "item_id", "target_model", "strategy", "policy",
                "shape_requested", "context_window", "research", "shape", "frame_size",
                "reader", "model", "question_id")


def _write_table(frame: pd.DataFrame, out: Path, stem: str) -> None:
    frame.to_parquet(out / f"{stem}.parquet", index=False)
    frame.to_csv(out / f"{stem}.csv", index=False, float_format="%.6g")


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


def _gated(current: str, decisions: Sequence[Decision], verdicts: Sequence[RowVerdict],
           reader: str | None, provenance: str) -> TableProposal:
    """The table ``--apply`` writes: accepted rows; rows refused by the gate keep their entry
    with the new evidence saying why; rows whose evidence is stronger are left as they are."""
    refused = {(v.change.line, v.change.reader_id): v for v in verdicts if not v.accepted}
    return propose_table(
        current, [d for d in decisions if (d.line, d.reader_id) not in refused],
        reader=reader, provenance=provenance,
        kept=[(d, "; ".join(refused[(d.line, d.reader_id)].refused)) for d in decisions
              if (d.line, d.reader_id) in refused and not refused[(d.line, d.reader_id)].weaker])


def _write_outputs(out: Path, df: pd.DataFrame, summary: pd.DataFrame, passes: pd.DataFrame,
                   decisions: Sequence[Decision], plots: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # what differs between two runs of the same code on the same data (the checkout's commit,
    # when a row was written, how long it took) is left out of the committed table, so a
    # rerun from a fresh clone reproduces it byte for byte; run folders keep every field
    _write_table(df.drop(columns=[c for c in PER_RUN_COLUMNS if c in df]), out, "records")
    _write_table(summary, out, "summary")
    _write_table(recall_by_round(df), out, "recall_by_round")
    _write_table(recall_by_depth(df), out, "recall_by_depth")
    passes.to_csv(out / "passes.csv", index=False)
    decision_frame = pd.DataFrame([d.to_row() for d in decisions])
    decision_frame.to_csv(out / "decisions.csv", index=False, float_format="%.6g")
    if plots:
        # local (cost): matplotlib and the plots, +0.92 s, load only when plots are drawn
        import matplotlib

        matplotlib.use("Agg")  # headless PNGs, whatever the environment's default
        from evals.analysis.plot import write_plots

        write_plots(summary, df, out / "plots")


def make_tables(paths: Sequence[str | Path], out: str | Path = "results", apply: bool = False,
           n_boot: int = 2000, seed: int = 0, alpha: float = 0.05, min_questions: int = 30,
           reader: str | None = None, table_path: str | Path | None = None,
           plots: bool = True, force: bool = False, dry_run: bool = False) -> TableRun:
    """Everything the command does. ``dry_run`` writes nothing at all (no table, no --out
    file); ``apply`` writes the rows :mod:`evals.analysis.apply_gate` accepts into the library
    table (``force``: every proposed row)."""
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
    summary = summarize(df, n_boot=n_boot, seed=seed, alpha=alpha)
    decisions = choose_winners(df, n_boot=n_boot, seed=seed, alpha=alpha,
                               min_questions=min_questions)
    # no date: the records' own timestamps are when they were sent, so a rerun on a later day
    # (a fresh clone) would rewrite the header for the same measurements
    provenance = f"code {code_hashes(df)}"
    proposal = propose_table(current, decisions, reader=reader, provenance=provenance)
    verdicts = judge_changes(proposal, decisions, min_questions=min_questions)
    written = proposal if force else _gated(current, decisions, verdicts, reader, provenance)
    labelled = df.assign(arm_label=arm_labels(df))
    passes = passes_frame(labelled, load_passes(paths, df["context_hash"]))
    if len(passes):  # in a stable order: the run's contexts finish in no fixed order
        passes = passes.sort_values(
            [c for c in ("context_window", "arm_label", "item_id", "pass_index") if c in passes],
            kind="stable", ignore_index=True)
    applied = None
    if apply and written.text != current:  # changed rows, or kept ones now saying why
        applied = apply_table(written, table_path)
    report = build_report(df, summary, decisions, written,
                          rule_text(n_boot, seed, alpha, min_questions), applied, passes,
                          format_verdicts(verdicts, force=force), sources=sources_lines(sources))
    if not dry_run:
        _write_outputs(out, df, summary, passes, decisions, plots)
        (out / "model_shapes.toml").write_text(
            proposal_banner(verdicts, apply=apply, written=applied is not None, force=force)
            + written.text)
        (out / "model_shapes.diff").write_text(written.diff())
        (out / "report.md").write_text(report)
    return TableRun(report, tuple(verdicts), written, sources, applied)


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


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block); ``-h`` still prints the usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
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


__all__ = ["GROUP_COLUMNS", "TableRun", "build_report", "main", "make_tables", "run"]
