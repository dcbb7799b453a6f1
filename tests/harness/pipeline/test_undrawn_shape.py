"""An arm that draws no frame in the shape it asks for is said to, zero frames included.

At a 200k window the smoke session (~43k tokens) never compacts, so the snapcompact arm asking
for 11on16-bw sends no frame at all: its recall is the text's, not 11on16-bw's. Before issue 44
the "no frame drawn" line fired only when frames existed in another shape.
"""

from __future__ import annotations

import json

from hydra_compose import compose_eval
from mock_runs import Counting, rows_of

from evals.analysis.table import run as table_run
from evals.pipeline.run import run_config

NOTE = ("no frame drawn in 11on16-bw (drawn: no frame): recall is not a measurement of "
        "11on16-bw")


def test_an_arm_with_no_frame_at_all_is_not_a_measurement_of_its_shape(tmp_path, capsys):
    run_config(compose_eval([f"results_dir={tmp_path}", "experiment=smoke", "model=mock",
                             "progress=false", "strategies=[snapcompact]",
                             "policies=[foveated]", "dataset.params.depths=[0.1,0.9]",
                             "shapes=[11on16-bw]", "context_window=200000"]),
               tmp_path / "run", base_dir=tmp_path, completion_fn=Counting())
    out = capsys.readouterr().out
    rows = rows_of(tmp_path / "run")
    assert {r.frames for r in rows} == {0}
    assert {r.shape_asked_drawn for r in rows} == {False}
    # the plan's line, per context, and the end summary's footnote on the arm's recall
    assert "no frame drawn in 11on16-bw (drawn: no frame)" in out
    assert f"* snapcompact foveated 11on16-bw @200k: {NOTE}" in out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [a["shape_note"] for a in summary["rows"]] == [NOTE]
    report = table_run([str(tmp_path / "run")], out=tmp_path / "tables", plots=False)
    assert "(not a measurement of 11on16-bw)" in report
    assert f"**snapcompact foveated 11on16-bw @200k**: {NOTE}." in report
