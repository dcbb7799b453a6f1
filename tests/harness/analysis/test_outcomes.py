"""The outcome tables: correct / abstained / wrong per reader, arm and probe, silent wrong and
confabulated columns, an old row's labels. Counts are worked by hand from the rows below."""

from __future__ import annotations

import json

import pandas as pd

from evals.analysis.outcomes import outcome_frame, outcome_table, side_by_side

TOLD = {"note": "x", "reader_label": "told evidence (legibility floor)"}


def _row(item, probe, correct, abstained, model="snapocr/context-qa", extra=TOLD, depth=0.1,
         place="user"):
    meta = {"place": place} if probe is None else {"probe": probe, "place": place}
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
    _row("s2", "exact", False, True, model="snapblind/context-qa", extra={},
         place="tool_result"),
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


def _model_row(item, probe, correct, abstained, output, reasoning):
    return {**_row(item, probe, correct, abstained, model="openai/gpt-5", extra={}),
            "reported_completion_tokens": output, "reported_reasoning_tokens": reasoning}


MODEL_ROWS = [
    _model_row("s1", "exact", True, False, 10, 4),
    _model_row("s1", "exact", False, False, 20, 6),
    _model_row("s2", "exact", False, True, 30, 8),
]


def test_a_models_output_and_reasoning_tokens_are_billed_per_question_and_per_session():
    told = {**_row("s1", "exact", True, False), "reported_completion_tokens": 7,
            "reported_reasoning_tokens": None}
    table = outcome_table(outcome_frame(pd.DataFrame([*MODEL_ROWS, told])), n_boot=200)
    rows = {r["reader_name"]: r for r in table.to_dict("records")}
    model = rows["model"]
    # per question: (10 + 20 + 30) / 3 = 20; per session: s1 10 + 20 = 30, s2 30 -> mean 30
    assert (model["output tok/q"], model["output tok/session"]) == ("20.0", "30")
    # reasoning: (4 + 6 + 8) / 3 = 6; sessions s1 4 + 6 = 10, s2 8 -> mean 9
    assert (model["reasoning tok/q"], model["reasoning tok/session"]) == ("6.0", "9")
    assert model["production"] == "bound"  # truncate rows: a bound, never ranked
    # the offline reader's "usage" is an echo of its answer, not a bill
    told_row = rows["told evidence (legibility floor)"]
    assert (told_row["output tok/q"], told_row["reasoning tok/session"]) == ("-", "-")


def test_the_written_outcome_files_are_made_again_from_their_committed_records(tmp_path):
    from evals.analysis.outcomes import rebuild_outcomes, write_outcomes

    frame = pd.DataFrame([*ROWS, *MODEL_ROWS]).assign(
        experiment="default", question_id=[f"q{i}" for i in range(len(ROWS) + 3)])
    write_outcomes(frame, tmp_path, n_boot=300, seed=4)
    assert "Session bootstrap: 300 resamples, seed 4." in (tmp_path / "outcomes.md").read_text()
    rebuilt = rebuild_outcomes(tmp_path)
    assert set(rebuilt) == {"outcomes.md", "outcomes.csv", "outcomes_by_depth_bin.csv",
                            "outcomes_by_length_bin.csv", "outcomes_by_evidence_where.csv",
                            "outcomes_by_content_type.csv"}
    assert all((tmp_path / name).read_text() == text for name, text in rebuilt.items())
    edited = (tmp_path / "outcomes.csv").read_text().replace("33%", "34%")
    assert edited != rebuilt["outcomes.csv"]  # a hand edit would show


def test_recall_tables_count_the_stated_probes_only():
    from evals.analysis.outcomes import stated_probes

    kept = stated_probes(pd.DataFrame(ROWS))
    # ROWS: three exact, two never-stated, one old row without a kind (read as exact)
    assert len(kept) == 4
    assert not any('"never-stated"' in m for m in kept["question_meta"])


def test_recall_by_content_type_reads_the_evidence_place():
    table = side_by_side(outcome_frame(pd.DataFrame(ROWS)), "content_type")
    cells = {(r["probe"], r["content_type"]): r for r in table.to_dict("records")}
    # blind exact: s1 correct + s1 wrong in user turns (prose), s2 abstained in a tool result
    assert cells[("exact", "prose")]["blind (BM25 retrieval)"] == "1/0/1"
    assert cells[("exact", "logs")]["blind (BM25 retrieval)"] == "0/1/0"
