"""The plan-before-records check on real git histories built in a temporary repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evals.analysis.study.registration import registration


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.invalid")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "README").write_text("x\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "start")
    return tmp_path


def _commit(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    _git(repo, "add", path)
    _git(repo, "commit", "-qm", f"add {path}")


def test_plan_then_records_is_in_order(repo):
    _commit(repo, "plan.yaml", "a\n")
    assert registration(repo, "plan.yaml", "results/study/x").ok  # no records yet
    _commit(repo, "results/study/x/records.parquet", "r\n")
    assert registration(repo, "plan.yaml", "results/study/x").ok


def test_records_before_the_plan_fail(repo):
    _commit(repo, "results/study/x/records.parquet", "r\n")
    _commit(repo, "plan.yaml", "a\n")
    reg = registration(repo, "plan.yaml", "results/study/x")
    assert not reg.ok and "changed after its records" in reg.reason


def test_a_plan_edited_after_its_records_fails(repo):
    _commit(repo, "plan.yaml", "a\n")
    _commit(repo, "results/study/x/records.parquet", "r\n")
    _commit(repo, "plan.yaml", "b\n")
    assert not registration(repo, "plan.yaml", "results/study/x").ok


def test_plan_and_records_in_one_commit_fail(repo):
    (repo / "results/study/x").mkdir(parents=True)
    (repo / "results/study/x/records.parquet").write_text("r\n")
    (repo / "plan.yaml").write_text("a\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "both")
    reg = registration(repo, "plan.yaml", "results/study/x")
    assert not reg.ok and "must come first" in reg.reason


def test_an_uncommitted_or_edited_plan_is_not_registered(repo):
    (repo / "plan.yaml").write_text("a\n")
    assert "not committed" in registration(repo, "plan.yaml", "r").reason
    _commit(repo, "plan.yaml", "a\n")
    (repo / "plan.yaml").write_text("b\n")
    assert "differs from its commit" in registration(repo, "plan.yaml", "r").reason
