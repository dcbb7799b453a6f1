"""The outcome tables: correct / abstained / wrong per reader, arm and probe, silent wrong and
confabulated columns, an old row's labels. Counts are worked by hand from the rows below."""

from __future__ import annotations

import json

import pandas as pd

from evals.analysis.outcomes import outcome_frame, outcome_table, side_by_side

TOLD = {"note": "x", "reader_label": "told evidence (legibility floor)"}


def _row(item, probe, correct, abstained, model="snapocr/context-qa", extra=TOLD, depth=0.1):
    meta = {} if probe is None else {"probe": probe}
    return {"ok": True, "model": model, "extra": json.dumps(extra),
            "question_meta": json.dumps({**meta, "depth": depth}), "correct": correct,
            "abstained": abstained, "item_id": item, "depth": depth, "history_chars": 50_000,
            "discarded": True, "strategy": "truncate", "policy": "", "shape": "text",
            "frame_size": 0, "shape_requested": "", "context_window": 16000,
            "research": "production"}


ROWS = [
    # blind reader (no label in extra: read from its model id), two sessions
    _row("s1", "exact", True, False, model="snapblind/context-qa", extra={}),
    _row("s1", "exact", False, False, model="snapblind/context-qa", extra={}),   # silent wrong
    _row("s2", "exact", False, True, model="snapblind/context-qa", extra={}),
    _row("s2", "never-stated", False, False, model="snapblind/context-qa", extra={}),  # confab.
    _row("s1", "never-stated", True, True, model="snapblind/context-qa", extra={}, depth=0.9),
    # the told reader, one old row without a kind
    _row("s1", None, True, False),
]


def test_outcomes_silent_wrong_and_confabulations_are_counted_apart():
    table = outcome_table(outcome_frame(pd.DataFrame(ROWS)), n_boot=200)
    rows = {(r["reader_name"], r["probe"]): r for r in table.to_dict("records")}
    exact = rows[("blind (BM25 retrieval)", "exact")]
    assert (exact["n"], exact["sessions"], exact["silent wrong"], exact["confabulated"]) == \
        (3, 2, 1, 0)
    assert exact["correct"].startswith("33%")
    never = rows[("blind (BM25 retrieval)", "never-stated")]
    # a correct abstention is "correct"; the value given is a confabulation, not silent wrong
    assert (never["n"], never["silent wrong"], never["confabulated"]) == (2, 0, 1)
    assert never["correct"].startswith("50%") and never["abstained"].startswith("0%")
    old = rows[("told evidence (legibility floor)", "exact (old default)")]
    assert old["correct"] == "100% (1 session)"


def test_bins_put_the_readers_side_by_side():
    table = side_by_side(outcome_frame(pd.DataFrame(ROWS)), "depth_bin")
    cells = {(r["probe"], r["depth_bin"]): r for r in table.to_dict("records")}
    assert cells[("exact", "0-0.25")]["blind (BM25 retrieval)"] == "1/1/1"
    assert cells[("never-stated", "0-0.25")]["blind (BM25 retrieval)"] == "0/0/1"
    assert cells[("never-stated", "0.75-1")]["blind (BM25 retrieval)"] == "1/0/0"
    assert cells[("exact (old default)", "0-0.25")]["told evidence (legibility floor)"] == "1/0/0"
