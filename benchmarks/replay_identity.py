"""Replay the same sessions with this checkout and another one and compare every output.

    python benchmarks/replay_identity.py --baseline TREE [--cases all|NAME,...]

Why: the replay caches (running token totals, the tool-call index, the branch index) must not
change a single decision. Each case replays one session with one strategy in a fresh process per
checkout (``TREE`` e.g. ``git worktree add /tmp/base main``) and writes a digest (``prunedAt`` stamps
read as 0: pruning stamps them from the wall clock): the next turn's wire messages (``llm_messages()``), the rounds, the round each source message was
discarded in, the warnings, the summarizer calls and every entry of the final session file. The
digests must be byte-identical; printed per case: identical or DIFFERENT, and the CPU seconds of
each side. Cases: the benchmark's small-message and 1.2M-character sessions, a generated agent
session of the eval harness and the tests' synthetic turns, with the offline strategies and,
through the tests' fake summarizer, the LLM ones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: A pruned result's ``prunedAt``: the wall clock when the pipeline's clock is not injected into
#: pruning, so it differs between any two runs; digests compare it as 0.
_PRUNED_AT = re.compile(r"""(['"]prunedAt\\?['"]:) ?\d+""")

#: name -> (session source, strategy, context window)
CASES: dict[str, tuple[str, str, int]] = {
    "small-snapcompact": ("msgs-2500", "snapcompact", 32_000),
    "small-truncate": ("msgs-2500", "truncate", 32_000),
    "small-full": ("msgs-2500", "full", 32_000),
    "small-shake": ("msgs-2500", "shake", 32_000),
    "big-snapcompact": ("chars-1.2M", "snapcompact", 32_000),
    "big-context-full": ("chars-1.2M", "context-full", 64_000),
    "agent-snapcompact": ("agent-session", "snapcompact", 32_000),
    "agent-handoff": ("agent-session", "handoff", 32_000),
    "agent-shake": ("agent-session", "shake", 40_000),
    "synth-context-full": ("synth-turns", "context-full", 30_000),
    "synth-handoff": ("synth-turns", "handoff", 30_000),
    "synth-truncate": ("synth-turns", "truncate", 20_000),
}


def session_messages(source: str, workdir: Path) -> Path:
    """Write the case's source messages once (by this checkout's generators) and return the file."""
    path = workdir / f"{source}.json"
    if path.exists():
        return path
    if source in ("msgs-2500", "chars-1.2M"):
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from bench_compaction_replay import scale_session

        messages = (scale_session(2500, None) if source == "msgs-2500"
                    else scale_session(None, 1_200_000))
    elif source == "agent-session":
        sys.path.insert(0, str(ROOT))
        from evals.items.datasets.agent_session import DEFAULT_DEPTHS, build_session

        messages = [dict(m) for m in build_session(3, 0, 60_000, DEFAULT_DEPTHS).messages]
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        from compaction_synth import tool_turns

        messages = tool_turns(300, 5, ask="turn {turn}: go on")
    path.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
    return path


def worker(session_file: str, strategy: str, window: int) -> None:
    """Replay one case with the snapcompact on the import path; print its digest as JSON."""
    import warnings

    sys.path.insert(0, str(Path.cwd() / "tests"))
    from compaction_synth import FakeLLM

    from snapcompact.compaction import DEFAULT_SETTINGS, ModelInfo, replay_session, replay_settings

    messages = json.loads(Path(session_file).read_text(encoding="utf-8"))
    model = ModelInfo("claude-sonnet-4-5", window, provider="anthropic", api="anthropic-messages")
    settings = replay_settings(strategy, DEFAULT_SETTINGS)
    llm = FakeLLM() if strategy in ("context-full", "handoff", "shake") else None
    started = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replay = replay_session(messages, model, settings, strategy=strategy, complete=llm)
    cpu = time.process_time() - started
    parts: dict[str, Any] = {
        "llm_messages": repr(replay.llm_messages()),
        "rounds": [asdict(r) for r in replay.rounds],
        "discarded": list(replay.discarded_round),
        "warnings": list(replay.warnings),
        "llm_calls": replay.llm_calls,
        "session": [e.to_json() for e in replay.pipeline.session.entries],
        "leaf": replay.pipeline.session.leaf_id,
    }
    digest = {k: hashlib.sha256(_PRUNED_AT.sub(r"\1 0", json.dumps(
        v, ensure_ascii=False, default=repr, sort_keys=True)).encode()).hexdigest()
        for k, v in parts.items()}
    print(json.dumps({"digest": digest, "cpu_seconds": round(cpu, 2),
                      "compactions": replay.compactions}))


def run_case(tree: Path, session_file: Path, strategy: str, window: int) -> dict[str, Any]:
    venv = tree / ".venv" / "bin" / "python"
    python = str(venv) if venv.exists() else sys.executable
    env = {**os.environ, "PYTHONPATH": str(tree), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([python, str(Path(__file__).resolve()), "--worker", str(session_file),
                           strategy, str(window)], cwd=tree, env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()
        raise SystemExit(f"{tree}: {strategy} on {session_file.name} failed: "
                         f"{tail[-1] if tail else done.returncode}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="the other checkout")
    ap.add_argument("--cases", default="all", help=f"all, or some of: {', '.join(CASES)}")
    ap.add_argument("--workdir", default="/tmp/replay-identity")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return
    if not args.baseline:
        ap.error("--baseline TREE is required")
    baseline = Path(args.baseline).resolve()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    names = list(CASES) if args.cases == "all" else args.cases.split(",")
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    different = 0
    for name in names:
        source, strategy, window = CASES[name]
        session_file = session_messages(source, workdir)
        new = run_case(ROOT, session_file, strategy, window)
        old = run_case(baseline, session_file, strategy, window)
        diff = [k for k in new["digest"] if new["digest"][k] != old["digest"].get(k)]
        different += bool(diff)
        verdict = "identical" if not diff else f"DIFFERENT in {', '.join(diff)}"
        print(f"{name}: {verdict} (compactions {new['compactions']}; cpu seconds "
              f"{new['cpu_seconds']} here, {old['cpu_seconds']} baseline)", flush=True)
    if different:
        raise SystemExit(f"{different} case(s) differ")


if __name__ == "__main__":
    main()
