"""The console summary at the end of a run equals the tables' per-arm rows, duplicates included.

A measurement recorded twice (a resumed run, an error and its retry) counts once, by one rule:
the latest successful row, else the latest. Before the console summary was built on the tables'
own summary it kept the *last* row instead, so an error recorded after a success made the two
disagree; the records below are built so that every expected figure follows from them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from record_rows import frame, shape_rows, synthetic

from evals.analysis.aggregate import arm_labels
from evals.analysis.summary import summarize
from evals.pipeline.run_report import format_summary
from evals.pipeline.run_report import summarize as console_rows
from evals.store.records import one_row_per_measurement
from evals.view.entries import SourceRow, build_entries
from snapcompact.pricing import shape_rules

SNAP = "snapcompact recommended 8on22-bw"


def records():
    # snapcompact arm: q0..q3 answered [right, right, wrong, right] on Dec 1, then a resumed
    # run's request for q0 failed on Dec 2. The success counts: 4 questions, recall 3/4, no
    # error (the last-row rule said: 3 scored, recall 2/3, 1 error).
    snap = shape_rows("8on22-bw", [True, True, False, True], 1000, strategy="snapcompact",
                      policy="recommended", shape_requested="8on22-bw", production_valid=True,
                      created_at="2026-12-01T00:00:00Z")
    failed_later = snap[0].with_fields(error="Timeout", correct=False, em=0.0, f1=0.0,
                           created_at="2026-12-02T00:00:00Z")
    # full arm: q0 failed first and was retried (both rules agree), q3 skipped (over the window):
    # 3 questions, recall 1/3, 1 skipped
    full = shape_rows("text", [True, False, False, True], 4000, frame_size=0, arm="text",
                      reader="text_qa", strategy="full", created_at="2026-12-02T00:00:00Z")
    failed_first = full[0].with_fields(error="Timeout", correct=False,
                           created_at="2026-12-01T00:00:00Z")
    full[3] = full[3].with_fields(skipped="over the model's input window", correct=False)
    return synthetic(snap, [failed_first], full, [failed_later])


def test_console_summary_is_the_tables_summary() -> None:
    recs = records()
    console = {r["arm"]: r for r in console_rows(recs)}
    expected = {SNAP: ("valid", 4, 0.75, 0, 0), "full": ("bound", 3, 1 / 3, 0, 1)}
    got = {arm: (r["production"], r["n_questions"], r["recall"], r["n_errors"], r["n_skipped"])
           for arm, r in console.items()}
    assert got.keys() == expected.keys()
    for arm, want in expected.items():
        assert got[arm][:2] == want[:2] and got[arm][3:] == want[3:]
        assert got[arm][2] == pytest.approx(want[2])

    tables = summarize(frame(recs), n_boot=1000)
    tables = tables.assign(arm_label=arm_labels(tables)).set_index("arm_label")
    assert set(tables.index) == set(console)
    for arm, row in console.items():
        table_row = tables.loc[arm]
        for name in ("production", "n_questions", "n_errors", "n_skipped", "recall",
                     "n_discarded", "compactions_mean", "predicted_prompt_tokens"):
            assert row[name] == pytest.approx(table_row[name]), (arm, name)

    # the printed lines carry the same figures
    lines = format_summary(list(console.values()), offline_reader=True).splitlines()
    snap_line = next(line for line in lines if line.startswith(SNAP))
    assert snap_line[len(SNAP):].split()[:5] == ["valid", "4", "0", "0", "0.75"]
    full_line = next(line for line in lines if line.startswith("full "))
    assert full_line.split()[1:6] == ["bound", "3", "1", "0", "0.33"]


def test_the_viewer_picks_the_same_row() -> None:
    recs = records()
    sources = [SourceRow(row=r.to_json(), run_dir=Path("run"), order=i)
               for i, r in enumerate(recs)]
    entries = build_entries(sources, shape_rules())
    snap_q0 = [e for e in entries if e.strategy == "snapcompact" and e.row["question_id"] == "q0"]
    assert len(snap_q0) == 1 and snap_q0[0].error is None and snap_q0[0].correct


def test_the_rule_latest_success_else_latest() -> None:
    rows = [("a", True, "1", 0), ("a", False, "2", 1), ("b", False, "1", 2), ("b", False, "3", 3),
            ("c", False, "2", 4), ("c", True, "2", 5), ("c", True, "2", 6)]
    picked = one_row_per_measurement(rows, key=lambda r: r[0], succeeded=lambda r: r[1],
                                     created_at=lambda r: r[2])
    # a: the success despite a later error; b: the later of two errors; c: ties go to file order
    assert picked == [rows[0], rows[3], rows[6]]
