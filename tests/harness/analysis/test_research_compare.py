"""Research settings against production's, paired question by question
(evals.analysis.research_compare).

Expected figures are worked out by hand from the rows each test builds.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from record_rows import base_record

from evals.analysis.aggregate import dedupe_records
from evals.analysis.research_compare import (
    bracket_rows,
    compare_research,
    format_markdown,
    main,
)
from evals.store.records import append_records

RECOMMENDED = "recommended-0a1b2c3d"


def _rows(research: str, correct: list[bool], rounds: list[int], tokens: int, *,
          valid: bool = True, stand_in: bool = False, policy: str = "foveated",
          requested: str = "auto", error_at: int | None = None) -> list:
    return [base_record().with_fields(strategy="snapcompact", policy=policy,
                    shape_requested=requested, context_window=200_000, research=research,
                    item_id=f"i{k // 10}", question_id=f"q{k}", correct=ok,
                    evidence_round=rnd, predicted_prompt_tokens=tokens,
                    production_valid=valid, summary_stand_in=stand_in, fits_window=True,
                    error="timeout" if k == error_at else None)
            for k, (ok, rnd) in enumerate(zip(correct, rounds))]


def test_the_same_question_under_other_knobs_is_another_measurement():
    # Record.key() carries the research label (production's keys unchanged): the two runs'
    # rows of one question both survive deduplication, and an old production row keeps its key.
    prod = _rows("production", [True], [0], 1000)
    other = _rows(RECOMMENDED, [False], [0], 900)
    kept, dropped = dedupe_records(prod + other)
    assert dropped == 0 and len(kept) == 2
    assert len(prod[0].key()) == 13 and other[0].key()[-1] == RECOMMENDED


def test_paired_difference_on_the_facts_production_lost():
    # 20 questions; production discarded the evidence of q0-q9 (round 1) and read none of
    # them, the tail q10-q19 all. The research arm reads q0-q5 of the discarded ones and the
    # whole tail: +6/20 = +0.30 over all, +6/10 = +0.60 on the facts production lost, at
    # 10,000 fewer tokens per question.
    rounds = [1] * 10 + [0] * 10
    prod = _rows("production", [False] * 10 + [True] * 10, rounds, 60_000, valid=False,
                 stand_in=True)
    rec = _rows(RECOMMENDED, [True] * 6 + [False] * 4 + [True] * 10, rounds, 50_000)
    base, other = compare_research(prod + rec, n_boot=2000, seed=0)
    assert (base.research, other.research) == ("production", RECOMMENDED)
    assert base.verdicts == "stand-in 20" and other.verdicts == "valid 20"
    assert base.recall_discarded == 0.0 and other.recall_discarded == pytest.approx(0.6)
    # Wilson 95 % for 6/10: [0.3127, 0.8318]
    assert other.recall_discarded_lo == pytest.approx(0.3127, abs=1e-3)
    assert other.recall_discarded_hi == pytest.approx(0.8318, abs=1e-3)
    assert other.shared == 20 and other.diff_recall == pytest.approx(0.30)
    assert other.baseline_discarded == 10
    assert other.diff_on_baseline_discarded == pytest.approx(0.60)
    # the ten lost facts are all of session i0: one session has no between-session spread, so
    # the comparison has no interval (a bootstrap over its questions would claim one)
    assert other.baseline_discarded_sessions == 1
    assert math.isnan(other.diff_on_baseline_discarded_lo)
    assert other.diff_on_baseline_discarded_record == "1-0-0"
    # over all 20 questions (two sessions, +0.6 and 0.0) the interval spans the two sessions
    assert other.shared_sessions == 2 and other.diff_recall_record == "1-0-1"
    assert (other.diff_recall_lo, other.diff_recall_hi) == (pytest.approx(0.0),
                                                            pytest.approx(0.6))
    assert other.diff_billed_tokens == pytest.approx(-10_000)
    assert math.isnan(base.diff_recall)
    table = format_markdown([base, other], "production")
    assert "+0.600 (1 session: no interval)" in table and "-10,000" in table


def test_errored_rows_are_not_asked_and_arms_pair_by_policy_and_window():
    prod = (_rows("production", [True, False], [1, 1], 1000)
            + _rows("production", [True, True], [1, 1], 1000, policy="pinned", valid=False))
    rec = _rows(RECOMMENDED, [True, True], [1, 1], 800, error_at=1,
                requested="px-8x13-11x16-bw-nostretch")
    rows = {(r.research, r.arm): r for r in compare_research(prod + rec)}
    got = rows[(RECOMMENDED, "foveated px-8x13-11x16-bw-nostretch @200k")]
    # q1 errored: one question asked, paired with production's foveated auto arm (not pinned)
    assert got.questions == 1 and got.shared == 1 and got.diff_recall == 0.0


def test_no_snapcompact_rows_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(ValueError, match="no snapcompact row"):
        compare_research([base_record().with_fields(strategy="truncate")])
    assert main([str(tmp_path)]) == 2
    assert "no records.jsonl under" in capsys.readouterr().err


def test_command_writes_its_tables(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    append_records(run / "records.jsonl", _rows("production", [False, True], [1, 0], 1000)
                   + _rows(RECOMMENDED, [True, True], [1, 0], 900))
    assert main([str(run), "--out", str(tmp_path / "out")]) == 0
    assert "+0.500" in (tmp_path / "out" / "research_compare.md").read_text()
    assert (tmp_path / "out" / "research_compare.csv").exists()
    sessions = pd.read_csv(tmp_path / "out" / "research_sessions.csv")
    # one session (item i0) per label: production read 1 of 2 questions, research both
    assert sorted(zip(sessions.research, sessions.recall)) == [("production", 0.5),
                                                                (RECOMMENDED, 1.0)]
    assert list(sessions.billed_tokens.sort_values()) == [900.0, 1000.0]


def test_rows_split_by_what_production_did_per_session():
    # Session i0 (q0-q9): production kept its frames (valid), read 5 of 10 discarded facts at
    # 50,000 tokens; the research arm reads the same 5 at 80,000. Session i1 (q10-q19):
    # production handed over to the stand-in summary (0 of 10) at 120,000; research reads 4 at
    # 80,000. Pooled: +4/20 = +0.20 at -5,000 tokens; split: +0.0 at +30,000 where production
    # was valid, +0.40 at -40,000 where it handed over.
    rounds = [1] * 20
    prod = (_rows("production", [True] * 5 + [False] * 5, rounds[:10], 50_000)
            + [r.with_fields(item_id="i1", question_id=f"q{10 + k}") for k, r in enumerate(
                _rows("production", [False] * 10, rounds[:10], 120_000, valid=False,
                      stand_in=True))])
    rec = (_rows(RECOMMENDED, [True] * 5 + [False] * 5, rounds[:10], 80_000)
           + [r.with_fields(item_id="i1", question_id=f"q{10 + k}") for k, r in enumerate(
               _rows(RECOMMENDED, [True] * 4 + [False] * 6, rounds[:10], 80_000))])
    rows = {(r.research, r.subset): r for r in compare_research(prod + rec, n_boot=500)}
    assert set(rows) == {(label, subset) for label in ("production", RECOMMENDED)
                         for subset in ("all", "production valid", "production stand-in")}
    pooled = rows[(RECOMMENDED, "all")]
    assert pooled.diff_on_baseline_discarded == pytest.approx(0.20)
    assert pooled.diff_billed_tokens == pytest.approx(-5_000)
    valid = rows[(RECOMMENDED, "production valid")]
    assert valid.questions == 10 and valid.diff_on_baseline_discarded == pytest.approx(0.0)
    assert valid.diff_billed_tokens == pytest.approx(30_000)
    handed = rows[(RECOMMENDED, "production stand-in")]
    assert handed.diff_on_baseline_discarded == pytest.approx(0.40)
    assert handed.diff_billed_tokens == pytest.approx(-40_000)
    assert rows[("production", "production stand-in")].verdicts == "stand-in 10"
    assert "| production valid |" in format_markdown(list(rows.values()), "production")


def _sessions(label: str, per_session: list[tuple[int, int, int]], *, valid: bool = True,
              stand_in: bool = False) -> list:
    """Rows of ``label``: one session per entry, (questions read of 10 discarded, tokens, -)."""
    rows = []
    for i, (read, tokens, _) in enumerate(per_session):
        rows += [r.with_fields(item_id=f"s{i}", question_id=f"q{k}") for k, r in enumerate(
            _rows(label, [True] * read + [False] * (10 - read), [1] * 10, tokens, valid=valid,
                  stand_in=stand_in))]
    return rows


def test_session_level_interval_and_record_of_a_comparison():
    # Four production-valid sessions of ten discarded facts. Research reads +2, +2, +2 and -2
    # facts (of 10) against production: differences +0.2, +0.2, +0.2, -0.2; mean +0.1. A
    # resample of four sessions draws k of the -0.2 session: its mean is 0.2 - 0.1 k, so the
    # 2.5 % quantile is where P(k >= 3) ~ 0.05 (k = 3 with P(k>=3) = 0.0508: -0.1), the
    # 97.5 % one k = 0 (+0.2, P = 0.316). Tokens: +1,000 on every session: dearer 4-0-0.
    prod = _sessions("production", [(5, 50_000, 0)] * 4)
    rec = _sessions(RECOMMENDED, [(7, 51_000, 0)] * 3 + [(3, 51_000, 0)])
    rows = {(r.research, r.subset): r for r in compare_research(prod + rec, n_boot=4000)}
    got = rows[(RECOMMENDED, "all")]
    assert got.sessions == 4 and got.baseline_discarded_sessions == 4
    assert got.diff_on_baseline_discarded == pytest.approx(0.1)
    assert got.diff_on_baseline_discarded_record == "3-1-0"
    assert got.diff_on_baseline_discarded_lo == pytest.approx(-0.1)
    assert got.diff_on_baseline_discarded_hi == pytest.approx(0.2)
    assert got.diff_billed_tokens_record == "4-0-0"
    assert got.diff_billed_tokens_lo == got.diff_billed_tokens_hi == pytest.approx(1_000)
    assert got.recall_interval == "session bootstrap"


def test_markdown_leads_with_valid_sessions_and_says_what_is_supported():
    prod = (_sessions("production", [(5, 50_000, 0)] * 3)
            + [r.with_fields(item_id=f"h{r.item_id}") for r in _sessions(
                "production", [(0, 90_000, 0)] * 2, valid=False, stand_in=True)])
    rec = (_sessions(RECOMMENDED, [(7, 55_000, 0)] * 3)
           + [r.with_fields(item_id=f"h{r.item_id}") for r in _sessions(
               RECOMMENDED, [(6, 60_000, 0)] * 2)])
    table = format_markdown(compare_research(prod + rec, n_boot=500), "production")
    valid_at = table.index("own context was valid")
    assert valid_at < table.index("handed over to an LLM summary") < table.index("pooled")
    claims = table[table.index("What the evidence supports"):]
    # three valid sessions, all +0.2: clear of 0 but short of the 20 sessions a finding needs
    assert "on production-valid sessions: +0.200 [+0.200, +0.200] (3 sessions; 3-0-0)" in claims
    assert "3 < 20 sessions: suggestive, not a finding" in claims
    assert "+0.600" not in claims  # the stand-in sessions' gain is not in the claims


def test_fits_counts_a_missing_value_as_unknown_not_as_fitting():
    prod = _rows("production", [True, True], [1, 1], 1000)
    prod = [prod[0].with_fields(fits_window=None), prod[1].with_fields(fits_window=False)]
    (row,) = compare_research(prod)
    assert row.fits_window_share == 0.0 and row.fits_window_unknown == 1
    assert "0% (1 unknown)" in format_markdown([row], "production")


def test_perfect_summarizer_rows_bracket_production_on_handover_sessions():
    # Two sessions where production handed over (stand-in). Floor (offline stand-in): 0 of 10
    # discarded facts read in each. Ceiling (the same path, the oracle's summary): 6 and 4 of
    # 10. Research: 7 and 5. Against the ceiling: floor -0.6 / -0.4 (mean -0.5, both sessions
    # lower: 0-2-0), research +0.1 / +0.1 (2-0-0). The ceiling's rows are a label of their own
    # (their keys differ from the floor's) and it is compared with the floor like any label.
    floor = _sessions("production", [(0, 90_000, 0)] * 2, valid=False, stand_in=True)
    ceiling = [r.with_fields(summarizer="oracle/perfect-summarizer", correct=k < read)
               for read, part in ((6, floor[:10]), (4, floor[10:]))
               for k, r in enumerate(part)]
    rec = _sessions(RECOMMENDED, [(7, 60_000, 0), (5, 60_000, 0)])
    kept, dropped = dedupe_records(floor + ceiling + rec)
    assert dropped == 0 and len(kept) == 60
    records = floor + ceiling + rec
    top = "production (perfect summarizer)"
    by_label = {(r.research, r.subset): r for r in compare_research(records, n_boot=500)}
    assert by_label[(top, "all")].diff_on_baseline_discarded == pytest.approx(0.5)
    bracket = {r.research: r for r in bracket_rows(records, n_boot=500)}
    assert set(bracket) == {"production", RECOMMENDED}
    assert bracket["production"].subset == f"vs {top}"
    assert bracket["production"].diff_on_baseline_discarded == pytest.approx(-0.5)
    assert bracket["production"].diff_on_baseline_discarded_record == "0-2-0"
    assert bracket[RECOMMENDED].diff_on_baseline_discarded == pytest.approx(0.1)
    assert bracket[RECOMMENDED].diff_on_baseline_discarded_record == "2-0-0"
    table = format_markdown(compare_research(records, n_boot=500), "production",
                            list(bracket.values()))
    section = table[table.index("### Bracket"):]
    assert f"vs {top}: recall diff" in section
    assert (f"{RECOMMENDED} (foveated auto @200k) vs the ceiling {top}, recall on the facts its "
            "path discarded: +0.100 [+0.100, +0.100] (2 sessions; 2-0-0)") in table


def test_a_model_summarizer_keeps_the_key_an_oracle_changes_it():
    row = _rows("production", [True], [1], 1000)[0]
    assert row.with_fields(summarizer="anthropic/claude-haiku-4-5").key() == \
        row.with_fields(summarizer=None).key()
    oracle = row.with_fields(summarizer="oracle/perfect-summarizer").key()
    assert oracle != row.key() and oracle[-1] == ("summarizer", "oracle/perfect-summarizer")


def test_the_records_are_committed_beside_the_tables_and_the_check_reruns_from_them(
        tmp_path, monkeypatch):
    # made from a run folder outside the checkout, the markdown names the committed records
    # table instead, so --check (from the checkout) reruns the comparison from it; the run
    # folder can then go
    run = tmp_path / "elsewhere"
    run.mkdir()
    append_records(run / "records.jsonl", _rows("production", [False, True], [1, 0], 1000)
                   + _rows(RECOMMENDED, [True, True], [1, 0], 900))
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.chdir(checkout)
    out = Path("results") / "research"
    assert main([str(run), "--bootstrap", "500", "--seed", "3", "--out", str(out)]) == 0
    md = (out / "research_compare.md").read_text()
    assert md.splitlines()[0] == (
        "Command: `python -m evals.analysis.research_compare "
        "results/research/research_records.parquet --baseline production --bootstrap 500 "
        "--seed 3 --out results/research`")
    table = pd.read_parquet(out / "research_records.parquet")
    assert list(zip(table.research, table.question_id, table.correct)) == [
        ("production", "q0", False), ("production", "q1", True),
        (RECOMMENDED, "q0", True), (RECOMMENDED, "q1", True)]
    shutil.rmtree(run)
    assert main(["--check", "--out", str(out)]) == 0
    # a hand edit of the on-facts-lost cell (+1.000: q0 lost by production, read by the label)
    (out / "research_compare.md").write_text(md.replace("+1.000", "+0.900"))
    assert main(["--check", "--out", str(out)]) == 1


def test_rebuilt_from_per_session_figures(tmp_path):
    # two sessions of 4 questions. Session a: production 1/4 right, the label 3/4 (+2);
    # session b: production 2/4, the label 1/4 (-1). Paired recall difference over the 8
    # questions: (+2 - 1) / 8 = +0.125, record 1-1-0. Tokens: a +100 a question, b -300:
    # (4*100 - 4*300) / 8 = -100, record 1-1-0. Recall on the label's own discarded facts:
    # a 1 of 2, b 1 of 2 = 0.5 over 4. The difference on the facts production lost pairs
    # questions: not in per-session figures, so NaN.
    from evals.analysis.research_rederive import rows_from_sessions

    def session(item, research, recall, discarded, recall_d, tokens):
        return {"dataset": "d", "seed": 1, "item_id": item, "research": research,
                "arm": "foveated auto @200k", "questions": 4, "verdict": "valid",
                "recall": recall, "discarded": discarded, "recall_discarded": recall_d,
                "billed_tokens": tokens, "compaction_tokens_per_question": 0.0,
                "compaction_token_method": None}

    frame = pd.DataFrame([session("a", "production", 0.25, 2, 0.0, 1000.0),
                          session("b", "production", 0.5, 2, 0.5, 2000.0),
                          session("a", RECOMMENDED, 0.75, 2, 0.5, 1100.0),
                          session("b", RECOMMENDED, 0.25, 2, 0.5, 1700.0)])
    rows, bracket = rows_from_sessions(frame, n_boot=200, seed=0)
    assert bracket == []
    base, other = rows
    assert (base.research, base.questions, base.recall) == ("production", 8, 0.375)
    assert base.recall_discarded == 0.25 and base.recall_interval == "session bootstrap"
    assert other.recall_discarded == 0.5
    assert other.diff_recall == pytest.approx(0.125) and other.diff_recall_record == "1-1-0"
    assert other.diff_billed_tokens == pytest.approx(-100.0)
    assert other.diff_billed_tokens_record == "1-1-0"
    assert math.isnan(other.diff_on_baseline_discarded)
    assert other.verdicts == "valid 8" and other.sessions == 2


def test_per_session_figures_reproduce_the_comparison_from_records():
    # the rebuild reads only per-session sums: on records with unequal sessions it gives the
    # record-level comparison's figures and intervals exactly (the same bootstrap draws)
    from evals.analysis.research_compare import per_session
    from evals.analysis.research_rederive import rows_from_sessions

    prod = (_rows("production", [True, False, False, True, False] * 2, [1, 1, 0, 1, 1] * 2,
                  1000)
            + [r.with_fields(item_id="i9") for r in
               _rows("production", [False, False, True], [1, 1, 1], 3000)])
    rec = (_rows(RECOMMENDED, [True, True, False, True, True] * 2, [1, 1, 0, 1, 0] * 2, 1200)
           + [r.with_fields(item_id="i9") for r in
              _rows(RECOMMENDED, [True, False, True], [1, 1, 0], 2500)])
    want = compare_research(prod + rec, n_boot=300, seed=4)
    got, _ = rows_from_sessions(per_session(prod + rec), n_boot=300, seed=4)
    for w, g in zip(want, got, strict=True):
        for field in ("questions", "recall", "recall_discarded", "recall_discarded_lo",
                      "recall_discarded_hi", "billed_tokens", "diff_recall", "diff_recall_lo",
                      "diff_recall_hi", "diff_recall_record", "diff_billed_tokens_lo",
                      "diff_billed_tokens_hi"):
            assert getattr(g, field) == pytest.approx(getattr(w, field), nan_ok=True), field


def test_the_facts_production_lost_are_production_s_not_the_research_arm_s():
    # Session i0 (q0-q9): production discarded the evidence of all ten (round 1) and read none;
    # the research arm kept them (round 0) and read q0-q3. Session i1 (q10-q19): production
    # kept all ten and read them; the research arm discarded q10-q14 and read none of those,
    # q15-q19 all. On the facts production lost (q0-q9): research 4/10 - production 0/10 =
    # +0.40 (one session); on the research arm's own losses it would be 0/5 - 5/5 = -1.00.
    # The research arm's own "discarded" recall is over its own losses: 0 of 5.
    prod = (_rows("production", [False] * 10, [1] * 10, 50_000)
            + [r.with_fields(item_id="i1", question_id=f"q{10 + k}") for k, r in enumerate(
                _rows("production", [True] * 10, [0] * 10, 50_000))])
    rec = (_rows(RECOMMENDED, [True] * 4 + [False] * 6, [0] * 10, 40_000)
           + [r.with_fields(item_id="i1", question_id=f"q{10 + k}") for k, r in enumerate(
               _rows(RECOMMENDED, [False] * 5 + [True] * 5, [1] * 5 + [0] * 5, 40_000))])
    rows = {(r.research, r.subset): r for r in compare_research(prod + rec, n_boot=500)}
    got = rows[(RECOMMENDED, "all")]
    assert (got.baseline_discarded, got.baseline_discarded_sessions) == (10, 1)
    assert got.diff_on_baseline_discarded == pytest.approx(0.40)
    assert got.diff_on_baseline_discarded_record == "1-0-0"
    assert (got.discarded, got.recall_discarded) == (5, 0.0)
    assert got.diff_recall == pytest.approx((9 - 10) / 20)  # 4 + 5 read against 0 + 10


@pytest.mark.parametrize(("sessions", "strength"), [
    (20, "(20 sessions; 20-0-0): interval clear of 0 on 20 sessions, but exploratory: no "
         "pre-registered study plan (configs/study/) fixed these sessions before their run"),
    (19, "(19 sessions; 19-0-0): interval clear of 0, but 19 < 20 sessions: suggestive, not a "
         "finding"),
])
def test_a_finding_needs_twenty_sessions_exactly_as_the_claim_rule_says(sessions, strength):
    # Every session (all valid: no split, so "all sessions"): production reads 5 of 10
    # discarded facts, research 7: +0.2 in each, so every resample is +0.2 and the interval
    # [+0.2, +0.2] is clear of 0. Twenty sessions are the bar
    # (evals.analysis.session_bootstrap.MIN_SESSIONS_FOR_CLAIM), nineteen are short.
    prod = _sessions("production", [(5, 50_000, 0)] * sessions)
    rec = _sessions(RECOMMENDED, [(7, 50_000, 0)] * sessions)
    table = format_markdown(compare_research(prod + rec, n_boot=500), "production")
    claims = table[table.index("What the evidence supports"):]
    assert ("recall on the facts production discarded, on all sessions: "
            f"+0.200 [+0.200, +0.200] {strength}") in claims
