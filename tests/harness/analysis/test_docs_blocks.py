"""Generated README blocks: written from the committed tables, stale ones caught by --check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from locations import REPO

from evals.analysis.table import main

BLOCKS = ["main-job-table", "research-claims"]


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A copy of the committed README and the tables its blocks quote."""
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "results" / "research").mkdir(parents=True)
    shutil.copy(REPO / "results" / "summary.csv", tmp_path / "results" / "summary.csv")
    for name in ("research_compare.md", "research_sessions.csv"):
        shutil.copy(REPO / "results" / "research" / name, tmp_path / "results" / "research" / name)
    return tmp_path


def test_committed_readme_is_current():
    # the CI check itself: every generated block equals what the committed tables render
    assert main(["--check", "--root", str(REPO)]) == 0


def test_a_hand_edited_figure_is_caught_and_regeneration_fixes_it(checkout, capsys):
    assert main(["--check", "--root", str(checkout)]) == 0
    readme = checkout / "README.md"
    text = readme.read_text()
    block = text[text.index("<!-- generated:main-job-table"):]
    row = next(line for line in block.splitlines() if line.startswith("| truncate"))
    edited = row.replace("0.", "0.9", 1)
    assert edited != row
    readme.write_text(text.replace(row, edited))
    assert main(["--check", "--root", str(checkout)]) == 1
    assert "block main-job-table is stale" in capsys.readouterr().err
    assert main(["--write-docs", "--root", str(checkout)]) == 0
    assert readme.read_text() == text
    assert main(["--check", "--root", str(checkout)]) == 0


def test_a_block_quoting_an_uncommitted_table_fails(checkout, capsys):
    (checkout / "results" / "research" / "research_compare.md").unlink()
    assert main(["--check", "--root", str(checkout)]) == 1
    assert "research_compare.md, which is not committed" in capsys.readouterr().err


def test_a_missing_block_fails(checkout, capsys):
    readme = checkout / "README.md"
    text = readme.read_text()
    start = text.index("<!-- generated:research-claims")
    end = text.index("<!-- /generated:research-claims -->") + len(
        "<!-- /generated:research-claims -->")
    readme.write_text(text[:start] + "+0.126 typed by hand" + text[end:])
    assert main(["--check", "--root", str(checkout)]) == 1
    assert "no generated:research-claims block" in capsys.readouterr().err
