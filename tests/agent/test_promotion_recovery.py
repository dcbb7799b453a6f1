"""Context promotion recovers an overflow or a cut-off turn even with compaction off.

Expected behaviour is the coding agent's (18.3.4 ``src/session/session-maintenance.ts``):

* overflow (:2870-2886) and a ``length`` stop (:3050-3068) remove the failed turn and call
  ``#tryContextPromotion`` *before* the ``compactionAvailable`` test (:2822-2829, which is where
  ``compaction.enabled`` enters): a promoted model retries the turn without compacting;
* promotion needs the failing turn to come from the current model (:3260-3268) and a target with
  a strictly larger window (:3305-3318);
* the threshold paths (pre-prompt :2498-2556, post-turn :3200-3240) go through
  ``shouldCompact``, which is false with compaction off (pi-agent-core compaction.ts:364-368):
  no promotion there.
"""

from __future__ import annotations

import warnings

from snapcompact.agent import SessionMaintenance
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionPipeline,
    ModelInfo,
    Session,
    merge_settings,
)

SMALL = ModelInfo("small-model", 40_000, provider="anthropic", api="anthropic-messages",
                  promotion_target="big-model")
BIG = ModelInfo("big-model", 200_000, provider="anthropic", api="anthropic-messages")
OFF = merge_settings(DEFAULT_SETTINGS, {"compaction": {"enabled": False,
                                                       "contextPromotion": True}})
OVERFLOW = {"role": "assistant", "content": [], "stopReason": "error", "model": "small-model",
            "provider": "anthropic", "timestamp": 0,
            "errorMessage": "prompt is too long: 45000 tokens > 40000 maximum"}
LENGTH = {"role": "assistant", "content": [{"type": "text", "text": "cut"}],
          "stopReason": "length", "model": "small-model", "provider": "anthropic", "timestamp": 0}


def _maintenance(models=(SMALL, BIG)) -> SessionMaintenance:
    maint = SessionMaintenance(Session(), SMALL, settings=OFF, models=models)
    for i in range(6):
        maint.append({"role": "user", "content": f"turn {i} " + "word " * 100})
        maint.append({"role": "assistant", "stopReason": "stop", "model": "small-model",
                      "content": [{"type": "text", "text": f"done {i}"}]})
    return maint


def test_overflow_and_length_promote_with_compaction_off():
    for failed in (OVERFLOW, LENGTH):
        maint = _maintenance()
        entries = len(maint.session.entries)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert maint.end_turn(failed) is None
        assert maint.model is BIG  # the retry goes to the larger window
        assert len(maint.session.entries) == entries  # the failed turn is dropped, nothing written
        assert maint.rounds == []  # no compaction method ran
        assert maint.notices == ["context promoted to big-model"]


def test_without_a_target_nothing_changes_with_compaction_off():
    maint = _maintenance(models=(SMALL,))
    entries = len(maint.session.entries)
    assert maint.end_turn(OVERFLOW) is None
    assert maint.model is SMALL and len(maint.session.entries) == entries + 1 and not maint.rounds


def test_an_error_of_another_model_does_not_promote():
    maint = _maintenance()
    maint.end_turn({**OVERFLOW, "model": "some-other-model"})
    assert maint.model is SMALL


def test_threshold_checks_do_not_promote_with_compaction_off():
    maint = _maintenance()
    assert maint.before_prompt([{"role": "user", "content": "x " * 200_000}]) is None
    assert maint.model is SMALL


def test_the_pipeline_promotes_on_overflow_with_compaction_off():
    p = CompactionPipeline(Session(), SMALL, settings=OFF, models=[SMALL, BIG])
    p.session.append_message({"role": "user", "content": "hello"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = p.after_turn(OVERFLOW)
    assert outcome is not None and outcome.strategy == "promotion" and outcome.will_retry
    assert outcome.promoted_to == "big-model" and p.model is BIG
    # No target and compaction off: the message is recorded, nothing runs (as before).
    q = CompactionPipeline(Session(), SMALL, settings=OFF, models=[SMALL])
    q.session.append_message({"role": "user", "content": "hello"})
    assert q.after_turn(OVERFLOW) is None and q.session.get_branch()[-1].message == OVERFLOW
