"""``make slurm-check``: a sweep on a real (single-node) Slurm, its rerun, and the same sweep run
locally, with the checks that matter for a cluster.

Why: ``launcher=submitit_slurm`` is how a sweep goes to a cluster; its jobs are separate
processes that share one results folder, hence one response cache (claims: an identical request
is paid once), one token-per-minute state and one budget ledger. This runs such a sweep (4 jobs,
two of which ask identical questions: the text arm does not depend on the job's shape) through
``scripts/slurm.sh``'s daemons with the offline reader, then checks:

* every job wrote its rows (no lost rows) and the first sweep sent each distinct request once
  (requests sent == answers in the response cache: no double sends);
* the rerun of the same command sends nothing (every row is already recorded);
* the rows are the rows of the same sweep run locally (``scripts/compare_records.py``).

Then prints ``slurm: J jobs, R rows, S sent on rerun``. Needs root (``scripts/slurm.sh``).

    python scripts/slurm_check.py [--out out/slurm-check] [--keep-running]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ["experiment=smoke", "shape=11on16-bw,6x6u-bw", "strategy=truncate,snapcompact",
         "progress=false"]
SLURM = ["launcher=submitit_slurm", "hydra.launcher.partition=debug",
         # two jobs at a time on a 2-CPU node, each well inside its memory
         "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2",
         "hydra.launcher.timeout_min=15"]
QUESTIONS_PER_JOB = 2  # experiment=smoke: one item, two questions
TASK_FOLDER = re.compile(r"^\d+_\d+$")  # submitit's <array job>_<task> folders


class CheckFailed(RuntimeError):
    pass


def _sh(args: list[str], log: Path | None = None) -> None:
    """Run ``args``; on failure raise with the tail of its output."""
    with open(log, "ab") if log else open("/dev/null", "wb") as sink:
        proc = subprocess.run(args, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:] if log else []
        raise CheckFailed(f"{' '.join(args[:4])} ... exited {proc.returncode}"
                          + ("\n  " + "\n  ".join(tail) if tail else ""))


def _sweep(results: Path, extra: list[str], log: Path) -> None:
    _sh([sys.executable, "-m", "evals.pipeline.run", "-m", *SWEEP, f"results_dir={results}", *extra], log)


def _traffic(results: Path) -> list[dict]:
    """Each job's ``requests`` counters (summary.json) for its latest run."""
    return [json.loads(p.read_text())["requests"]
            for p in sorted((results / "runs").rglob("summary.json"))]


def _slurm_tasks(results: Path) -> set[str]:
    folder = results / "runs" / "multirun" / ".submitit"
    return {p.name for p in folder.iterdir() if TASK_FOLDER.match(p.name)} if folder.is_dir() \
        else set()


def _rows(results: Path) -> int:
    return sum(1 for p in (results / "runs").rglob("records.jsonl")
               for line in p.read_text().splitlines() if line.strip())


def _cache_entries(results: Path) -> int:
    return sum(1 for _ in (results / "cache" / "responses").glob("??/*.json"))


class _Phases:
    """Wall seconds of each phase, for the CI time budget."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.spent: list[tuple[str, float]] = []

    def done(self, name: str) -> None:
        now = time.monotonic()
        self.spent.append((name, now - self.last))
        self.last = now

    def __str__(self) -> str:
        return ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.spent)


def check(out: Path, keep_running: bool) -> str:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    slurm, local, log = out / "slurm", out / "local", out / "sweeps.log"
    clock = _Phases()
    _sh(["bash", "scripts/slurm.sh", "start"])
    clock.done("start")
    try:
        _sweep(slurm, SLURM, log)
        clock.done("sweep")
        first_tasks = _slurm_tasks(slurm)
        first = _traffic(slurm)
        rows_first = _rows(slurm)
        _sweep(slurm, SLURM, log)
        clock.done("rerun")
        rerun = _traffic(slurm)
        rerun_tasks = _slurm_tasks(slurm) - first_tasks
    finally:
        if not keep_running:
            _sh(["bash", "scripts/slurm.sh", "stop"])
            clock.done("stop")
    jobs = len(first)
    sent_first = sum(t["sent"] for t in first)
    sent_rerun = sum(t["sent"] for t in rerun)
    rows = _rows(slurm)
    problems = []
    if len(first_tasks) != jobs or len(rerun_tasks) != jobs or jobs < 4:
        problems.append(f"{jobs} run folders, but {len(first_tasks)} Slurm tasks in the sweep "
                        f"and {len(rerun_tasks)} in the rerun")
    if rows_first != jobs * QUESTIONS_PER_JOB or rows != rows_first:
        problems.append(f"{rows_first} rows after the sweep, {rows} after the rerun; expected "
                        f"{jobs * QUESTIONS_PER_JOB} (lost or duplicated rows)")
    if sent_first != _cache_entries(slurm):
        problems.append(f"{sent_first} requests sent for {_cache_entries(slurm)} distinct "
                        "answers (a request was sent twice)")
    if any(t["errors"] for t in first + rerun):
        problems.append("a job recorded errors (see the run.log files)")
    if sent_rerun:
        problems.append(f"the rerun sent {sent_rerun} requests (expected 0)")
    _sweep(local, ["launcher=basic"], log)
    clock.done("local sweep")
    compared = subprocess.run([sys.executable, "scripts/compare_records.py",
                               str(slurm / "runs"), str(local / "runs")],
                              cwd=ROOT, capture_output=True, text=True)
    print(compared.stdout.strip() or compared.stderr.strip())
    if compared.returncode != 0:
        problems.append("the Slurm sweep's rows differ from the local sweep's")
    print(f"slurm-check phases: {clock}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return (f"slurm: {jobs} jobs, {rows} rows, {sent_rerun} sent on rerun "
            f"({sent_first} sent by the sweep for {_cache_entries(slurm)} distinct answers, "
            f"{sum(t['cache_hits'] for t in first)} answered from the shared cache)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "slurm-check")
    parser.add_argument("--keep-running", action="store_true",
                        help="leave the Slurm daemons running afterwards")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        line = check(args.out.resolve(), args.keep_running)
    except CheckFailed as exc:
        print(f"slurm-check: FAILED: {exc}", file=sys.stderr)
        return 1
    print(line)
    print(f"slurm-check: {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
