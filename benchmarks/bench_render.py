"""Render speed and peak memory per shape variant, ours beside the reference in the same run.

    python benchmarks/bench_render.py [--mode process|inprocess] [--corpus mixed|stdlib]
                                      [--chars 800000] [--variants A,B] [--repeat 3]
                                      [--upstream PATH/TO/upstream-frames | --no-reference]
                                      [--baseline TREE] [--png-effort production|fast]

Input (``--corpus``): ``mixed`` (default) interleaves prose, source code, one-sentence lines and
generated non-Latin text (CJK, kana, Hangul, emoji, combining marks), see ``corpus.py``;
``stdlib`` is the standard library's sources alone.  The same text goes to both renderers.

``--mode process`` (default) times what a user waits for: the whole command, start to exit,
``python -m snapcompact render --shape V --out DIR < text`` against the reference rendering the
same file with ``renderMany`` and writing its PNGs in a fresh ``bun`` process.  The two run
alternately, ``--repeat`` times each; the medians are compared.  Peak MB is the child's
maximum RSS; cpu is its user + system seconds (forked page workers and the reference's threads
included), which other jobs on a shared machine skew far less than wall time.

``--mode inprocess`` times ``render_many`` alone inside a warm process (best of ``--repeat``)
against the reference's ``bench`` verb (``renderMany`` in a warm process, best of the same).

The ratio is reference time / ours: above 1 means we are faster.  The machine's load average is
printed, since other work on the same cores skews both sides.

Both trees' bytecode is compiled before timing (``bytecode.py``): a wheel install has it, an
editable checkout on a ``PYTHONDONTWRITEBYTECODE`` machine never would.

``--baseline TREE`` also times another checkout of this project (say, the main branch before a
change) with the same interpreter, alternating with ours in the same run, and prints its time,
peak MB and cpu beside ours with the speedup (baseline / ours): before and after under the same
load.

``--png-effort`` (process mode) passes ``--png-effort`` to our ``render`` (default
``production``, what the CLI does by default: PNG bytes no larger than the reference's; ``fast``
is ISA-L level 2, the encoder before issue 45).  The baseline tree is run as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bytecode import compile_tree  # noqa: E402  (found through the path set above)
from corpus import mixed, stdlib_source  # noqa: E402  (found through the path set above)

DEFAULT_UPSTREAM = ROOT.parent / "shared" / "tools" / "upstream-frames"

_CHILD = r"""
import json, resource, sys, time
from snapcompact.render.renderer import render_many
from snapcompact.core.shapes import get_shape
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

# The reference's whole process: start bun, load the package, read the file, renderMany,
# write every frame as a PNG file (what its `render` verb does, minus its extra bookkeeping).
_UPSTREAM_RENDER = (
    "(async () => {{ const fs = await import('node:fs');"
    " const text = fs.readFileSync({path!r}, 'utf8');"
    " const imgs = await sc.renderMany(text, {{ shape: sc.resolveShape(undefined, {shape!r}) }});"
    " fs.mkdirSync({out!r}, {{ recursive: true }});"
    " imgs.forEach((im, i) => fs.writeFileSync({out!r} + '/frame' + String(i).padStart(3, '0')"
    " + '.png', Buffer.from(im.data, 'base64')));"
    " return imgs.length; }})()"
)


def _env_for(tree: Path) -> dict[str, str]:
    """The environment that makes ``python -m snapcompact`` import the package from ``tree``."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def _scratch(prefix: str) -> tempfile.TemporaryDirectory:
    """A folder for one run's frames, removed afterwards (errors while removing ignored)."""
    return tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True)


def _run_with_rusage(
    cmd: list[str], stdin_path: str | None, tree: Path = ROOT
) -> tuple[float, float, float, bytes]:
    """Wall seconds, CPU seconds (user + system, its reaped workers and threads included), the
    child's peak RSS (MB) and its stdout; raises on a non-zero exit."""
    with (tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err,
          open(stdin_path or os.devnull, "rb") as stdin):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err, cwd=tree,
                                env=_env_for(tree))
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{Path(cmd[0]).name} exited {proc.returncode}: "
                               f"{err.read().decode(errors='replace')[-400:]}")
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return seconds, cpu, usage.ru_maxrss / 1024, out.read()


def _ours_process(
    path: str, variant: str, out_dir: str, tree: Path = ROOT, effort: str | None = None
) -> tuple[float, float, float, int]:
    cmd = [sys.executable, "-m", "snapcompact", "render", "--shape", variant, "--out", out_dir]
    if effort:
        cmd += ["--png-effort", effort]
    seconds, cpu, peak, stdout = _run_with_rusage(cmd, path, tree)
    return seconds, cpu, peak, json.loads(stdout)["frames"]


def _ref_process(
    upstream: Path, path: str, variant: str, out_dir: str
) -> tuple[float, float, float, int]:
    expr = _UPSTREAM_RENDER.format(path=path, shape=variant, out=out_dir)
    last: Exception | None = None
    for _ in range(3):  # the oracle occasionally dies while loading its native addon
        try:
            seconds, cpu, peak, stdout = _run_with_rusage([str(upstream), "eval", expr], None)
            return seconds, cpu, peak, int(json.loads(stdout))
        except RuntimeError as exc:
            last = exc
    raise RuntimeError(f"reference failed three times: {last}")


def bench_process(
    path: str, variants: list[str], repeat: int, upstream: Path | None, baseline: Path | None,
    effort: str | None = None,
) -> None:
    header = (f"{'shape':20} {'frames':>6} {'ours s':>7} {'ref s':>7} {'ratio':>6} "
              f"{'peak MB':>8} {'ref MB':>7} {'ours cpu':>8} {'ref cpu':>8} {'cpu ratio':>9}")
    if baseline:
        header += f" {'base s':>7} {'base MB':>7} {'base cpu':>8} {'speedup':>7} {'cpu sp.':>7}"
    print(header)
    ratios, cpu_ratios = [], []
    for variant in variants:
        ours, ref, peaks, ref_peaks, cpus, ref_cpus = [], [], [], [], [], []
        base: list[tuple[float, float, float]] = []
        frames = ref_frames = 0
        for _ in range(repeat):
            with _scratch("bench-ours-") as out_dir:
                seconds, cpu, peak, frames = _ours_process(path, variant, out_dir,
                                                           effort=effort)
            ours.append(seconds)
            cpus.append(cpu)
            peaks.append(peak)
            if baseline:
                with _scratch("bench-base-") as out_dir:
                    seconds, cpu, peak, _ = _ours_process(path, variant, out_dir, baseline)
                base.append((seconds, cpu, peak))
            if upstream:
                with _scratch("bench-ref-") as out_dir:
                    seconds, cpu, peak, ref_frames = _ref_process(upstream, path, variant, out_dir)
                ref.append(seconds)
                ref_cpus.append(cpu)
                ref_peaks.append(peak)
        ours_s, ours_cpu = statistics.median(ours), statistics.median(cpus)
        line = f"{variant:20} {frames:6d} {ours_s:7.3f}"
        if ref:
            ref_s = statistics.median(ref)
            ratios.append(ref_s / ours_s)
            line += f" {ref_s:7.3f} {ref_s / ours_s:5.2f}x"
        else:
            line += f" {'-':>7} {'-':>6}"
        line += f" {max(peaks):8.0f}"
        line += f" {max(ref_peaks):7.0f}" if ref_peaks else f" {'-':>7}"
        line += f" {ours_cpu:8.3f}"
        if ref_cpus:
            ref_cpu = statistics.median(ref_cpus)
            cpu_ratios.append(ref_cpu / ours_cpu)
            line += f" {ref_cpu:8.3f} {ref_cpu / ours_cpu:8.2f}x"
        elif baseline:
            line += f" {'-':>8} {'-':>9}"
        if base:
            base_s = statistics.median(b[0] for b in base)
            base_cpu = statistics.median(b[1] for b in base)
            line += (f" {base_s:7.3f} {max(b[2] for b in base):7.0f} {base_cpu:8.3f}"
                     f" {base_s / ours_s:6.2f}x {base_cpu / ours_cpu:6.2f}x")
        if ref and ref_frames != frames:
            line += f"  (reference: {ref_frames} frames)"
        print(line, flush=True)
    if ratios:
        print(f"ratio: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x; "
              f"cpu ratio: min {min(cpu_ratios):.2f}x, median {statistics.median(cpu_ratios):.2f}x")


def bench_ours_inprocess(path: str, variant: str, repeat: int, tree: Path = ROOT) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, path, variant, str(repeat)],
                         capture_output=True, text=True, check=True, cwd=tree,
                         env=_env_for(tree))
    return json.loads(out.stdout)


def bench_upstream_inprocess(upstream: Path, path: str, variant: str, repeat: int) -> dict | None:
    for _ in range(3):  # the oracle occasionally dies while loading its native addon
        with open(path, "rb") as fh:
            cmd = [str(upstream), "bench", "--shape", variant, "--repeat", str(repeat)]
            proc = subprocess.run(cmd, stdin=fh, capture_output=True, text=True, check=False)
        if proc.returncode == 0 and proc.stdout.strip():
            data = json.loads(proc.stdout)
            return {"frames": data["frames"], "best_s": data["min_s"]}
    return None


def bench_inprocess(path: str, n_chars: int, variants: list[str], repeat: int,
                    upstream: Path | None, baseline: Path | None) -> None:
    header = f"{'shape':20} {'frames':>6} {'Mchar/s':>8} {'ms/frame':>9} {'peak MB':>8}"
    if upstream:
        header += f" {'ref Mchar/s':>11} {'ref ms/frame':>12} {'ratio':>6}"
    if baseline:
        header += f" {'base Mchar/s':>12} {'base MB':>7} {'speedup':>7}"
    print(header)
    ratios = []
    for variant in variants:
        ours = bench_ours_inprocess(path, variant, repeat)
        line = (f"{variant:20} {ours['frames']:6d} {n_chars / ours['best_s'] / 1e6:8.3f} "
                f"{1000 * ours['best_s'] / max(ours['frames'], 1):9.1f} {ours['peak_mb']:8.0f}")
        if upstream:
            ref = bench_upstream_inprocess(upstream, path, variant, repeat)
            if ref:
                ratios.append(ref["best_s"] / ours["best_s"])
                line += (f" {n_chars / ref['best_s'] / 1e6:11.3f} "
                         f"{1000 * ref['best_s'] / max(ref['frames'], 1):12.1f} "
                         f"{ref['best_s'] / ours['best_s']:5.2f}x")
            else:
                line += "   (reference failed)"
        if baseline:
            base = bench_ours_inprocess(path, variant, repeat, baseline)
            line += (f" {n_chars / base['best_s'] / 1e6:12.3f} {base['peak_mb']:7.0f}"
                     f" {base['best_s'] / ours['best_s']:6.2f}x")
        print(line, flush=True)
    if ratios:
        print(f"ratio: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x")


def main() -> None:
    from snapcompact.core import SHAPE_NAMES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("process", "inprocess"), default="process")
    parser.add_argument("--corpus", choices=("mixed", "stdlib"), default="mixed")
    parser.add_argument("--chars", type=int, default=800_000)
    parser.add_argument("--variants", default=",".join(SHAPE_NAMES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--upstream", type=Path,
                        default=DEFAULT_UPSTREAM if DEFAULT_UPSTREAM.exists() else None)
    parser.add_argument("--no-reference", action="store_true",
                        help="time ours (and the baseline) only")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout of this project to time beside ours")
    parser.add_argument("--png-effort", choices=("production", "fast"), default=None,
                        help="our render's --png-effort (default: the CLI's, production)")
    args = parser.parse_args()
    if args.baseline and not (args.baseline / "snapcompact" / "__init__.py").is_file():
        parser.error(f"--baseline {args.baseline}: not a checkout of this project")
    if args.no_reference:
        args.upstream = None
    for tree in (ROOT, args.baseline) if args.baseline else (ROOT,):
        compile_tree(tree)
    text = (mixed if args.corpus == "mixed" else stdlib_source)(args.chars)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as fh:
        fh.write(text)
        path = fh.name
    how = "median" if args.mode == "process" else "best"
    print(f"mode {args.mode}: {len(text):,} chars of {args.corpus} text; {how} of {args.repeat}; "
          f"cpus={os.cpu_count()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"python {sys.version.split()[0]}; bytecode compiled first, as a wheel install has it; "
          f"png effort {args.png_effort or 'default (production)'}")
    try:
        variants = args.variants.split(",")
        if args.mode == "process":
            bench_process(path, variants, args.repeat, args.upstream, args.baseline,
                          args.png_effort)
        else:
            bench_inprocess(path, len(text), variants, args.repeat, args.upstream,
                            args.baseline)
    finally:
        os.unlink(path)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
