"""The study's analysis: each statistic the plan defines, on records whose answers are known.

The fixture (tests/study_records.py) is a tiny study written by hand (three seeds, both arms,
both readers, four questions a session); every expected figure below is worked out from its
table, not from the code under test.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from study_records import study_records as _records

from evals.analysis.study import load_plan
from evals.analysis.study.endpoints import analyse
from evals.analysis.study.report import endpoint_sentence, rebuild_report, write_report

REPO = Path(__file__).resolve().parents[3]
PLAN = load_plan(REPO / "configs/study/recommended_rerun.yaml")

def _plan(count: int = 3, min_sessions: int = 2):
    sessions = dataclasses.replace(PLAN.sessions, count=count)
    primary = dataclasses.replace(PLAN.primary, min_sessions=min_sessions, bootstrap=200)
    return dataclasses.replace(PLAN, sessions=sessions, primary=primary)


def _by_name(result):
    return {e.name: e for e in result.endpoints}


def test_primary_is_recall_on_what_the_baseline_discarded_on_its_valid_sessions():
    result = analyse(_records(), _plan())
    primary = result.endpoints[0]
    assert primary.role == "primary"
    # valid seeds 2001, 2002; stated questions the baseline discarded: q0, q1 of each.
    # 2001: baseline a, c -> 1/2; treatment c, c -> 2/2. 2002: baseline w, c -> 1/2;
    # treatment c, a -> 1/2. Pooled: baseline 2/4, treatment 3/4, difference +0.25.
    assert primary.baseline_mean == pytest.approx(0.5)
    assert primary.treatment_mean == pytest.approx(0.75)
    assert primary.diff.mean == pytest.approx(0.25)
    assert (primary.diff.n_sessions, primary.diff.n_questions) == (2, 4)
    assert primary.diff.record == "1-0-1"  # 2001 gains 0.5, 2002 ties
    # 2 valid sessions reach this test plan's minimum of 2; a bootstrap over {+0.5, 0} ranges
    # from 0 to +0.5, so the interval touches 0: no difference shown
    assert primary.decision == "no difference shown: the interval contains 0"


def test_secondary_statistics():
    e = _by_name(analyse(_records(), _plan()))
    # every stated question on valid sessions: 2001 baseline a,c,c / treatment c,c,c;
    # 2002 baseline w,c,c / treatment c,a,w -> baseline 4/6, treatment 4/6
    assert e["recall on every stated question"].diff.mean == pytest.approx(0.0)
    assert e["billed tokens per question, compaction calls included"].diff.mean == -10_000
    # session bill: 2001 +1.0, 2002 +0.5 -> mean +0.75 over 2 sessions
    cost = e["what a session costs (the session bill, dollars)"]
    assert cost.diff.mean == pytest.approx(0.75)
    assert cost.diff.n_questions == 2  # one entry a session
    # silent wrong (told): baseline 1 of 6 (2002 q0), treatment 1 of 6 (2002 q2)
    assert e["silent wrong answers on stated probes, told reader"].diff.mean == 0.0
    # confabulated never-stated (blind, the same as told here): baseline 0/2, treatment 1/2
    assert (e["confabulated answers to never-stated probes, blind reader"].diff.mean
            == pytest.approx(0.5))
    # exact only, discarded: 2001 a->c, 2002 w->c: +1.0; gist only: c->c, c->a: -0.5
    assert e["recall on exact probes the baseline discarded"].diff.mean == pytest.approx(1.0)
    assert e["recall on gist probes the baseline discarded"].diff.mean == pytest.approx(-0.5)
    # the stand-in session 2003: q0, q1 a -> c: +1.0, never a finding
    # the bill's unit is the session: its sentence names the sessions once, not as questions
    said = endpoint_sentence(cost, _plan())
    assert "+0.7500 $" in said and "2 sessions; W-L-T 2-0-0" in said and "questions" not in said
    stand_in = e["recall on facts the baseline discarded, sessions where the baseline "
                 "handed over"]
    assert stand_in.diff.mean == pytest.approx(1.0) and stand_in.diff.n_sessions == 1
    assert stand_in.decision.startswith("secondary")


def test_the_blind_reader_endpoint_reads_only_the_blind_rows():
    e = _by_name(analyse(_records(blind_same=False), _plan()))
    # blind treatment wrong everywhere: discarded stated questions, baseline 2/4 -> 0/4
    assert (e["recall on facts the baseline discarded, blind reader"].diff.mean
            == pytest.approx(-0.5))
    # the told primary is untouched
    assert analyse(_records(blind_same=False), _plan()).endpoints[0].diff.mean == 0.25


def test_a_draw_not_run_to_its_end_is_never_decided():
    result = analyse(_records(seeds=(2001, 2002)), _plan(count=3))
    assert result.seeds_missing == (2003,)
    assert result.endpoints[0].decision.startswith("incomplete")


def test_fewer_valid_sessions_than_the_plan_asks_is_inconclusive():
    result = analyse(_records(), _plan(min_sessions=40))
    assert result.endpoints[0].decision.startswith("inconclusive by design: 2 ")


def test_a_clear_interval_on_enough_sessions_is_a_finding():
    records = _records()
    # make 2002 gain too: its treatment answers q1 (gist, discarded) correctly
    hit = ((records["seed"] == 2002) & (records["question_id"] == "q1")
           & records["research"].str.startswith("recommended"))
    records.loc[hit, ["correct", "abstained"]] = [True, False]
    primary = analyse(records, _plan()).endpoints[0]
    assert primary.diff.mean == pytest.approx(0.5) and primary.diff.lo > 0
    assert primary.decision == "finding: recommended higher than production"
    assert "+0.500" in endpoint_sentence(primary, _plan())


def test_records_outside_the_plan_are_refused():
    records = _records()
    records.loc[0, "research"] = "full_archive"
    with pytest.raises(ValueError, match="outside the plan's arms"):
        analyse(records, _plan())
    records = _records()
    records["seed"] = records["seed"] + 100
    with pytest.raises(ValueError, match="outside the plan's draw"):
        analyse(records, _plan())


def test_the_report_is_rebuilt_from_its_committed_records(tmp_path):
    plan = _plan()
    text = write_report(_records(), plan, tmp_path)
    assert "## Primary endpoint" in text and "+0.250" in text
    rebuilt = rebuild_report(tmp_path, plan)
    for name, body in rebuilt.items():
        assert (tmp_path / name).read_text() == body
