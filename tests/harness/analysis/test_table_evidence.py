"""The shape table keeps its stronger evidence, and the table command leaves the tree as found.

Issue 43 item 3: ``--apply`` never replaces a row's evidence with evidence from fewer sessions,
kept rows included (refused with why, exit 3; ``--force`` overrides and says so); the header
describes every measured row's own evidence; the evidence quotes the paired session-level
interval, both shapes' recall and billed tokens. Issue 44 items 1, 4 and 6: read-only modes
write nothing, one path holds one experiment at one window, a table not applied says so in its
first line, and the same records give the same outputs on any day.

Sessions are counted by hand: ``shape_rows`` puts questions 4k..4k+3 in item ``i{k}``, so n
questions are n / 4 sessions.
"""

from __future__ import annotations

import shutil
import tomllib
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from locations import REPO
from record_rows import misses, shape_rows, synthetic

from evals.analysis.report import compression_cell
from evals.analysis.table import main
from evals.analysis.write_model_shapes import library_table_path
from evals.store.records import append_records

FAST = ["--bootstrap", "400", "--no-plots"]
OLD_EVIDENCE = "kept 11on16-bw (tie); measured: an earlier run of 23 sessions"
OLD_MEASURED = ("1836 records, 23 session(s), 918 questions, models claude-sonnet-4-5, "
                "reader snapocr, code sha256 f9ff336368660038")


def _unmeasured() -> str:
    return "".join(line for line in library_table_path().read_text().splitlines(keepends=True)
                   if not line.startswith(("evidence = ", "evidence_sessions = ", "measured = ")))


def _with_claude_evidence(legacy: bool = False) -> str:
    """The library table whose claude row rests on 23 sessions: said by the row's own
    ``evidence_sessions``, or (``legacy``: a table written before that key) by the header."""
    text = _unmeasured()
    note = 'note = "older Claude lines downscale past 1568 px"\n'
    keys = f'evidence = "{OLD_EVIDENCE}"\n'
    if not legacy:
        keys += f'evidence_sessions = 23\nmeasured = "{OLD_MEASURED}"\n'
    text = text.replace(note, note + keys, 1)
    header = ("snapcompact-eval-table, records up to 2026-12-04, code sha256 f9ff336368660038; "
              "claude: 1836 records, 23 session(s), 918 questions")
    measured = (f"snapcompact-eval-table, each measured row's own evidence; claude: {OLD_MEASURED}"
                if not legacy else header)
    checked = 'checked = "2026-11-30"\n'
    return text.replace(checked, checked + f'measured = "{measured}"\n', 1)


def _table(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model_shapes.toml"
    path.write_text(text)
    return path


def _one_session_run(path: Path) -> None:
    # one session (4 questions): the current entry 11on16-bw reads all four and is the cheaper,
    # 8on22-bw misses one; with one session nothing is significantly below, so 11on16-bw wins
    # (most recall per token) and the row's entry stays: only its evidence would move
    append_records(path / "records.jsonl", synthetic(
        shape_rows("11on16-bw", [True] * 4, 900), shape_rows("8on22-bw", misses(4, {0}), 1600)))


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("legacy", [False, True], ids=["row-key", "old-header"])
def test_apply_from_one_session_leaves_a_23_session_row_as_it_is(tmp_path, capsys,
                                                                 legacy) -> None:
    table = _table(tmp_path, _with_claude_evidence(legacy))
    before = table.read_text()
    _one_session_run(tmp_path / "run")
    args = [str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table", str(table), *FAST]
    assert main([*args, "--apply"]) == 3
    err = capsys.readouterr().err
    assert ("claude: 11on16-bw @ 1568 px unchanged, new evidence: recall 1.000 [0.510, 1.000] "
            "over 4 questions, 1 session(s); leave the row as it is: weaker evidence: 1 "
            "session(s) < the 23 the row's current evidence rests on: the stronger evidence "
            "stays") in err
    assert table.read_text() == before  # not a byte moved, header included
    assert (tmp_path / "out" / "model_shapes.diff").read_text() == ""
    # --force replaces it, and says so
    assert main([*args, "--apply", "--force"]) == 0
    err = capsys.readouterr().err
    assert "write (--force), although: weaker evidence: 1 session(s) < the 23" in err
    assert "--force: refused rows written anyway" in err
    row = next(r for r in tomllib.loads(table.read_text())["rules"] if r["name"] == "claude")
    assert row["evidence_sessions"] == 1 and row["shape"] == "11on16-bw"


def test_a_refused_change_from_fewer_sessions_is_not_even_kept_as_evidence(tmp_path,
                                                                         capsys) -> None:
    # 15 sessions (60 questions): 8on16-bw ties the current entry and is cheaper, so the gate
    # refuses the change; the old code then wrote "kept ... measured: <15 sessions>" over the
    # row's 23-session evidence
    table = _table(tmp_path, _with_claude_evidence())
    before = table.read_text()
    append_records(tmp_path / "run" / "records.jsonl", synthetic(
        shape_rows("11on16-bw", misses(60, range(3)), 1600, seeds=(0, 1)),
        shape_rows("8on16-bw", misses(60, range(3)), 1200, seeds=(0, 1))))
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table", str(table),
                 "--apply", *FAST]) == 3
    err = capsys.readouterr().err
    assert "claude: 11on16-bw @ 1568 px -> 8on16-bw @ 1568 px" in err
    assert "weaker evidence: 15 session(s) < the 23" in err
    assert table.read_text() == before


def test_stronger_evidence_replaces_and_the_header_describes_every_measured_row(
        tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the report names the table it wrote from here, no machine path
    # gemini has no evidence; 25 sessions (100 questions) at gemini's 2048 px: 8on22-bw reads
    # every question, 11on16-bw misses the first of each session (3 of 4 in every session:
    # the paired difference is 0.25 in each, so its session-level interval is [0.25, 0.25])
    table = _table(tmp_path, _with_claude_evidence())
    gemini = "gemini/gemini-3-pro"
    append_records(tmp_path / "run" / "records.jsonl", synthetic(
        shape_rows("8on22-bw", misses(100, []), 1100, frame_size=2048, target=gemini,
                   seeds=(0, 1), code_sha256="cd" * 32),
        shape_rows("11on16-bw", misses(100, range(0, 100, 4)), 1700, frame_size=2048,
                   target=gemini, seeds=(0, 1), code_sha256="cd" * 32)))
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table", str(table),
                 "--apply", *FAST]) == 0
    data = tomllib.loads(table.read_text())
    row = next(r for r in data["rules"] if r["name"] == "gemini")
    assert row["shape"] == "8on22-bw" and row["evidence_sessions"] == 25
    assert row["evidence"] == (
        "snapocr (offline OCR reader: a legibility floor, not a model ranking): winner "
        "8on22-bw@2048; 8on22-bw@2048 recall 1.000, 1,100 billed tokens/question; "
        "11on16-bw@2048 recall 0.750, 1,700 billed tokens/question; 8on22-bw@2048 minus "
        "11on16-bw@2048 [+0.250, +0.250] paired over 25 sessions (excludes 0); 100 questions, "
        "25 session(s), seeds 0,1; measured on no frames (text only)")
    # 2 shapes x 100 questions x 2 seeds = 400 records; the claude row's part is its own
    gemini_part = ("400 records, 25 session(s), 100 questions, models gemini/gemini-3-pro, "
                   "reader snapocr, code sha256 cdcdcdcdcdcdcdcd")
    assert data["meta"]["measured"] == (
        "snapcompact-eval-table, each measured row's own evidence; "
        f"claude: {OLD_MEASURED}; gemini: {gemini_part}")
    claude = next(r for r in data["rules"] if r["name"] == "claude")
    assert (claude["evidence"], claude["evidence_sessions"]) == (OLD_EVIDENCE, 23)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Applied to model_shapes.toml (the rows marked write above)." in report


def test_a_table_not_applied_says_so_first_and_a_no_change_run_changes_no_row(tmp_path,
                                                                             capsys) -> None:
    table = _table(tmp_path, _with_claude_evidence())
    _one_session_run(tmp_path / "run")
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table", str(table),
                 *FAST]) == 0
    first, rest = (tmp_path / "out" / "model_shapes.toml").read_text().split("\n", 1)
    assert first == (
        "# NOT APPLIED: proposed by snapcompact-eval-table (what --apply would write); the "
        "gate's verdict: claude evidence refused (weaker evidence: 1 session(s) < the 23 the "
        "row's current evidence rests on: the stronger evidence stays)")
    assert rest == table.read_text()
    assert (tmp_path / "out" / "model_shapes.diff").read_text() == ""
    assert "(no change)" in (tmp_path / "out" / "report.md").read_text()


def test_dry_run_writes_nothing_anywhere(tmp_path, capsys) -> None:
    table = _table(tmp_path, _unmeasured())
    append_records(tmp_path / "run" / "records.jsonl", synthetic(
        shape_rows("11on16-bw", misses(60, range(3)), 1600, seeds=(0, 1)),
        shape_rows("8on16-bw", misses(60, range(3)), 1200, seeds=(0, 1))))
    (tmp_path / "results").mkdir()
    before = _tree(tmp_path)
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "results"), "--table",
                 str(table), "--dry-run", "--bootstrap", "400"]) == 0  # plots on: still none
    err = capsys.readouterr().err
    assert '+evidence = "kept 11on16-bw (' in err and "dry run: nothing written" in err
    assert _tree(tmp_path) == before


def test_check_writes_nothing(tmp_path) -> None:
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "results" / "research").mkdir(parents=True)
    shutil.copy(REPO / "results" / "summary.csv", tmp_path / "results" / "summary.csv")
    for name in ("research_compare.md", "research_sessions.csv"):
        shutil.copy(REPO / "results" / "research" / name, tmp_path / "results" / "research" / name)
    (tmp_path / "snapcompact" / "pricing").mkdir(parents=True)
    shutil.copy(REPO / "snapcompact" / "pricing" / "pricing.toml",
                tmp_path / "snapcompact" / "pricing" / "pricing.toml")
    (tmp_path / "README.md").write_text((tmp_path / "README.md").read_text().replace(
        "| truncate @200k | bound |", "| truncate @200k | bound (edited) |"))
    before = _tree(tmp_path)
    main(["--check", "--root", str(tmp_path)])  # stale or not, it only reads
    assert _tree(tmp_path) == before


def test_one_path_holding_two_experiments_is_refused_and_named_runs_are_said(tmp_path,
                                                                           capsys) -> None:
    table = _table(tmp_path, _unmeasured())
    runs = tmp_path / "runs"
    main_job = shape_rows("11on16-bw", misses(8, {0}), 1600, experiment="default",
                          context_window=200_000, run_id="d")
    sweep = shape_rows("8on22-bw", misses(8, {1}), 900, experiment="shape_sweep_small",
                       context_window=64_000, run_id="s")
    append_records(runs / "default" / "records.jsonl", main_job)
    append_records(runs / "multirun" / "0" / "records.jsonl", sweep)
    out = tmp_path / "out"
    assert main([str(runs), "--out", str(out), "--table", str(table), *FAST]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"snapcompact-eval-table: error: {runs} holds runs of 2 experiments or windows "
        f"(default @200,000: {runs / 'default'}; shape_sweep_small @64,000: "
        f"{runs / 'multirun' / '0'}): one table would mix them; give the runs to combine one "
        "path each\n")
    assert not out.exists()
    assert main([str(runs / "default"), str(runs / "multirun"), "--out", str(out), "--table",
                 str(table), *FAST]) == 0
    err = capsys.readouterr().err
    assert (f"snapcompact-eval-table: read {runs / 'default'}: experiment default at the "
            "200,000-token window: 1 run(s), 8 records") in err
    assert (f"snapcompact-eval-table: read {runs / 'multirun'}: experiment shape_sweep_small "
            "at the 64,000-token window: 1 run(s), 8 records") in err
    report = (out / "report.md").read_text()
    assert "- experiment default at the 200,000-token window: 1 run(s), 8 records" in report


def test_the_same_records_a_day_later_give_the_same_outputs(tmp_path) -> None:
    # issue 44 item 6: a fresh clone's `make run` on a later day writes the same records but
    # for their timestamps; every output must be byte for byte the same (the old header said
    # "records up to <newest timestamp>")
    rows = synthetic(shape_rows("11on16-bw", misses(60, range(3)), 1600, seeds=(0, 1)),
                     shape_rows("8on16-bw", misses(60, range(3)), 1200, seeds=(0, 1)))
    day = datetime(2026, 12, 4, 9, 0)
    for name, when in (("today", day), ("tomorrow", day + timedelta(days=1))):
        stamped = [r.with_fields(created_at=when.isoformat() + "+00:00") for r in rows]
        append_records(tmp_path / name / "records.jsonl", stamped)
        assert main([str(tmp_path / name), "--out", str(tmp_path / f"out-{name}"), "--table",
                     str(_table(tmp_path, _unmeasured())), *FAST]) == 0
    today, tomorrow = _tree(tmp_path / "out-today"), _tree(tmp_path / "out-tomorrow")
    assert sorted(today) == sorted(tomorrow)
    assert [n for n in today if today[n] != tomorrow[n]] == []
    assert b"2026-12" not in today["model_shapes.toml"]


def test_compression_without_a_full_history_is_a_dash_with_why() -> None:
    row = pd.DataFrame([{"compression_vs_text": float("nan"),
                         "compression_baseline": "none"}]).iloc[0]
    assert compression_cell(row) == "– (no full history to compare)"
    assert "n/a" not in compression_cell(row)
