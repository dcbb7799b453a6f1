"""``python -m evals.study``: a study plan's power analysis, its check, its runs.

- ``power PLAN``: the power analysis re-derived from the plan's committed pilot.
- ``verify PLAN``: the plan's stated power figures equal the re-derived ones, and git shows the
  plan committed (unchanged) before the study's records (``results/study/NAME/``); exit 1 and a
  line per difference otherwise. ``snapcompact-eval-table --check`` runs it for every plan.
- ``commands PLAN``: the harness runs, one a line.
- ``run PLAN``: runs them in order (each resumes from its records); refused unless the plan is
  registered (committed as it is on disk).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from evals.study.commands import study_runs
from evals.study.plan import PlanError, StudyPlan, load_plan
from evals.study.power import power_analysis
from evals.study.registration import registration

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


def _run(plan: StudyPlan, repo: Path, runs: Path) -> int:
    reg = registration(repo, _repo_path(plan, repo), str(records_dir(plan)))
    if not reg.ok:
        print(f"error: {reg.reason}", file=sys.stderr)
        return 2
    for n, run in enumerate(study_runs(plan, runs), 1):
        print(f"[{n}] {run.command()}", flush=True)
        done = subprocess.run([sys.executable, "-m", "evals.pipeline.run", *run.overrides],
                              check=False)
        if done.returncode != 0:
            print(f"error: run {n} (seed {run.seed}, {run.arm}) exited {done.returncode}; "
                  "the same command resumes", file=sys.stderr)
            return done.returncode
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.study``."""
    parser = argparse.ArgumentParser(prog="python -m evals.study", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("power", "verify", "commands", "run"))
    parser.add_argument("plan", type=Path)
    parser.add_argument("--repo", type=Path, default=Path.cwd(),
                        help="the repository the plan's paths are relative to (default: .)")
    parser.add_argument("--runs", type=Path, default=Path("results/runs/study"),
                        help="where `run` puts its run folders (default: results/runs/study)")
    args = parser.parse_args(argv)
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
        return _run(plan, args.repo, args.runs)
    except (PlanError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
