"""``snapcompact-eval-table`` end to end on synthetic runs, and the model -> shape table it writes.

The regenerated table is checked against the library's own loader and resolver data: after
``--apply`` the decided row holds the winner, the reference value is kept beside it, and every
other row (and every comment line) is exactly as before.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from record_rows import CLAUDE, FULL_TOKENS, OCR, agent_run_records, misses, shape_rows, synthetic

from evals.analysis.aggregate import records_frame
from evals.analysis.report import COMPRESSION_NOTE, arm_table
from evals.analysis.table import main
from evals.analysis.winner import choose_winners
from evals.analysis.write_model_shapes import apply_table, library_table_path, propose_table
from evals.store.records import append_records
from snapcompact.pricing import parse_shape_rules, shape_rules

FAST = ["--bootstrap", "400", "--no-plots"]


def unmeasured(text: str) -> str:
    """The library table as no run had measured it: without the rows' evidence keys and the
    header's ``measured`` (so a test's evidence is judged on its own, not against the
    committed claude row's 23 sessions)."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(("evidence = ", "evidence_sessions = ",
                                           "measured = ")))


@pytest.fixture()
def table_copy(tmp_path: Path) -> Path:
    path = tmp_path / "model_shapes.toml"
    path.write_text(unmeasured(library_table_path().read_text()))
    return path


def claude_run() -> list:
    """8on16-bw is as good as 11on16-bw (identical answers) and cheaper: it must win."""
    return synthetic(
        shape_rows("11on16-bw", misses(60, range(3)), 1600, seeds=(0, 1)),
        shape_rows("8on16-bw", misses(60, range(3)), 1200, seeds=(0, 1)),
        shape_rows("6x6u-bw", misses(60, range(40)), 500, seeds=(0, 1)),
        shape_rows("text", misses(60, range(1)), 12000, frame_size=0, arm="text",
                   reader="text_qa", model="snapocr/text-qa", seeds=(0, 1)),
    )


def test_cli_reads_runs_from_oddly_named_dirs_without_parsing_names(tmp_path, table_copy,
                                                                    capsys) -> None:
    recs = claude_run()
    # directory names that lie about their contents; only the records' fields may count
    append_records(tmp_path / "runs" / "shape=6x6u-bw model=gpt-5" / "records.jsonl", recs[:240])
    append_records(tmp_path / "runs" / "seed=9" / "nested dir" / "records.jsonl", recs[240:])
    out = tmp_path / "out"
    assert main([str(tmp_path / "runs"), "--out", str(out), "--table", str(table_copy), *FAST]) == 0
    report = capsys.readouterr().out
    summary = pd.read_parquet(out / "summary.parquet")
    assert set(summary["shape"]) == {"11on16-bw", "8on16-bw", "6x6u-bw", "text"}
    assert set(summary["target_model"]) == {CLAUDE}
    assert set(summary["n_seeds"]) == {2}
    records = pd.read_csv(out / "records.csv")
    assert len(records) == len(recs) and set(records["seed"]) == {0, 1}
    decisions = pd.read_csv(out / "decisions.csv")
    assert decisions.set_index("line").loc["claude", "winner"] == "8on16-bw"
    assert "## Rule" in report and "paired bootstrap" in report
    assert "offline OCR reader" in report
    assert "tie: 2 shapes not significantly below" in report
    # the tie is refused by the gate: the diff is the table --apply writes, the entry kept
    assert "claude: 11on16-bw @ 1568 px -> 8on16-bw @ 1568 px" in report
    diff = (out / "model_shapes.diff").read_text()
    assert '+evidence = "kept 11on16-bw (no evidence to change' in diff
    assert "shape = " not in "".join(x for x in diff.splitlines() if x.startswith(("+", "-")))
    assert diff in report
    assert table_copy.read_text() == unmeasured(library_table_path().read_text())  # not applied


def test_runs_are_combined_from_several_paths(tmp_path, table_copy) -> None:
    a = shape_rows("8on22-bw", misses(40, {0}), 1000)
    b = shape_rows("11on16-bw", misses(40, {0, 1}), 1500)
    append_records(tmp_path / "a" / "records.jsonl", a)
    append_records(tmp_path / "b.jsonl", b)
    out = tmp_path / "out"
    assert main([str(tmp_path / "a"), str(tmp_path / "b.jsonl"), "--out", str(out),
                 "--table", str(table_copy), *FAST]) == 0
    assert set(pd.read_csv(out / "summary.csv")["shape"]) == {"8on22-bw", "11on16-bw"}


def test_apply_refuses_a_tie_and_force_writes_it(tmp_path, table_copy, capsys) -> None:
    # claude_run's 8on16-bw ties the current entry 11on16-bw (identical answers): the evidence
    # does not say the current entry is worse, so --apply keeps it, says why and exits 3
    append_records(tmp_path / "run" / "records.jsonl", claude_run())
    before = table_copy.read_text()
    args = [str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table", str(table_copy),
            *FAST]
    assert main([*args, "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "claude: 11on16-bw @ 1568 px -> 8on16-bw @ 1568 px" in err
    assert '+evidence = "kept 11on16-bw (' in err  # the diff --apply would write
    assert "dry run: nothing written" in err
    assert table_copy.read_text() == before and not (tmp_path / "out").exists()
    assert main([*args, "--apply"]) == 3
    err = capsys.readouterr().err
    assert "keep the current entry" in err
    assert "no evidence to change: the current entry 11on16-bw is not significantly below" in err
    assert "tie within its interval" in err
    _assert_kept(table_copy, before, "kept 11on16-bw (no evidence to change: the current entry "
                 "11on16-bw is not significantly below the best recall; tie within")
    assert main([*args, "--apply", "--force"]) == 0
    assert "write (--force), although: no evidence to change" in capsys.readouterr().err
    assert parse_shape_rules(table_copy.read_text()).rules != parse_shape_rules(before).rules


def test_apply_refuses_thin_evidence_few_sessions_and_zero_recall(tmp_path, table_copy,
                                                                  capsys) -> None:
    # the smoke sweep: two questions of one session, recall 0 on both shapes
    recs = synthetic(shape_rows("11on16-bw", [False, False], 1600),
                     shape_rows("8on22-bw", [False, False], 900))
    append_records(tmp_path / "run" / "records.jsonl", recs)
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table",
                 str(table_copy), "--apply", *FAST]) == 3
    err = capsys.readouterr().err
    assert "claude: 11on16-bw @ 1568 px -> 8on22-bw @ 1568 px" in err
    for reason in ("zero recall", "2 questions (< 30)", "1 session(s) (< 20)", "thin evidence"):
        assert reason in err
    _assert_kept(table_copy, library_table_path().read_text(), "kept 11on16-bw (")


def _claude_row(text: str) -> dict:
    return next(r for r in tomllib.loads(text)["rules"] if r["name"] == "claude")


def _assert_kept(table: Path, before: str, evidence_starts: str) -> None:
    """A refused row keeps its entry (shape, size: what resolves) and says why, with the
    evidence; the header names what the table was measured on (issue 36 item 4)."""
    after = table.read_text()
    assert parse_shape_rules(after).rules == parse_shape_rules(before).rules
    kept, old = _claude_row(after), _claude_row(before)
    assert (kept["shape"], kept.get("frame_size")) == (old["shape"], old.get("frame_size"))
    assert kept["evidence"].startswith(evidence_starts)
    assert "; measured: snapocr" in kept["evidence"]
    assert "claude: " in tomllib.loads(after)["meta"]["measured"]


def test_apply_refuses_a_frame_size_production_does_not_use(tmp_path, table_copy,
                                                            capsys) -> None:
    # 8on16-bw at 512 px clearly beats the current entry, over 25 sessions, but production
    # draws claude-sonnet-4-5's frames at 1568 px (the reference table's claude row)
    recs = synthetic(shape_rows("11on16-bw", misses(100, range(60)), 1600),
                     shape_rows("8on16-bw", misses(100, range(2)), 900, frame_size=512))
    append_records(tmp_path / "run" / "records.jsonl", recs)
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table",
                 str(table_copy), "--apply", *FAST]) == 3
    err = capsys.readouterr().err
    assert f"frame size 512 px is not one production draws for {CLAUDE} (1568 px)" in err
    assert "no evidence to change" not in err  # the current entry is significantly below


def test_apply_writes_a_winner_that_clears_every_bar(tmp_path, table_copy) -> None:
    # 8on16-bw at production's 1568 px reads 98 of 100 questions over 25 sessions, the current
    # 11on16-bw 40: every session but the first differs, so the session-level interval is clear
    recs = synthetic(shape_rows("11on16-bw", misses(100, range(60)), 1600, seeds=(0, 1)),
                     shape_rows("8on16-bw", misses(100, range(2)), 900, seeds=(0, 1)))
    append_records(tmp_path / "run" / "records.jsonl", recs)
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table",
                 str(table_copy), "--apply", *FAST]) == 0
    assert next(r for r in parse_shape_rules(table_copy.read_text()).rules
                if r.name == "claude").shape == "8on16-bw"


def test_apply_round_trips_through_the_library_loader(tmp_path, table_copy) -> None:
    append_records(tmp_path / "run" / "records.jsonl", claude_run())
    before = table_copy.read_text()
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table",
                 str(table_copy), "--apply", "--force", *FAST]) == 0
    after = table_copy.read_text()
    banner, written = (tmp_path / "out" / "model_shapes.toml").read_text().split("\n", 1)
    assert written == after
    assert banner.startswith("# APPLIED by snapcompact-eval-table --apply --force; the gate's "
                             "verdict: claude entry written (--force, although: no evidence")
    new, old = parse_shape_rules(after), parse_shape_rules(before)
    rules_new = {r.name: r for r in new.rules}
    rules_old = {r.name: r for r in old.rules}
    assert rules_new["claude"].shape == "8on16-bw"
    assert rules_new["claude"].frame_size == 1568
    assert rules_new["claude"].reference_shape == "11on16-bw"  # reference parity kept
    for name, rule in rules_old.items():
        if name != "claude":
            assert rules_new[name] == rule
    assert (new.family_shapes, new.apis, new.high_res_shape) == (
        old.family_shapes, old.apis, old.high_res_shape)
    # every line of the old file survives unchanged except the decided row's shape line and
    # what the previous measurement wrote (its header line and the row's evidence), replaced
    ops = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines()).get_opcodes()
    removed = [line for tag, i1, i2, _, _ in ops if tag in ("replace", "delete")
               for line in before.splitlines()[i1:i2]]
    assert removed == ['shape = "11on16-bw"']
    data = tomllib.loads(after)
    claude = next(r for r in data["rules"] if r["name"] == "claude")
    assert "; 60 questions, 15 session(s)" in claude["evidence"]
    assert "offline OCR" in claude["evidence"] and claude["evidence_sessions"] == 15
    assert "measured" in data["meta"]


def test_library_table_loads_unchanged_and_apply_refuses_a_moved_file(tmp_path,
                                                                      table_copy) -> None:
    df = records_frame(claude_run(), shape_rules())
    proposal = propose_table(table_copy.read_text(), choose_winners(df, n_boot=400))
    table_copy.write_text(table_copy.read_text() + "\n# edited meanwhile\n")
    with pytest.raises(ValueError, match="changed since it was read"):
        apply_table(proposal, table_copy)


def test_reference_moves_are_warned_about() -> None:
    # Gemini's row sits at 2048 px; a winner measured at 1568 px changes what table="reference"
    # resolves (the table has no reference frame size) and must be said.
    recs = shape_rows("8on22-bw", misses(40, {0}), 1120, target="gemini/gemini-3-pro")
    df = records_frame(recs, shape_rules())
    proposal = propose_table(library_table_path().read_text(), choose_winners(df, n_boot=400))
    assert [c.line for c in proposal.changes] == ["gemini"]
    assert any(w.startswith("gemini: table='reference' moves from 8on22-bw@2048 to 8on22-bw@1568")
               for w in proposal.warnings)


def test_reference_view_is_kept_when_only_the_shape_changes() -> None:
    df = records_frame(claude_run(), shape_rules())
    proposal = propose_table(library_table_path().read_text(), choose_winners(df, n_boot=400))
    assert proposal.warnings == ()


def test_unmatched_models_and_conflicting_readers_are_not_written(tmp_path) -> None:
    recs = synthetic(
        shape_rows("8on22-bw", misses(40, {0}), 1000, target="mistral/pixtral-large"),
        shape_rows("8on22-bw", misses(40, {0}), 1000),
        shape_rows("8on16-bw", misses(40, {0}), 900, model=CLAUDE),
    )
    decisions = choose_winners(records_frame(recs, shape_rules()), n_boot=400)
    current = library_table_path().read_text()
    proposal = propose_table(current, decisions)
    assert proposal.text == current and proposal.changes == ()
    skipped = " | ".join(proposal.skipped)
    assert "mistral/pixtral-large: no row of the table matches" in skipped
    assert f"claude: evidence from several readers ({CLAUDE}, snapocr)" in skipped
    chosen = propose_table(current, decisions, reader=CLAUDE)
    assert [(c.line, c.shape) for c in chosen.changes] == [("claude", "8on16-bw")]
    assert OCR not in chosen.text


def test_missing_results_path_is_a_clear_error(tmp_path, capsys) -> None:
    assert main([str(tmp_path / "nope"), "--out", str(tmp_path / "o"), *FAST]) == 2
    assert "no such records file or directory" in capsys.readouterr().err


def test_written_table_header_names_what_each_written_row_rests_on(tmp_path, table_copy) -> None:
    # issue 36 item 4: the header states records, sessions, questions, models and the code, for
    # the rows written; rows nobody measured are said to be unmeasured. No date (issue 44 item
    # 6): the records' timestamps are when they were sent, not what was measured
    recs = synthetic(
        shape_rows("11on16-bw", misses(60, range(3)), 1600, seeds=(0, 1),
                   created_at="2026-11-02T10:00:00+00:00", code_sha256="ab" * 32),
        shape_rows("8on16-bw", misses(60, range(3)), 1200, seeds=(0, 1),
                   created_at="2026-11-03T09:00:00+00:00", code_sha256="ab" * 32),
        shape_rows("6x6u-bw", misses(60, range(40)), 500, seeds=(0, 1),
                   created_at="2026-11-01T09:00:00+00:00", code_sha256="ab" * 32))
    append_records(tmp_path / "run" / "records.jsonl", recs)
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "out"), "--table",
                 str(table_copy), "--apply", "--force", *FAST]) == 0
    meta = tomllib.loads(table_copy.read_text())["meta"]
    # 3 shapes x 60 questions x 2 seeds = 360 records; 4 questions per item = 15 sessions
    row = f"360 records, 15 session(s), 60 questions, models {CLAUDE}, reader snapocr, " \
        "code sha256 abababababababab"
    assert meta["measured"] == f"snapcompact-eval-table, each measured row's own evidence; " \
        f"claude: {row}"
    assert _claude_row(table_copy.read_text())["measured"] == row
    assert "were not measured" in meta["not_measured"]
    assert "including ids not among the models measured" in meta["not_measured"]


def test_notebook_arm_table_splits_windows_and_verdicts_and_prints_the_reports_compression(
        tmp_path, table_copy) -> None:
    """The notebook's per-arm table (``arm_table``): one row per arm and window and verdict, and
    the compression the report prints: the skipped ``full``'s tokens over the arm's, since full
    did not fit the 200k window (352,110 / 59,508 = 5.92; / 16,626 = 21.18 at 32k)."""
    for window in (200_000, 32_000):  # one path per window (table_sources)
        append_records(tmp_path / "runs" / f"w{window}" / "records.jsonl",
                       [r for r in agent_run_records() if r.context_window == window])
    out = tmp_path / "out"
    assert main([str(tmp_path / "runs" / "w200000"), str(tmp_path / "runs" / "w32000"),
                 "--out", str(out), "--table", str(table_copy), *FAST]) == 0
    table = arm_table(pd.read_parquet(out / "summary.parquet"))
    assert list(table.index.names) == ["target model", "window", "verdict", "arm"]
    assert table.index.is_unique
    claude = table.loc[CLAUDE]
    assert set(claude.index.get_level_values("window")) == {"32,000", "200,000"}
    assert set(claude.index.get_level_values("verdict")) == {"valid", "not sent", "bound"}
    auto = claude.loc[("200,000", "valid", "snapcompact foveated auto @200k")]
    small = claude.loc[("32,000", "valid", "snapcompact foveated auto @32k")]
    assert auto["compression"] == f"{FULL_TOKENS / 59_508:.2f}x (vs uncompacted)" == \
        "5.92x (vs uncompacted)"
    assert small["compression"] == "21.18x (vs uncompacted)"
    assert claude.loc[("200,000", "bound", "full @200k")]["compression"] == "skipped"
    report = (out / "report.md").read_text()
    line = next(x for x in report.splitlines() if x.startswith("| snapcompact foveated auto @200k"))
    assert "| 5.92x (vs uncompacted) |" in line
    assert COMPRESSION_NOTE in report


def test_the_committed_records_table_is_the_same_for_a_warm_and_a_fresh_run(tmp_path,
                                                                             table_copy) -> None:
    # A fresh clone sends what a warm checkout reads from its cache, and its concurrent requests
    # finish in another order: the same measurements must give the same records table, byte for
    # byte (issue 35: `make run` leaves no tracked file modified).

    recs = synthetic(shape_rows("11on16-bw", misses(8, {0}), 1600),
                     shape_rows("8on22-bw", misses(8, {1}), 900))
    warm = [r.with_fields(cached=True, attempts=0, latency_s=0.0) for r in recs]
    fresh = [r.with_fields(cached=False, attempts=1, latency_s=2.5) for r in reversed(recs)]
    for name, rows in (("warm", warm), ("fresh", fresh)):
        append_records(tmp_path / name / "records.jsonl", rows)
        assert main([str(tmp_path / name), "--out", str(tmp_path / f"out-{name}"), "--table",
                     str(table_copy), "--no-plots", *FAST]) == 0
    for name in ("records.csv", "summary.parquet", "summary.csv"):
        assert (tmp_path / "out-warm" / name).read_bytes() == \
            (tmp_path / "out-fresh" / name).read_bytes(), name
