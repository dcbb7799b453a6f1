"""The declarative config schemas (evals/spec/schema.py): every key, given a value of the wrong kind,
is refused with one line that starts with that key's path in the composed config.

``test_hostile.py`` pins the exact wording per case; this file sweeps every key of every group,
so a key added to a schema without a readable error cannot slip in.
"""

from __future__ import annotations

import copy

import pytest
from hydra_compose import compose_eval
from omegaconf import OmegaConf

from evals.spec.run_spec import RunSpec
from evals.spec.schema import EvalConfig, ModelConfig

WRONG = {"a": {"nested": "mapping"}}  # no key of any group takes a mapping of this shape


def base_config(tmp_path) -> dict:
    cfg = compose_eval(["model=mock", "summarizer=mock",
                                     f"results_dir={tmp_path}"])
    return OmegaConf.to_container(cfg, resolve=True)


def _typed_keys(schema) -> list[str]:
    """Keys whose values have a declared type (``Any`` keys are checked by the library)."""
    return [name for name, info in schema.model_fields.items()
            if info.annotation is not object and "Any" not in str(info.annotation)
            and name not in ("params", "settings")]  # free-form mappings: WRONG fits them


@pytest.mark.parametrize("path", [(k,) for k in _typed_keys(EvalConfig)
                                  if k not in ("model", "summarizer", "dataset", "reader",
                                               "shape")]
                         + [("model", k) for k in _typed_keys(ModelConfig)]
                         + [("summarizer", k) for k in _typed_keys(ModelConfig)]
                         + [("dataset", "name"), ("reader", "name"),
                            ("reader", "answer_max_tokens"), ("reader", "readers")])
def test_every_key_refuses_a_wrong_value_in_one_line_naming_it(tmp_path, path) -> None:
    data = base_config(tmp_path)
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = copy.deepcopy(WRONG)
    with pytest.raises(ValueError) as refused:
        RunSpec.from_config(data, base_dir=tmp_path)
    message = str(refused.value)
    assert "\n" not in message
    key = ".".join(path)
    # a group-valued key (reader_ids) reports the unknown key inside it
    assert message.startswith((f"{key} ", f"{key}[", f"{key}.", f"{key} config has unknown key")), message


def test_unknown_keys_are_listed_together_with_what_is_allowed(tmp_path) -> None:
    data = base_config(tmp_path)
    data["summarizer"]["temprature"] = 0
    data["summarizer"]["conccurency"] = 2
    with pytest.raises(ValueError, match=r"^summarizer config has unknown key\(s\) "
                                         r"\['conccurency', 'temprature'\]; allowed: \[.*'api'"):
        RunSpec.from_config(data, base_dir=tmp_path)


def test_strings_are_not_numbers_and_numbers_are_not_booleans(tmp_path) -> None:
    for key, value, expect in [("max_items", "3", "max_items must be an integer >= 1, got '3'"),
                               ("budget_usd", "5", "budget_usd must be a finite number, got '5'"),
                               ("progress", 1, "progress must be true or false, got 1")]:
        data = base_config(tmp_path)
        data[key] = value
        with pytest.raises(ValueError, match=f"^{expect}$"):
            RunSpec.from_config(data, base_dir=tmp_path)


def test_a_valid_config_keeps_its_values(tmp_path) -> None:
    data = base_config(tmp_path)
    data["model"]["required_env"] = "ONE_NAME"  # one name is a list of one
    data["model"]["tokens_per_minute"] = 45_000
    data["budget_usd"] = 3  # an int is a number of dollars
    spec = RunSpec.from_config(data, base_dir=tmp_path)
    assert spec.model.required_env == ("ONE_NAME",)
    assert spec.model.tokens_per_minute == 45_000.0
    assert spec.budget_usd == 3.0 and isinstance(spec.budget_usd, float)
    assert spec.summarizer is not None and spec.summarizer.name == "mock-summarizer"


@pytest.mark.parametrize("key, value, expect", [
    ("strategy", "truncate", None),
    ("strategy", {"name": "truncate"}, None),
    ("strategy", {"name": "truncate", "extra": 1},
     "strategy config has unknown key(s) ['extra']; allowed: ['name']"),
    ("policy", {"nom": "pinned"}, "policy.name must be a non-empty string, got None"),
    ("strategy", 5, "strategy must be a mapping, got int"),
])
def test_one_choice_is_a_name_or_its_group_file(tmp_path, key, value, expect) -> None:
    data = base_config(tmp_path)
    data.pop("summarizer")
    data[key] = value
    if expect is None:
        assert RunSpec.from_config(data, base_dir=tmp_path).strategies == ("truncate",)
    else:
        with pytest.raises(ValueError) as refused:
            RunSpec.from_config(data, base_dir=tmp_path)
        assert str(refused.value) == expect
