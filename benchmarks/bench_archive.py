"""Time and peak memory of one snapcompact compaction of a 200k-token session, both policies.

    python benchmarks/bench_archive.py [--chars 800000] [--model claude-sonnet-4-5]
                                       [--api anthropic-messages] [--provider anthropic]
                                       [--against OTHER_TREE --repeat 3]

The session is synthetic but made of real text: the Python standard library's sources, cut into
user requests, assistant replies and ``read``/``bash`` tool calls whose results are file chunks
(about 4 characters per token, so 800,000 characters is about 200k tokens). Each policy runs in a
fresh subprocess: a first compaction of the whole session, then a second one that carries the
archive forward with a further 10% of new history. Reported: wall time of each compaction and
its CPU seconds (user + system, forked page workers included: on a shared machine other jobs
stretch wall time far more than CPU time), frames, archive characters, serialized characters,
peak Python heap (tracemalloc, a separate run) and peak RSS of the process (ru_maxrss).

``--against OTHER_TREE`` compares with another checkout of the project (its own
``.venv/bin/python``, or this interpreter with ``--same-python``, and its own
``benchmarks/bench_archive.py``): the two trees run alternately,
``--repeat`` times per policy, every run printed as a JSON line tagged with its tree, then a
side-by-side table of medians and the load average before and after. On a shared machine only
such interleaved runs compare fairly.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bytecode import compile_tree  # noqa: E402


def stdlib_chunks(n_chars: int) -> list[tuple[str, str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out: list[tuple[str, str]] = []
    total = 0
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for start in range(0, len(text), 3000):
            out.append((path.name, text[start:start + 3000]))
            total += len(out[-1][1])
            if total >= n_chars:
                return out
    return out


def session(n_chars: int, offset: int = 0) -> list[dict]:
    """Messages totalling about ``n_chars`` characters of content."""
    msgs: list[dict] = []
    chunks = stdlib_chunks(n_chars + offset)
    total = 0
    for i, (name, chunk) in enumerate(chunks):
        if total < offset:
            total += len(chunk)
            continue
        kind = i % 4
        if kind == 0:
            msgs.append({"role": "user", "content": chunk[:600]})
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": chunk[600:]}]})
        else:
            cid = f"call{i}"
            tool = "read" if kind != 3 else "bash"
            args = ({"path": f"Lib/{name}"} if tool == "read"
                    else {"command": f"python -m pytest Lib/{name}"})
            msgs.append({"role": "assistant", "content": [
                {"type": "text", "text": chunk[:200]},
                {"type": "toolCall", "id": cid, "name": tool, "arguments": args}]})
            msgs.append({"role": "toolResult", "toolCallId": cid, "toolName": tool,
                         "content": [{"type": "text", "text": chunk[200:]}], "isError": False})
        total += len(chunk)
    return msgs


def child(args: argparse.Namespace) -> None:
    import resource
    import time
    import tracemalloc

    from snapcompact.archive import (
        compact,
        file_ops_from_messages,
        serialize_conversation,
    )

    first = session(args.chars)
    more = session(args.chars // 10, offset=args.chars)
    input_chars = sum(len(json.dumps(m)) for m in first)
    kw = {"model_id": args.model, "api": args.api, "provider": args.provider, "policy": args.policy}
    if args.trace:
        tracemalloc.start()
    def cpu() -> float:
        times = os.times()
        return times.user + times.system + times.children_user + times.children_system

    t0, c0 = time.perf_counter(), cpu()
    r1 = compact(first, file_ops=file_ops_from_messages(first), **kw)
    t1, c1 = time.perf_counter(), cpu()
    r2 = compact(more, previous=r1.preserve_data, file_ops=file_ops_from_messages(first + more),
                 **kw)
    t2, c2 = time.perf_counter(), cpu()
    heap = tracemalloc.get_traced_memory()[1] if args.trace else None
    print(json.dumps({
        "policy": args.policy, "shape": r1.shape.name, "frame_size": r1.shape.frame_size,
        "messages": len(first), "message_json_chars": input_chars,
        "serialized_chars": len(serialize_conversation(first)),
        "first_s": round(t1 - t0, 3), "second_s": round(t2 - t1, 3),
        "first_cpu_s": round(c1 - c0, 3), "second_cpu_s": round(c2 - c1, 3),
        "frames": [len(r1.archive.frames), len(r2.archive.frames)],
        "rendered": [r1.rendered_frames, r2.rendered_frames],
        "total_chars": [r1.archive.total_chars, r2.archive.total_chars],
        "truncated_chars": [r1.archive.truncated_chars, r2.archive.truncated_chars],
        "frame_bytes": sum(len(f.data) for f in r1.archive.frames),
        "projected_tokens": r1.projected_tokens,
        "peak_heap_mb": round(heap / 1e6, 1) if heap is not None else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


#: Figures the comparison table shows (median over the repeats), in this order.
COMPARED = ("first_s", "first_cpu_s", "second_s", "second_cpu_s", "rendered", "peak_heap_mb",
            "peak_rss_mb")


def run_child(python: str, script: Path, options: list[str], policy: str,
              trace: bool = False) -> dict:
    """One measurement in a fresh process of ``script`` (this tree's or another's)."""
    cmd = [python, str(script), *options, "--policy", policy, *(["--trace"] if trace else [])]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                          cwd=script.parent.parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(python: str, script: Path, options: list[str], policy: str) -> dict:
    """Timed run plus a traced run for the peak heap, as one JSON row."""
    timed = run_child(python, script, options, policy)
    timed["peak_heap_mb"] = run_child(python, script, options, policy, trace=True)["peak_heap_mb"]
    return timed


def median(rows: list[dict], key: str) -> object:
    values = [row[key] for row in rows]
    if isinstance(values[0], list):  # [first, next] pairs: median of each
        return [statistics.median(v[i] for v in values) for i in range(len(values[0]))]
    return round(statistics.median(values), 3)


def compare(options: list[str], other: Path, repeat: int, same_python: bool) -> None:
    """This tree and ``other`` alternately, ``repeat`` times per policy, then a median table."""
    script = Path(__file__).resolve()
    other_script = other / "benchmarks" / "bench_archive.py"
    if not other_script.is_file():
        raise SystemExit(f"--against {other}: no benchmarks/bench_archive.py there")
    other_python = other / ".venv" / "bin" / "python"
    trees = {"this": (sys.executable, script),
             "other": (str(other_python) if other_python.exists() and not same_python
                       else sys.executable, other_script)}
    load_before = os.getloadavg()
    rows: dict[tuple[str, str], list[dict]] = {}
    for _ in range(repeat):
        for policy in ("pinned", "foveated"):
            for tree, (python, path) in trees.items():
                row = measure(python, path, options, policy)
                rows.setdefault((policy, tree), []).append(row)
                print(json.dumps({"tree": tree, **row}), flush=True)
    load_after = os.getloadavg()
    print(f"\nmedians of {repeat} alternating runs; this = {script.parent.parent} "
          f"({trees['this'][0]}), other = {other} ({trees['other'][0]})")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"{'policy':<9} {'figure':<13} {'this':>14} {'other':>14}")
    for policy in ("pinned", "foveated"):
        for key in COMPARED:
            ours, theirs = (median(rows[(policy, tree)], key) for tree in ("this", "other"))
            print(f"{policy:<9} {key:<13} {str(ours):>14} {str(theirs):>14}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chars", type=int, default=800_000)
    ap.add_argument("--model", default="claude-sonnet-4-5")
    ap.add_argument("--api", default="anthropic-messages")
    ap.add_argument("--provider", default="anthropic")
    ap.add_argument("--against", type=Path, help="another checkout to compare with, alternately")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per policy (--against)")
    ap.add_argument("--same-python", action="store_true",
                    help="run the other tree under this interpreter too (RSS then compares "
                         "code, not two virtualenvs' shared libraries)")
    ap.add_argument("--policy", choices=["pinned", "foveated"], help=argparse.SUPPRESS)
    ap.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.policy:
        child(args)
        return
    options = ["--chars", str(args.chars), "--model", args.model, "--api", args.api,
               "--provider", args.provider]
    compile_tree(ROOT)  # as a wheel install has it (see bytecode.py)
    if args.against is not None:
        if args.repeat < 1:
            raise SystemExit(f"--repeat must be at least 1, got {args.repeat}")
        compile_tree(args.against.resolve())
        compare(options, args.against.resolve(), args.repeat, args.same_python)
        return
    for policy in ("pinned", "foveated"):
        print(json.dumps(measure(sys.executable, Path(__file__).resolve(), options, policy)))


if __name__ == "__main__":
    main()
