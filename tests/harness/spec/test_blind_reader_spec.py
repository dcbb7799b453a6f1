"""reader=blind: the offline model line answers through snapblind/context-qa, a real model is
refused (it is never told the evidence), and a told run keeps its run id."""

from __future__ import annotations

import pytest

from evals.spec.run_spec import RunSpec


def test_reader_blind_routes_the_questions_to_the_blind_reader(compose_eval):
    told = RunSpec.from_config(compose_eval(["experiment=smoke"]))
    blind = RunSpec.from_config(compose_eval(["experiment=smoke", "reader=blind"]))
    assert told.model.model_for("qa") == "snapocr/context-qa"
    assert blind.model.model_for("qa") == "snapblind/context-qa"
    assert (told.reader.locate, blind.reader.locate) == ("told", "blind")
    assert told.run_id() != blind.run_id()


def test_a_told_run_id_hashes_the_reader_as_before_locate_existed(compose_eval, monkeypatch):
    import evals.spec.run_spec as run_spec

    spec = RunSpec.from_config(compose_eval(["experiment=smoke"]))
    hashed = []
    real_dumps = run_spec.json.dumps
    monkeypatch.setattr(run_spec.json, "dumps",
                        lambda obj, **kw: hashed.append(obj) or real_dumps(obj, **kw))
    spec.run_id()
    # the reader part of the id: the reader spec's fields before ``locate`` existed
    assert hashed[-1]["reader"] == {"name": "qa", "readers": ["qa"], "answer_max_tokens": 64}


def test_a_real_model_cannot_be_blind(compose_eval):
    with pytest.raises(ValueError, match="offline blind reader"):
        RunSpec.from_config(compose_eval(["experiment=smoke", "reader=blind", "model=gpt-5"]))
