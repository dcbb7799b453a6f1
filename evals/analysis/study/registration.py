"""Git's word on whether a study plan was committed before the records that test it.

Why git and not a date in the file: a date is typed by whoever writes the file, while the commit
graph is what every clone carries. The plan's *last* change must be a strict ancestor of the
first commit that added any of the study's records, so a plan edited after its results were in
the repository fails the check too. The plan must also be committed as it is on disk: an
uncommitted edit is not a registration.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Registration", "registration"]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)


def _last_change(repo: Path, path: str) -> str | None:
    out = _git(repo, "log", "-1", "--format=%H", "--", path).stdout.strip()
    return out or None


def _first_change(repo: Path, path: str) -> str | None:
    lines = _git(repo, "log", "--reverse", "--format=%H", "--", path).stdout.split()
    return lines[0] if lines else None


@dataclass(frozen=True)
class Registration:
    """What git says: ``ok`` and one sentence saying why."""

    ok: bool
    reason: str
    plan_commit: str | None = None
    records_commit: str | None = None


def registration(repo: Path, plan: str, records: str) -> Registration:
    """Check that ``plan`` (a path in ``repo``) was committed, unchanged, before ``records``.

    ``records`` is a file or folder in ``repo``; with no record committed yet the plan only has
    to be committed as it is on disk (the study may run).
    """
    if _git(repo, "rev-parse", "--git-dir").returncode != 0:
        return Registration(False, f"{repo} is not a git repository: the order cannot be checked")
    plan_commit = _last_change(repo, plan)
    if plan_commit is None:
        return Registration(False, f"{plan} is not committed: a plan is registered by its commit")
    dirty = _git(repo, "status", "--porcelain", "--", plan).stdout.strip()
    if dirty:
        return Registration(False, f"{plan} differs from its commit {plan_commit[:12]}: commit "
                                   "the plan before running it", plan_commit)
    records_commit = _first_change(repo, records)
    if records_commit is None:
        return Registration(True, f"{plan} registered at {plan_commit[:12]}; no records "
                                  f"committed under {records} yet", plan_commit)
    if plan_commit == records_commit:
        return Registration(False, f"{plan} was last changed in the commit that added the first "
                                   f"records ({records_commit[:12]}): the plan must come first",
                            plan_commit, records_commit)
    before = _git(repo, "merge-base", "--is-ancestor", plan_commit, records_commit)
    if before.returncode != 0:
        return Registration(False, f"{plan}'s last change {plan_commit[:12]} is not an ancestor "
                                   f"of the first records' commit {records_commit[:12]}: the plan "
                                   "was changed after its records", plan_commit, records_commit)
    return Registration(True, f"{plan} ({plan_commit[:12]}) precedes its first records "
                              f"({records_commit[:12]})", plan_commit, records_commit)
