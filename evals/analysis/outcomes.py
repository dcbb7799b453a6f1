"""Three outcomes, reported apart: correct / abstained / wrong, per reader, arm and probe kind.

Why apart: "recall" folds a confident wrong value and an honest "I don't know" into one miss,
yet for a coding agent the first is the dangerous one. Every table here splits them, with
session-level intervals (``evals.analysis.session_bootstrap``: the questions of one session move
together), and gives two columns of their own:

- **silent wrong**: a wrong value for a stated probe (``exact`` or ``gist``), whose truth was in
  the original session (``evals.items.probes.is_silent_wrong``);
- **confabulated**: a never-stated probe answered with a value.

The told reader (the legibility floor) and the blind reader (``reader=blind``) sit side by side,
overall and by depth bin, session length bin, where the evidence was (kept tail or
discarded) and the content type of the message it sits in (prose or tool output:
:data:`CONTENT_OF_PLACE`, the types of ``evals.analysis.frame_pay``), the content type split by
where the evidence was (:data:`BIN_TABLES`). Every bin table is per arm and per production
verdict (a context production would not send is never pooled with a ranked one), each row with
its ``n``, its counts and its recall with a Wilson interval (:func:`recall_by`). A row recorded
before probe kinds existed reads as ``exact (old default)``; one without a reader label
(``extra["reader_label"]``) reads its reader from its model id.

Each arm's rows are split by production's verdict (``valid``: ranked; ``bound``, ``stand-in``,
``not sent``: never ranked), as the main table splits them. A real model's answers are billed to
the arm: its output tokens (``reported_completion_tokens``, reasoning included) and reasoning
tokens (``reported_reasoning_tokens``) per question and per session; the offline readers bill
none (their "usage" is an echo), so their cells read ``-``.

Run it as ``python -m evals.analysis.outcomes RESULTS... --out DIR`` (``outcomes.md``, one CSV
per table and the records they were made from, ``records.parquet``, so ``--check`` can make them
again: :func:`rebuild_outcomes`), or call :func:`outcome_tables` on a records frame
(``evals.analysis.aggregate.records_frame``). ``make run`` writes ``results/outcomes/`` from the
main job's told and blind runs.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from evals.analysis.aggregate import arm_labels, production_status, records_frame
from evals.analysis.intervals import wilson_interval
from evals.analysis.session_bootstrap import session_mean
from evals.blind.provider import BLIND_LABEL, TOLD_LABEL
from evals.blind.provider import PROVIDER as BLIND_PROVIDER
from evals.items.probes import (
    ABSTAINED,
    CORRECT,
    NEVER_STATED,
    OUTCOMES,
    WRONG,
    is_confabulation,
    is_silent_wrong,
    probe_label,
    probe_of,
)
from evals.store.records import load_records

DEPTH_EDGES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Session length bins by billed-text estimate (4 characters a token), in characters.
LENGTH_EDGES = (0, 100_000, 400_000, 1_600_000, math.inf)
LENGTH_NAMES = ("<25k tok", "25-100k tok", "100-400k tok", ">400k tok")
#: The content type of the message a question's evidence sits in, from its ``place``, in the
#: types of ``evals.analysis.frame_pay`` (recall by content type beside where frames pay): the
#: generated sessions' tool-result facts sit in a shell command's output (``cat notes/...``).
CONTENT_OF_PLACE = {"user": "prose", "assistant": "prose", "tool_result": "logs"}


def _reader_of(label: object, model: str) -> str:
    if isinstance(label, str) and label:
        return label
    prefix = model.split("/", 1)[0]
    return {"snapocr": TOLD_LABEL, BLIND_PROVIDER: BLIND_LABEL}.get(prefix, "model")


def _meta(cell: object) -> dict:
    if isinstance(cell, str):
        return json.loads(cell) if cell else {}
    return dict(cell) if isinstance(cell, dict) else {}


def _bin(value: float, edges: Sequence[float], names: Sequence[str] | None = None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unknown"
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        if lo <= value < hi or (i == len(edges) - 2 and value == hi):
            return names[i] if names else f"{lo:g}-{hi:g}"
    return "unknown"


def stated_probes(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that measure recall: every question but the never-stated probes, whose right
    reply is an abstention (the told reader is told there is nothing to find, so they would add
    a correct answer per depth to every arm's recall). ``snapcompact-eval-table`` ranks on
    these; the never-stated probes are reported here, as correct / confabulated."""
    if "question_meta" not in df or df.empty:
        return df
    kinds = [probe_of(_meta(m))[0] for m in df["question_meta"]]
    keep = [k != NEVER_STATED for k in kinds]
    return df[keep].reset_index(drop=True)


def outcome_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The answered rows of a records frame with reader, arm, probe, outcome and bins."""
    ok = df[df["ok"]].copy()
    extras = ok["extra"] if "extra" in ok else pd.Series("", index=ok.index)
    labels = [_meta(e).get("reader_label", "") for e in extras]
    ok["reader_name"] = [_reader_of(lab, m) for lab, m in zip(labels, ok["model"])]
    ok["arm_name"] = arm_labels(ok)
    if "production" not in ok:  # a frame not made by records_frame
        valid = ok["production_valid"] if "production_valid" in ok else [None] * len(ok)
        ok["production"] = [production_status(s, v) for s, v in zip(ok["strategy"], valid)]
    metas = [_meta(m) for m in ok["question_meta"]]
    ok["probe_kind"] = [probe_of(m)[0] for m in metas]
    ok["probe"] = [probe_label(m) for m in metas]
    ok["outcome"] = [CORRECT if c else ABSTAINED if a else WRONG
                     for c, a in zip(ok["correct"].astype(bool), ok["abstained"].astype(bool))]
    ok["silent_wrong"] = [is_silent_wrong(o, k) for o, k in zip(ok["outcome"], ok["probe_kind"])]
    ok["confabulated"] = [is_confabulation(o, k)
                          for o, k in zip(ok["outcome"], ok["probe_kind"])]
    ok["depth_bin"] = [_bin(d, DEPTH_EDGES) for d in ok["depth"]]
    ok["length_bin"] = [_bin(float(h), LENGTH_EDGES, LENGTH_NAMES) for h in ok["history_chars"]]
    ok["evidence_where"] = ["discarded" if d else "kept tail" for d in ok["discarded"]]
    ok["content_type"] = [CONTENT_OF_PLACE.get(str(m.get("place")), "unknown") for m in metas]
    model = ok["reader_name"] == "model"  # the offline readers' usage is an echo, not a bill
    for column, source in (("output_tokens", "reported_completion_tokens"),
                           ("reasoning_tokens", "reported_reasoning_tokens")):
        values = (pd.to_numeric(ok[source], errors="coerce") if source in ok
                  else pd.Series(math.nan, index=ok.index))
        ok[column] = values.where(model)
    return ok


def _tokens(group: pd.DataFrame, column: str) -> tuple[str, str]:
    """(per question, per session) of a billed token column; ``-`` when nothing was billed."""
    values = group[column]
    if values.isna().all():
        return "-", "-"
    per_session = values.groupby(group["item_id"]).sum(min_count=1)
    return f"{values.mean():,.1f}", f"{per_session.mean():,.0f}"


def _share(rows: pd.DataFrame, column: str, n_boot: int, seed: int, alpha: float) -> str:
    stat = session_mean(list(rows["item_id"]), [float(v) for v in rows[column]],
                        n_boot=n_boot, seed=seed, alpha=alpha)
    if math.isnan(stat.lo):
        return f"{stat.mean:.0%} (1 session)"
    return f"{stat.mean:.0%} [{stat.lo:.0%}, {stat.hi:.0%}]"


def outcome_table(frame: pd.DataFrame,
                  by: Sequence[str] = ("reader_name", "arm_name", "production", "probe"),
                  n_boot: int = 2000, seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """Per group: questions, sessions, each outcome's share with its session interval, the
    silent-wrong and confabulation counts, and the output and reasoning tokens billed (per
    question and per session)."""
    rows = []
    for key, group in frame.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key))
        row.update(n=len(group), sessions=group["item_id"].nunique())
        for outcome in OUTCOMES:
            flags = group.assign(_hit=(group["outcome"] == outcome).astype(float))
            row[outcome] = _share(flags, "_hit", n_boot, seed, alpha)
        row["silent wrong"] = int(group["silent_wrong"].sum())
        row["confabulated"] = int(group["confabulated"].sum())
        row["output tok/q"], row["output tok/session"] = _tokens(group, "output_tokens")
        row["reasoning tok/q"], row["reasoning tok/session"] = _tokens(group, "reasoning_tokens")
        rows.append(row)
    return pd.DataFrame(rows)


#: What a bin table is grouped by besides its bins: the arm and production's verdict before
#: the probe, so a context production would not send (bound, stand-in, not sent) is never pooled
#: with a ranked (valid) one; the reader last, so the told and blind rows of a cell sit together.
BIN_KEYS = ("arm_name", "production", "probe")
#: The bin tables, by name: the columns each splits by. The content type of the evidence is
#: split by where it was (discarded by a compaction, or still in the kept tail): the tail is
#: read as text whatever its type, so pooling it would credit frames with the tail's recall.
BIN_TABLES = {
    "outcomes_by_depth_bin": ("depth_bin",),
    "outcomes_by_length_bin": ("length_bin",),
    "outcomes_by_evidence_where": ("evidence_where",),
    "outcomes_by_content_type": ("evidence_where", "content_type"),
}


def _share3(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def recall_by(frame: pd.DataFrame, bins: Sequence[str], alpha: float = 0.05) -> pd.DataFrame:
    """Per arm, production verdict, probe, bin(s) and reader: the questions (``n``), sessions,
    correct / abstained / wrong counts, silent wrong and confabulated, and recall (correct over
    ``n``) with its two-sided ``1 - alpha`` Wilson interval (:func:`wilson_interval`; a bin's
    questions are few and often all of one outcome, where a bootstrap would print a false
    certainty). For a never-stated probe "correct" is an abstention."""
    keys = [*BIN_KEYS, *bins, "reader_name"]
    rows = []
    for key, group in frame.groupby(keys, sort=True):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        counts = group["outcome"].value_counts()
        n = len(group)
        correct = int(counts.get(CORRECT, 0))
        lo, hi = wilson_interval(correct / n, n, alpha)
        row.update(n=n, sessions=group["item_id"].nunique(), correct=correct,
                   abstained=int(counts.get(ABSTAINED, 0)), wrong=int(counts.get(WRONG, 0)))
        row["silent wrong"] = int(group["silent_wrong"].sum())
        row["confabulated"] = int(group["confabulated"].sum())
        row.update(recall=_share3(correct / n), recall_lo=_share3(lo), recall_hi=_share3(hi))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "n", "sessions", "correct", "abstained", "wrong",
                                       "silent wrong", "confabulated", "recall", "recall_lo",
                                       "recall_hi"])


def outcome_tables(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0,
                   alpha: float = 0.05) -> dict[str, pd.DataFrame]:
    """Every outcome table of a records frame, by name."""
    frame = outcome_frame(df)
    tables = {"outcomes": outcome_table(frame, n_boot=n_boot, seed=seed, alpha=alpha)}
    for name, bins in BIN_TABLES.items():
        tables[name] = recall_by(frame, bins, alpha=alpha)
    return tables


def markdown_table(table: pd.DataFrame) -> str:
    """A frame as a pipe table (no tabulate dependency)."""
    head = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def to_markdown(tables: dict[str, pd.DataFrame], n_boot: int = 2000, seed: int = 0) -> str:
    """The tables as one markdown page (its second paragraph states the bootstrap it used, which
    :func:`rebuild_outcomes` reads back)."""
    out = ["# Outcomes by probe kind: correct / abstained / wrong", "",
           f"Session bootstrap: {n_boot} resamples, seed {seed}.", "",
           "Shares with 95 % session-bootstrap intervals; 'silent wrong': a wrong value for a "
           "stated probe; 'confabulated': a never-stated probe answered with a value. Bin "
           "tables: per arm, production verdict, probe, bin and reader, the "
           "correct / abstained / wrong counts and recall (correct over n; for a "
           "never-stated probe, an abstention) with its 95 % Wilson interval; the content "
           "type is split by where the evidence was (discarded or kept tail). The told reader "
           "is the "
           "legibility floor (told the evidence); the blind reader is told only the question. "
           "production: valid = production would send the context (ranked); bound, stand-in, "
           "not sent: never ranked. Output and reasoning tokens: a real model's, billed to the "
           "arm (mean per question, mean per session); '-': the offline readers bill none.",
           ""]
    for name, table in tables.items():
        out += [f"## {name}", "", markdown_table(table), ""]
    return "\n".join(out)


#: The committed records table's row order and the per-run columns it leaves out (as
#: ``snapcompact-eval-table`` does): a rerun from a fresh clone writes the same bytes.
_ORDER = ("experiment", "item_id", "model", "strategy", "policy", "shape_requested",
          "context_window", "research", "shape", "frame_size", "question_id")
_PER_RUN = ("git_sha", "created_at", "latency_s", "cached", "attempts")
_BOOTSTRAP = re.compile(r"Session bootstrap: (\d+) resamples, seed (\d+)\.")


def outcome_files(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict[str, str]:
    """File name -> text of every outcome file but the records table (``outcomes.md`` and one
    CSV per table), from a records frame."""
    tables = outcome_tables(df, n_boot=n_boot, seed=seed)
    files = {"outcomes.md": to_markdown(tables, n_boot=n_boot, seed=seed)}
    files.update({f"{name}.csv": table.to_csv(index=False) for name, table in tables.items()})
    return files


def committed_records(df: pd.DataFrame) -> pd.DataFrame:
    """The records as committed beside the tables: measurement order, no per-run columns."""
    order = [c for c in _ORDER if c in df]
    df = df.sort_values(order, kind="mergesort", na_position="first", ignore_index=True)
    return df.drop(columns=[c for c in _PER_RUN if c in df])


def write_outcomes(df: pd.DataFrame, out: Path, n_boot: int = 2000, seed: int = 0) -> str:
    """Write ``records.parquet`` and the outcome files into ``out``; return the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    records = committed_records(df)
    records.to_parquet(out / "records.parquet", index=False)
    files = outcome_files(records, n_boot=n_boot, seed=seed)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    return files["outcomes.md"]


def rebuild_outcomes(folder: Path) -> dict[str, str]:
    """What ``--check`` compares: every outcome file of ``folder`` made again from its committed
    ``records.parquet``, with the bootstrap its ``outcomes.md`` states; nothing is written."""
    found = _BOOTSTRAP.search((folder / "outcomes.md").read_text(encoding="utf-8"))
    if found is None:
        raise ValueError(f"{folder / 'outcomes.md'} does not state its session bootstrap")
    df = pd.read_parquet(folder / "records.parquet")
    return outcome_files(df, n_boot=int(found.group(1)), seed=int(found.group(2)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.analysis.outcomes",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("results", nargs="+", help="records files or run directories")
    parser.add_argument("--out", default=None, help="folder for outcomes.md and the CSVs")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from evals.analysis.write_model_shapes import library_table_path
    from snapcompact.pricing import parse_shape_rules

    df = records_frame(load_records(args.results),
                       parse_shape_rules(library_table_path().read_text()))
    if args.out:
        text = write_outcomes(df, Path(args.out), n_boot=args.bootstrap, seed=args.seed)
    else:
        text = outcome_files(committed_records(df), n_boot=args.bootstrap,
                             seed=args.seed)["outcomes.md"]
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
