"""The outcome tables: correct / abstained / wrong per reader, arm and probe, silent wrong and
confabulated columns, an old row's labels. Counts are worked by hand from the rows below."""

from __future__ import annotations

import json

import pandas as pd

from evals.analysis.outcomes import outcome_frame, outcome_table, recall_by

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


def _cells(table, *bins):
    return {(r["arm_name"], r["production"], r["probe"], *(r[b] for b in bins), r["reader_name"]):
            r for r in table.to_dict("records")}


BLIND = "blind (BM25 retrieval)"
TOLD_NAME = "told evidence (legibility floor)"


def test_bins_count_each_reader_apart():
    table = recall_by(outcome_frame(pd.DataFrame(ROWS)), ["depth_bin"])
    cells = _cells(table, "depth_bin")
    arm = ("truncate @16k", "bound")
    exact = cells[(*arm, "exact", "0-0.25", BLIND)]
    assert (exact["n"], exact["sessions"], exact["correct"], exact["abstained"],
            exact["wrong"], exact["silent wrong"]) == (3, 2, 1, 1, 1, 1)
    never = cells[(*arm, "never-stated", "0-0.25", BLIND)]
    assert (never["correct"], never["abstained"], never["wrong"], never["confabulated"]) == \
        (0, 0, 1, 1)
    assert cells[(*arm, "never-stated", "0.75-1", BLIND)]["correct"] == 1
    assert cells[(*arm, "exact (old default)", "0-0.25", TOLD_NAME)]["correct"] == 1


def _verdict_row(item, correct, production, strategy="snapcompact", window=200_000, depth=0.1,
                 discarded=True, place="user", model="snapocr/context-qa", extra=TOLD):
    return {**_row(item, "exact", correct, False, model=model, extra=extra, depth=depth,
                   place=place),
            "strategy": strategy, "policy": "foveated", "shape": "8on22-bw", "frame_size": 0,
            "shape_requested": "8on22-bw", "context_window": window, "production": production,
            "discarded": discarded}


# One depth bin (0-0.25), one reader, two arms and, of the snapcompact arm at 200k, two
# verdicts: pooled, the bin would read 3 of 7 correct; apart, each cell has its own recall.
# history_chars 50,000 (a 12.5k-token session): the length bin "<25k tok".
VERDICT_ROWS = [
    _verdict_row("s1", True, "valid"),
    _verdict_row("s1", False, "valid"),
    _verdict_row("s2", False, "valid"),
    _verdict_row("s1", True, "stand-in"),
    _verdict_row("s2", True, "stand-in", window=32_000),
    _verdict_row("s1", False, "not sent", window=32_000),
    _verdict_row("s2", False, "not sent", window=32_000),
]


def test_depth_and_length_bins_are_per_arm_and_per_verdict_with_wilson_intervals():
    frame = outcome_frame(pd.DataFrame(VERDICT_ROWS))
    for column, bin_name in (("depth_bin", "0-0.25"), ("length_bin", "<25k tok")):
        cells = _cells(recall_by(frame, [column]), column)
        assert len(cells) == 4  # (200k, valid), (200k, stand-in), (32k, stand-in), (32k, not sent)
        arm200 = "snapcompact foveated 8on22-bw @200k"
        arm32 = "snapcompact foveated 8on22-bw @32k"
        valid = cells[(arm200, "valid", "exact", bin_name, TOLD_NAME)]
        # 1 of 3: the Wilson 95 % interval of 1/3, from the published formula worked by hand
        # (z = 1.95996; centre (1/3 + z^2/6) / (1 + z^2/3), half-width
        # z sqrt(2/27 + z^2/36) / (1 + z^2/3)): [0.0615, 0.7923]
        assert (valid["n"], valid["sessions"], valid["correct"], valid["recall"],
                valid["recall_lo"], valid["recall_hi"]) == (3, 2, 1, "0.333", "0.061", "0.792")
        stand_in = cells[(arm200, "stand-in", "exact", bin_name, TOLD_NAME)]
        # 1 of 1: [1 / (1 + z^2), 1] = [0.2065, 1]
        assert (stand_in["n"], stand_in["recall"], stand_in["recall_lo"],
                stand_in["recall_hi"]) == (1, "1.000", "0.207", "1.000")
        not_sent = cells[(arm32, "not sent", "exact", bin_name, TOLD_NAME)]
        # 0 of 2: [0, z^2 / (2 + z^2)] = [0, 0.6576]
        assert (not_sent["n"], not_sent["sessions"], not_sent["recall"],
                not_sent["recall_lo"], not_sent["recall_hi"]) == \
            (2, 2, "0.000", "0.000", "0.658")
        assert cells[(arm32, "stand-in", "exact", bin_name, TOLD_NAME)]["n"] == 1


def test_content_type_is_split_by_where_the_evidence_was():
    rows = [
        _verdict_row("s1", True, "valid", discarded=False, place="tool_result"),
        _verdict_row("s1", False, "valid", discarded=True, place="tool_result"),
        _verdict_row("s2", False, "valid", discarded=True, place="tool_result"),
        _verdict_row("s2", True, "valid", discarded=True, place="assistant"),
        _verdict_row("s2", True, "valid", discarded=False, place="user"),
    ]
    from evals.analysis.outcomes import outcome_tables

    table = outcome_tables(pd.DataFrame(rows), n_boot=100)["outcomes_by_content_type"]
    cells = {(r["evidence_where"], r["content_type"]): (r["n"], r["correct"])
             for r in table.to_dict("records")}
    # logs: 1 of 1 in the kept tail, 0 of 2 discarded; pooled they would read 1 of 3
    assert cells == {("discarded", "logs"): (2, 0), ("kept tail", "logs"): (1, 1),
                     ("discarded", "prose"): (1, 1), ("kept tail", "prose"): (1, 1)}


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
    table = recall_by(outcome_frame(pd.DataFrame(ROWS)), ["content_type"])
    cells = _cells(table, "content_type")
    # blind exact: s1 correct + s1 wrong in user turns (prose), s2 abstained in a tool result
    prose = cells[("truncate @16k", "bound", "exact", "prose", BLIND)]
    logs = cells[("truncate @16k", "bound", "exact", "logs", BLIND)]
    assert (prose["correct"], prose["abstained"], prose["wrong"]) == (1, 0, 1)
    assert (logs["correct"], logs["abstained"], logs["wrong"]) == (0, 1, 0)
