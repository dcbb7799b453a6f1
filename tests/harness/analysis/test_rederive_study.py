"""--check verifies every study plan: its power analysis and its order against its records."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from evals.analysis.rederive import check_study_plans

REPO = Path(__file__).resolve().parents[3]
PLAN = "configs/study/recommended_rerun.yaml"
PILOT = "results/research/research_sessions.csv"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _commit(root: Path, message: str) -> None:
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm",
         message)


def _checkout(tmp_path: Path) -> Path:
    for rel in (PLAN, PILOT):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    _git(tmp_path, "init", "-q")
    return tmp_path


def test_a_plan_committed_before_its_records_passes(tmp_path):
    root = _checkout(tmp_path)
    _commit(root, "plan and pilot")
    assert check_study_plans(root) == []
    (root / "results/study/recommended_rerun").mkdir(parents=True)
    (root / "results/study/recommended_rerun/records.parquet").write_bytes(b"r")
    _commit(root, "records")
    assert check_study_plans(root) == []


def test_a_plan_edited_after_its_records_fails(tmp_path):
    root = _checkout(tmp_path)
    _commit(root, "plan and pilot")
    (root / "results/study/recommended_rerun").mkdir(parents=True)
    (root / "results/study/recommended_rerun/records.parquet").write_bytes(b"r")
    _commit(root, "records")
    plan = root / PLAN
    plan.write_text(plan.read_text().replace("question: >-", "question: >-\n  (edited)", 1))
    _commit(root, "plan edited after the records")
    (problem,) = check_study_plans(root)
    assert "changed after its records" in problem


def test_a_stated_power_figure_that_does_not_re_derive_fails(tmp_path):
    root = _checkout(tmp_path)
    plan = root / PLAN
    plan.write_text(plan.read_text().replace("pilot_sd: 0.0532", "pilot_sd: 0.0432"))
    _commit(root, "plan with a wrong sd")
    (problem,) = check_study_plans(root)
    assert "power.pilot_sd: plan says 0.0432, derived 0.0532" in problem


def test_a_study_report_is_re_derived_from_its_committed_records(tmp_path):
    from study_records import study_records

    from evals.analysis.rederive import check_study_reports
    from evals.analysis.study import load_plan
    from evals.analysis.study.report import write_report

    root = _checkout(tmp_path)
    folder = root / "results/study/recommended_rerun"
    write_report(study_records(), load_plan(root / PLAN), folder)
    assert check_study_reports(root) == []
    report = folder / "report.md"
    text = report.read_text()
    assert "W-L-T 1-0-1" in text  # the fixture's primary: 2001 gains, 2002 ties
    report.write_text(text.replace("W-L-T 1-0-1", "W-L-T 2-0-0", 1))
    (problem,) = check_study_reports(root)
    assert "report.md:" in problem and "2-0-0" in problem and "1-0-1" in problem
