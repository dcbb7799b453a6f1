"""Records -> one tidy table: one row per measurement, with the columns every table reads.

Why this module exists: the summary (:mod:`evals.analysis.summary`), the winner rule
(:mod:`evals.analysis.winner`) and the breakdowns (:mod:`evals.analysis.recall_breakdown`) all
work from the same rows, so who answered (``reader_id``), which model line a row belongs to
(``line``), what it is to production (``production``) and which shape its arm stands for
(``shape_decided``) are derived here once. Everything works from the rows' own fields (design
§5): the model line comes from the record's ``target_model`` through the shape table's own
patterns, never from a directory or file name; the shape an ``auto`` arm stands for is the one
the replay resolved and recorded (:data:`SHAPE_ASKED_COLUMN`), never resolved again here.

Errored requests are excluded from scores and counted; a measurement recorded more than once
(same ``Record.key()``, e.g. a resumed or repeated run) counts once, the latest successful row.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from evals.store.records import Record, one_row_per_measurement
from snapcompact.core import NAMED_SHAPES
from snapcompact.pricing import ShapeTable, is_claude_high_res, matching_rule

#: Readers whose rows answer questions (recall): "qa" (schema 2) and the schema-1 readers;
#: schema-1 "transcribe" rows carry a CER instead.
QA_READERS = ("qa", "image_qa", "text_qa")
#: Provider prefix of the embedded offline reader (evals/readers/provider.py).
OFFLINE_PROVIDER = "snapocr"
OFFLINE_LABEL = "snapocr (offline OCR reader: a legibility floor, not a model ranking)"
UNMATCHED_LINE = "unmatched"

KEY_COLUMNS = ["dataset", "item_id", "question_id", "model", "target_model", "shape",
               "frame_size", "reader", "seed", "strategy", "policy"]
GROUP_COLUMNS = ["reader_id", "target_model", "line", "strategy", "policy", "arm", "shape",
                 "frame_size", "shape_requested", "context_window", "production", "research"]
#: ``production`` column: what the row's context is to production (from ``production_valid``).
PRODUCTION_VALID = "valid"  # production would send this context: ranked
PRODUCTION_NOT_SENT = "not sent"  # production would not (over the window, an LLM method...)
PRODUCTION_BOUND = "bound"  # full / truncate: labelled upper and lower bounds, never ranked
#: production's path, but an LLM method's summary was written by the offline stand-in
PRODUCTION_STAND_IN = "stand-in"
#: Statuses that are never ranked nor drawn on the frontier (the bounds are drawn, not ranked).
PRODUCTION_UNSENT = (PRODUCTION_NOT_SENT, PRODUCTION_STAND_IN)
PRODUCTION_UNCHECKED = "unchecked"  # rows recorded before the verdict existed
#: Statuses that are ranked, placed on a frontier and drawn as the compared arms; the others
#: (bounds, stand-ins, not sent) are drawn apart, never ranked.
PRODUCTION_RANKED = (PRODUCTION_VALID, PRODUCTION_UNCHECKED)
BOUND_STRATEGIES = ("full", "truncate")
#: The strategy whose rows are the text baseline (compression is measured against it).
BASELINE_STRATEGY = "full"
#: The record columns a snapcompact arm's shape is read from (named once here): what the arm
#: asked for (``auto`` or a shape's name), and the shape that request resolved to when the
#: replay drew the context (the library resolves it once per context; the row carries it).
SHAPE_REQUESTED_COLUMN = "shape_requested"
SHAPE_ASKED_COLUMN = "shape_asked"
#: What an arm asks for when production picks the shape.
AUTO_SHAPE = "auto"
#: ``shape_decided`` of an ``auto`` arm whose records carry no resolved shape (written before
#: :data:`SHAPE_ASKED_COLUMN` existed): said so in the tables, never ranked.
SHAPE_NOT_RECORDED = "auto (shape not recorded)"


def reader_id(model: str) -> str:
    """Who produced the answers: every ``snapocr/*`` route is the one offline reader."""
    return OFFLINE_PROVIDER if model.split("/", 1)[0] == OFFLINE_PROVIDER else model


def reader_label(reader: str) -> str:
    return OFFLINE_LABEL if reader == OFFLINE_PROVIDER else reader


def model_line(model_id: str, table: ShapeTable) -> str:
    """The row of ``table`` that decides ``model_id``'s shape: the library's own matching
    (:func:`snapcompact.pricing.matching_rule`), run over ``table``."""
    if is_claude_high_res(model_id, table):
        return "claude-high-res"
    rule = matching_rule(model_id, table)
    if rule is not None:
        return rule.name
    return UNMATCHED_LINE


def dedupe_records(records: Sequence[Record]) -> tuple[list[Record], int]:
    """One row per measurement key (:func:`evals.store.records.one_row_per_measurement`) and how
    many rows were dropped."""
    chosen = one_row_per_measurement(records, key=Record.key,
                                     succeeded=lambda rec: rec.error is None,
                                     created_at=lambda rec: rec.created_at)
    return chosen, len(records) - len(chosen)


def _add_arm_shapes(df: pd.DataFrame) -> None:
    """``arm_shape`` / ``arm_frame_size``: one value per arm. A snapcompact arm's sessions can
    draw different shapes (at 32k one session's single frame is the companion, the other's the
    asked shape); the arm is what was asked for, so its rows are summarized together under the
    union of the shapes drawn (and the largest frame size)."""
    df["arm_shape"] = df["shape"]
    df["arm_frame_size"] = df["frame_size"]
    snap = (df["strategy"] == "snapcompact") & (df["shape_requested"].fillna("") != "")
    if not snap.any():
        return
    keys = ["target_model", "model", "strategy", "policy", "shape_requested", "context_window",
            "seed"]
    part = df[snap]
    for _, rows in part.groupby(keys, dropna=False):
        drawn = sorted({n for shape in rows["shape"] for n in str(shape).split("+")
                        if n and n != "text"})
        df.loc[rows.index, "arm_shape"] = "+".join(drawn) if drawn else "text"
        df.loc[rows.index, "arm_frame_size"] = int(rows["frame_size"].max())


def production_status(strategy: str, valid: object, stand_in: object = False) -> str:
    """The ``production`` column: valid / stand-in / not sent / bound / unchecked (see the
    constants). ``stand_in`` (the record's ``summary_stand_in``) wins over ``not sent``: the row
    is on production's path, only its summary text is the stand-in's."""
    if strategy in BOUND_STRATEGIES:
        return PRODUCTION_BOUND
    if stand_in is True:
        return PRODUCTION_STAND_IN
    if valid is True:
        return PRODUCTION_VALID
    if valid is False:
        return PRODUCTION_NOT_SENT
    return PRODUCTION_UNCHECKED


def decided_shape(strategy: str, shape: str, requested: object, asked: object) -> str:
    """The shape a snapcompact arm stands for in the shape table: the shape its request resolved
    to when the replay drew the context (``asked``, the record's :data:`SHAPE_ASKED_COLUMN`),
    else the name it asked for; other rows: ``shape``. An ``auto`` arm whose records predate
    that column is :data:`SHAPE_NOT_RECORDED` (never ranked), not resolved again here: today's
    table could pick another shape than the one the context was drawn with."""
    if strategy != "snapcompact" or not requested:
        return shape
    if isinstance(asked, str) and asked:
        return asked
    if requested != AUTO_SHAPE:
        return str(requested)
    return SHAPE_NOT_RECORDED


#: Table columns renamed for one spelling of predicted / reported (``predicted_<quantity>...``):
#: old -> new, per table; None: the column repeated another one and is dropped.
RENAMED_COLUMNS: dict[str, dict[str, str | None]] = {
    "records": {"billed_tokens_predicted": None, "cost_predicted_usd": None,
                "billed_tokens_reported": "reported_prompt_tokens_by_provider",
                "cost_reported_usd": "reported_cost_by_provider_usd"},
    "summary": {"tokens_predicted": "predicted_prompt_tokens",
                "tokens_reported": "reported_prompt_tokens",
                "completion_tokens_reported": "reported_completion_tokens",
                "cost_predicted_usd": "predicted_cost_usd",
                "cost_reported_usd": "reported_cost_usd",
                "recall_per_1k_tokens_reported": "recall_per_1k_reported_tokens",
                "text_tokens_same_questions": "text_predicted_prompt_tokens_same_questions"},
    "decisions": {"tokens_predicted": "predicted_prompt_tokens"},
}


def read_table(path: str | Path) -> pd.DataFrame:
    """A table ``snapcompact-eval-table`` wrote (``records``, ``summary`` or ``decisions``, as
    .parquet or .csv), with columns of older runs renamed to today's spelling (warned about).

    Why: results committed or kept from earlier runs stay readable by the notebooks and plots
    after a column is renamed.
    """
    path = Path(path)
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    renamed = RENAMED_COLUMNS.get(path.stem, {})
    old = [c for c in renamed if c in frame.columns]
    if old:
        warnings.warn(f"{path.name}: column(s) {', '.join(old)} in the old spelling; read as "
                      f"{', '.join(str(renamed[c] or '(dropped: a repeat)') for c in old)}",
                      FutureWarning, stacklevel=2)
        frame = frame.drop(columns=[c for c in old if renamed[c] is None])
        frame = frame.rename(columns={c: renamed[c] for c in old if renamed[c] is not None})
    return frame


def records_frame(records: Iterable[Record], table: ShapeTable) -> pd.DataFrame:
    """One row per measurement, every record field plus derived columns (line, reader_id, ...).

    Tuple fields become JSON strings so the table writes to CSV and parquet alike.
    """
    rows, duplicates = dedupe_records(list(records))
    if not rows:
        raise ValueError("no records found")
    data = []
    for rec in rows:
        row = rec.to_json()
        # the question's share of its session's compaction calls, and its bill with it
        row["compaction_tokens_per_question"] = rec.compaction_tokens_per_question
        row["billed_tokens"] = rec.billed_tokens
        row["compaction_cost_usd_per_question"] = rec.compaction_cost_usd_per_question
        depth = (row.get("question_meta") or {}).get("depth")
        row["depth"] = float(depth) if isinstance(depth, (int, float)) else np.nan
        for name in ("frame_px", "frame_hashes", "gold_answers", "extra", "seen_px", "bill_rules",
                     "image_tokens_per_frame", "replay_warnings", "settings", "question_meta",
                     "reading", "dependency_versions", "methods_used", "frames_by_shape"):
            if name in row:
                row[name] = json.dumps(row[name], sort_keys=True)
        data.append(row)
    df = pd.DataFrame(data)
    stand_in = (df["summary_stand_in"] if "summary_stand_in" in df
                else pd.Series(False, index=df.index))
    df["production"] = [production_status(s, v, isinstance(i, (bool, np.bool_)) and bool(i))
                        for s, v, i in zip(df["strategy"], df["production_valid"], stand_in)]
    _add_arm_shapes(df)
    asked = (df[SHAPE_ASKED_COLUMN] if SHAPE_ASKED_COLUMN in df
             else pd.Series("", index=df.index))
    df["shape_decided"] = [decided_shape(*t) for t in zip(
        df["strategy"], df["shape"], df[SHAPE_REQUESTED_COLUMN], asked)]
    df["reader_id"] = df["model"].map(reader_id)
    lines = {m: model_line(m, table) for m in df["target_model"].unique()}
    df["line"] = df["target_model"].map(lines)
    df["predicted_cost_usd"] = pd.to_numeric(df["predicted_cost_usd"], errors="coerce")
    df["billed_cost_usd"] = df["predicted_cost_usd"] + df["compaction_cost_usd_per_question"]
    # The offline reader bills nothing and echoes the prediction as its "usage": not a report.
    # The record columns keep what was recorded; the *_by_provider columns hold real reports.
    # the blind offline reader (snapblind/*, evals.blind) echoes the prediction too
    offline = (df["reader_id"] == OFFLINE_PROVIDER) | df["model"].str.startswith("snapblind/")
    df["reported_prompt_tokens_by_provider"] = pd.to_numeric(df["reported_prompt_tokens"],
                                                             errors="coerce")
    df["reported_cost_by_provider_usd"] = pd.to_numeric(df["reported_cost_usd"], errors="coerce")
    df.loc[offline, ["reported_prompt_tokens_by_provider",
                     "reported_cost_by_provider_usd"]] = np.nan
    df["ok"] = df["error"].isna() & df["skipped"].isna()
    df["discarded"] = pd.to_numeric(df["evidence_round"], errors="coerce").fillna(0) >= 1
    for name in ("em", "f1"):
        df[name] = df[name].astype(float)
    df["correct"] = df["correct"].astype(float)
    df.attrs["duplicates_dropped"] = duplicates
    return df


def summed_counts(cells: Iterable[object]) -> dict[str, int]:
    """Summed ``{name: count}`` JSON cells (methods used, frames by shape)."""
    total: dict[str, int] = {}
    for cell in cells:
        data = json.loads(cell) if isinstance(cell, str) and cell else {}
        for name, count in (data or {}).items():
            total[name] = total.get(name, 0) + int(count)
    return total


def format_counts(counts: dict[str, int], per: int = 1) -> str:
    """``{"snapcompact": 6}`` over 2 contexts -> ``"snapcompact 3"`` (per context, one decimal
    when not whole); empty -> ``"-"``."""
    if not counts:
        return "-"
    out = []
    for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        value = count / max(per, 1)
        out.append(f"{name} {value:.0f}" if value == int(value) else f"{name} {value:.1f}")
    return ", ".join(out)


def arm_label(strategy: str, policy: str, shape: str, frame_size: int,
              shape_requested: str = "", context_window: object = None,
              research: object = "production") -> str:
    """One name per arm: the strategy, for snapcompact its policy and the shape it asked for
    (``auto``: production's pick; the frames drawn are in ``frames_by_shape``), the research
    knobs when not production's (``[recommended-1a2b3c4d]``), and the window when known
    (``@200k``)."""
    if strategy == "snapcompact":
        asked = shape_requested or shape_label(shape, int(frame_size))
        label = f"snapcompact {policy} {asked}"
    elif strategy in ("", "render"):  # schema-1 rows: a rendered item, or its text arm
        return "text-only" if shape == "text" else shape_label(shape, int(frame_size))
    else:
        label = strategy
    if isinstance(research, str) and research and research != "production":
        label += f" [{research}]"
    try:
        window = int(context_window)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return label
    return f"{label} @{window // 1000}k" if window % 1000 == 0 else f"{label} @{window:,}"


def arm_labels(frame: pd.DataFrame) -> list[str]:
    """:func:`arm_label` of every row of a records or summary frame."""
    requested = frame["shape_requested"] if "shape_requested" in frame else [""] * len(frame)
    windows = frame["context_window"] if "context_window" in frame else [None] * len(frame)
    research = frame["research"] if "research" in frame else ["production"] * len(frame)
    return [arm_label(*t) for t in zip(frame["strategy"], frame["policy"], frame["shape"],
                                       frame["frame_size"], requested, windows, research)]


def shape_label(shape: str, frame_size: int) -> str:
    research = NAMED_SHAPES[shape].frame_size if shape in NAMED_SHAPES else None
    return shape if frame_size == research else f"{shape}@{frame_size}"
