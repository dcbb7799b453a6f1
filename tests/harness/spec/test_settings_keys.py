"""One ``settings.<section>.<key>=VALUE`` override works the same under every experiment.

Why: Hydra refuses a key the composed config does not already hold unless it is written with
``+``; with ``settings: {}`` in configs/eval.yaml, ``settings.compaction.keepRecentTokens=8000``
worked under ``experiment=smoke`` (which sets that section) and failed under the default
experiment (issue 35). eval.yaml now declares every key of snapcompact's settings file as null.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import yaml
from hydra.errors import ConfigCompositionException
from locations import REPO

from evals.spec.run_spec import RunSpec
from snapcompact.compaction import DEFAULT_SETTINGS

EXPERIMENTS = sorted(p.stem for p in (REPO / "configs" / "experiment").glob("*.yaml"))
#: The sections of the coding agent's settings file, by their camelCase names.
SECTIONS = {"compaction": DEFAULT_SETTINGS.compaction,
            "branchSummary": DEFAULT_SETTINGS.branch_summary,
            "pruning": DEFAULT_SETTINGS.pruning, "snapcompact": DEFAULT_SETTINGS.snapcompact}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def test_eval_yaml_declares_every_settings_key_as_null() -> None:
    declared = yaml.safe_load(Path(REPO / "configs" / "eval.yaml").read_text())["settings"]
    assert {s: sorted(keys) for s, keys in declared.items()} == {
        s: sorted(_camel(f.name) for f in fields(section)) for s, section in SECTIONS.items()}
    assert all(v is None for keys in declared.values() for v in keys.values())


@pytest.mark.parametrize("experiment", ["default", *EXPERIMENTS])
def test_the_same_override_works_under_every_experiment(experiment, compose_eval) -> None:
    overrides = [] if experiment == "default" else [f"experiment={experiment}"]
    base = RunSpec.from_config(compose_eval(overrides)).settings_overrides
    spec = RunSpec.from_config(compose_eval(
        [*overrides, "settings.compaction.keepRecentTokens=8000",
         "settings.pruning.protectTokens=1234"]))
    assert spec.settings().compaction.keep_recent_tokens == 8000
    assert spec.settings().pruning.protect_tokens == 1234
    # the experiment's own overrides are kept, and only the two named keys are added
    expected = {**base, "compaction": {**base.get("compaction", {}), "keepRecentTokens": 8000},
                "pruning": {**base.get("pruning", {}), "protectTokens": 1234}}
    assert spec.settings_overrides == expected


def test_smoke_keeps_its_settings_and_the_default_adds_none(compose_eval) -> None:
    smoke = RunSpec.from_config(compose_eval(["experiment=smoke"]))
    assert smoke.settings_overrides == {"compaction": {"keepRecentTokens": 2000,
                                                       "reserveTokens": 1000}}
    assert RunSpec.from_config(compose_eval([])).settings_overrides == {}


def test_a_misspelt_key_is_refused_naming_it(compose_eval) -> None:
    with pytest.raises(ConfigCompositionException, match="keepRecentToken"):
        compose_eval(["settings.compaction.keepRecentToken=8000"])


def test_an_old_plus_settings_override_still_works(compose_eval) -> None:
    """Commands written while ``+`` was needed keep working: the CLI turns it into ``++``."""
    from evals.spec.old_spellings import rename_old_overrides

    args = rename_old_overrides(["+settings.compaction.keepRecentTokens=4000", "+model.x=1",
                                 "settings.pruning.enabled=false"])
    assert args == ["++settings.compaction.keepRecentTokens=4000", "+model.x=1",
                    "settings.pruning.enabled=false"]
    spec = RunSpec.from_config(compose_eval(args[:1]))
    assert spec.settings_overrides == {"compaction": {"keepRecentTokens": 4000}}
