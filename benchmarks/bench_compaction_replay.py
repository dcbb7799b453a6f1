"""A long session replayed through the compaction pipeline with every strategy (LLM mocked).

    python benchmarks/bench_compaction_replay.py [--turns 2000] [--window 60000]
                                                 [--strategies context-full,snapcompact,handoff,shake,off]

Each strategy runs in a fresh subprocess (so peak RSS is its own): a synthetic agent session of
``--turns`` user turns (1-3 tool rounds each, reads/writes/edits/bash with results of 20-400
words, the tests' generator) goes through ``CompactionPipeline.after_turn`` turn by turn, with
pruning on and a fake summarizer (no network). Printed per strategy: compactions (and handoffs),
total and per-compaction seconds, turns per second, peak RSS, and the properties (checked after
every turn that pruned or compacted and every 20th turn): a tool call and its result are never
split, no kept entry is lost, the context after each compaction is under the threshold, and the
session file reloads to the identical context.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def run_one(strategy: str, turns: int, window: int, workdir: Path) -> dict:
    from compaction_synth import FakeLLM, Turns

    from snapcompact.compaction import (
        DEFAULT_SETTINGS,
        CompactionEntry,
        CompactionPipeline,
        ModelInfo,
        Session,
        build_session_context,
        merge_settings,
    )

    model = ModelInfo("claude-sonnet-4-5", window, provider="anthropic", api="anthropic-messages")
    settings = merge_settings(DEFAULT_SETTINGS, {
        "compaction": {"strategy": strategy, "reserveTokens": 8000, "keepRecentTokens": 8000},
        "snapcompact": {"frameSize": 768}})
    p = CompactionPipeline(Session(workdir / f"{strategy}.jsonl", fsync=False), model, settings=settings,
                           complete=FakeLLM())
    t = Turns(11)
    compaction_seconds: list[float] = []
    handoffs = shakes = prunes = split_pairs = lost = over_threshold = checks = 0

    def record(outcome, seconds):
        nonlocal handoffs, shakes, prunes, over_threshold
        if outcome is None:
            return
        if outcome.pruned is not None and outcome.pruned.changed:
            prunes += 1
        # A shake round rewrites the context in place (no entry); it counts as a compaction.
        if outcome.entry is not None or outcome.handoff_session is not None or outcome.shaken is not None:
            compaction_seconds.append(seconds)
            handoffs += outcome.handoff_session is not None
            shakes += outcome.shaken is not None
            if outcome.tokens_after is not None and outcome.tokens_after >= p.threshold():
                over_threshold += 1

    acted = False

    def step(message):
        nonlocal acted
        start = time.perf_counter()
        outcome = p.after_turn(message)
        record(outcome, time.perf_counter() - start)
        acted = acted or outcome is not None

    started = time.perf_counter()
    for turn in range(turns):
        p.session.append_message({"role": "user", "content": f"turn {turn}: keep going"})
        for _ in range(t.rng.randint(1, 3)):
            calls = [t.call() for _ in range(t.rng.randint(1, 2))]
            step(t.assistant(calls))
            for call in calls:
                p.session.append_message(t.result(call))
        step(t.assistant([]))
        # Properties after every turn that pruned or compacted, and every 20th turn.
        if not acted and turn % 20:
            continue
        acted = False
        checks += 1
        path = p.session.get_branch()
        ctx = build_session_context(path)
        calls_seen: list[str] = []
        results: set[str] = set()
        for m in ctx.messages:
            if m["role"] == "assistant":
                calls_seen += [b["id"] for b in m["content"] if b.get("type") == "toolCall"]
            elif m["role"] == "toolResult":
                split_pairs += m["toolCallId"] not in calls_seen
                results.add(m["toolCallId"])
        split_pairs += len(set(calls_seen) - results)
        latest = next((e for e in reversed(path) if isinstance(e, CompactionEntry)), None)
        if latest is not None:
            ids = [e.id for e in path]
            kept = {e.id for e in path[ids.index(latest.first_kept_entry_id):] if not isinstance(e, CompactionEntry)}
            lost += len(kept - set(ctx.entry_ids))
    elapsed = time.perf_counter() - started
    reloaded = Session.load(p.session.path)
    identical = (build_session_context(reloaded.get_branch()) == p.context()
                 and build_session_context(reloaded.get_branch(), transcript=True) == p.transcript())
    n = len(compaction_seconds)
    return {"strategy": strategy, "turns": turns, "entries": len(p.session.entries), "compactions": n,
            "handoffs": handoffs, "shakes": shakes, "prunes": prunes, "seconds": round(elapsed, 2),
            "seconds_per_compaction": round(sum(compaction_seconds) / n, 4) if n else None,
            "max_seconds_per_compaction": round(max(compaction_seconds), 4) if n else None,
            "turns_per_second": round(turns / elapsed, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "property_checks": checks, "split_call_result": split_pairs, "kept_entries_lost": lost,
            "context_over_threshold_after_compaction": over_threshold, "identical_reload": identical}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--window", type=int, default=60_000)
    ap.add_argument("--strategies", default="context-full,snapcompact,handoff,shake,off")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default="/tmp/bench-compaction-replay")
    args = ap.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.one:
        for old in workdir.glob(f"{args.one}*.jsonl"):
            old.unlink()
        print(json.dumps(run_one(args.one, args.turns, args.window, workdir)))
        return
    for strategy in args.strategies.split(","):
        done = subprocess.run([sys.executable, __file__, "--one", strategy, "--turns", str(args.turns),
                               "--window", str(args.window), "--workdir", str(workdir)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{strategy}: failed: {done.stderr.strip().splitlines()[-1] if done.stderr else done.returncode}")
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
