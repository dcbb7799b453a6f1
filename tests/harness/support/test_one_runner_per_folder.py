"""One runner per run folder: a second runner is refused, and two racing never send twice.

Part of issue 13 (reliability: nothing paid for is lost, nothing is billed twice).
"""

from __future__ import annotations

import os
import threading

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from hydra_compose import compose_eval
from mock_runs import TOTAL_MOCK_ROWS, Counting, mock_overrides, rows_of

from evals.pipeline.run import run_config
from evals.support.runlock import RunFolderBusy, run_folder_lock


def test_a_second_runner_on_the_same_folder_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    busy = f"run folder {run_dir} is in use .*pid {os.getpid()}"
    with run_folder_lock(run_dir), pytest.raises(RunFolderBusy, match=busy):
        run_config(compose_eval(mock_overrides(tmp_path)), run_dir, base_dir=tmp_path,
                   completion_fn=Counting())
    assert not (run_dir / "records.jsonl").exists()
    # released: the next runner goes ahead
    run_config(compose_eval(mock_overrides(tmp_path)), run_dir, base_dir=tmp_path,
               completion_fn=Counting())
    assert len(rows_of(run_dir)) == TOTAL_MOCK_ROWS


def test_two_runners_racing_on_one_folder_never_send_twice(tmp_path):
    cfg = compose_eval([*mock_overrides(tmp_path), "model.concurrency=2"])
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
