"""The power analysis against figures worked by hand (normal approximation, paired sessions)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evals.analysis.study import detectable_difference, load_plan, sessions_needed
from evals.analysis.study.power import pilot_spread, power_analysis

REPO = Path(__file__).resolve().parents[3]

# z(0.975) + z(0.80) = 1.959964 + 0.841621 (standard normal tables)
Z_SUM = 2.801585


def test_sessions_needed_for_half_a_standard_deviation():
    # effect size 0.5: (2.801585 / 0.5) ** 2 = 31.40 -> 32 sessions (the textbook figure)
    assert sessions_needed(0.05, 0.025) == 32
    # at 90 % power z(0.90) = 1.281552: (3.241516 * 2) ** 2 = 42.03 -> 43
    assert sessions_needed(0.05, 0.025, power=0.90) == 43


def test_detectable_difference_turns_the_formula_round():
    assert detectable_difference(0.1, 49) == pytest.approx(Z_SUM * 0.1 / 7, abs=1e-6)
    with pytest.raises(ValueError, match="at least 2 sessions"):
        detectable_difference(0.1, 1)


def _pilot(tmp_path: Path) -> Path:
    # four sessions; production valid on three, where recommended's column is 0.1, 0.2, 0.3 higher
    rows = ["research,seed,item_id,verdict,recall_discarded",
            "production,1,a,valid,0.10", "recommended-abc,1,a,valid,0.20",
            "production,2,b,valid,0.10", "recommended-abc,2,b,valid,0.30",
            "production,3,c,valid,0.20", "recommended-abc,3,c,valid,0.50",
            "production,4,d,stand-in,0.00", "recommended-abc,4,d,valid,0.90",
            "production (perfect summarizer),4,d,stand-in,0.70"]
    path = tmp_path / "pilot.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_pilot_spread_pairs_sessions_and_keeps_the_baseline_valid_ones(tmp_path):
    spread = pilot_spread(_pilot(tmp_path), "recall_discarded", baseline="production",
                          treatment="recommended")
    assert (spread.sessions, spread.valid_sessions) == (4, 3)
    assert spread.mean == pytest.approx(0.2)
    assert spread.sd == pytest.approx(0.1)  # sd of 0.1, 0.2, 0.3 (n - 1)


def test_power_analysis_of_a_plan(tmp_path):
    plan_text = (REPO / "configs/study/recommended_rerun.yaml").read_text()
    plan_text = plan_text.replace("results/research/research_sessions.csv", "pilot.csv")
    _pilot(tmp_path)
    (tmp_path / "plan.yaml").write_text(plan_text)
    a = power_analysis(load_plan(tmp_path / "plan.yaml"), tmp_path)
    # smallest difference 0.03, sd 0.1: (2.801585 * 0.1 / 0.03) ** 2 = 87.21 -> 88 sessions,
    # more than the plan's minimum of 40; valid share 3/4: 88 / 0.75 = 117.3 -> 118 to run
    assert a.sessions_for_difference == 88
    assert a.sessions_planned == 118
    assert a.detectable_at_min_sessions == pytest.approx(Z_SUM * 0.1 / math.sqrt(40), abs=1e-6)


def test_the_committed_plan_re_derives_from_the_committed_pilot():
    plan = load_plan(REPO / "configs/study/recommended_rerun.yaml")
    analysis = power_analysis(plan, REPO)
    # the figures written into the plan by hand (session sd 0.0532 over 23 valid of 40 pilot
    # sessions: 25 sessions for 0.03; 0.0236 at 40; 40 / (23 / 40) = 69.6 -> 70 to run)
    assert analysis.differences(plan) == []
    assert (analysis.sessions_for_difference, analysis.sessions_planned) == (25, 70)
