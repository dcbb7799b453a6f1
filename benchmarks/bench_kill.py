"""``kill -9`` the ``snapcompact-eval`` CLI ten times in a row, rerunning the same command each
time, then once more to the end: what a kill costs.

Why: a sweep dies (OOM killer, a closed laptop, Ctrl-\\) and is rerun. The promise is that a
rerun re-sends only the requests that were in flight at the kill (sent, no answer stored yet),
and that the records end with one row per question, none lost, none duplicated, even though a
kill can tear the last line of ``records.jsonl`` and leaves the run folder's lock to a dead
process. Each round is a fresh CLI process (real imports, real HTTP to the loopback server),
SIGKILLed at a random point: sometimes while it is still starting, mostly after 1-6 requests.

    .venv/bin/python benchmarks/bench_kill.py             # 10 kills, 60 questions
    .venv/bin/python benchmarks/bench_kill.py --kills 5 --questions 40

Prints per kill: requests the server had received, requests in flight (sent, not cached), and
how many of those the next rounds sent again; then rows, lost, duplicated.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("snapcompact-eval")
    return [str(script)] if script.exists() else [sys.executable, "-m", "evals.pipeline.run"]


def main(argv: list[str] | None = None) -> int:
    from evals.send.response_cache import ResponseCache
    from evals.store.records import iter_records
    from evals.twins.fake_server import FakeChatServer, body_digest

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="kill-") as work, \
            FakeChatServer(latency_s=0.3) as server:
        work_dir = Path(work)
        cmd = [*_cli(), "model=fake", "dataset=tiny",
               f"dataset.params.n_items={args.questions // 2}", "strategies=[full]", "reader=qa",
               "model.concurrency=3", "progress=false", f"results_dir={work_dir}"]
        env = {**os.environ, "SNAPCOMPACT_FAKE_API_BASE": server.api_base,
               "OPENAI_API_KEY": "sk-bench-" + "dummy-not-a-key-000000",
               "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
        cache = ResponseCache(work_dir / "cache" / "responses")
        kills = []
        for _ in range(args.kills):
            start = server.requests
            at_start = rng.random() < 0.2  # now and then, kill it before it sends anything
            proc = subprocess.Popen(cmd, cwd=work_dir, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            if at_start:
                time.sleep(rng.uniform(0.2, 2.0))
            else:
                target = start + rng.randint(1, 6)
                deadline = time.monotonic() + 300
                while (server.requests < target and proc.poll() is None
                       and time.monotonic() < deadline):
                    time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            sent = {body_digest(b) for b in server.bodies}
            kills.append((server.requests, sent, len(sent) - len(cache), at_start))
        subprocess.run(cmd, cwd=work_dir, env=env, stdout=subprocess.DEVNULL, check=True)
        bodies = [body_digest(b) for b in server.bodies]
        run_dirs = {p.parent for p in work_dir.glob("runs/default/*/records.jsonl")}
        rows = [r for d in run_dirs for r in iter_records(d / "records.jsonl")]

    print(f"\nkill -9 x{args.kills}, {args.questions} questions, resumed after each kill",
          file=sys.stderr)
    print("  kill  when          received  in flight  re-sent later", file=sys.stderr)
    ok = True
    for i, (received, sent, in_flight, at_start) in enumerate(kills):
        end = kills[i + 1][0] if i + 1 < len(kills) else len(bodies)
        resent = len({d for d in bodies[received:end] if d in sent})
        ok &= resent <= in_flight
        when = "at start" if at_start else "mid-run"
        print(f"  {i + 1:>4}  {when:<12} {received:>9} {in_flight:>10} {resent:>14}",
              file=sys.stderr)
    keys = [r.key() for r in rows]
    lost = args.questions - len({r.key() for r in rows if r.error is None})
    duplicated = len(keys) - len(set(keys))
    print(f"  rows {len(rows)}, lost {lost}, duplicated {duplicated}; requests {len(bodies)} "
          f"for {len(set(bodies))} distinct questions", file=sys.stderr)
    ok &= lost == 0 and duplicated == 0 and len(rows) == args.questions
    print(f"  {'PASS' if ok else 'FAIL'}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
