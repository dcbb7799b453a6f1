"""Generated README blocks: written from the committed tables, stale ones caught by --check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from locations import REPO

from evals.analysis.docs_blocks import scanned_docs, stray_figures
from evals.analysis.table import main

BLOCKS = ["main-job-table", "frame-costs", "research-claims", "study-claims"]


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A copy of the committed README and the tables its blocks quote."""
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "results" / "research").mkdir(parents=True)
    shutil.copy(REPO / "results" / "summary.csv", tmp_path / "results" / "summary.csv")
    for name in ("research_compare.md", "research_compare.csv", "research_sessions.csv"):
        shutil.copy(REPO / "results" / "research" / name, tmp_path / "results" / "research" / name)
    (tmp_path / "snapcompact" / "pricing").mkdir(parents=True)
    shutil.copy(REPO / "snapcompact" / "pricing" / "pricing.toml",
                tmp_path / "snapcompact" / "pricing" / "pricing.toml")
    (tmp_path / "configs" / "study").mkdir(parents=True)
    shutil.copy(REPO / "configs" / "study" / "recommended_rerun.yaml",
                tmp_path / "configs" / "study" / "recommended_rerun.yaml")
    study = REPO / "results" / "study"
    if study.is_dir():
        shutil.copytree(study, tmp_path / "results" / "study")
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


def test_every_block_is_in_the_readme():
    text = (REPO / "README.md").read_text()
    for name in BLOCKS:
        assert f"<!-- generated:{name} " in text and f"<!-- /generated:{name} -->" in text


def test_a_hand_edited_frame_cost_is_caught(checkout, capsys):
    readme = checkout / "README.md"
    text = readme.read_text()
    block = text[text.index("<!-- generated:frame-costs"):]
    row = next(line for line in block.splitlines() if line.startswith("| 11on16-bw |"))
    readme.write_text(text.replace(row, row.replace("$0.", "$1.", 1)))
    assert main(["--check", "--root", str(checkout)]) == 1
    assert "block frame-costs is stale" in capsys.readouterr().err


def test_a_figure_typed_in_the_prose_is_caught_with_its_line(checkout, capsys):
    readme = checkout / "README.md"
    lines = readme.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("## What is here"))
    lines.insert(at + 1, "Recommended reads +0.126 more than production.\n")
    readme.write_text("".join(lines))
    assert main(["--check", "--root", str(checkout)]) == 1
    err = capsys.readouterr().err
    assert f"README.md:{at + 2}: figure '+0.126' typed outside a generated block" in err


@pytest.mark.parametrize("prose", [
    "a 200k window", "95 % intervals", "seeds 13-52 at 240k-380k tokens", "npm 18.2.11",
    "Claude Sonnet 4.5", "`kill -9` ten times", "default `0.05`", "window minus max(15 %, 16,384)",
    "```\nrecall 0.45 [0.28, 0.58]\n```"])
def test_settings_and_definitions_are_not_figures(prose):
    assert stray_figures(prose) == []


@pytest.mark.parametrize("prose, figure", [
    ("median 3.84x faster", "3.84x"), ("discarded recall +0.112 more", "+0.112"),
    ("costs -11,749 tokens", "-11,749"), ("recall 0.45 on", "0.45"),
    ("Wilson [0.28, 0.58] typed", "[0.28, 0.58]"), ("a \u22120.2 drop", "\u22120.2")])
def test_measured_figures_are_found(prose, figure):
    assert [f for _, f in stray_figures(prose)] == [figure]


def test_the_study_block_quotes_the_report_or_says_there_is_none(tmp_path):
    from evals.analysis.docs_blocks import _study_claims

    assert "not committed yet, so it reports nothing" in _study_claims(tmp_path)
    report = tmp_path / "results/study/recommended_rerun/report.md"
    report.parent.mkdir(parents=True)
    report.write_text("# Study\n\nQuestion: q\n\n## Sessions\n\n70 of 70 seeds.\n\n"
                      "## Primary endpoint (x)\n\n- primary sentence +0.050 [+0.010, +0.090].\n\n"
                      "## Secondary endpoints (y)\n\n- second.\n\nReaders: told and blind.\n")
    block = _study_claims(tmp_path)
    assert "**Primary endpoint (x)**\n\n- primary sentence +0.050 [+0.010, +0.090]." in block
    assert "70 of 70 seeds." in block and "- second." in block
    assert "Question: q" not in block  # only the three sections are quoted


def test_a_study_report_is_prose_until_its_records_sit_beside_it(tmp_path):
    # the report of a pre-registered study is rebuilt from its records by --check; without
    # them beside it (or without the plan that names its folder) nothing re-derives it, so its
    # figures are scanned like any page's
    (tmp_path / "configs" / "study").mkdir(parents=True)
    shutil.copy(REPO / "configs" / "study" / "recommended_rerun.yaml",
                tmp_path / "configs" / "study" / "recommended_rerun.yaml")
    for name in ("recommended_rerun", "no_plan"):
        report = tmp_path / "results/study" / name / "report.md"
        report.parent.mkdir(parents=True)
        report.write_text("- primary +0.050 [+0.010, +0.090].\n")
    assert "results/study/recommended_rerun/report.md" in scanned_docs(tmp_path)
    for name in ("recommended_rerun", "no_plan"):
        (tmp_path / "results/study" / name / "records.parquet").write_bytes(b"")
    assert "results/study/recommended_rerun/report.md" not in scanned_docs(tmp_path)
    assert "results/study/no_plan/report.md" in scanned_docs(tmp_path)
    (tmp_path / "results/study/notes.md").write_text("+0.2\n")
    assert "results/study/notes.md" in scanned_docs(tmp_path)
