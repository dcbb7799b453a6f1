"""Plan files: every key checked, the draw fixed, the runs written out from the plan alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.study import load_plan
from evals.study.commands import study_runs
from evals.study.plan import Arms, PlanError

REPO = Path(__file__).resolve().parents[3]
PLAN = REPO / "configs/study/recommended_rerun.yaml"


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    text = PLAN.read_text()
    assert old in text
    path = tmp_path / "plan.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_the_draw_fixes_every_session_length():
    plan = load_plan(PLAN)
    seeds = plan.sessions.seeds()
    assert (seeds[0], seeds[-1], len(seeds)) == (2001, 2070, 70)
    assert plan.sessions.target_tokens(2001) == 240_000
    assert plan.sessions.target_tokens(2070) == 240_000 + 2_000 * 69
    with pytest.raises(PlanError, match="not in the plan's draw"):
        plan.sessions.target_tokens(13)


def test_only_the_primary_on_the_whole_draw_is_a_finding():
    plan = load_plan(PLAN)
    everything = frozenset(plan.sessions.seeds())
    assert plan.is_primary("paired_recall_on_baseline_discarded", plan.arms, everything)
    assert not plan.is_primary("paired_recall", plan.arms, everything)
    assert not plan.is_primary("paired_recall_on_baseline_discarded", plan.arms,
                               everything - {2001})
    assert not plan.is_primary("paired_recall_on_baseline_discarded",
                               Arms("production", "full_archive"), everything)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("  alpha: 0.05", "  alpha: 0.5\n  alhpa: 0.05", r"power\.alhpa: unknown key"),
    ("  bootstrap: 4000\n", "", r"primary\.bootstrap: missing"),
    ("  count: 70", "  count: 69", r"sessions\.count: 69 but power\.sessions_planned says 70"),
    ("  treatment: recommended", "  treatment: production", "both 'production'"),
    ("  first_seed: 2001", "  first_seed: two", r"sessions\.first_seed: expected an integer"),
])
def test_a_bad_plan_is_refused_naming_the_key(tmp_path, old, new, message):
    with pytest.raises(PlanError, match=message):
        load_plan(_edited(tmp_path, old, new))


def test_runs_are_written_out_from_the_plan(tmp_path):
    runs = study_runs(load_plan(PLAN), tmp_path)
    assert len(runs) == 140  # 70 sessions x 2 arms
    first = runs[0]
    assert (first.seed, first.arm, first.target_tokens) == (2001, "production", 240_000)
    assert "research=production" in first.overrides
    assert "dataset.params.target_tokens=240000" in first.overrides
    assert runs[1].arm == "recommended" and runs[1].seed == 2001
    assert runs[-1].results_dir == tmp_path / "s2070" / "recommended"
    assert "'strategies=[snapcompact]'" in first.command()
