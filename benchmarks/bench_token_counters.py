"""Speed of the text-token counters, alone and inside a compaction replay.

    python benchmarks/bench_token_counters.py [--chars 1000000] [--turns 400] [--window 60000]
                                              [--counters bytes4,o200k,claude-v3,claude-v47]

Why: production counts Claude text with a native tokenizer; this project's Claude counter
(``ctok``) is pure Python, and a replay counts every message of the branch each turn. Printed:

1. chars/s of each counter on ``--chars`` characters of agent-session text, cold (every text
   new) and warm (the per-text cache hit, what later turns pay for the same messages);
2. a replay of the tests' synthetic agent session (``--turns`` user turns, snapcompact, fake
   summarizer, no network) through ``CompactionPipeline.after_turn`` with the estimator built by
   ``estimator_for("claude-sonnet-4-5", counter)``: seconds, compactions, and the share of the
   time spent counting text (each counter in a fresh subprocess, so its cache starts empty).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def session_texts(chars: int) -> list[str]:
    from compaction_synth import Turns

    from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR
    t = Turns(5)
    out: list[str] = []
    total = 0
    while total < chars:
        calls = [t.call() for _ in range(2)]
        for message in (t.assistant(calls), *(t.result(c) for c in calls)):
            for text in DEFAULT_ESTIMATOR.fragments(message)[0]:
                out.append(text)
                total += len(text)
    return out


def speed(name: str, texts: list[str]) -> tuple[float, float]:
    from snapcompact.compaction.text_counters import counter_named
    counter = counter_named(name)
    chars = sum(len(t) for t in texts)
    t0 = time.perf_counter()
    for text in texts:
        counter([text])
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for text in texts:
        counter([text])
    warm = time.perf_counter() - t0
    return chars / cold, chars / max(warm, 1e-9)


def replay(name: str, turns: int, window: int) -> dict:
    from compaction_synth import FakeLLM, Turns

    from snapcompact.compaction import (
        DEFAULT_SETTINGS,
        CompactionPipeline,
        ModelInfo,
        Session,
        merge_settings,
    )
    from snapcompact.compaction.text_counters import estimator_for

    base, method = estimator_for("claude-sonnet-4-5", name)
    spent = 0.0
    inner = base.count_text

    def timed(fragments):  # type: ignore[no-untyped-def]
        nonlocal spent
        t0 = time.perf_counter()
        try:
            return inner(fragments)
        finally:
            spent += time.perf_counter() - t0

    from dataclasses import replace
    estimator = replace(base, count_text=timed)
    model = ModelInfo("claude-sonnet-4-5", window, provider="anthropic", api="anthropic-messages")
    settings = merge_settings(DEFAULT_SETTINGS, {
        "compaction": {"strategy": "snapcompact", "reserveTokens": 8000, "keepRecentTokens": 8000},
        "snapcompact": {"frameSize": 768}})
    with tempfile.TemporaryDirectory() as tmp:
        p = CompactionPipeline(Session(Path(tmp) / "s.jsonl", fsync=False), model,
                               settings=settings, complete=FakeLLM(), estimator=estimator)
        t = Turns(11)
        compactions = 0
        chars = 0
        started = time.perf_counter()
        for turn in range(turns):
            p.session.append_message({"role": "user", "content": f"turn {turn}: keep going"})
            for _ in range(t.rng.randint(1, 3)):
                calls = [t.call() for _ in range(t.rng.randint(1, 2))]
                message = t.assistant(calls)
                outcome = p.after_turn(message)
                compactions += bool(outcome is not None and outcome.entry is not None)
                for call in calls:
                    result = t.result(call)
                    chars += sum(len(b.get("text", "")) for b in result["content"])
                    p.session.append_message(result)
            outcome = p.after_turn(t.assistant([]))
            compactions += bool(outcome is not None and outcome.entry is not None)
        elapsed = time.perf_counter() - started
    return {"counter": name, "method": method, "turns": turns, "tool_result_chars": chars,
            "compactions": compactions, "seconds": round(elapsed, 2),
            "counting_seconds": round(spent, 2), "counting_share": round(spent / elapsed, 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--window", type=int, default=60_000)
    parser.add_argument("--counters", default="bytes4,o200k,claude-v3,claude-v47")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(replay(args.one, args.turns, args.window)))
        return
    names = args.counters.split(",")
    texts = session_texts(args.chars)
    print(f"counters on {sum(len(t) for t in texts):,} chars ({len(texts):,} texts), chars/s:")
    for name in names:
        cold, warm = speed(name, texts)
        print(f"  {name:12s} cold {cold:>12,.0f}   warm {warm:>14,.0f}")
    print(f"\nreplay, {args.turns} turns, window {args.window:,}, snapcompact:")
    for name in names:
        out = subprocess.run([sys.executable, __file__, "--one", name, "--turns", str(args.turns),
                              "--window", str(args.window)], capture_output=True, text=True,
                             check=True).stdout
        print("  " + out.strip())


if __name__ == "__main__":
    main()
