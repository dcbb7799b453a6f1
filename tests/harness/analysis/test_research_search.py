"""The harness side of the research knobs: ``research=NAME`` reaches snapcompact's settings,
rows keep knobs apart, and a search trial's objectives come from its records."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from hydra_compose import compose_eval
from record_rows import make_record

from evals.analysis.aggregate import arm_label
from evals.analysis.search_objectives import INFEASIBLE, search_objectives
from evals.spec.config_files import CONFIG_DIR
from evals.spec.run_spec import RunSpec
from evals.store.records import append_records
from snapcompact.compaction import DEFAULT_SETTINGS


def _spec(overrides: list[str], hydra: bool = False):
    cfg = compose_eval(overrides, hydra_config=hydra)
    return cfg if hydra else RunSpec.from_config(cfg)


def test_every_run_defaults_to_productions_knobs() -> None:
    spec = _spec([])
    assert spec.research.label == "production"
    assert spec.settings() == DEFAULT_SETTINGS


def test_a_knob_override_reaches_the_library_settings_and_relabels_the_run() -> None:
    spec = _spec(["research.settings.snapcompact.frameCharge=billed",
                  "research.settings.snapcompact.textEdgeTokens=2000"])
    sc = spec.settings().snapcompact
    assert (sc.frame_charge, sc.text_edge_tokens) == ("billed", 2000)
    assert spec.research.label.startswith("production-")
    assert spec.run_id() != _spec([]).run_id()


def test_research_settings_merge_under_the_experiments_own() -> None:
    spec = _spec(["experiment=small_window", "research.settings.snapcompact.frameCharge=billed"])
    settings = spec.settings()
    assert settings.snapcompact.frame_charge == "billed"
    assert settings.compaction.keep_recent_tokens == 8000  # small_window's own settings


def test_a_bad_knob_names_its_key() -> None:
    with pytest.raises(ValueError, match="snapcompact.frameCharge"):
        _spec(["research.settings.snapcompact.frameCharge=free"])
    with pytest.raises(ValueError, match="research.shape"):
        _spec(["experiment=search", "research.shape.cellWidth=2"])


def test_the_search_draws_its_shape_by_parameters() -> None:
    spec = _spec(["experiment=search"])
    assert [s.name for s in spec.shapes] == ["px-8x13-11x16-bw-nostretch"]
    assert spec.research.label.startswith("search-")
    assert spec.context_window == 200_000 and spec.seed == 100  # never the held-out seed 0
    assert [s.name for s in _spec(["experiment=search", "shape=8on22-bw"]).shapes] == [
        "8on22-bw"]


def test_the_search_is_a_two_objective_optuna_study() -> None:
    cfg = _spec(["experiment=search"], hydra=True)
    sweeper = cfg.hydra.sweeper
    assert "optuna" in sweeper._target_
    assert list(sweeper.direction) == ["maximize", "minimize"]
    assert "NSGAII" in sweeper.sampler._target_
    assert {"research.settings.snapcompact.frameCharge", "research.shape.cellWidth",
            "frame_size"} <= set(sweeper.params)


def test_arms_of_other_knobs_get_their_own_label() -> None:
    args = ("snapcompact", "foveated", "11on16-bw", 1568, "auto", 200_000)
    assert arm_label(*args) == "snapcompact foveated auto @200k"
    assert arm_label(*args, "search-1a2b3c4d") == (
        "snapcompact foveated auto [search-1a2b3c4d] @200k")


def _row(question: str, *, correct: bool, round_: int, tokens: int, **changes):
    values = {"production_valid": True, "fits_window": True, **changes}
    return make_record(question_id=question, strategy="snapcompact", policy="foveated",
                       correct=correct, evidence_round=round_, predicted_prompt_tokens=tokens,
                       **values)


def test_objectives_are_recall_on_discarded_evidence_and_billed_tokens(tmp_path) -> None:
    append_records(tmp_path / "records.jsonl", [
        _row("a", correct=True, round_=1, tokens=1000), _row("b", correct=False, round_=2,
                                                             tokens=2000),
        _row("c", correct=True, round_=0, tokens=3000),  # kept tail: not discarded
        make_record(question_id="d", strategy="truncate", correct=False, evidence_round=1)])
    objectives = search_objectives(tmp_path)
    assert objectives.values() == (0.5, 2000.0)
    assert (tmp_path / "search_objectives.json").exists()


@pytest.mark.parametrize("changes", [{"production_valid": False}, {"fits_window": False}])
def test_a_context_production_would_not_send_is_infeasible(tmp_path, changes) -> None:
    append_records(tmp_path / "records.jsonl", [
        _row("a", correct=True, round_=1, tokens=1000),
        _row("b", correct=True, round_=1, tokens=1000, **changes)])
    objectives = search_objectives(tmp_path)
    assert not objectives.feasible and objectives.values() == INFEASIBLE


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONFIG_DIR / "research").glob("*.yaml")))
def test_every_research_file_is_a_run_with_its_own_label(name) -> None:
    spec = RunSpec.from_config(compose_eval([f"research={name}"]))
    if name == "production":
        assert spec.research.label == "production" and spec.settings() == DEFAULT_SETTINGS
    elif name == "swept_middle":
        # the shape sweep's setting: production's knobs but the middle drawn in the asked shape
        assert spec.research.label.startswith("swept_middle-")
        snap = spec.settings().snapcompact
        assert snap.frame_charge == DEFAULT_SETTINGS.snapcompact.frame_charge
        assert snap.middle_shape == "same"
    else:
        # each shipped research point charges frames their bill (the knob every search point
        # that kept its frames needed) and is kept apart from production's rows by its label
        assert spec.research.label.startswith(f"{name}-")
        assert spec.settings().snapcompact.frame_charge == "billed"


def test_the_budget_study_is_a_grid_over_the_cap_rule_edges_and_threshold() -> None:
    sweeper = compose_eval(["experiment=search_budget"], hydra_config=True).hydra.sweeper
    assert "GridSampler" in sweeper.sampler._target_
    assert list(sweeper.direction) == ["maximize", "minimize"]
    assert set(sweeper.params) == {"research.settings.snapcompact.frameCapBytes",
                                   "research.settings.snapcompact.textEdgeTokens",
                                   "research.settings.compaction.thresholdPercent"}
    spec = RunSpec.from_config(compose_eval(["experiment=search_budget"]))
    assert spec.seed == 100 and spec.context_window == 200_000  # never a held-out seed
