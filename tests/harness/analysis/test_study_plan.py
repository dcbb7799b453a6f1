"""Plan files: every key checked, the draw fixed, the runs written out from the plan alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.analysis.study import load_plan
from evals.analysis.study.commands import study_runs
from evals.analysis.study.plan import Arms, PlanError

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
    # the same statistic on the blind reader or on the stand-in sessions is secondary
    assert plan.is_primary("paired_recall_on_baseline_discarded", plan.arms, everything,
                           reader="qa", subset="baseline_valid")
    assert not plan.is_primary("paired_recall_on_baseline_discarded", plan.arms, everything,
                               reader="blind")
    assert not plan.is_primary("paired_recall_on_baseline_discarded", plan.arms, everything,
                               subset="baseline_stand_in")


@pytest.mark.parametrize(("old", "new", "message"), [
    ("  alpha: 0.05", "  alpha: 0.5\n  alhpa: 0.05", r"power\.alhpa: unknown key"),
    ("  bootstrap: 4000\n", "", r"primary\.bootstrap: missing"),
    ("  count: 70", "  count: 69", r"sessions\.count: 69 but power\.sessions_planned says 70"),
    ("  treatment: recommended", "  treatment: production", "both 'production'"),
    ("  first_seed: 2001", "  first_seed: two", r"sessions\.first_seed: expected an integer"),
    ("  readers: [qa, blind]", "  readers: [qa]", r"secondary\[3\]\.reader: 'blind' is not "),
    ("    statistic: paired_recall\n", "    statistic: paired_recal\n",
     r"secondary\[0\]\.statistic: 'paired_recal' is not one the analysis computes"),
    ("  probes: [exact, gist, never-stated]\n", "  probes: [exact, gist]\n",
     r"secondary\[1\]\.probes: 'never-stated' is not asked"),
    ("  readers: [qa, blind]", "  readers: [qa, blnd]", r"reader: 'blind' is not among|blnd"),
])
def test_a_bad_plan_is_refused_naming_the_key(tmp_path, old, new, message):
    with pytest.raises(PlanError, match=message):
        load_plan(_edited(tmp_path, old, new))


def test_runs_are_written_out_from_the_plan(tmp_path):
    runs = study_runs(load_plan(PLAN), tmp_path)
    assert len(runs) == 280  # 70 sessions x 2 arms x 2 readers
    first = runs[0]
    assert (first.seed, first.arm, first.reader, first.target_tokens) == (
        2001, "production", "qa", 240_000)
    assert "research=production" in first.overrides
    assert "reader=qa" in first.overrides
    assert "dataset.params.target_tokens=240000" in first.overrides
    assert "dataset.params.probes=[exact,gist,never-stated]" in first.overrides
    # the blind reader follows the told one on the same arm (it reads the told run's OCR cache)
    assert (runs[1].arm, runs[1].reader) == ("production", "blind")
    assert (runs[2].arm, runs[2].seed) == ("recommended", 2001)
    assert runs[-1].results_dir == tmp_path / "s2070" / "recommended-blind"
    # one OCR cache for the whole study, not one per run folder
    assert {o for r in runs for o in r.overrides if o.startswith("ocr_cache_dir=")} == {
        f"ocr_cache_dir={tmp_path / 'cache' / 'ocr'}"}
    assert "'strategies=[snapcompact]'" in first.command()
