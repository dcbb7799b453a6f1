"""A finished run answers "nothing to do" without replaying (evals.pipeline.finished).

The expectation is the issue's: a rerun of a finished run must not replay its sessions first.
The tests make the plan (the replay) raise, so a rerun that replays fails them.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hydra_compose import compose_eval
from mock_runs import Counting, rows_of

import evals.pipeline.run_loop as run_loop
from evals.pipeline.finished import FINISHED_FILE
from evals.pipeline.run import run_config
from evals.spec.provenance import versions

SMOKE = ["experiment=smoke", "model=mock", "progress=false", "strategies=[truncate]",
         "dataset.params.depths=[0.1,0.9]"]


def _run(tmp_path, *extra, calls=None):
    return run_config(compose_eval([f"results_dir={tmp_path}", *SMOKE, *extra]), tmp_path / "run",
                      base_dir=tmp_path, completion_fn=calls or Counting())


@pytest.fixture()
def no_replay(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the run replayed its sessions")
    monkeypatch.setattr(run_loop, "build_plan", refuse)


def test_a_finished_run_says_nothing_to_do_without_replaying(tmp_path, capsys, monkeypatch):
    first = _run(tmp_path)
    rows = len(rows_of(tmp_path / "run"))
    assert first.planned == rows == 2 and (tmp_path / "run" / FINISHED_FILE).is_file()
    capsys.readouterr()

    def refuse(*args, **kwargs):
        raise AssertionError("the run replayed its sessions")
    monkeypatch.setattr(run_loop, "build_plan", refuse)
    calls = Counting()
    again = _run(tmp_path, calls=calls)
    assert (again.planned, again.skipped_done, calls.calls) == (0, 2, 0)
    out = capsys.readouterr().out
    assert "nothing to do: this run finished at this code (2 rows" in out
    assert len(rows_of(tmp_path / "run")) == rows  # nothing appended


def test_a_finished_rerun_writes_its_own_traffic_not_the_first_runs(tmp_path):
    """summary.json is each run's traffic; a sweep's rerun check adds ``sent`` up across jobs.

    make slurm-check read 6 sent on a rerun that sent nothing: the finished path left the first
    run's counters in place. The first run sent its 2 questions; the rerun sent none and found
    both rows recorded."""
    summary = tmp_path / "run" / "summary.json"
    _run(tmp_path)
    first = json.loads(summary.read_text())["requests"]
    assert (first["planned"], first["sent"], first["rows_written"]) == (2, 2, 2)
    calls = Counting()
    _run(tmp_path, calls=calls)
    again = json.loads(summary.read_text())
    assert calls.calls == 0
    assert again["requests"] == {"planned": 0, "skipped_done": 2, "sent": 0, "cache_hits": 0,
                                 "shared": 0, "claim_waits": 0, "errors": 0, "rows_written": 0}
    assert len(again["rows"]) == 1  # the arm's table, as the first run wrote it


def test_records_changed_since_the_marker_plan_again(tmp_path):
    _run(tmp_path)
    records = tmp_path / "run" / "records.jsonl"
    lines = records.read_text().splitlines(keepends=True)
    records.write_text("".join(lines[:1]))  # a row lost: the run is not finished any more
    again = _run(tmp_path)
    assert (again.planned, again.skipped_done) == (1, 1)


def _refuse_replay(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the run replayed its sessions")
    monkeypatch.setattr(run_loop, "build_plan", refuse)


def test_a_row_edited_in_place_plans_again(tmp_path, monkeypatch):
    # As many rows as the marker counted, one of them changed: these are not the records the
    # run finished into, so the rerun plans (and finds both rows recorded: sends nothing).
    _run(tmp_path)
    records = tmp_path / "run" / "records.jsonl"
    first, second = records.read_text().splitlines(keepends=True)
    row = json.loads(first)
    row["correct"] = not row["correct"]
    records.write_text(json.dumps(row) + "\n" + second)
    assert len(rows_of(tmp_path / "run")) == 2
    _refuse_replay(monkeypatch)
    with pytest.raises(AssertionError, match="replayed"):
        _run(tmp_path)


def test_a_commit_that_moves_no_code_is_still_finished(tmp_path, monkeypatch, capsys):
    # The commit also moves when only results are committed: nothing a row depends on changed,
    # so nothing is replayed or sent again, and the rows keep the commit that produced them.
    # The code's content hash moving is another matter: that plans again.
    _run(tmp_path)
    rows = rows_of(tmp_path / "run")
    produced_by = {(r.git_sha, r.code_sha256) for r in rows}
    now = versions()
    assert produced_by == {(now.git_sha, now.code_sha256)}
    _refuse_replay(monkeypatch)
    monkeypatch.setattr(run_loop, "versions", lambda: replace(now, git_sha="f" * 40))
    calls = Counting()
    capsys.readouterr()
    again = _run(tmp_path, calls=calls)
    assert (again.planned, again.skipped_done, calls.calls) == (0, 2, 0)
    assert "nothing to do" in capsys.readouterr().out
    assert rows_of(tmp_path / "run") == rows  # the rows still name the commit that wrote them
    monkeypatch.setattr(run_loop, "versions", lambda: replace(now, code_sha256="0" * 64))
    with pytest.raises(AssertionError, match="replayed"):
        _run(tmp_path)


def test_another_measurement_in_the_same_folder_plans(tmp_path, no_replay):
    with pytest.raises(AssertionError, match="replayed"):  # not the first run's marker
        _run(tmp_path, "context_window=24000")


def test_other_code_plans_again(tmp_path, monkeypatch):
    _run(tmp_path)
    marker = tmp_path / "run" / FINISHED_FILE
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "provenance": "0" * 64}))  # as if the code moved
    monkeypatch.setattr(run_loop, "build_plan", lambda *a, **k: (_ for _ in ()).throw(
        AssertionError("replayed")))
    with pytest.raises(AssertionError, match="replayed"):
        _run(tmp_path)


def test_a_run_with_errors_leaves_no_marker(tmp_path):
    from evals.send.client import import_litellm

    async def failing(**kwargs):  # a request the provider refuses: recorded as an error row
        raise import_litellm().BadRequestError("bad request", model="mock", llm_provider="openai")
    result = _run(tmp_path, calls=failing)
    assert result.errors > 0
    assert not (tmp_path / "run" / FINISHED_FILE).exists()
