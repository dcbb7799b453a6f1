"""``python -m evals.analysis.study``: a study plan's power analysis, its check, its runs.

- ``power PLAN``: the power analysis re-derived from the plan's committed pilot.
- ``verify PLAN``: the plan's stated power figures equal the re-derived ones, and git shows the
  plan committed (unchanged) before the study's records (``results/study/NAME/``); exit 1 and a
  line per difference otherwise. ``snapcompact-eval-table --check`` runs it for every plan.
- ``commands PLAN``: the harness runs, one a line.
- ``report PLAN [--from-runs]``: the study's report (``results/study/NAME/report.md``, one
  sentence per endpoint, with ``endpoints.csv`` and ``sessions.csv``) from its committed
  ``records.parquet``; ``--from-runs`` first gathers the records of the run folders
  (``--runs``) into that file.
- ``run PLAN [--jobs N]``: runs them (each resumes from its records; ``--jobs`` runs N sessions
  at once, a session's runs in order, each run's output in ``RUN/run.log``); refused unless the
  plan is registered (committed as it is on disk).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from pathlib import Path

from evals.analysis.study.commands import StudyRun, study_runs
from evals.analysis.study.plan import PlanError, StudyPlan, load_plan
from evals.analysis.study.power import power_analysis
from evals.analysis.study.registration import registration

__all__ = ["main", "records_dir", "verify_plan"]

#: Where a study's committed per-question records live, relative to the repository.
RECORDS_ROOT = Path("results") / "study"


def records_dir(plan: StudyPlan) -> Path:
    """The folder of the study's committed records (``results/study/NAME``)."""
    return RECORDS_ROOT / plan.name


def _repo_path(plan: StudyPlan, repo: Path) -> str:
    try:
        return str(plan.path.resolve().relative_to(repo.resolve()))
    except ValueError:
        raise PlanError(f"{plan.path} is not inside the repository {repo}") from None


def verify_plan(plan: StudyPlan, repo: Path) -> list[str]:
    """Every problem with the plan: power figures that do not re-derive, a broken order."""
    problems = [f"{plan.path}: {d}" for d in power_analysis(plan, repo).differences(plan)]
    reg = registration(repo, _repo_path(plan, repo), str(records_dir(plan)))
    if not reg.ok:
        problems.append(f"{plan.path}: {reg.reason}")
    return problems


def _power(plan: StudyPlan, repo: Path) -> int:
    a = power_analysis(plan, repo)
    p = plan.power
    print(f"pilot {p.pilot}: {a.pilot_sessions} sessions, {a.pilot_valid_sessions} with "
          f"{plan.arms.baseline} valid; sd of the per-session difference of {p.pilot_column}: "
          f"{a.pilot_sd:.4f}")
    print(f"to detect {p.smallest_difference} at power {p.power} (two-sided alpha {p.alpha}): "
          f"{a.sessions_for_difference} valid sessions; at the plan's minimum of "
          f"{plan.primary.min_sessions}: {a.detectable_at_min_sessions:.4f}")
    print(f"sessions to run: {a.sessions_planned} (valid share "
          f"{a.pilot_valid_sessions}/{a.pilot_sessions})")
    return 0


def _session_runs(runs: list[tuple[int, StudyRun]], total: int, quiet: bool) -> int:
    """One session's runs in order; stops at the first failure (its later runs need it)."""
    for n, run in runs:
        print(f"[{n}/{total}] {run.command()}", flush=True)
        if quiet:
            run.results_dir.mkdir(parents=True, exist_ok=True)
            with (run.results_dir / "run.log").open("a", encoding="utf-8") as log:
                done = subprocess.run([sys.executable, "-m", "evals.pipeline.run",
                                       *run.overrides], stdout=log, stderr=subprocess.STDOUT,
                                      check=False)
        else:
            done = subprocess.run([sys.executable, "-m", "evals.pipeline.run", *run.overrides],
                                  check=False)
        if done.returncode != 0:
            where = f" (its output: {run.results_dir / 'run.log'})" if quiet else ""
            print(f"error: run {n} (seed {run.seed}, {run.arm}, reader {run.reader}) exited "
                  f"{done.returncode}{where}; the same command resumes", file=sys.stderr,
                  flush=True)
            return done.returncode
    return 0


def _run(plan: StudyPlan, repo: Path, runs: Path, jobs: int) -> int:
    reg = registration(repo, _repo_path(plan, repo), str(records_dir(plan)))
    if not reg.ok:
        print(f"error: {reg.reason}", file=sys.stderr)
        return 2
    numbered = list(enumerate(study_runs(plan, runs), 1))
    sessions = [list(g) for _, g in groupby(numbered, key=lambda nr: nr[1].seed)]
    if jobs <= 1:
        codes = [_session_runs(s, len(numbered), quiet=False) for s in sessions]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            codes = list(pool.map(lambda s: _session_runs(s, len(numbered), quiet=True),
                                  sessions))
    return next((c for c in codes if c != 0), 0)


def _report(plan: StudyPlan, repo: Path, runs: Path, from_runs: bool) -> int:
    from evals.analysis.study.report import rebuild_report, write_report

    out = repo / records_dir(plan)
    if from_runs:
        from evals.analysis.aggregate import records_frame
        from evals.analysis.write_model_shapes import library_table_path
        from evals.store.records import load_records
        from snapcompact.pricing import parse_shape_rules

        folders = [str(r.results_dir) for r in study_runs(plan, runs) if r.results_dir.is_dir()]
        if not folders:
            raise PlanError(f"no run folder of the study under {runs}")
        records = records_frame(load_records(folders),
                                parse_shape_rules(library_table_path().read_text()))
        print(write_report(records, plan, out))
        return 0
    if not (out / "records.parquet").is_file():
        raise PlanError(f"{out / 'records.parquet'}: no committed records (gather them with "
                        "--from-runs)")
    files = rebuild_report(out, plan)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    print(files["report.md"])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.analysis.study``."""
    parser = argparse.ArgumentParser(prog="python -m evals.analysis.study", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("power", "verify", "commands", "run", "report"))
    parser.add_argument("plan", type=Path)
    parser.add_argument("--repo", type=Path, default=Path.cwd(),
                        help="the repository the plan's paths are relative to (default: .)")
    parser.add_argument("--runs", type=Path, default=Path("results/runs/study"),
                        help="where `run` puts its run folders (default: results/runs/study)")
    parser.add_argument("--from-runs", action="store_true",
                        help="`report`: gather the records of the run folders first")
    parser.add_argument("--jobs", type=int, default=1,
                        help="`run`: sessions run at once (default 1)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        plan = load_plan(args.plan)
        if args.action == "power":
            return _power(plan, args.repo)
        if args.action == "verify":
            problems = verify_plan(plan, args.repo)
            for line in problems:
                print(line)
            if not problems:
                print(f"{args.plan}: power analysis re-derived; registration in order")
            return 1 if problems else 0
        if args.action == "commands":
            for run in study_runs(plan, args.runs):
                print(run.command())
            return 0
        if args.action == "report":
            return _report(plan, args.repo, args.runs, args.from_runs)
        return _run(plan, args.repo, args.runs, args.jobs)
    except (PlanError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
