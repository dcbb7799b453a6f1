"""The perfect summarizer (summarizer=perfect): the oracle ceiling of production's LLM summary.

Unit checks against hand-worked prompts, then a replay through the harness: the same library
maintenance path as the offline stand-in, the summary text holds the discarded question's
evidence line (the stand-in's does not), and the rows are labelled as an oracle, never valid.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra_compose import compose_eval

from evals.pipeline.run import run_config
from evals.replay.perfect_summary import PERFECT_SUMMARY_HEADER, perfect_summarizer
from evals.store.records import ContextStore, iter_records


def test_keeps_exactly_the_evidence_lines_it_was_shown_in_the_given_order():
    complete = perfect_summarizer(["the port is 8431", "build id: 77-ab", "owner is Dana"])
    prompt = ("<conversation>\n[User]: where?\n[Tool Result]: owner  is\nDana; also\n"
              "the port is 8431\n</conversation>")
    reply = complete("system", prompt, max_tokens=100)
    # worked by hand: "owner is Dana" occurs once whitespace is collapsed; "build id" never
    assert reply["text"].splitlines() == [*PERFECT_SUMMARY_HEADER.splitlines(),
                                          "- the port is 8431", "- owner is Dana"]
    assert reply["usage"] == {"input": 0, "output": 0}
    # nothing shown, nothing kept: the oracle carries no fact it was not given
    assert complete("s", "[User]: hello", max_tokens=10)["text"] == PERFECT_SUMMARY_HEADER


def test_a_previous_summary_in_the_prompt_carries_its_lines_forward():
    complete = perfect_summarizer(["alpha is 1", "beta is 2"])
    first = complete("s", "[User]: alpha is 1", max_tokens=10)["text"]
    second = complete("s", f"<previous-summary>{first}</previous-summary>[User]: beta is 2",
                      max_tokens=10)["text"]
    assert second.splitlines()[-2:] == ["- alpha is 1", "- beta is 2"]


def test_blank_evidence_is_refused_by_name():
    with pytest.raises(ValueError, match="evidence line must be non-blank"):
        perfect_summarizer(["ok", "  "])


def _run(tmp_path: Path, summarizer: str):
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", "experiment=smoke",
                        "max_questions_per_item=2", "model=mock", "strategies=[handoff]",
                        f"summarizer={summarizer}"])
    run_config(cfg, tmp_path / summarizer, base_dir=tmp_path)
    store = ContextStore(tmp_path / summarizer / "contexts")
    return [(r, json.dumps(store.get(r.context_hash)))
            for r in iter_records(tmp_path / summarizer / "records.jsonl")]


def test_replay_puts_the_discarded_evidence_in_the_oracle_summary_and_labels_it(tmp_path):
    from evals.items.datasets import load_dataset

    perfect, offline = _run(tmp_path, "perfect"), _run(tmp_path, "offline")
    # the smoke experiment's session, loaded here for its questions' evidence lines
    item = load_dataset("agent_session", target_tokens=30000, depths=(0.2, 0.9))[0]
    evidence = {q.question_id: q.evidence for q in item.questions}
    assert perfect and len(perfect) == len(offline)
    assert {r.item_id for r, _ in perfect} == {item.item_id}
    discarded = [(r, ctx) for r, ctx in perfect if r.evidence_round >= 1]
    assert discarded, "the smoke session must discard at least one question's evidence"
    offline_by_q = {r.question_id: ctx for r, ctx in offline}
    for r, ctx in perfect:
        assert "Oracle summary (perfect summarizer" in ctx
        assert r.summary_stand_in and r.production_valid is False
        assert "written by the perfect summarizer" in r.production_note
        assert "ceiling" in r.production_note
        assert r.compaction_cost_tokens == 0  # an oracle reports no usage of its own...
        # ...but its calls are billed as a real request would carry them, labelled an estimate
        assert r.compaction_calls >= 1 and r.compaction_input_tokens > 1000
        assert r.compaction_output_tokens > 0
        assert "estimate" in r.compaction_bill_note and "perfect summarizer" in \
            r.compaction_bill_note
    for r, ctx in discarded:
        line = json.dumps(evidence[r.question_id])[1:-1]  # as it sits in the stored JSON
        assert line in ctx, "the oracle summary must carry the discarded evidence line"
        assert line not in offline_by_q[r.question_id], "the stand-in's text names no fact"


def test_an_oracle_that_is_not_a_stand_in_is_refused(tmp_path):
    from evals.spec.run_spec import RunSpec

    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", "experiment=smoke",
                        "model=mock", "strategies=[handoff]", "summarizer=perfect",
                        "summarizer.stand_in=false"])
    with pytest.raises(ValueError, match="is an oracle .* but not stand_in: true"):
        RunSpec.from_config(cfg, base_dir=tmp_path)


def test_an_oracle_whose_id_a_model_could_have_is_refused(tmp_path):
    # the oracle's rows are told apart from a model's by their summarizer id (record keys)
    from evals.spec.run_spec import RunSpec

    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", "experiment=smoke",
                        "model=mock", "strategies=[handoff]", "summarizer=perfect",
                        "summarizer.litellm_id=anthropic/claude-haiku-4-5"])
    with pytest.raises(ValueError, match="does not start with 'oracle/'"):
        RunSpec.from_config(cfg, base_dir=tmp_path)


class _RealSummarizer:
    """litellm.acompletion where the summarizer's requests (no mock in the config: a model key
    is configured) get a model's answer through litellm's mock path; the reader's pass through."""

    TEXT = "## Goal\nA model's summary: the deploy target is staging-7."

    def __init__(self) -> None:
        self.summaries = 0

    async def __call__(self, **kwargs):
        from evals.send.client import import_litellm

        if "mock_response" not in kwargs:
            self.summaries += 1
            kwargs["mock_response"] = self.TEXT
        return await import_litellm().acompletion(**kwargs)


def test_a_real_summarizer_replaces_the_stand_in_and_the_rows_say_so(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy-not-a-key")
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", "experiment=smoke",
                        "max_questions_per_item=2", "model=mock", "strategies=[handoff]",
                        "summarizer=claude-haiku-4-5"])
    run_config(cfg, tmp_path / "real", base_dir=tmp_path, completion_fn=(fn := _RealSummarizer()))
    rows = list(iter_records(tmp_path / "real" / "records.jsonl"))
    store = ContextStore(tmp_path / "real" / "contexts")
    assert rows and fn.summaries >= 1
    for r in rows:
        ctx = json.dumps(store.get(r.context_hash))
        assert "the deploy target is staging-7" in ctx
        assert "Stand-in summary" not in ctx and "Oracle summary" not in ctx
        assert r.summary_stand_in is False
        assert r.summarizer == "anthropic/claude-haiku-4-5"
        assert "stand-in" not in (r.production_note or "")
        assert r.compaction_cost_tokens > 0  # the summarizer's reported usage
        # the summary requests are billed to the arm, counted, with no estimate note
        assert r.compaction_calls >= 1 and r.compaction_billed_tokens > 1000
        assert r.compaction_bill_note is None
