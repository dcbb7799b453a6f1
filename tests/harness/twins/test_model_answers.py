"""A real model's answers scored and billed as the offline readers' are (issue 47 item 5).

The run is the harness's own path (``experiment=smoke``, the three probe kinds, the ``full``
arm) with ``model=gpt-5`` served by the OpenAI wire twin through litellm. The twin's answers are
scripted per question from the generated session's own questions, so each outcome is known
before the run: the exact probe at depth 0.2 answered with its gold value (correct), the one at
0.9 with one glyph swapped (wrong: silent), the gist probes with a model's "I don't know" and a
"does not mention" sentence (abstained), the never-stated probe at 0.2 with a "never stated"
sentence (correct) and at 0.9 with the lure's value (wrong: confabulated). The twin bills
:data:`REASONING` reasoning tokens per request as output, as OpenAI's reasoning models do; each
row must carry exactly the output and reasoning tokens the twin billed.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from evals.analysis.outcomes import outcome_frame, outcome_table
from evals.blind.provider import question_of
from evals.items.datasets.agent_session import load_agent_session
from evals.store.records import iter_records
from evals.twins.smoke import all_twins, run_against_twin

KINDS = ["exact", "gist", "never-stated"]
REASONING = 37


def _script():
    """question -> (reply, expected outcome, silent wrong, confabulated)."""
    [item] = load_agent_session(seed=0, target_tokens=30000, depths=[0.2, 0.9], probes=KINDS)
    script = {}
    for q in item.questions:
        kind, early = q.meta["probe"], q.meta["depth"] == 0.2
        if kind == "exact":
            value = q.answers[0]
            swapped = value.replace("0", "O", 1) if "0" in value else value + "9"
            script[q.question] = ((value, "correct", False, False) if early
                                  else (swapped, "wrong", True, False))
        elif kind == "gist":
            script[q.question] = (("I don't know.", "abstained", False, False) if early else
                                  ("The conversation does not mention why.", "abstained",
                                   False, False))
        else:
            script[q.question] = (
                ("That was never stated in our conversation.", "correct", False, False) if early
                else (str(q.meta["lure_answer"]), "wrong", False, True))
    return script


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    script = _script()
    assert len(script) == 6
    root = tmp_path_factory.mktemp("model-answers")
    with all_twins() as server:
        twin = server["openai"]
        twin.answer_fn = lambda texts: script[question_of(texts[-1])][0]
        twin.reasoning_fn = lambda texts: REASONING
        run_against_twin("gpt-5", server, root, overrides=[
            "model.rate_limit_rps=null", "model.tokens_per_minute=null", "strategy=full",
            "+dataset.params.probes=[exact,gist,never-stated]"])
        exchanges = list(twin.log)
    records = list(iter_records(root / "runs" / "gpt-5" / "records.jsonl"))
    return script, records, exchanges


def test_each_twin_served_answer_is_scored_correct_abstained_or_wrong(answered):
    script, records, _ = answered
    assert len(records) == 6 and all(r.error is None for r in records)
    for r in records:
        reply, outcome, _, _ = script[r.question]
        assert r.answer == reply
        got = "correct" if r.correct else "abstained" if r.abstained else "wrong"
        if r.question_meta["probe"] == "never-stated" and r.correct:
            assert r.abstained  # a right abstention is both
        assert got == outcome, (r.question, reply)
    frame = outcome_frame(pd.DataFrame([{**r.to_json(), "ok": True, "depth": r.question_meta[
        "depth"], "discarded": False, "production": "bound"} for r in records]))
    assert sorted(frame["silent_wrong"]) == sorted(s[2] for s in script.values())
    assert sorted(frame["confabulated"]) == sorted(s[3] for s in script.values())
    assert set(frame["reader_name"]) == {"model"}


def test_its_output_and_reasoning_tokens_are_billed_to_the_arm(answered):
    _, records, exchanges = answered
    assert len(exchanges) == 6 and all(e.accepted for e in exchanges)
    # what the twin billed, request by request: the answer's tokens plus the reasoning
    billed = sorted((e.completion_tokens, e.reasoning_tokens) for e in exchanges)
    assert all(reasoning == REASONING and output > REASONING for output, reasoning in billed)
    assert sorted((r.reported_completion_tokens, r.reported_reasoning_tokens)
                  for r in records) == billed
    frame = outcome_frame(pd.DataFrame([{**r.to_json(), "ok": True, "depth": r.question_meta[
        "depth"], "discarded": False, "production": "bound"} for r in records]))
    table = outcome_table(frame, by=("reader_name", "arm_name"), n_boot=100)
    [row] = table.to_dict("records")
    total = sum(output for output, _ in billed)
    # one session: per session = every question's output; per question = its mean
    assert row["output tok/session"] == f"{total:,.0f}"
    assert row["output tok/q"] == f"{total / 6:,.1f}"
    assert (row["reasoning tok/q"], row["reasoning tok/session"]) == \
        (f"{REASONING:.1f}", f"{6 * REASONING}")
