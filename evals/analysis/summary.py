"""Per arm (reader, target model, shape, frame size, window, verdict): recall with intervals,
the bill, compression against the text baseline, what production did, and the frontier.

Why a module: the summary table is what the report, the plots and the notebooks read; its
columns are defined here once, from the tidy table (:func:`evals.analysis.aggregate.records_frame`).

* Recall and exact match are proportions of questions: their intervals are Wilson score
  intervals (``evals.analysis.intervals``), which stay informative at 0/n where a bootstrap
  collapses. F1 is not binary: its interval is a percentile bootstrap over the question units
  (``n_boot`` resamples; :mod:`evals.analysis.resampling`).
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
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from evals.analysis.aggregate import (
    BASELINE_STRATEGY,
    GROUP_COLUMNS,
    PRODUCTION_RANKED,
    QA_READERS,
    format_counts,
    reader_label,
    summed_counts,
)
from evals.analysis.intervals import wilson_interval
from evals.analysis.resampling import (
    SESSION_UNIT,
    UNIT,
    bootstrap_means,
    check_settings,
    percentile_interval,
    stable_seed,
)
from evals.analysis.session_bootstrap import session_mean
from evals.send.price_map import price_of
from snapcompact.billing import NEXT_TURNS, next_turns_units
from snapcompact.pricing import prompt_cache_rule


def _question_scores(rows: pd.DataFrame, unit: list[str]) -> pd.DataFrame:
    """Scores per question unit, seeds averaged."""
    return rows.groupby(unit, sort=True)[["correct", "em", "f1"]].mean()


def summarize(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0,
              alpha: float = 0.05) -> pd.DataFrame:
    """Per (reader, target model, shape, frame size): recall with intervals, cost, compression."""
    check_settings(n_boot, alpha)
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
        by_session = session_recall(scores, n_boot, stable_seed(seed, "sessions", *seed_key),
                                    alpha)
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
            n_sessions=by_session.n_sessions, recall_session_lo=by_session.lo,
            recall_session_hi=by_session.hi,
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
        row.update(_session_bill(rows, n_boot, stable_seed(seed, "session bill", *seed_key),
                                 alpha))
        row.update(_what_production_did(rows))
        row.update(_sent_identity(rows))
        # a skipped context still has a bill: the uncompacted history, for the reader
        skipped = rows[rows["skipped"].notna()]
        row["tokens_skipped_context"] = (skipped["predicted_prompt_tokens"].mean()
                                         if len(skipped) else np.nan)
        row.update(_next_turns(rows, ok))
        row["recall_per_1k_tokens"] = per_1k(row["recall"], row["billed_tokens"])
        row["recall_per_1k_reported_tokens"] = per_1k(row["recall"], row["reported_prompt_tokens"])
        out.append(row)
    summary = pd.DataFrame(out)
    summary = _add_compression(summary, qa[qa["ok"]], qa)
    summary = _add_cer(summary, df)
    summary["on_frontier"] = False
    # the frontier is drawn over the ranked arms only (what production sends): never over the
    # bounds, the stand-in summaries or contexts production would not send
    ranked = summary[summary["production"].isin(PRODUCTION_RANKED)]
    for idx in ranked.groupby(["reader_id", "target_model"]).groups.values():
        part = summary.loc[idx]
        summary.loc[idx, "on_frontier"] = pareto_mask(part["billed_tokens"].to_numpy(),
                                                      part["recall"].to_numpy())
    return summary.sort_values(["reader_id", "target_model", "strategy", "policy",
                                "predicted_prompt_tokens"], ignore_index=True)


def session_recall(scores: pd.DataFrame, n_boot: int, seed: int, alpha: float):
    """Recall over the questions of ``scores`` (indexed by ``UNIT``) with a cluster bootstrap
    over their sessions (:func:`evals.analysis.session_bootstrap.session_mean`): the interval a
    comparison between arms rests on; nan below two sessions."""
    session_levels = [c for c in SESSION_UNIT if c in UNIT]
    sessions = (list(zip(*(scores.index.get_level_values(c) for c in session_levels)))
                if len(scores) else [])
    return session_mean(sessions, scores["correct"].to_numpy(dtype=float) if len(scores)
                        else [], n_boot=max(n_boot, 100), seed=seed, alpha=alpha)


#: The summary columns of the session-level interval (:func:`session_recall`).
SESSION_COLUMNS = ["n_sessions", "recall_session_lo", "recall_session_hi"]


def with_session_intervals(summary: pd.DataFrame, df: pd.DataFrame, n_boot: int = 2000,
                           seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """``summary`` with its session-level recall intervals, computed from the records ``df``
    when a table written before they existed lacks them (the figures compare arms on them)."""
    if all(c in summary for c in SESSION_COLUMNS):
        return summary
    fresh = summarize(df, n_boot=n_boot, seed=seed, alpha=alpha)[GROUP_COLUMNS + SESSION_COLUMNS]
    keys = [c for c in GROUP_COLUMNS if c in summary]
    merged = summary.drop(columns=[c for c in SESSION_COLUMNS if c in summary]).merge(
        fresh.drop(columns=[c for c in GROUP_COLUMNS if c not in keys]), on=keys, how="left")
    return merged.set_axis(summary.index)


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


#: The session bill's columns: the mean over the arm's sessions and its session-level interval.
SESSION_BILL_COLUMNS = [f"{name}{end}" for name in ("session_cost_usd", "session_billed_tokens")
                        for end in ("", "_lo", "_hi")]


def _session_bill(rows: pd.DataFrame, n_boot: int, seed: int, alpha: float
                  ) -> dict[str, float]:
    """What a session of the arm costs from its first compaction on (the records'
    ``session_cost_usd`` and ``session_billed_tokens``, one figure per session): the mean over
    sessions with a cluster-bootstrap interval (each session one observation; nan below two
    sessions, or where the rows predate the session bill)."""
    out = dict.fromkeys(SESSION_BILL_COLUMNS, float("nan"))
    keys = [c for c in SESSION_UNIT if c in rows]
    contexts = rows.drop_duplicates(keys)
    for name in ("session_cost_usd", "session_billed_tokens"):
        if name not in contexts:
            continue
        values = pd.to_numeric(contexts[name], errors="coerce")
        kept = contexts[values.notna()]
        if kept.empty:
            continue
        sessions = list(zip(*(kept[c] for c in keys)))
        stat = session_mean(sessions, values[values.notna()].to_numpy(dtype=float),
                            n_boot=max(n_boot, 100), seed=seed, alpha=alpha)
        out.update({name: stat.mean, f"{name}_lo": stat.lo, f"{name}_hi": stat.hi})
    return out


def _sent_identity(rows: pd.DataFrame) -> dict[str, object]:
    """What the arm sent, as one key (arms with equal keys sent byte-identical contexts on
    every item), and whether any of its frames was drawn in the shape it asked for."""
    hashes = (sorted({str(h) for h in rows["sent_hash"].dropna() if str(h)})
              if "sent_hash" in rows else [])
    key = hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16] if hashes else ""
    drawn = rows["shape_asked_drawn"].dropna() if "shape_asked_drawn" in rows else pd.Series()
    measured = bool(drawn.astype(bool).any()) if len(drawn) else None
    asked = sorted({str(s) for s in rows.get("shape_asked", pd.Series(dtype=object)).dropna()
                    if str(s)})
    name = "/".join(asked) or "the shape it asks for"
    return {"sent_key": key, "shape_asked_drawn": measured, "shape_asked_names": name,
            "shape_note": shape_note(rows, name) if measured is False else ""}


def shape_note(rows: pd.DataFrame, name: str) -> str:
    """What an arm that drew no frame in the shape it asked for (``name``) measured instead:
    ``no frame drawn in 6x6u-bw (drawn: no frame): recall is not a measurement of 6x6u-bw``."""
    contexts = rows.drop_duplicates("item_id")
    drawn = format_counts(summed_counts(contexts.get("frames_by_shape", ())), len(contexts))
    drawn = "no frame" if drawn == "-" else f"{drawn} per context"
    return (f"no frame drawn in {name} (drawn: {drawn}): recall is not a "
            f"measurement of {name}")


def same_context_groups(summary: pd.DataFrame) -> list[list[int]]:
    """Index groups of summary rows (same reader and target) that sent the same contexts."""
    if "sent_key" not in summary:
        return []
    keyed = summary[summary["sent_key"].astype(str) != ""]
    groups = keyed.groupby(["reader_id", "target_model", "sent_key"], sort=True).groups
    return [list(idx) for idx in groups.values() if len(idx) > 1]


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
        "methods_per_context": format_counts(summed_counts(contexts.get("methods_used", ())), n),
        "frames_by_shape_per_context": format_counts(
            summed_counts(contexts.get("frames_by_shape", ())), n),
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
    the target (snapcompact.billing.next_turns): uncached, with the prompt cache and the arm's
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


def per_1k(recall: float, tokens: float) -> float:
    if not np.isfinite(tokens) or tokens <= 0 or not np.isfinite(recall):
        return float("nan")
    return 1000.0 * recall / tokens


#: ``compression_baseline`` values: what an arm's compression is taken against.
BASELINE_FULL = "full"
BASELINE_UNCOMPACTED = "uncompacted history (full skipped: over the window)"
BASELINE_COMPUTED = "the session's full history (no full arm: computed from the session)"
BASELINE_NONE = ("none: no full arm, and the rows predate full_history_prompt_tokens: rerun "
                 "to record it")


def _add_compression(summary: pd.DataFrame, ok: pd.DataFrame,
                     every: pd.DataFrame | None = None) -> pd.DataFrame:
    """The session's own full history's tokens / this arm's, on the arm's questions.

    The baseline is each question's ``full`` request: the whole history of the same session as
    text plus the question, billed for the same target. Rows carry it
    (``full_history_prompt_tokens``: the ``full`` arm's context, or computed from the session
    when the run has none); older rows are matched with the ``full`` rows of the same session and
    question (answered, or skipped over the window: they still carry the history's bill). It is
    never another compacted arm: without either the compression is NaN and
    ``compression_baseline`` says why. ``text_recall_same_questions`` is ``full``'s recall on
    those questions (NaN when ``full`` was not asked).
    """
    every = ok if every is None else every
    # schema-1 rows (no strategy: rendered items, nothing compacted) have their whole text as
    # the text arm
    whole = ((every["strategy"] == BASELINE_STRATEGY)
             | ((every["strategy"].fillna("") == "") & (every["arm"] == "text")))
    full_rows = every[whole & every["error"].isna()]
    answered = full_rows[full_rows["skipped"].isna()]
    ratio, text_recall, text_tokens, baselines = [], [], [], []
    for _, row in summary.iterrows():
        image = ok[(ok["reader_id"] == row["reader_id"])
                   & (ok["target_model"] == row["target_model"])
                   & (ok["strategy"] == row["strategy"]) & (ok["policy"] == row["policy"])
                   & (ok["arm"] == row["arm"]) & (ok["shape"] == row["shape"])
                   & (ok["frame_size"] == row["frame_size"])
                   & (ok["shape_requested"] == row["shape_requested"])
                   & _same(ok["context_window"], row["context_window"])]
        arm_q = image.groupby(UNIT)["predicted_prompt_tokens"].mean()
        full_q, baseline = _full_tokens(image, full_rows, row)
        shared = arm_q.index.intersection(full_q.index)
        if len(shared) == 0:
            ratio.append(np.nan), text_tokens.append(np.nan)
            baselines.append(BASELINE_NONE if len(arm_q) else "")
        else:
            ratio.append(full_q[shared].sum() / arm_q[shared].sum())
            text_tokens.append(full_q[shared].mean())
            baselines.append(baseline)
        mine = answered[(answered["target_model"] == row["target_model"])
                         & (answered["reader_id"] == row["reader_id"])]
        text_recall.append(mine.groupby(UNIT)["correct"].mean().reindex(shared).mean()
                           if len(mine) and len(shared) else np.nan)
    summary["text_predicted_prompt_tokens_same_questions"] = text_tokens
    summary["compression_vs_text"] = ratio
    summary["compression_baseline"] = baselines
    summary["text_recall_same_questions"] = text_recall
    return summary


def _full_tokens(image: pd.DataFrame, full_rows: pd.DataFrame,
                 row: pd.Series) -> tuple[pd.Series, str]:
    """Per question of the arm (``image``), the tokens of the same session's ``full`` request,
    and which baseline that is (one of the ``BASELINE_*`` names)."""
    column = "full_history_prompt_tokens"
    recorded = (pd.to_numeric(image[column], errors="coerce") if column in image
                else pd.Series(np.nan, index=image.index))
    same = full_rows[full_rows["target_model"] == row["target_model"]]
    if recorded.notna().all() and len(image):
        if same.empty:
            baseline = BASELINE_COMPUTED
        else:
            baseline = BASELINE_FULL if same["skipped"].isna().any() else BASELINE_UNCOMPACTED
        return image.assign(_full=recorded).groupby(UNIT)["_full"].mean(), baseline
    mine = same[same["reader_id"] == row["reader_id"]]
    if mine.empty:  # a full arm answered by another reader still measures the history's bill
        mine = same
    if mine.empty:
        return pd.Series(dtype=float), BASELINE_NONE
    baseline = BASELINE_FULL if mine["skipped"].isna().any() else BASELINE_UNCOMPACTED
    return mine.groupby(UNIT)["predicted_prompt_tokens"].mean(), baseline


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
