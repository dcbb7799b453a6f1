"""Recall per arm broken down by when the evidence was discarded and by where the fact sat.

Why a module: the per-shape summary pools every question; these two tables ask whether an
arm loses what a compaction discarded (by ``evidence_round``) and whether old facts fare worse
than recent ones (by the fact's depth in the session). The report and the plots read them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evals.analysis.aggregate import PRODUCTION_UNCHECKED, QA_READERS, arm_labels
from evals.analysis.intervals import wilson_interval
from evals.analysis.plot_marks import joined_interval
from evals.analysis.resampling import stable_seed
from evals.analysis.session_bootstrap import session_mean


def round_bucket(evidence_round: int) -> str:
    """Rounds in doubling buckets (0, 1, 2-3, 4-7, 8-15, ...): a long session compacts dozens
    of times, and one column per round would leave a question or two in each."""
    r = int(evidence_round)
    if r <= 1:
        return str(r)
    lo = 1 << (r.bit_length() - 1)
    return f"{lo}-{2 * lo - 1}"


#: The columns of :func:`recall_by_round`.
ROUND_COLUMNS = ["reader_id", "target_model", "arm_label", "production", "round_lo",
                 "evidence_rounds", "n", "recall", "n_sessions", "recall_lo", "recall_hi"]


def _bucket_interval(rows: pd.DataFrame, alpha: float = 0.05) -> pd.Series:
    """A bucket's sessions and recall interval: a cluster bootstrap over its sessions
    (dataset, seed, item) widened to Wilson's over its questions where narrower, or with one
    session Wilson's (:func:`evals.analysis.plot_marks.joined_interval`)."""
    sessions = list(zip(rows["dataset"], rows["seed"], rows["item_id"]))
    scores = rows["correct"].astype(float).to_numpy()
    by_session = session_mean(sessions, scores, seed=stable_seed(0, *rows.iloc[0][
        ["target_model", "arm_label", "round_lo"]]), alpha=alpha)
    lo, hi, _ = joined_interval((by_session.lo, by_session.hi),
                                wilson_interval(float(scores.mean()), len(scores), alpha),
                                by_session.n_sessions)
    return pd.Series({"n_sessions": by_session.n_sessions, "recall_lo": lo, "recall_hi": hi})


def recall_by_round(df: pd.DataFrame) -> pd.DataFrame:
    """Recall per arm and ``evidence_round`` bucket (0 = the evidence is still in the kept
    tail; see :func:`round_bucket`), with its n, sessions and interval
    (:func:`_bucket_interval`)."""
    ok = df[df["ok"] & df["reader"].isin(QA_READERS)].copy()
    if ok.empty:
        return pd.DataFrame(columns=ROUND_COLUMNS)
    ok["evidence_round"] = pd.to_numeric(ok["evidence_round"], errors="coerce").fillna(0)
    ok["arm_label"] = arm_labels(ok)
    ok["round_lo"] = [0 if r <= 1 else 1 << (int(r).bit_length() - 1) for r in ok["evidence_round"]]
    ok["evidence_rounds"] = ok["evidence_round"].map(round_bucket)
    if "production" not in ok:
        ok["production"] = PRODUCTION_UNCHECKED
    keys = ["reader_id", "target_model", "arm_label", "production", "round_lo",
            "evidence_rounds"]
    out = (ok.groupby(keys)["correct"].agg(["size", "mean"]).reset_index()
           .rename(columns={"size": "n", "mean": "recall"}))
    intervals = ok.groupby(keys)[["dataset", "seed", "item_id", "correct", "target_model",
                                  "arm_label", "round_lo"]].apply(_bucket_interval)
    out = out.merge(intervals.reset_index(), on=keys, how="left")
    out["round_lo"] = out["round_lo"].astype(int)
    out["n_sessions"] = out["n_sessions"].astype(int)
    return out[ROUND_COLUMNS]


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
