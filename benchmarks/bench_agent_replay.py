"""The ``compact`` command on a 2,000-turn agent session: seconds per compaction, peak memory.

Why a benchmark of its own: the replay is what every harness arm and every ``compact`` run
pays, and the coding agent's maintenance runs three check points per turn. This times the
whole command a user meets (``python -m snapcompact compact``) on one generated 2,000-turn
session (``tests/compaction_synth.Turns``: user asks, 1-3 tool calls each, results of 200-600
words), for this checkout and, with ``--baseline TREE``, another checkout in the same run,
alternating, median of ``--repeat``. Prints wall and CPU seconds, peak RSS, compactions and
CPU seconds per compaction (CPU seconds are steadier on a busy machine).

    python benchmarks/bench_agent_replay.py --baseline /tmp/before --repeat 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_compaction_replay import _python_for, timed_run  # noqa: E402
from compaction_synth import tool_turns  # noqa: E402


def session(turns: int, seed: int = 11) -> list[dict]:
    """The agent messages of ``turns`` generated turns (a terminal answer closes each)."""
    return tool_turns(turns, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--window", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--baseline", type=Path, help="another checkout, timed in the same run")
    parser.add_argument("--timeout", type=float, default=900, help="CPU seconds per run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-agent-replay-"))
    messages = session(args.turns)
    path = work / "session.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    settings = work / "settings.json"
    settings.write_text(json.dumps({"compaction": {"keepRecentTokens": 8000,
                                                   "reserveTokens": 8000}}))
    chars = len(path.read_text())
    print(f"session: {args.turns} turns, {len(messages):,} messages, {chars:,} JSON chars; "
          f"window {args.window:,}")
    trees = [("current", ROOT)] + ([("baseline", args.baseline)] if args.baseline else [])
    runs: dict[str, list[dict]] = {name: [] for name, _ in trees}
    for _ in range(args.repeat):
        for name, tree in trees:
            argv = [_python_for(tree), "-m", "snapcompact", "compact", str(path), "--model",
                    "claude-sonnet-4-5", "--api", "anthropic-messages", "--provider",
                    "anthropic", "--context-window", str(args.window), "--settings",
                    str(settings), "--out", str(work / f"out-{name}")]
            result = timed_run(argv, tree, args.timeout)
            summary = {}
            if result.get("ok"):
                text = result["output"]
                summary = json.loads(text[text.index("{"):])
            result["compactions"] = summary.get("compactions")
            runs[name].append(result)
    print(f"{'tree':<10} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'compactions':>12} "
          f"{'CPU s/compaction':>17}")
    for name, results in runs.items():
        ok = [r for r in results if r.get("ok")]
        if not ok:
            print(f"{name:<10} timed out after {args.timeout:.0f} CPU s")
            continue
        wall = statistics.median(r["seconds"] for r in ok)
        cpu = statistics.median(r["cpu_seconds"] for r in ok)
        peak = max(r["peak_rss_mb"] for r in ok)
        n = ok[0]["compactions"] or 0
        per = f"{cpu / n:.3f}" if n else "-"
        print(f"{name:<10} {wall:>8.1f} {cpu:>8.1f} {peak:>8.0f} {n:>12} {per:>17}")


if __name__ == "__main__":
    main()
