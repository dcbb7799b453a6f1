"""Reliability: nothing paid for is lost, nothing is billed twice (issue 13, items 1-3, 5, 8).

Each test breaks one thing the way a full disk, a crash or a second runner would, then checks
what a user cares about: every answer that came back is in the records or the cache, no row is
duplicated or unreadable, and a rerun sends only what was never answered.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import threading
import time
import warnings
from dataclasses import replace

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hydra import compose, initialize_config_dir
from test_records import make_record

from evals.pipeline.run import CONFIG_DIR, run_config
from evals.send.client import EvalClient, Request, RetryPolicy
from evals.send.response_cache import CachedResponse, ResponseCache, request_key
from evals.store.records import append_records, iter_records
from evals.support.runlock import RunFolderBusy, run_folder_lock

TOTAL_MOCK_ROWS = 16  # model=mock, the smoke session with 4 facts: 4 questions x 4 arms


def compose_cfg(overrides):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        return compose("eval", overrides=overrides)


def mock_overrides(tmp_path):
    return [f"results_dir={tmp_path}", "progress=false", "model=mock", "experiment=smoke",
            "dataset.params.depths=[0.1,0.4,0.6,0.9]"]


class Counting:
    """litellm.acompletion, counted."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, **kwargs):
        from evals.send.client import import_litellm

        self.calls += 1
        return await import_litellm().acompletion(**kwargs)


def rows_of(run_dir):
    return list(iter_records(run_dir / "records.jsonl"))


# -- 1. a cache that cannot be written loses nothing -------------------------------------------


def test_failed_cache_writes_keep_every_answer_in_the_records(tmp_path, monkeypatch, caplog):
    def disk_full(self, key, response):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResponseCache, "put", disk_full)
    first = run_config(compose_cfg(mock_overrides(tmp_path)), tmp_path / "run",
                       base_dir=tmp_path, completion_fn=(calls := Counting()))
    rows = rows_of(tmp_path / "run")
    assert calls.calls == TOTAL_MOCK_ROWS
    assert len(rows) == len({r.key() for r in rows}) == TOTAL_MOCK_ROWS
    assert all(r.error is None and r.answer == "mock answer" for r in rows)
    assert len(ResponseCache(tmp_path / "cache" / "responses")) == 0
    assert "cannot write" in caplog.text and "No space left" in caplog.text
    assert first.records_written == TOTAL_MOCK_ROWS

    monkeypatch.undo()  # the disk has room again: the rerun is answered by the records
    again = run_config(compose_cfg(mock_overrides(tmp_path)), tmp_path / "run",
                       base_dir=tmp_path, completion_fn=(calls2 := Counting()))
    assert calls2.calls == 0 and again.skipped_done == TOTAL_MOCK_ROWS


def test_a_cache_write_failing_halfway_leaves_no_entry_and_no_temp_file(tmp_path, monkeypatch):
    import evals.send.response_cache as cache_module

    cache = ResponseCache(tmp_path / "cache")
    key = "ab" + "0" * 62
    entry = CachedResponse("a", 1, 1, 0.0, "m", 0.1, 1.0)
    real_replace = os.replace

    def fail_replace(src, dst):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(cache_module.os, "replace", fail_replace)
    with pytest.raises(OSError):
        cache.put(key, entry)
    monkeypatch.setattr(cache_module.os, "replace", real_replace)
    assert cache.get(key) is None
    assert [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []
    cache.put(key, entry)
    assert cache.get(key) == entry


@pytest.mark.parametrize("field,value", [
    ("answer", 42), ("prompt_tokens", "12"), ("prompt_tokens", -1), ("completion_tokens", 1.5),
    ("cost_usd", "free"), ("cost_usd", float("nan")), ("latency_s", None), ("model", None),
    ("prompt_tokens", True),
])
def test_a_cache_entry_with_a_wrong_field_type_is_a_miss(tmp_path, field, value):
    cache = ResponseCache(tmp_path)
    key = "cd" + "1" * 62
    cache.put(key, CachedResponse("x", 1, 2, 0.5, "m", 0.1, 1.0))
    path = cache.path_for(key)
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    assert cache.get(key) is None


# -- 2. a torn tail never bricks a run folder ---------------------------------------------------


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
        run_config(compose_cfg(overrides), tmp_path / "run", base_dir=tmp_path,
                   completion_fn=Counting())
    monkeypatch.setattr(records_module.os, "write", real_write)
    kept = rows_of(tmp_path / "run")
    cached = len(ResponseCache(tmp_path / "cache" / "responses"))
    assert 1 <= len(kept) < TOTAL_MOCK_ROWS and cached >= len(kept)

    again = run_config(compose_cfg(overrides), tmp_path / "run", base_dir=tmp_path,
                       completion_fn=(calls := Counting()))
    rows = rows_of(tmp_path / "run")
    assert len(rows) == len({r.key() for r in rows}) == TOTAL_MOCK_ROWS
    assert calls.calls == TOTAL_MOCK_ROWS - cached  # answers in the cache are not paid again
    assert again.skipped_done == len(kept)


# -- 3. two runners, one folder; two processes, one cache ---------------------------------------


def test_a_second_runner_on_the_same_folder_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    busy = f"run folder {run_dir} is in use .*pid {os.getpid()}"
    with run_folder_lock(run_dir), pytest.raises(RunFolderBusy, match=busy):
        run_config(compose_cfg(mock_overrides(tmp_path)), run_dir, base_dir=tmp_path,
                   completion_fn=Counting())
    assert not (run_dir / "records.jsonl").exists()
    # released: the next runner goes ahead
    run_config(compose_cfg(mock_overrides(tmp_path)), run_dir, base_dir=tmp_path,
               completion_fn=Counting())
    assert len(rows_of(run_dir)) == TOTAL_MOCK_ROWS


def test_two_runners_racing_on_one_folder_never_send_twice(tmp_path):
    cfg = compose_cfg([*mock_overrides(tmp_path), "model.concurrency=2"])
    calls = Counting()
    outcomes: list[object] = []

    def runner():
        try:
            outcomes.append(run_config(cfg, tmp_path / "run",
                                       base_dir=tmp_path, completion_fn=calls))
        except RunFolderBusy as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = rows_of(tmp_path / "run")
    assert len(rows) == len({r.key() for r in rows}) == TOTAL_MOCK_ROWS
    assert calls.calls == TOTAL_MOCK_ROWS
    assert sum(isinstance(o, RunFolderBusy) for o in outcomes) <= 1


def _client(cache_root, completion):
    return EvalClient(cache=ResponseCache(cache_root), renderer_version="r1",
                      retry=RetryPolicy(max_attempts=2, base_delay_s=0.01), concurrency=8,
                      completion_fn=completion, seed=0)


def _mock_request(i: int) -> Request:
    return Request(model="anthropic/claude-sonnet-4-5",
                   messages=[{"role": "user", "content": f"question {i}"}],
                   params={"mock_response": f"answer {i}", "max_tokens": 8})


def test_processes_sharing_a_cache_send_each_request_once(tmp_path):
    """Two clients (as two sweep jobs would be) ask the same 12 questions at the same time."""
    from evals.send.client import import_litellm

    litellm = import_litellm()
    sent: list[str] = []
    lock = threading.Lock()

    async def slow_completion(**kwargs):
        with lock:
            sent.append(kwargs["messages"][0]["content"])
        await asyncio.sleep(0.05)
        return await litellm.acompletion(**kwargs)

    requests = [_mock_request(i) for i in range(12)]
    answers: list[list] = []

    def job(order):
        client = _client(tmp_path / "cache", slow_completion)
        answers.append(asyncio.run(client.complete_all([requests[i] for i in order])))

    threads = [threading.Thread(target=job, args=(range(12),)),
               threading.Thread(target=job, args=(range(11, -1, -1),))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(sent) == sorted(f"question {i}" for i in range(12))  # each exactly once
    assert all(r.ok for batch in answers for r in batch)
    assert sum(r.cached for batch in answers for r in batch) == 12
    assert not list((tmp_path / "cache").rglob("*.claim"))  # claims are cleaned up


def test_a_claim_held_by_a_dead_process_is_not_stale(tmp_path):
    import multiprocessing

    cache = ResponseCache(tmp_path)
    key = "ef" + "2" * 62
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()

    def holder():
        claim = ResponseCache(tmp_path).claim(key)
        assert claim.try_acquire()
        ready.set()
        time.sleep(60)

    proc = ctx.Process(target=holder)
    proc.start()
    assert ready.wait(30)
    assert not cache.claim(key).try_acquire()  # held by the live process
    proc.kill()  # kill -9: the kernel drops its lock
    proc.join()
    claim = cache.claim(key)
    assert claim.try_acquire()
    claim.release()


# -- 5. a moved results folder keeps its cache ----------------------------------------------------


def test_cache_keys_hold_no_paths(tmp_path):
    def key(ocr_dir, evidence="The code is 7342."):
        return request_key(model="snapocr/ocr-qa",
                           messages=[{"role": "user", "content": "What is the code?"}],
                           params={}, frame_hashes=(), renderer_version="r1",
                           reader_inputs={"evidence": evidence, "answers": ["7342"],
                                          "ocr_cache_dir": ocr_dir})

    here, moved = str(tmp_path / "a" / "cache" / "ocr"), str(tmp_path / "copy" / "cache" / "ocr")
    assert key(here) == key(moved) == key(None)
    assert key(here, evidence="Another sentence.") != key(here)


def test_a_copied_results_folder_answers_from_its_cache(tmp_path):
    """The default offline reader (OCR), then the whole results folder copied elsewhere."""
    overrides = ["progress=false", "experiment=smoke", "strategies=[full,snapcompact]",
                 "shapes=[11on16-bw]"]
    first_root = tmp_path / "a"
    run_config(compose_cfg([f"results_dir={first_root}", *overrides]), first_root / "run",
               base_dir=tmp_path, completion_fn=Counting())
    copy_root = tmp_path / "b"
    shutil.copytree(first_root, copy_root)
    shutil.rmtree(first_root)
    again = run_config(compose_cfg([f"results_dir={copy_root}", *overrides]),
                       copy_root / "fresh", base_dir=tmp_path, completion_fn=(calls := Counting()))
    assert calls.calls == 0 and again.cache_hits == again.planned == 4


# -- 8. folders the user did not mean -------------------------------------------------------------


@pytest.mark.parametrize("override,problem", [
    ("experiment_name=../../x", "plain folder name"),
    ("experiment_name=a/b", "plain folder name"),
    ("results_dir=''", "results_dir must be a non-empty string"),
    ("max_frames=0", "max_frames must be an integer >= 1"),
])
def test_run_spec_refuses_paths_that_escape(tmp_path, override, problem):
    from evals.spec.run_spec import RunSpec

    cfg = compose_cfg([f"results_dir={tmp_path}", "model=mock", override])
    with pytest.raises(ValueError, match=problem):
        RunSpec.from_config(cfg, base_dir=tmp_path)


def test_results_dir_that_is_a_file_is_refused(tmp_path):
    from evals.spec.run_spec import RunSpec

    (tmp_path / "afile").write_text("x")
    cfg = compose_cfg([f"results_dir={tmp_path / 'afile'}", "model=mock"])
    with pytest.raises(ValueError, match="is a file, not a folder"):
        RunSpec.from_config(cfg, base_dir=tmp_path)


def test_frame_cap_refuses_before_drawing(tmp_path):
    overrides = [*mock_overrides(tmp_path), "max_frames=1", "frame_size=96", "context_window=24000",
                 "strategies=[snapcompact]",
                 "shapes=[11on16-bw]"]
    with pytest.raises(ValueError, match="frames, more than max_frames=1"):
        run_config(compose_cfg(overrides), tmp_path / "run", base_dir=tmp_path,
                   completion_fn=Counting())


def test_unwritable_ocr_cache_warns_once_and_still_reads(tmp_path, monkeypatch):
    from evals.readers import ocr
    from snapcompact.render import render_many

    png = render_many("The code is 7342.", "11on16-bw", 512)[0].png
    blocker = tmp_path / "file"
    blocker.write_text("x")
    ocr.clear_memory_cache()
    with pytest.warns(RuntimeWarning, match="cannot write"):
        text = ocr.transcribe(png, cache_dir=blocker / "ocr")
    assert "7342" in text


def test_record_round_trip_still_accepts_every_field_type():
    rec = make_record(cer=0.25, latency_s=None, reported_cost_usd=None, error="x", extra={"a": 1})
    assert type(rec).from_json(json.loads(json.dumps(rec.to_json()))) == rec
    assert replace(rec, frame_px=()).to_json()["frame_px"] == []
