"""A cache that cannot be written loses nothing: every answer stays in the records, a write that
fails halfway leaves no entry and no temporary file, an entry with a wrong field type is a miss.

Part of issue 13 (reliability: nothing paid for is lost, nothing is billed twice).
"""

from __future__ import annotations

import errno
import json
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from hydra_compose import compose_eval
from mock_runs import TOTAL_MOCK_ROWS, Counting, mock_overrides, rows_of

from evals.pipeline.run import run_config
from evals.send.response_cache import CachedResponse, ResponseCache


def test_failed_cache_writes_keep_every_answer_in_the_records(tmp_path, monkeypatch, caplog):
    def disk_full(self, key, response):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResponseCache, "put", disk_full)
    first = run_config(compose_eval(mock_overrides(tmp_path)), tmp_path / "run",
                       base_dir=tmp_path, completion_fn=(calls := Counting()))
    rows = rows_of(tmp_path / "run")
    assert calls.calls == TOTAL_MOCK_ROWS
    assert len(rows) == len({r.key() for r in rows}) == TOTAL_MOCK_ROWS
    assert all(r.error is None and r.answer == "mock answer" for r in rows)
    assert len(ResponseCache(tmp_path / "cache" / "responses")) == 0
    assert "cannot write" in caplog.text and "No space left" in caplog.text
    assert first.records_written == TOTAL_MOCK_ROWS

    monkeypatch.undo()  # the disk has room again: the rerun is answered by the records
    again = run_config(compose_eval(mock_overrides(tmp_path)), tmp_path / "run",
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
