"""A torn tail never bricks a run folder: appends cut a torn last line, keep a whole row that only
lacks its newline and roll back a failed append; a bad line names its file and line; a full
disk stops the run and a rerun completes it; every field type still round-trips.

Part of issue 13 (reliability: nothing paid for is lost, nothing is billed twice).
"""

from __future__ import annotations

import errno
import json
import os
import warnings

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from hydra_compose import compose_eval
from mock_runs import TOTAL_MOCK_ROWS, Counting, mock_overrides, rows_of
from record_rows import make_record

from evals.pipeline.run import run_config
from evals.send.response_cache import ResponseCache
from evals.store.records import append_records, iter_records


def test_append_cuts_a_torn_last_line_before_writing(tmp_path):
    path = tmp_path / "records.jsonl"
    append_records(path, [make_record(question_id="q1"), make_record(question_id="q2")])
    whole = path.read_bytes()
    with open(path, "ab") as fh:  # a kill -9 in the middle of a row
        fh.write(whole.splitlines(keepends=True)[0][:37])
    with pytest.warns(UserWarning, match="torn last line"):
        append_records(path, [make_record(question_id="q3")])
    rows = list(iter_records(path))
    assert [r.question_id for r in rows] == ["q1", "q2", "q3"]
    assert path.read_bytes().startswith(whole) and path.read_bytes().endswith(b"\n")
    # and it keeps working: resume, table, more appends
    append_records(path, [make_record(question_id="q4")])
    assert len(list(iter_records(path))) == 4


def test_append_keeps_a_whole_row_that_only_lacks_its_newline(tmp_path):
    path = tmp_path / "records.jsonl"
    append_records(path, [make_record(question_id="q1")])
    path.write_bytes(path.read_bytes()[:-1])  # the newline was the part that got lost
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        append_records(path, [make_record(question_id="q2")])
    assert [r.question_id for r in iter_records(path)] == ["q1", "q2"]


def test_a_failed_append_is_rolled_back(tmp_path, monkeypatch):
    import evals.store.records as records_module

    path = tmp_path / "records.jsonl"
    append_records(path, [make_record(question_id="q1")])
    before = path.read_bytes()
    real_write = os.write

    def half_then_enospc(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records_module.os, "write", half_then_enospc)
    with pytest.raises(OSError, match="No space left"):
        append_records(path, [make_record(question_id="q2", answer="x" * 1000)])
    monkeypatch.undo()
    assert path.read_bytes() == before
    append_records(path, [make_record(question_id="q3")])
    assert [r.question_id for r in iter_records(path)] == ["q1", "q3"]


@pytest.mark.parametrize("line,problem", [
    (b"[1, 2]", "JSON object"),
    (b'"just a string"', "JSON object"),
    (b'{"run_id": 5}', "wrong type"),
    (b"not json at all", "not a JSON record"),
])
def test_a_bad_line_in_the_middle_names_file_and_line(tmp_path, line, problem):
    path = tmp_path / "records.jsonl"
    append_records(path, [make_record(question_id="q1")])
    with open(path, "ab") as fh:
        fh.write(line + b"\n")
    append_records(path, [make_record(question_id="q2")])
    with pytest.raises(ValueError, match=f"records.jsonl:2: .*{problem}"):
        list(iter_records(path))


def test_records_with_wrong_field_types_are_refused(tmp_path):
    row = make_record().to_json()
    for field, value in [("frames", "3"), ("correct", 1), ("frame_px", [[1, 2, 3]]),
                         ("em", float("inf")), ("extra", [1])]:
        bad = {**row, field: value}
        path = tmp_path / f"{field}.jsonl"
        path.write_text(json.dumps(bad) + "\n")
        with pytest.raises(ValueError, match=field):
            list(iter_records(path))


def test_disk_full_on_records_stops_the_run_and_a_rerun_completes_it(tmp_path, monkeypatch):
    import evals.store.records as records_module

    real_write = os.write
    state = {"writes": 0}

    def enospc_after_first(fd, data):
        state["writes"] += 1
        if state["writes"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    overrides = [*mock_overrides(tmp_path), "model.concurrency=1"]
    monkeypatch.setattr(records_module, "_FLUSH_ROWS", 2, raising=False)
    import evals.pipeline.rows as rows_module

    monkeypatch.setattr(rows_module, "_FLUSH_ROWS", 2)
    monkeypatch.setattr(records_module.os, "write", enospc_after_first)
    with pytest.raises(OSError, match="No space left"):
        run_config(compose_eval(overrides), tmp_path / "run", base_dir=tmp_path,
                   completion_fn=Counting())
    monkeypatch.setattr(records_module.os, "write", real_write)
    kept = rows_of(tmp_path / "run")
    cached = len(ResponseCache(tmp_path / "cache" / "responses"))
    assert 1 <= len(kept) < TOTAL_MOCK_ROWS and cached >= len(kept)

    again = run_config(compose_eval(overrides), tmp_path / "run", base_dir=tmp_path,
                       completion_fn=(calls := Counting()))
    rows = rows_of(tmp_path / "run")
    assert len(rows) == len({r.key() for r in rows}) == TOTAL_MOCK_ROWS
    assert calls.calls == TOTAL_MOCK_ROWS - cached  # answers in the cache are not paid again
    assert again.skipped_done == len(kept)


def test_record_round_trip_still_accepts_every_field_type():
    rec = make_record(cer=0.25, latency_s=None, reported_cost_usd=None, error="x", extra={"a": 1})
    assert type(rec).from_json(json.loads(json.dumps(rec.to_json()))) == rec
    assert rec.with_fields(frame_px=()).to_json()["frame_px"] == []
