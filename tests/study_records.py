"""A tiny pre-registered study's records, written by hand (tests of evals.analysis.study).

Three seeds of configs/study/recommended_rerun.yaml's draw, both arms, both readers, four
questions a session; the tests work their expected figures out from the table below.
"""

from __future__ import annotations

import json

import pandas as pd

from evals.blind.provider import BLIND_LABEL, TOLD_LABEL

__all__ = ["SESSIONS", "study_records"]

# Per seed: the baseline's verdict and, per question (kind, discarded by the baseline), the
# told reader's outcome for (baseline, treatment). c = correct, a = abstained, w = wrong.
SESSIONS = {
    2001: ("valid", [("exact", True, "a", "c"), ("gist", True, "c", "c"),
                     ("exact", False, "c", "c"), ("never-stated", False, "c", "w")]),
    2002: ("valid", [("exact", True, "w", "c"), ("gist", True, "c", "a"),
                     ("exact", False, "c", "w"), ("never-stated", False, "c", "c")]),
    2003: ("stand-in", [("exact", True, "a", "c"), ("gist", True, "a", "c"),
                        ("exact", False, "c", "c"), ("never-stated", False, "c", "c")]),
}
BILLED = {"production": 100_000.0, "recommended": 90_000.0}
SESSION_COST = {(2001, "production"): 4.0, (2001, "recommended"): 5.0,
                (2002, "production"): 3.0, (2002, "recommended"): 3.5,
                (2003, "production"): 2.0, (2003, "recommended"): 2.5}


def _row(seed: int, research: str, reader: str, q: int, kind: str, discarded: bool,
         outcome: str, verdict: str) -> dict:
    label = TOLD_LABEL if reader == "qa" else BLIND_LABEL
    model = "snapocr/context-qa" if reader == "qa" else "snapblind/context-qa"
    return {"seed": seed, "item_id": f"agent_session-{seed}", "question_id": f"q{q}",
            "research": research, "model": model, "ok": True,
            "extra": json.dumps({"reader_label": label}), "strategy": "snapcompact",
            "policy": "foveated", "shape": "11on16-bw", "frame_size": 1568,
            "shape_requested": "auto", "context_window": 200_000, "production": verdict,
            "question_meta": json.dumps({"probe": kind, "depth": 0.5, "place": "user"}),
            "correct": outcome == "c", "abstained": outcome == "a", "depth": 0.5,
            "history_chars": 1_000_000, "discarded": discarded,
            "evidence_round": 1 if discarded else 0,
            "billed_tokens": BILLED[research.split("-")[0]],
            "session_cost_usd": SESSION_COST[(seed, research.split("-")[0])],
            "code_sha256": "c0de", "git_sha": "abc"}


def study_records(seeds=(2001, 2002, 2003), blind_same=True) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        verdict, questions = SESSIONS[seed]
        for reader in ("qa", "blind"):
            for q, (kind, disc, out_b, out_t) in enumerate(questions):
                # the blind reader: the baseline's outcomes as told, the treatment wrong on all
                t = out_t if reader == "qa" or blind_same else "w"
                rows.append(_row(seed, "production", reader, q, kind, disc, out_b, verdict))
                rows.append(_row(seed, "recommended-1a2b", reader, q, kind, disc, t, "valid"))
    return pd.DataFrame(rows)
