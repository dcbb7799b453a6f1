"""An overflow the pipeline cannot compact fails without a retry; context promotion moves the
turn to a larger model instead of compacting (on overflow, and at the threshold unless it is
off or the target is not larger), LLM mocked.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

from compaction_synth import FakeLLM, Turns
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.compaction import (
    CompactionEntry,
    CompactionPipeline,
    ModelInfo,
    Session,
    TokenEstimator,
    merge_settings,
    promote,
)


def test_overflow_with_nothing_to_compact_fails_without_a_retry():
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=FakeLLM())
    p.session.append_message({"role": "user", "content": "word " * 60_000})  # one turn, far over the window
    error = {"role": "assistant", "content": [], "stopReason": "error", "model": CLAUDE.id,
             "errorMessage": "prompt is too long: 75000 tokens > 40000 maximum", "timestamp": 0}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = p.after_turn(error)
    assert outcome.will_retry is False, "a retry would send the same oversized context again"
    assert outcome.entry is None and outcome.skipped == "nothing to compact"
    assert outcome.error.startswith("Context overflow recovery failed: nothing to compact")
    assert any("Context overflow recovery failed" in str(w.message) for w in caught)
    assert [e.message["role"] for e in p.session.get_branch()] == ["user"]  # the error is not recorded


SMALL = ModelInfo("small-model", 40_000, provider="anthropic", api="anthropic-messages", promotion_target="big-model")
BIG = ModelInfo("big-model", 200_000, provider="anthropic", api="anthropic-messages")


def test_overflow_promotes_to_the_larger_model_and_retries_without_compacting():
    p = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, BIG])
    _fill(p, 12, 20)
    entries = len(p.session.entries)
    error = {"role": "assistant", "content": [], "stopReason": "error", "model": SMALL.id,
             "errorMessage": "prompt is too long: 45000 tokens > 40000 maximum", "timestamp": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = p.after_turn(error)
    assert outcome.strategy == "promotion" and outcome.promoted_to == "big-model" and outcome.will_retry
    assert outcome.entry is None and len(p.session.entries) == entries  # nothing written, error dropped
    assert p.model is BIG and p.threshold() == 200_000 - 30_000
    # Incomplete output promotes too; a model without a target then compacts as before.
    p2 = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, BIG])
    _fill(p2, 12, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = p2.after_turn({"role": "assistant", "content": [{"type": "text", "text": "cut"}],
                             "stopReason": "length", "model": SMALL.id, "timestamp": 0})
        assert out.promoted_to == "big-model"
        out = p2.after_turn({"role": "assistant", "content": [], "stopReason": "length", "model": BIG.id,
                             "timestamp": 0})
    assert out.promoted_to is None and out.entry is not None and out.reason == "incomplete"


def test_threshold_promotes_before_compacting_unless_disabled_or_not_larger():
    def over_threshold(pipeline):
        outcome = None
        t = Turns(13, result_words=(300, 500))
        for turn in range(200):
            pipeline.session.append_message({"role": "user", "content": f"turn {turn}"})
            calls = [t.call()]
            pipeline.session.append_message(t.assistant(calls))
            for call in calls:
                pipeline.session.append_message(t.result(call))
            outcome = pipeline.after_turn({**t.assistant([]), "model": pipeline.model.id})
            if outcome is not None and (outcome.entry is not None or outcome.promoted_to):
                return outcome
        raise AssertionError("never crossed the threshold")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, BIG])
        outcome = over_threshold(p)
        assert outcome.reason == "threshold" and outcome.promoted_to == "big-model" and outcome.entry is None
        assert not any(isinstance(e, CompactionEntry) for e in p.session.entries)
        off = merge_settings(_settings(), {"compaction": {"contextPromotion": False}})
        p = CompactionPipeline(Session(), SMALL, settings=off, complete=FakeLLM(), models=[SMALL, BIG])
        assert over_threshold(p).entry is not None and p.model is SMALL
        same = ModelInfo("big-model", 30_000)  # configured target, but not a larger window
        p = CompactionPipeline(Session(), SMALL, settings=_settings(), complete=FakeLLM(), models=[SMALL, same])
        assert over_threshold(p).entry is not None and p.model is SMALL


def test_promotion_charges_frames_at_the_new_models_rate():
    # An archive frame is charged the model's ``image_tokens`` (PipelineState.estimator); after
    # a promotion the charge is the new model's. An estimator the caller gave is kept as given.
    small, big = replace(SMALL, image_tokens=1_000), replace(BIG, image_tokens=3_000)
    p = CompactionPipeline(Session(), small, settings=_settings(), models=[small, big])
    assert p.estimator.frame_tokens == 1_000
    assert promote(p) is big and p.model is big
    assert p.estimator.frame_tokens == 3_000
    given = TokenEstimator(frame_tokens=7)
    q = CompactionPipeline(Session(), small, settings=_settings(), models=[small, big],
                           estimator=given)
    assert promote(q) is big and q.estimator is given
