"""What ``snapcompact-eval-table`` writes, as one function of the records as it commits them.

Why one function: the command writes ``results/`` from run folders, and ``--check``
(:mod:`evals.analysis.rederive`) re-derives the same files from what was committed
(``records.parquet``, ``passes.csv``). When these were two code paths they drifted: the check
re-derived an ungated table (the winner written where the command's gate kept the current
entry), without the table's first line or ``evidence_sessions``. Here both call
:func:`derive` then :func:`render`, and the command first reduces its inputs to exactly what it
commits (:func:`committed_records`: the per-run columns dropped, a round trip through Parquet;
:func:`committed_passes`: through CSV), so the re-derivation computes from the very frames the
command computed from, and the files come out byte for byte the same.

What is not in the records, and so is read back from the committed files by the check, is the
invocation: the options (stated in the report's rule, the reader included when one was
chosen), whether ``--apply``/``--force`` was given (the table's first line,
:func:`evals.analysis.apply_gate.proposal_banner`) and the library table it was compared with.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evals.analysis.apply_gate import (
    RowVerdict,
    format_verdicts,
    judge_changes,
    proposal_banner,
)
from evals.analysis.recall_breakdown import recall_by_depth, recall_by_round
from evals.analysis.report import build_report, code_hashes
from evals.analysis.summary import summarize
from evals.analysis.winner import Decision, choose_winners, rule_text
from evals.analysis.write_model_shapes import TableProposal, propose_table

__all__ = ["PER_RUN_COLUMNS", "READER_NOTE", "TableOptions", "TableOutputs", "committed_passes",
           "committed_records", "csv_text", "derive", "render", "source_lines", "write_outputs"]

#: Record fields that change from run to run of the same code on the same data: the checkout's
#: commit, when and how fast a row was written, and whether its answer came from the response
#: cache (a fresh clone sends what a warm checkout reads back: same answer, other ``cached``).
PER_RUN_COLUMNS = ("git_sha", "created_at", "latency_s", "cached", "attempts")

#: appended to the report's rule when ``--reader`` chose the decisions the table is written from
#: (the check reads it back: :func:`evals.analysis.rederive.report_options`)
READER_NOTE = " The model -> shape table is written from reader {reader}'s decisions only."


@dataclass(frozen=True)
class TableOptions:
    """The command's options that shape what it writes."""

    n_boot: int = 2000
    seed: int = 0
    alpha: float = 0.05
    min_questions: int = 30
    reader: str | None = None
    force: bool = False

    def rule(self) -> str:
        """The report's rule: the winner rule with these options, and the reader if chosen."""
        text = rule_text(self.n_boot, self.seed, self.alpha, self.min_questions)
        return text + (READER_NOTE.format(reader=self.reader) if self.reader else "")


@dataclass(frozen=True)
class TableOutputs:
    """Everything decided from one records table: the tables, the decisions, the table
    ``--apply`` writes (gated unless forced) and the gate's verdicts."""

    records: pd.DataFrame
    passes: pd.DataFrame
    summary: pd.DataFrame
    decisions: tuple[Decision, ...]
    verdicts: tuple[RowVerdict, ...]
    written: TableProposal

    def frames(self) -> dict[str, pd.DataFrame]:
        """The tables written as both ``.parquet`` and ``.csv``, by file stem."""
        return {"records": self.records, "summary": self.summary,
                "recall_by_round": recall_by_round(self.records),
                "recall_by_depth": recall_by_depth(self.records)}


def csv_text(frame: pd.DataFrame) -> str:
    """A committed table's CSV text (six significant digits: stable across platforms)."""
    return frame.to_csv(index=False, float_format="%.6g")


def committed_records(df: pd.DataFrame) -> tuple[pd.DataFrame, bytes]:
    """The records table as committed (per-run columns dropped) and its Parquet bytes: the frame
    is read back from those bytes, so what is computed from it is what a check computes from
    the committed file."""
    blob = df.drop(columns=[c for c in PER_RUN_COLUMNS if c in df]).to_parquet(index=False)
    return pd.read_parquet(io.BytesIO(blob)), blob


def committed_passes(text: str) -> pd.DataFrame:
    """``passes.csv``'s text read back as the check reads it (empty: no pass was stored)."""
    if not text.strip():
        return pd.DataFrame()
    try:
        return pd.read_csv(io.StringIO(text))
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


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


def derive(records: pd.DataFrame, passes: pd.DataFrame, current: str,
           options: TableOptions) -> TableOutputs:
    """Summary, winners, the proposed table and the gate's verdicts on it, from the committed
    records against the library table's text ``current``."""
    o = options
    summary = summarize(records, n_boot=o.n_boot, seed=o.seed, alpha=o.alpha)
    decisions = choose_winners(records, n_boot=o.n_boot, seed=o.seed, alpha=o.alpha,
                               min_questions=o.min_questions)
    # no date: the records' own timestamps are when they were sent, so a rerun on a later day
    # (a fresh clone) would rewrite the header for the same measurements
    provenance = f"code {code_hashes(records)}"
    proposal = propose_table(current, decisions, reader=o.reader, provenance=provenance)
    verdicts = judge_changes(proposal, decisions, min_questions=o.min_questions)
    written = proposal if o.force else _gated(current, decisions, verdicts, o.reader,
                                              provenance)
    return TableOutputs(records, passes, summary, tuple(decisions), tuple(verdicts), written)


def source_lines(records: pd.DataFrame) -> list[str]:
    """The report's lines saying what the records held, one per experiment and window (each
    path the command reads holds one: :mod:`evals.analysis.table_sources`), from the records
    themselves, so the report does not depend on the folders the runs sat in."""
    if not {"experiment", "context_window", "run_id"} <= set(records):
        return []
    out = []
    keys = records[["experiment", "context_window"]].drop_duplicates()
    for key in keys.sort_values(["experiment", "context_window"]).itertuples(index=False):
        part = records[(records["experiment"] == key.experiment)
                       & (records["context_window"] == key.context_window)]
        window = (f"at the {int(key.context_window):,}-token window"
                  if pd.notna(key.context_window) else "(no window recorded)")
        out.append(f"- experiment {key.experiment} {window}: {part['run_id'].nunique()} run(s), "
                   f"{len(part)} records")
    return out


def render(outputs: TableOutputs, options: TableOptions, *, apply: bool,
           applied: Path | None) -> dict[str, str]:
    """File name -> text of every text file the command writes beside its report (the Parquet
    twins of the ``.csv`` tables and the plots are written from :meth:`TableOutputs.frames`)."""
    o = outputs
    texts = {f"{stem}.csv": csv_text(frame) for stem, frame in o.frames().items()}
    texts["decisions.csv"] = csv_text(pd.DataFrame([d.to_row() for d in o.decisions]))
    texts["model_shapes.toml"] = proposal_banner(
        o.verdicts, apply=apply, written=applied is not None, force=options.force) + o.written.text
    texts["model_shapes.diff"] = o.written.diff()
    texts["report.md"] = build_report(
        o.records, o.summary, list(o.decisions), o.written, options.rule(), applied, o.passes,
        format_verdicts(o.verdicts, force=options.force), sources=source_lines(o.records))
    return texts


def write_outputs(out: Path, outputs: TableOutputs, texts: dict[str, str], *, plots: bool,
                  records_blob: bytes | None = None, records_csv: bool = True) -> None:
    """Write what :func:`evals.analysis.table_outputs.render` made (and the tables' Parquet
    twins and the plots) into ``out``. ``records_blob``: the records' Parquet bytes as
    committed (:func:`evals.analysis.table_outputs.committed_records`); ``records_csv=False``
    leaves ``records.csv`` out (a folder committing its records as Parquet only)."""
    out.mkdir(parents=True, exist_ok=True)
    # what differs between two runs of the same code on the same data (the checkout's commit,
    # when a row was written, how long it took) is left out of the committed table, so a
    # rerun from a fresh clone reproduces it byte for byte; run folders keep every field
    for stem, frame in outputs.frames().items():
        if stem == "records" and records_blob is not None:
            (out / "records.parquet").write_bytes(records_blob)
        else:
            frame.to_parquet(out / f"{stem}.parquet", index=False)
    for name, text in texts.items():
        if name != "records.csv" or records_csv:
            (out / name).write_text(text, encoding="utf-8")
    if plots:
        # local (cost): matplotlib and the plots, +0.92 s, load only when plots are drawn
        import matplotlib

        matplotlib.use("Agg")  # headless PNGs, whatever the environment's default
        from evals.analysis.plot import write_plots

        write_plots(outputs.summary, outputs.records, out / "plots")
