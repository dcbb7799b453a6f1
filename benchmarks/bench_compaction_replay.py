"""A long session replayed through the compaction pipeline with every strategy (LLM mocked).

    python benchmarks/bench_compaction_replay.py [--turns 2000] [--window 60000]
                                                 [--strategies context-full,snapcompact,handoff,shake,off]

Each strategy runs in a fresh subprocess (so peak RSS is its own): a synthetic agent session of
``--turns`` user turns (1-3 tool rounds each, reads/writes/edits/bash with results of 20-400
words, the tests' generator) goes through ``CompactionPipeline.after_turn`` turn by turn, with
pruning on and a fake summarizer (no network). Printed per strategy: compactions (and handoffs),
total wall and CPU seconds, CPU seconds per compaction, turns per second, peak RSS, and the properties (checked after
every turn that pruned or compacted and every 20th turn): a tool call and its result are never
split, no kept entry is lost, the context after each compaction is under the threshold, and the
session file reloads to the identical context.

    python benchmarks/bench_compaction_replay.py --scale [--sizes 2500,10000,60000,1.2M]
                                                 [--timeout 300] [--baseline TREE]

Scale mode times what a user meets: the whole ``python -m snapcompact compact FILE
--context-window 32000`` command on generated sessions of N small messages (user prompts,
assistant text with read/edit/bash/grep calls, tool results of 20-200 characters) and on one
session of 1.2M characters (the same turns with results of 0.5-6k characters), all cut from the
mixed-text corpus (:mod:`corpus`: prose, code, sentence lines, non-Latin). Each run is its own
process, stopped after ``--timeout`` CPU seconds; printed: wall and CPU seconds, peak RSS and the compactions it reported. With
``--baseline TREE`` (another checkout, e.g. ``git worktree add /tmp/base main``) every session is
also run there, alternating which tree goes first, and the two ``context.json`` files are
compared. ``--engine pipeline`` times the compaction pipeline's own replay (``replay_session``,
snapcompact) on the same files instead of the command (which runs the agent's maintenance).
``--baseline`` works in the turn mode too (the tree's own copy of this script runs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))


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
        start = time.process_time()  # CPU seconds: steadier than wall time on a busy machine
        outcome = p.after_turn(message)
        record(outcome, time.process_time() - start)
        acted = acted or outcome is not None

    started = time.perf_counter()
    cpu_started = time.process_time()
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
    cpu = time.process_time() - cpu_started
    reloaded = Session.load(p.session.path)
    identical = (build_session_context(reloaded.get_branch()) == p.context()
                 and build_session_context(reloaded.get_branch(), transcript=True) == p.transcript())
    n = len(compaction_seconds)
    return {"strategy": strategy, "turns": turns, "entries": len(p.session.entries), "compactions": n,
            "handoffs": handoffs, "shakes": shakes, "prunes": prunes, "seconds": round(elapsed, 2),
            "cpu_seconds": round(cpu, 2),
            "seconds_per_compaction": round(sum(compaction_seconds) / n, 4) if n else None,
            "max_seconds_per_compaction": round(max(compaction_seconds), 4) if n else None,
            "turns_per_second": round(turns / elapsed, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "property_checks": checks, "split_call_result": split_pairs, "kept_entries_lost": lost,
            "context_over_threshold_after_compaction": over_threshold, "identical_reload": identical}


# ----------------------------------------------------------------------------- scale mode

_PATHS = [f"src/pkg/mod{i}.py" for i in range(30)]


def scale_session(n_messages: int | None, n_chars: int | None, seed: int = 7) -> list[dict]:
    """Agent messages cut from the mixed corpus: ``n_messages`` small ones, or turns with larger
    tool results until ``n_chars`` characters."""
    from corpus import mixed

    rng = random.Random(seed)
    text = mixed(400_000)

    def snip(lo: int, hi: int) -> str:
        k = rng.randint(lo, hi)
        at = rng.randrange(0, len(text) - k)
        return text[at:at + k]

    big = n_chars is not None
    out: list[dict] = []
    chars = call = 0
    while (len(out) < n_messages) if n_messages is not None else (chars < (n_chars or 0)):
        turn = [{"role": "user", "content": snip(20, 120)}]
        for _ in range(rng.randint(1, 3)):
            call += 1
            tool = rng.choice(["read", "read", "bash", "grep", "edit"])
            args = ({"path": rng.choice(_PATHS)} if tool in ("read", "edit")
                    else {"command": snip(10, 30)})
            block = {"type": "toolCall", "id": f"call_{call}", "name": tool, "arguments": args}
            turn.append({"role": "assistant", "stopReason": "toolUse",
                         "content": [{"type": "text", "text": snip(10, 80)}, block]})
            result = {"role": "toolResult", "toolCallId": block["id"], "toolName": tool,
                      "content": [{"type": "text",
                                   "text": snip(500, 6000) if big else snip(20, 200)}],
                      "isError": False}
            if tool == "grep" and rng.random() < 0.3:
                result["useless"] = True
            turn.append(result)
        turn.append({"role": "assistant", "stopReason": "stop",
                     "content": [{"type": "text", "text": snip(10, 100)}]})
        out.extend(turn)
        chars += sum(len(json.dumps(m, ensure_ascii=False)) for m in turn)
    return out[:n_messages] if n_messages is not None else out


def _size_label(size: str) -> tuple[str, int | None, int | None]:
    if size.upper().endswith("M"):
        return f"chars-{size}", None, int(float(size[:-1]) * 1_000_000)
    return f"msgs-{size}", int(size), None


def _python_for(tree: Path) -> str:
    venv = tree / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (0 when /proc cannot tell)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_run(argv: list[str], cwd: Path, timeout: float) -> dict:
    """Run ``argv`` in ``cwd`` (its checkout first on the import path): wall and CPU seconds (the
    latter steadier on a busy machine), peak RSS, stdout. The run is stopped after ``timeout``
    CPU seconds (or four times that in wall seconds)."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    out_path = Path(f"/tmp/bench-compaction-replay-{os.getpid()}.out")
    with out_path.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        status, usage = 0, None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if (_cpu_seconds(proc.pid) > timeout
                    or time.perf_counter() - started > 4 * timeout):
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"seconds": None, "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
                        "timeout": timeout,
                        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "ok": False}
            time.sleep(0.05)
        seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_path.read_text(errors="replace")
    out_path.unlink()
    return {"seconds": round(seconds, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "ok": proc.returncode == 0, "output": text}


#: ``--engine pipeline``: the compaction pipeline's own replay (``replay_session``, snapcompact,
#: no LLM), under the command's settings, without the agent's maintenance around it.
_PIPELINE_REPLAY = """
import json, sys, warnings
from snapcompact.compaction import DEFAULT_SETTINGS, ModelInfo, replay_session, replay_settings
messages = json.loads(open(sys.argv[1], encoding="utf-8").read())
model = ModelInfo(sys.argv[3], int(sys.argv[2]))
warnings.simplefilter("ignore")
replay = replay_session(messages, model, replay_settings("snapcompact", DEFAULT_SETTINGS),
                        strategy="snapcompact")
replay.llm_messages()
print(json.dumps({"compactions": replay.compactions}))
"""


def run_scale(args: argparse.Namespace, workdir: Path) -> None:
    trees = [("current", ROOT)]
    if args.baseline:
        trees.append(("baseline", Path(args.baseline).resolve()))
    for n, size in enumerate(args.sizes.split(",")):
        label, n_messages, n_chars = _size_label(size)
        session = workdir / f"{label}.json"
        if not session.exists():
            messages = scale_session(n_messages, n_chars)
            session.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
        chars = len(session.read_text(encoding="utf-8"))
        order = trees if n % 2 == 0 else trees[::-1]
        contexts = {}
        for name, tree in order:
            out = workdir / f"out-{label}-{name}"
            if args.engine == "pipeline":
                argv = [_python_for(tree), "-c", _PIPELINE_REPLAY, str(session), str(args.window),
                        args.model]
            else:
                argv = [_python_for(tree), "-m", "snapcompact", "compact", str(session),
                        "--model", args.model, "--context-window", str(args.window),
                        "--out", str(out)]
            row = timed_run(argv, tree, args.timeout)
            compactions = None
            if row["ok"]:
                text = row["output"].strip()
                summary = json.loads(text if args.engine == "cli" else text.splitlines()[-1])
                compactions = summary.get("compactions")
                if args.engine == "cli":
                    contexts[name] = (out / "context.json").read_bytes()
            elif row.get("output"):
                row["error"] = row["output"].strip().splitlines()[-1][:200]
            seconds = f"{row['seconds']}" if row["seconds"] is not None else "stopped"
            print(f"{label} ({chars:,} chars) engine={args.engine} tree={name} seconds={seconds} "
                  f"cpu_seconds={row['cpu_seconds']} "
                  f"peak_rss_mb={row['peak_rss_mb']} compactions={compactions}"
                  + (f" error={row['error']}" if row.get("error") else ""), flush=True)
        if len(contexts) == 2:
            same = contexts["current"] == contexts["baseline"]
            print(f"{label}: context.json identical across trees: {same}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--window", type=int, default=None,
                    help="context window (default 60000 per turn mode, 32000 in scale mode)")
    ap.add_argument("--strategies", default="context-full,snapcompact,handoff,shake,off")
    ap.add_argument("--scale", action="store_true", help="time the compact command on big sessions")
    ap.add_argument("--sizes", default="2500,10000,60000,1.2M")
    ap.add_argument("--model", default="claude-sonnet-4-5")
    ap.add_argument("--engine", choices=("cli", "pipeline"), default="cli",
                    help="scale mode: the compact command (default) or the pipeline's replay")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--baseline", help="another checkout to time in the same run")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default="/tmp/bench-compaction-replay")
    args = ap.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.scale:
        args.window = args.window or 32_000
        run_scale(args, workdir)
        return
    args.window = args.window or 60_000
    if args.one:
        for old in workdir.glob(f"{args.one}*.jsonl"):
            old.unlink()
        print(json.dumps(run_one(args.one, args.turns, args.window, workdir)))
        return
    trees = [("current", ROOT)]
    if args.baseline:
        trees.append(("baseline", Path(args.baseline).resolve()))
    for n, strategy in enumerate(args.strategies.split(",")):
        for name, tree in (trees if n % 2 == 0 else trees[::-1]):
            sub = workdir / name
            sub.mkdir(exist_ok=True)
            row = timed_run([_python_for(tree), str(tree / "benchmarks" / Path(__file__).name),
                             "--one", strategy, "--turns", str(args.turns), "--window",
                             str(args.window), "--workdir", str(sub)], tree, args.timeout)
            if not row["ok"]:
                tail = (row.get("output") or "").strip().splitlines()
                print(f"{strategy} tree={name}: failed: {tail[-1] if tail else 'timeout'}")
                continue
            result = json.loads(row["output"].strip().splitlines()[-1])
            print(f"tree={name} " + " ".join(f"{k}={v}" for k, v in result.items()), flush=True)


if __name__ == "__main__":
    main()
