"""Records -> one tidy table -> per-shape recall, cost, compression, frontier and a winner per line.

Why this module exists: the point of every run is a decision (which shape each model line gets),
and a decision needs error bars. Everything here works from the rows' own fields (design §5):
the model line comes from the record's ``target_model`` through the shape table's own patterns,
never from a directory or file name.

Statistics, stated once:

* The resampling unit is a *question*: (dataset, item_id, question_id), and for a model line that
  pools several target models, (target_model, dataset, item_id, question_id). Seeds of the same
  question are averaged first, so a question counts once however often it was asked.
* Recall and exact match are proportions of questions: their intervals are Wilson score
  intervals (``evals.analysis.intervals``), which stay informative at 0/n where a bootstrap
  collapses. F1 is not binary: its interval is a percentile bootstrap over the units (``n_boot``
  resamples, seeded from ``seed`` and the group's own coordinates, so a group's interval does
  not depend on which other groups were loaded).
* "Billed tokens" per question are the question request's prompt (input) tokens
  (``predicted_prompt_tokens`` as the library predicts them) plus the question's share of its
  session's compaction calls (``compaction_tokens_per_question``: the summary / handoff
  requests' input and output, ``compaction_billed_tokens``, divided by the questions asked
  after that context, ``context_questions``; the calls are made once per session, not per
  question; see :class:`evals.store.records.Record`). Recall per 1k tokens, the frontier and
  the winner rule read these. The compaction tokens are counted by the summarizer's model
  line's counter and priced at its price model (``compaction_cost_usd``): where summarizer and
  reader differ, the dollars compare them, the token sum adds two models' tokens.
  ``reported_prompt_tokens`` is what the provider reported for the question request alone (not
  for the offline reader, whose "usage" only echoes the prediction back).
  Completion tokens are reported beside them; they do not depend on the shape.
* The winner rule (``WINNER_RULE``) compares shapes with a *paired* bootstrap on the questions
  both were asked, so the shared difficulty of a question cancels out.

Errored requests are excluded from scores and counted; a measurement recorded more than once
(same ``Record.key()``, e.g. a resumed or repeated run) counts once, the latest successful row.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from evals.analysis.intervals import wilson_interval
from evals.analysis.session_bootstrap import session_draws
from evals.send.price_map import price_of
from evals.store.records import Record, one_row_per_measurement
from snapcompact.billing import NEXT_TURNS, next_turns_units
from snapcompact.core import NAMED_SHAPES
from snapcompact.pricing import (
    ShapeTable,
    is_claude_high_res,
    matching_rule,
    prompt_cache_rule,
    resolve_shape,
)

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
BOUND_STRATEGIES = ("full", "truncate")
#: The strategy whose rows are the text baseline (compression is measured against it).
BASELINE_STRATEGY = "full"

WINNER_RULE = (
    "Only contexts production would send are ranked: snapcompact rows whose production_valid is "
    "True (the coding agent's maintenance produced them and they fit the window); rows "
    "production would not send are shown apart, and full / truncate are labelled bounds. Each "
    "model line is decided at the largest window measured for it, shapes named by what the arm "
    "asked for (auto: the shape production picks), with the frames they were measured on. "
    "Winner per model line (and reader): among those shapes, take "
    "the one with the highest recall (mean correct) as the reference. A shape is significantly "
    "below it when, in a paired bootstrap over the sessions both shapes were asked in (the "
    "session is the unit of evidence: its questions share one compaction history; {n_boot} "
    "resamples, seed {seed}), the {lo:g}th percentile of (reference recall - shape recall) is "
    "above zero, i.e. the two-sided {conf:g}% interval of the difference excludes zero; with "
    "one session there is no interval and no shape is significantly below. Among the shapes "
    "not significantly below the reference, the winner has the most recall per 1k predicted "
    "billed tokens (a question's prompt tokens plus its share of its session's compaction "
    "calls; ties: higher recall, then fewer tokens, then name). "
    "More than one such shape is reported as a tie. Evidence is called thin when the winner "
    "rests on fewer than {min_q} questions, fewer than 2 sessions, a single seed, errored "
    "requests, or a recall interval (Wilson score, {conf:g}%) overlapping another shape's."
)


def rule_text(n_boot: int, seed: int, alpha: float, min_questions: int) -> str:
    return WINNER_RULE.format(n_boot=n_boot, seed=seed, lo=100 * alpha / 2,
                              conf=100 * (1 - alpha), min_q=min_questions)


# ---------------------------------------------------------------------------------------------
# Tidy table


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


def decided_shape(strategy: str, shape: str, requested: str, target_model: str,
                  api: object, provider: object, frame_size: object) -> str:
    """The shape a snapcompact arm stands for in the shape table: the shape it asked for
    (``auto`` resolved to the one production picks for the target); other rows: ``shape``."""
    if strategy != "snapcompact" or not requested:
        return shape
    if requested != "auto":
        return requested

    try:
        return resolve_shape(target_model, api=api if isinstance(api, str) else None,
                             provider=provider if isinstance(provider, str) else None).name
    except ValueError:
        return shape


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
    df["shape_decided"] = [
        decided_shape(*t) for t in zip(df["strategy"], df["shape"], df["shape_requested"],
                                       df["target_model"], df["api"], df["provider"],
                                       df["frame_size"])]
    df["reader_id"] = df["model"].map(reader_id)
    lines = {m: model_line(m, table) for m in df["target_model"].unique()}
    df["line"] = df["target_model"].map(lines)
    df["predicted_cost_usd"] = pd.to_numeric(df["predicted_cost_usd"], errors="coerce")
    df["billed_cost_usd"] = df["predicted_cost_usd"] + df["compaction_cost_usd_per_question"]
    # The offline reader bills nothing and echoes the prediction as its "usage": not a report.
    # The record columns keep what was recorded; the *_by_provider columns hold real reports.
    offline = df["reader_id"] == OFFLINE_PROVIDER
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


# ---------------------------------------------------------------------------------------------
# Bootstrap


def stable_seed(seed: int, *parts: object) -> int:
    """A seed derived from ``seed`` and a group's coordinates (independent of load order)."""
    text = json.dumps([seed, *[str(p) for p in parts]])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples of the rows of ``values`` (units x metrics)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n = len(values)
    if n == 0:
        return np.full((n_boot, values.shape[1]), np.nan)
    idx = rng.integers(0, n, size=(n_boot, n))
    return values[idx].mean(axis=1)


def percentile_interval(samples: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    lo = np.quantile(samples, alpha / 2, axis=0)
    hi = np.quantile(samples, 1 - alpha / 2, axis=0)
    return lo, hi


def _check_settings(n_boot: int, alpha: float) -> None:
    if not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"bootstrap resamples must be an integer >= 100, got {n_boot!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")


# ---------------------------------------------------------------------------------------------
# Per-shape summary

UNIT = ["dataset", "item_id", "question_id"]
#: What a session is in the per-question index (its questions share one compaction history).
SESSION_UNIT = ["target_model", "dataset", "item_id"]


def _question_scores(rows: pd.DataFrame, unit: list[str]) -> pd.DataFrame:
    """Scores per question unit, seeds averaged."""
    return rows.groupby(unit, sort=True)[["correct", "em", "f1"]].mean()


def summarize(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0,
              alpha: float = 0.05) -> pd.DataFrame:
    """Per (reader, target model, shape, frame size): recall with intervals, cost, compression."""
    _check_settings(n_boot, alpha)
    qa = df[df["reader"].isin(QA_READERS)]
    if qa.empty:
        raise ValueError("no question-answering records (reader qa)")
    if "arm_shape" in qa:  # one row per arm, whatever shapes its sessions drew
        qa = qa.assign(shape=qa["arm_shape"], frame_size=qa["arm_frame_size"])
    out = []
    for key, rows in qa.groupby(GROUP_COLUMNS, sort=True, dropna=False):
        ok = rows[rows["ok"]]
        discarded = ok[ok["discarded"]]
        scores = _question_scores(ok, UNIT)
        # production's knobs seed the bootstrap as before the research column existed
        seed_key = key[:-1] if key[-1] == "production" else key
        rng = np.random.default_rng(stable_seed(seed, *seed_key))
        boots = bootstrap_means(scores.to_numpy(), n_boot, rng)
        lo, hi = percentile_interval(boots, alpha) if len(scores) else ([np.nan] * 3,) * 2
        means = scores.mean() if len(scores) else pd.Series(np.nan, index=scores.columns)
        recall_lo, recall_hi = wilson_interval(float(means["correct"]), len(scores), alpha)
        em_lo, em_hi = wilson_interval(float(means["em"]), len(scores), alpha)
        reported = ok["reported_prompt_tokens_by_provider"]
        row = dict(zip(GROUP_COLUMNS, key))
        row.update(
            reader_label=reader_label(row["reader_id"]),
            models=",".join(sorted(rows["model"].unique())),
            n_questions=len(scores), n_rows=len(rows),
            n_skipped=int(rows["skipped"].notna().sum()),
            n_errors=int((rows["error"].notna()).sum()),
            n_seeds=rows["seed"].nunique(), frames_mean=ok["frames"].mean(),
            abstain_rate=ok["abstained"].astype(float).mean(),
            recall=means["correct"], recall_lo=recall_lo, recall_hi=recall_hi,
            em=means["em"], em_lo=em_lo, em_hi=em_hi,
            f1=means["f1"], f1_lo=lo[2], f1_hi=hi[2],
            predicted_prompt_tokens=ok["predicted_prompt_tokens"].mean(),
            reported_prompt_tokens=reported.mean(), reported_share=reported.notna().mean(),
            reported_completion_tokens=pd.to_numeric(
                ok["reported_completion_tokens"], errors="coerce").mean(),
            predicted_cost_usd=ok["predicted_cost_usd"].mean(),
            reported_cost_usd=ok["reported_cost_by_provider_usd"].mean(),
            recall_discarded=discarded["correct"].mean() if len(discarded) else np.nan,
            n_discarded=len(discarded),
            compactions_mean=rows["compactions"].mean(),
            text_tokens=ok["text_tokens"].mean(),
            predicted_image_tokens=ok["predicted_image_tokens"].mean(),
            compaction_cost_tokens=ok["compaction_cost_tokens"].mean(),
            text_token_method="; ".join(sorted({str(m) for m in rows["text_token_method"].dropna()
                                                if str(m)})),
        )
        row.update(_compaction_bill(rows, ok))
        row.update(_what_production_did(rows))
        row.update(_sent_identity(rows))
        # a skipped context still has a bill: the uncompacted history, for the reader
        skipped = rows[rows["skipped"].notna()]
        row["tokens_skipped_context"] = (skipped["predicted_prompt_tokens"].mean()
                                         if len(skipped) else np.nan)
        row.update(_next_turns(rows, ok))
        row["recall_per_1k_tokens"] = _per_1k(row["recall"], row["billed_tokens"])
        row["recall_per_1k_reported_tokens"] = _per_1k(row["recall"], row["reported_prompt_tokens"])
        out.append(row)
    summary = pd.DataFrame(out)
    summary = _add_compression(summary, qa[qa["ok"]], qa)
    summary = _add_cer(summary, df)
    summary["on_frontier"] = False
    # the frontier is drawn over what production sends and the bounds, never over contexts
    # production would not send
    ranked = summary[~summary["production"].isin(PRODUCTION_UNSENT)]
    for idx in ranked.groupby(["reader_id", "target_model"]).groups.values():
        part = summary.loc[idx]
        summary.loc[idx, "on_frontier"] = pareto_mask(part["billed_tokens"].to_numpy(),
                                                      part["recall"].to_numpy())
    return summary.sort_values(["reader_id", "target_model", "strategy", "policy",
                                "predicted_prompt_tokens"], ignore_index=True)


def _compaction_bill(rows: pd.DataFrame, ok: pd.DataFrame) -> dict[str, object]:
    """The arm's compaction calls: per context (one per session; the bill is the session's,
    paid once) and per question (each answered question's share), with the billed tokens per
    question that include them. NaN where a row that ran an LLM method predates the bill."""
    contexts = rows.drop_duplicates("item_id")

    def per_context(name: str) -> float:
        if name not in contexts:
            return float("nan")
        return float(pd.to_numeric(contexts[name], errors="coerce").mean())

    def joined(name: str) -> str:
        if name not in contexts:
            return ""
        return "; ".join(sorted({str(v) for v in contexts[name].dropna() if str(v)}))

    share = pd.to_numeric(ok["compaction_tokens_per_question"], errors="coerce")
    return {
        "compaction_calls_per_context": per_context("compaction_calls"),
        "compaction_input_tokens_per_context": per_context("compaction_input_tokens"),
        "compaction_output_tokens_per_context": per_context("compaction_output_tokens"),
        "compaction_billed_tokens_per_context": per_context("compaction_billed_tokens"),
        "compaction_tokens_per_question": float(share.mean()) if len(share) else float("nan"),
        "billed_tokens": float(pd.to_numeric(ok["billed_tokens"], errors="coerce").mean())
        if len(ok) else float("nan"),
        "compaction_cost_usd_per_question": float(pd.to_numeric(
            ok["compaction_cost_usd_per_question"], errors="coerce").mean())
        if len(ok) else float("nan"),
        "billed_cost_usd": float(ok["billed_cost_usd"].mean()) if len(ok) else float("nan"),
        "compaction_token_method": joined("compaction_token_method"),
        "compaction_price_model": joined("compaction_price_model"),
        "compaction_bill_notes": joined("compaction_bill_note"),
    }


def _sent_identity(rows: pd.DataFrame) -> dict[str, object]:
    """What the arm sent, as one key (arms with equal keys sent byte-identical contexts on
    every item), and whether any of its frames was drawn in the shape it asked for."""
    hashes = (sorted({str(h) for h in rows["sent_hash"].dropna() if str(h)})
              if "sent_hash" in rows else [])
    key = hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16] if hashes else ""
    drawn = rows["shape_asked_drawn"].dropna() if "shape_asked_drawn" in rows else pd.Series()
    return {"sent_key": key,
            "shape_asked_drawn": (bool(drawn.astype(bool).any()) if len(drawn) else None)}


def same_context_groups(summary: pd.DataFrame) -> list[list[int]]:
    """Index groups of summary rows (same reader and target) that sent the same contexts."""
    if "sent_key" not in summary:
        return []
    keyed = summary[summary["sent_key"].astype(str) != ""]
    groups = keyed.groupby(["reader_id", "target_model", "sent_key"], sort=True).groups
    return [list(idx) for idx in groups.values() if len(idx) > 1]


def _counts(cells: Iterable[object]) -> dict[str, int]:
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


def _what_production_did(rows: pd.DataFrame) -> dict:
    """Per arm, over its contexts (one per item): what the agent's maintenance did."""
    contexts = rows.drop_duplicates("item_id")
    n = len(contexts)
    def mean(name: str) -> float:
        if name not in contexts:
            return float("nan")
        return float(pd.to_numeric(contexts[name], errors="coerce").mean())
    caps = pd.to_numeric(contexts.get("frame_cap", pd.Series(dtype=float)), errors="coerce")
    fits = contexts["fits_window"] if "fits_window" in contexts else pd.Series(dtype=object)
    return {
        "n_contexts": n,
        "methods_per_context": format_counts(_counts(contexts.get("methods_used", ())), n),
        "frames_by_shape_per_context": format_counts(
            _counts(contexts.get("frames_by_shape", ())), n),
        "frame_cap_max": float(caps.max()) if caps.notna().any() else float("nan"),
        "frames_max": float(contexts["frames"].max()),
        "text_edge_chars": mean("text_tail_chars"),
        "truncated_chars": mean("truncated_chars"),
        "context_tokens_estimate": mean("context_tokens_estimate"),
        "fits_window_share": float(fits.map(lambda v: v is True).mean()) if len(fits) else
        float("nan"),
        "replay_warnings_total": mean("replay_warnings_total"),
        "production_notes": " | ".join(sorted({str(v) for v in contexts.get(
            "production_note", pd.Series(dtype=object)).dropna()})),
    }


def _next_turns(rows: pd.DataFrame, ok: pd.DataFrame) -> dict:
    """Production's input bill of the next turns after the arm's last compaction, in dollars of
    the target (evals.replay.conversation_bill): uncached, with the prompt cache and the arm's
    stable prefix, and with the whole prefix rewritten. NaN without a price or a stable-prefix
    figure.
    """
    nan = {"stable_prefix_tokens": np.nan, "next_turns_usd_uncached": np.nan,
           "next_turns_usd_cached": np.nan, "next_turns_usd_rewritten": np.nan}
    if "stable_prefix_tokens" not in rows or ok.empty:
        return nan
    stable = pd.to_numeric(ok["stable_prefix_tokens"], errors="coerce").mean()
    if pd.isna(stable):
        return nan
    first = ok.iloc[0]

    try:
        price = price_of(str(first["price_model"] or first["target_model"])).input_per_token
    except ValueError:
        return {**nan, "stable_prefix_tokens": stable}
    rule = prompt_cache_rule(str(first["target_model"]), api=first.get("api") or None)
    # the context before the question: the request minus the question's own tokens
    context = int(round(ok["predicted_prompt_tokens"].mean()))
    units = next_turns_units(rule, context, int(round(stable)), k=NEXT_TURNS)
    return {"stable_prefix_tokens": stable, "next_turns_usd_uncached": units.uncached * price,
            "next_turns_usd_cached": units.cached * price,
            "next_turns_usd_rewritten": units.rewritten * price}


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


def round_bucket(evidence_round: int) -> str:
    """Rounds in doubling buckets (0, 1, 2-3, 4-7, 8-15, ...): a long session compacts dozens
    of times, and one column per round would leave a question or two in each."""
    r = int(evidence_round)
    if r <= 1:
        return str(r)
    lo = 1 << (r.bit_length() - 1)
    return f"{lo}-{2 * lo - 1}"


def recall_by_round(df: pd.DataFrame) -> pd.DataFrame:
    """Recall per arm and ``evidence_round`` bucket (0 = the evidence is still in the kept
    tail; see :func:`round_bucket`)."""
    ok = df[df["ok"] & df["reader"].isin(QA_READERS)].copy()
    if ok.empty:
        return pd.DataFrame(columns=["reader_id", "target_model", "arm_label", "production",
                                     "round_lo", "evidence_rounds", "n", "recall"])
    ok["evidence_round"] = pd.to_numeric(ok["evidence_round"], errors="coerce").fillna(0)
    ok["arm_label"] = arm_labels(ok)
    ok["round_lo"] = [0 if r <= 1 else 1 << (int(r).bit_length() - 1) for r in ok["evidence_round"]]
    ok["evidence_rounds"] = ok["evidence_round"].map(round_bucket)
    if "production" not in ok:
        ok["production"] = PRODUCTION_UNCHECKED
    out = (ok.groupby(["reader_id", "target_model", "arm_label", "production", "round_lo",
                       "evidence_rounds"])
           ["correct"].agg(["size", "mean"]).reset_index()
           .rename(columns={"size": "n", "mean": "recall"}))
    out["round_lo"] = out["round_lo"].astype(int)
    return out


DEPTH_BUCKETS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def recall_by_depth(df: pd.DataFrame) -> pd.DataFrame:
    """Recall per arm and fact depth (fifths of the session, 0 = oldest), over every question
    and over those whose evidence a compaction discarded (``evidence_round`` >= 1)."""
    cols = ["reader_id", "target_model", "arm_label", "production", "depth_lo", "depths", "n",
            "recall", "n_discarded", "recall_discarded"]
    ok = df[df["ok"] & df["reader"].isin(QA_READERS)].copy()
    if "depth" in ok:
        ok = ok[ok["depth"].notna()]
    if ok.empty or "depth" not in ok:
        return pd.DataFrame(columns=cols)
    ok["arm_label"] = arm_labels(ok)
    edges = DEPTH_BUCKETS
    index = np.clip(np.searchsorted(edges, ok["depth"].to_numpy(), side="right") - 1, 0,
                    len(edges) - 2)
    ok["depth_lo"] = [edges[i] for i in index]
    ok["depths"] = [f"{edges[i]:.1f}-{edges[i + 1]:.1f}" for i in index]
    out = []
    for key, rows in ok.groupby(["reader_id", "target_model", "arm_label", "production",
                                 "depth_lo", "depths"], sort=True):
        gone = rows[rows["discarded"]]
        out.append(dict(zip(cols[:6], key), n=len(rows), recall=rows["correct"].mean(),
                        n_discarded=len(gone),
                        recall_discarded=gone["correct"].mean() if len(gone) else np.nan))
    return pd.DataFrame(out, columns=cols)


def _per_1k(recall: float, tokens: float) -> float:
    if not np.isfinite(tokens) or tokens <= 0 or not np.isfinite(recall):
        return float("nan")
    return 1000.0 * recall / tokens


def _add_compression(summary: pd.DataFrame, ok: pd.DataFrame,
                     every: pd.DataFrame | None = None) -> pd.DataFrame:
    """Baseline tokens / this arm's tokens on the questions both were asked (same target model).

    The baseline is the ``full`` strategy (the whole history as text). Where ``full`` was
    skipped (the history exceeds the model's window) its rows still carry the uncompacted
    history's bill, so the ratio is taken against that size (``compression_baseline`` says
    which); its recall is then unknown. Schema-1 rows fall back to their text arm.
    """
    text = ok[ok["strategy"] == BASELINE_STRATEGY]
    skipped_full = (every[(every["strategy"] == BASELINE_STRATEGY) & every["skipped"].notna()
                          & every["error"].isna()]
                    if every is not None else ok.iloc[0:0])
    baseline_name = "full"
    if text.empty and not skipped_full.empty:
        text, baseline_name = skipped_full, "uncompacted history (full skipped: over the window)"
    if text.empty:
        text = ok[ok["arm"] == "text"]
    ratio, text_recall, text_tokens = [], [], []
    for _, row in summary.iterrows():
        image = ok[(ok["reader_id"] == row["reader_id"])
                   & (ok["target_model"] == row["target_model"])
                   & (ok["strategy"] == row["strategy"]) & (ok["policy"] == row["policy"])
                   & (ok["arm"] == row["arm"]) & (ok["shape"] == row["shape"])
                   & (ok["frame_size"] == row["frame_size"])
                   & (ok["shape_requested"] == row["shape_requested"])
                   & _same(ok["context_window"], row["context_window"])]
        base = text[(text["target_model"] == row["target_model"])
                    & (text["reader_id"] == row["reader_id"])]
        if base.empty:  # a text arm answered by another reader still measures text tokens
            base = text[text["target_model"] == row["target_model"]]
        img_q = image.groupby(UNIT)["predicted_prompt_tokens"].mean()
        txt_q = base.groupby(UNIT)["predicted_prompt_tokens"].mean()
        shared = img_q.index.intersection(txt_q.index)
        if len(shared) == 0:
            ratio.append(np.nan), text_tokens.append(np.nan), text_recall.append(np.nan)
            continue
        ratio.append(txt_q[shared].sum() / img_q[shared].sum())
        text_tokens.append(txt_q[shared].mean())
        answered = base[base["ok"]] if "ok" in base else base
        text_recall.append(answered.groupby(UNIT)["correct"].mean().reindex(shared).mean()
                           if len(answered) else np.nan)
    summary["text_predicted_prompt_tokens_same_questions"] = text_tokens
    summary["compression_vs_text"] = ratio
    summary["compression_baseline"] = baseline_name
    summary["text_recall_same_questions"] = text_recall
    return summary


def _same(column: pd.Series, value: object) -> pd.Series:
    """``column == value`` where NaN/None equals NaN/None (old rows carry no window)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return column.isna()
    return column == value


def _add_cer(summary: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """Mean character error rate of transcription rows for the same target model and shape."""
    tr = df[(df["reader"] == "transcribe") & df["ok"]]
    if tr.empty:
        summary["cer"] = np.nan
        return summary
    cer = tr.groupby(["target_model", "shape", "frame_size"])["cer"].mean().rename("cer")
    return summary.join(cer, on=["target_model", "shape", "frame_size"])


def pareto_mask(cost: np.ndarray, recall: np.ndarray) -> np.ndarray:
    """True where no other point costs no more and recalls no less (one of them strictly)."""
    cost, recall = np.asarray(cost, float), np.asarray(recall, float)
    mask = np.zeros(len(cost), dtype=bool)
    for i in range(len(cost)):
        if not (np.isfinite(cost[i]) and np.isfinite(recall[i])):
            continue
        dominated = ((cost <= cost[i]) & (recall >= recall[i])
                     & ((cost < cost[i]) | (recall > recall[i])))
        mask[i] = not dominated.any()
    return mask


# ---------------------------------------------------------------------------------------------
# Winner per model line


@dataclass(frozen=True)
class Candidate:
    shape: str
    frame_size: int
    n_questions: int
    recall: float
    recall_lo: float
    recall_hi: float
    predicted_prompt_tokens: float  # the question requests' prompt tokens
    #: billed tokens per question: the prompt tokens plus the share of the compaction calls
    billed_tokens: float
    recall_per_1k_tokens: float  # recall per 1k billed tokens (compaction calls included)
    #: paired comparison with the best-recall shape: questions shared, interval of the
    #: difference (best - this), share of resamples where this shape was at least as good
    shared_questions: int = 0
    diff_lo: float = float("nan")
    diff_hi: float = float("nan")
    p_not_below: float = float("nan")
    significantly_below: bool = False
    #: the frames this shape's contexts carried, by the shape drawn, per context (the foveated
    #: middle is drawn in the dense companion whatever was asked for); "" for schema-1 rows
    measured_on: str = ""

    @property
    def label(self) -> str:
        return shape_label(self.shape, self.frame_size)


def shape_label(shape: str, frame_size: int) -> str:
    research = NAMED_SHAPES[shape].frame_size if shape in NAMED_SHAPES else None
    return shape if frame_size == research else f"{shape}@{frame_size}"


@dataclass(frozen=True)
class Decision:
    """The winning shape of one model line under ``WINNER_RULE``, with everything it rests on."""

    line: str
    reader_id: str
    target_models: tuple[str, ...]
    winner: Candidate
    best_recall: Candidate
    candidates: tuple[Candidate, ...]
    tie: tuple[str, ...]  # labels of every shape not significantly below the best (if > 1)
    flags: tuple[str, ...]
    seeds: tuple[int, ...]
    errors: int = 0
    notes: tuple[str, ...] = field(default=())
    sessions: int = 0  # sessions (model, dataset, item) the winner was measured on
    rows: int = 0  # records the decision was made from (every shape, errors included)

    @property
    def thin(self) -> bool:
        return bool(self.flags)

    def to_row(self) -> dict:
        w = self.winner
        return {
            "line": self.line, "reader_id": self.reader_id,
            "reader_label": reader_label(self.reader_id),
            "target_models": ",".join(self.target_models), "winner": w.shape,
            "winner_frame_size": w.frame_size, "recall": w.recall, "recall_lo": w.recall_lo,
            "recall_hi": w.recall_hi, "predicted_prompt_tokens": w.predicted_prompt_tokens,
            "billed_tokens": w.billed_tokens,
            "recall_per_1k_tokens": w.recall_per_1k_tokens, "n_questions": w.n_questions,
            "best_recall_shape": self.best_recall.label, "tie": ",".join(self.tie),
            "not_significantly_below_best": ",".join(
                c.label for c in self.candidates if not c.significantly_below),
            "significantly_below_best": ",".join(
                c.label for c in self.candidates if c.significantly_below),
            "flags": "; ".join(self.flags), "seeds": ",".join(map(str, self.seeds)),
            "measured_on": w.measured_on, "notes": " | ".join(self.notes),
            "sessions": self.sessions,
        }


def choose_winners(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05,
                   min_questions: int = 30) -> list[Decision]:
    """One decision per (model line, reader) under ``WINNER_RULE``.

    Snapcompact rows take part only when production would send their context (``production``
    is ``valid``), at the largest window measured for the line; each shape is the one the arm
    asked for (``shape_decided``). Rows production would not send are listed in the decision's
    notes and never ranked. Schema-1 rows (rendered items, reader image_qa) are compared as
    they are.
    """
    _check_settings(n_boot, alpha)
    snap = df[df["strategy"] == "snapcompact"]
    if snap.empty:
        image = df[(df["reader"] == "image_qa") & (df["arm"] == "image")]
        return [_decide(line, reader, rows, n_boot, seed, alpha, min_questions)
                for (line, reader), rows in image.groupby(["line", "reader_id"], sort=True)]
    valid = snap[snap["production"] == PRODUCTION_VALID]
    decisions = []
    for (line, reader), rows in valid.groupby(["line", "reader_id"], sort=True):
        windows = pd.to_numeric(rows["context_window"], errors="coerce")
        notes = []
        if windows.notna().any():
            largest = windows.max()
            smaller = sorted({int(w) for w in windows.dropna() if w != largest})
            rows = rows[windows == largest]
            if smaller:
                notes.append(f"decided at the {int(largest):,}-token window; production-valid "
                             f"rows at {', '.join(f'{w:,}' for w in smaller)} not ranked here")
        rows = rows.assign(shape=rows["shape_decided"],
                           frame_size=rows.groupby("shape_decided")["frame_size"]
                           .transform("max"))
        excluded = snap[(snap["line"] == line) & (snap["reader_id"] == reader)
                        & (snap["production"] != PRODUCTION_VALID)]
        for label, part in excluded.assign(label=arm_labels(excluded)).groupby("label"):
            why = "; ".join(sorted({str(n) for n in part["production_note"].dropna()}))
            notes.append(f"not ranked: {label} ({part['item_id'].nunique()} context(s) "
                         f"production would not send: {why or part['production'].iloc[0]})")
        decision = _decide(line, reader, rows, n_boot, seed, alpha, min_questions)
        decisions.append(replace(decision, notes=decision.notes + tuple(notes)))
    return decisions


def _measured_on(rows: pd.DataFrame) -> str:
    """Frames by drawn shape per context, e.g. ``11on16-bw 6, 8on16-bw 11 (companion)``."""
    if "frames_by_shape" not in rows:
        return ""
    contexts = rows.drop_duplicates("item_id")
    counts = _counts(contexts["frames_by_shape"])
    asked = str(rows["shape"].iloc[0])
    text = format_counts(counts, len(contexts))
    if not counts:
        return "no frames (text only)"
    others = [n for n in counts if n != asked]
    if others:
        text += f" per context ({', '.join(others)}: the foveated companion or another tier)"
    else:
        text += " per context"
    return text


def _decide(line: str, reader: str, rows: pd.DataFrame, n_boot: int, seed: int, alpha: float,
            min_questions: int) -> Decision:
    ok = rows[rows["ok"]]
    unit = ["target_model", *UNIT]
    per_q = ok.groupby(["shape", "frame_size", *unit])["correct"].mean()
    candidates: list[Candidate] = []
    scores: dict[tuple[str, int], pd.Series] = {}
    for (shape, size), part in ok.groupby(["shape", "frame_size"], sort=True):
        s = per_q.loc[(shape, size)]
        scores[(shape, size)] = s
        recall_lo, recall_hi = wilson_interval(float(s.mean()), len(s), alpha)
        tokens = part["predicted_prompt_tokens"].mean()
        billed = part["billed_tokens"].mean()
        candidates.append(Candidate(
            shape=shape, frame_size=int(size), n_questions=len(s), recall=float(s.mean()),
            recall_lo=recall_lo, recall_hi=recall_hi, predicted_prompt_tokens=float(tokens),
            billed_tokens=float(billed),
            recall_per_1k_tokens=_per_1k(float(s.mean()), float(billed)),
            measured_on=_measured_on(part)))
    if not candidates:
        raise ValueError(f"model line {line!r} ({reader}): every request errored")
    best = max(candidates, key=lambda c: (c.recall, -c.billed_tokens, c.label))
    compared = []
    for c in candidates:
        a, b = scores[(best.shape, best.frame_size)], scores[(c.shape, c.frame_size)]
        shared = a.index.intersection(b.index)
        if c is best:
            compared.append(_with(c, shared_questions=len(shared), diff_lo=0.0, diff_hi=0.0,
                                  p_not_below=1.0))
            continue
        if len(shared) == 0:
            compared.append(_with(c, shared_questions=0))
            continue
        diff = (a[shared] - b[shared]).to_numpy()
        # the unit of evidence is the session: resample sessions, not questions
        sessions = list(zip(*(shared.get_level_values(k) for k in SESSION_UNIT), strict=True))
        boots = session_draws(sessions, diff, n_boot=n_boot,
                              seed=stable_seed(seed, line, reader, "paired", c.shape,
                                               c.frame_size) % 2**32)
        if boots is None:  # one session: no interval, so nothing is significantly below
            compared.append(_with(c, shared_questions=len(shared)))
            continue
        lo, hi = percentile_interval(boots, alpha)
        compared.append(_with(c, shared_questions=len(shared), diff_lo=float(lo), diff_hi=float(hi),
                              p_not_below=float((boots <= 0).mean()),
                              significantly_below=bool(lo > 0)))
    eligible = [c for c in compared if not c.significantly_below and c.shared_questions > 0]
    winner = max(eligible, key=lambda c: (c.recall_per_1k_tokens, c.recall,
                                          -c.billed_tokens, c.label))
    tie = tuple(c.label for c in eligible) if len(eligible) > 1 else ()
    seeds = tuple(sorted(int(s) for s in rows["seed"].unique()))
    errors = int((~rows["ok"]).sum())
    flags = []
    if winner.n_questions < min_questions:
        flags.append(f"few questions: {winner.label} rests on {winner.n_questions} "
                     f"(< {min_questions})")
    sessions = int(ok[ok["shape"] == winner.shape].drop_duplicates(SESSION_UNIT).shape[0])
    if sessions < 2:
        flags.append(f"{sessions} session: no session-level interval")
    if len(seeds) == 1:
        flags.append(f"single seed ({seeds[0]})")
    if errors:
        flags.append(f"{errors} errored request(s) excluded")
    overlapping = [c.label for c in compared if c is not winner
                   and c.recall_lo <= winner.recall_hi and winner.recall_lo <= c.recall_hi]
    if overlapping:
        flags.append(f"recall interval of {winner.label} overlaps: {', '.join(overlapping)}")
    if len(compared) == 1:
        flags.append("only one shape measured")
    uncompared = [c.label for c in compared if c.shared_questions == 0]
    if uncompared:
        flags.append(f"no questions shared with the best shape: {', '.join(uncompared)}")
    notes = []
    if tie:
        notes.append(f"tie: {len(tie)} shapes not significantly below the best recall "
                     f"({', '.join(tie)}); {winner.label} has the most recall per 1k tokens")
    if winner.label != best.label:
        notes.append(f"{winner.label} chosen over the best-recall shape {best.label} "
                     f"(recall {best.recall:.3f} vs {winner.recall:.3f}, not significantly higher)")
    dropped = [c for c in compared if c.significantly_below
               and c.recall_per_1k_tokens > winner.recall_per_1k_tokens]
    for c in dropped:
        notes.append(f"{c.label} has more recall per token ({c.recall_per_1k_tokens:.3f}/1k) but "
                     f"significantly lower recall ({c.recall:.3f}; difference interval "
                     f"[{c.diff_lo:.3f}, {c.diff_hi:.3f}]): not chosen")
    if line == UNMATCHED_LINE:
        notes.append("no row of the shape table matches these models: not written; "
                     "add a rule by hand")
    return Decision(
        line=line, reader_id=reader,
        target_models=tuple(sorted(rows["target_model"].unique())), winner=winner,
        best_recall=next(c for c in compared if c.label == best.label),
        candidates=tuple(sorted(compared, key=lambda c: c.billed_tokens)), tie=tie,
        flags=tuple(flags), seeds=seeds, errors=errors, notes=tuple(notes), sessions=sessions,
        rows=len(rows))


def _with(c: Candidate, **changes) -> Candidate:
    return replace(c, **changes)
