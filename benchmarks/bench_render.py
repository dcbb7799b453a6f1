"""Render throughput and peak memory per shape variant, beside the reference in the same run.

    python benchmarks/bench_render.py [--chars 800000] [--variants A,B] [--repeat 3]
                                      [--upstream PATH/TO/upstream-frames]

Input: the first ``--chars`` characters of the Python standard library's sources (real prose in
docstrings and comments plus code; the same text goes to both renderers).  Each variant is timed
in a fresh subprocess (best of ``--repeat``), which also reports its peak RSS.  With
``--upstream`` the reference's ``bench`` verb times the same text and a ratio column is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_UPSTREAM = ROOT.parent / "shared" / "tools" / "upstream-frames"


def corpus(n_chars: int) -> str:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts: list[str] = []
    total = 0
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        total += len(text)
        if total >= n_chars:
            break
    return "".join(parts)[:n_chars]


_CHILD = r"""
import json, resource, sys, time
from snapcompact.render import render_many
from snapcompact.shapes import get_shape
text = open(sys.argv[1], encoding="utf-8").read()
shape = get_shape(sys.argv[2])
repeat = int(sys.argv[3])
render_many(text[:20000], shape)  # warm caches (font atlases, imports)
runs = []
for _ in range(repeat):
    t0 = time.perf_counter()
    frames = render_many(text, shape)
    runs.append(time.perf_counter() - t0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"frames": len(frames), "best_s": min(runs), "peak_mb": peak}))
"""


def bench_ours(path: str, variant: str, repeat: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, path, variant, str(repeat)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


def bench_upstream(upstream: Path, path: str, variant: str, repeat: int) -> dict | None:
    for _ in range(3):  # the oracle occasionally dies while loading its native addon
        with open(path, "rb") as fh:
            proc = subprocess.run([str(upstream), "bench", "--shape", variant, "--repeat", str(repeat)],
                                  stdin=fh, capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout.strip():
            data = json.loads(proc.stdout)
            return {"frames": data["frames"], "best_s": data["min_s"]}
    return None


def main() -> None:
    from snapcompact.shapes import SHAPE_VARIANT_NAMES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=800_000)
    parser.add_argument("--variants", default=",".join(SHAPE_VARIANT_NAMES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--upstream", type=Path,
                        default=DEFAULT_UPSTREAM if DEFAULT_UPSTREAM.exists() else None)
    args = parser.parse_args()
    text = corpus(args.chars)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as fh:
        fh.write(text)
        path = fh.name
    print(f"input: {len(text):,} chars of stdlib source; best of {args.repeat}; "
          f"cpus={os.cpu_count()}; python {sys.version.split()[0]}")
    header = f"{'variant':20} {'frames':>6} {'Mchar/s':>8} {'ms/frame':>9} {'peak MB':>8}"
    if args.upstream:
        header += f" {'ref Mchar/s':>11} {'ref ms/frame':>12} {'ratio':>6}"
    print(header)
    try:
        for variant in args.variants.split(","):
            ours = bench_ours(path, variant, args.repeat)
            line = (f"{variant:20} {ours['frames']:6d} {len(text) / ours['best_s'] / 1e6:8.3f} "
                    f"{1000 * ours['best_s'] / max(ours['frames'], 1):9.1f} {ours['peak_mb']:8.0f}")
            if args.upstream:
                ref = bench_upstream(args.upstream, path, variant, args.repeat)
                if ref:
                    line += (f" {len(text) / ref['best_s'] / 1e6:11.3f} "
                             f"{1000 * ref['best_s'] / max(ref['frames'], 1):12.1f} "
                             f"{ref['best_s'] / ours['best_s']:6.2f}x")
                else:
                    line += "   (reference failed)"
            print(line, flush=True)
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
