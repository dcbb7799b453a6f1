"""``kill -9`` ten times in a row, resuming each time, then a final resume to the end.

Each round is a runner process (forked from this one, so it starts in milliseconds instead of
re-importing litellm) talking real HTTP to the loopback server; it is SIGKILLed after a random
number (1-3) of new requests reach the server. After every kill the records file may end in a
torn line and the run folder's lock was held by a dead process: the next round must cope with
both. What must hold, per kill: the requests sent again afterwards are at most those in flight
at the kill (sent, but with no answer in the cache yet); and at the end: one row per question,
none lost, none duplicated. ``benchmarks/bench_kill.py`` does the same through the CLI.
"""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


from evals.pipeline.run import run_config
from evals.send.response_cache import ResponseCache
from evals.store.records import iter_records
from evals.twins.fake_server import FakeChatServer, body_digest

QUESTIONS = 40
KILLS = 10


def _child(cfg, run_dir, base_dir) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        run_config(cfg, run_dir, base_dir=base_dir)
    finally:
        os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_9_ten_times_then_resume_loses_and_duplicates_nothing(tmp_path, monkeypatch,
                                                                   compose_eval):
    from evals.send.client import import_litellm
    from evals.spec.provenance import versions

    import_litellm()
    versions()  # git sha, table hashes: computed once here, inherited by every forked runner
    rng = random.Random(1309)
    run_dir = tmp_path / "run"
    cache = ResponseCache(tmp_path / "cache" / "responses")
    per_kill = []
    with FakeChatServer(latency_s=0.2) as server:
        monkeypatch.setenv("SNAPCOMPACT_FAKE_API_BASE", server.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-kill-" + "dummy-not-a-key-000000")
        cfg = compose_eval([
            "model=fake", "dataset=tiny", f"dataset.params.n_items={QUESTIONS // 2}",
            "strategies=[full]", "reader=qa", "model.concurrency=3", "progress=false",
            f"results_dir={tmp_path}"])
        for _ in range(KILLS):
            start = server.requests
            target = start + rng.randint(1, 3)
            pid = os.fork()
            if pid == 0:
                _child(cfg, run_dir, tmp_path)
            deadline = time.monotonic() + 60
            while server.requests < target and time.monotonic() < deadline:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    pytest.fail("the runner ended before it was killed")
                time.sleep(0.005)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sent = {body_digest(b) for b in server.bodies}
            per_kill.append({"sent_so_far": set(sent), "requests_at_kill": server.requests,
                             "in_flight": len(sent) - len(cache)})
        result = run_config(cfg, run_dir, base_dir=tmp_path)  # the final resume, to the end
        bodies = [body_digest(b) for b in server.bodies]

    rows = list(iter_records(run_dir / "records.jsonl"))
    keys = [r.key() for r in rows]
    assert len(keys) == len(set(keys)) == QUESTIONS  # none lost, none duplicated
    assert all(r.error is None for r in rows)
    answered_before_last_resume = len(per_kill[-1]["sent_so_far"]) - per_kill[-1]["in_flight"]
    assert result.requests_sent == QUESTIONS - answered_before_last_resume
    for i, kill in enumerate(per_kill):
        end = per_kill[i + 1]["requests_at_kill"] if i + 1 < len(per_kill) else len(bodies)
        resent = {d for d in bodies[kill["requests_at_kill"]:end] if d in kill["sent_so_far"]}
        assert len(resent) <= kill["in_flight"], (i, len(resent), kill["in_flight"])
    # every request but the in-flight ones was sent exactly once over all eleven processes
    assert len(bodies) - len(set(bodies)) <= sum(k["in_flight"] for k in per_kill)
