"""The pipeline and the agent's maintenance read one compaction threshold (issue 38 item 2).

Expected values are the agent core's rule (pi-agent-core ``compaction.ts``: window minus
max(15 % of the window, ``reserveTokens`` = 16,384), or ``thresholdPercent`` of the window),
worked out by hand here, not read from the code. After context promotion both follow the new
model's window: a threshold cached on either side would keep the old one.
"""

from __future__ import annotations

import warnings

import pytest

from snapcompact.agent import SessionMaintenance
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    ModelInfo,
    Session,
    compaction_threshold,
    merge_settings,
)

SMALL = ModelInfo("small-model", 40_000, provider="anthropic", api="anthropic-messages",
                  promotion_target="big-model")
BIG = ModelInfo("big-model", 200_000, provider="anthropic", api="anthropic-messages")


@pytest.mark.parametrize(("model", "overrides", "expected"), [
    (BIG, {}, 170_000),  # 200,000 - 15 % (30,000 > 16,384)
    (SMALL, {}, 23_616),  # 40,000 - 16,384 (the reserve beats 15 % = 6,000)
    (BIG, {"thresholdPercent": 70}, 140_000),
    (SMALL, {"thresholdTokens": 12_345}, 12_345),
])
def test_pipeline_and_maintenance_share_the_threshold(model, overrides, expected):
    settings = merge_settings(DEFAULT_SETTINGS, {"compaction": overrides})
    maint = SessionMaintenance(Session(), model, settings=settings)
    assert compaction_threshold(model, settings.compaction) == expected
    assert maint.view.threshold() == expected
    assert maint.pipeline.threshold() == expected


def test_promotion_moves_both_thresholds_to_the_new_window():
    settings = merge_settings(DEFAULT_SETTINGS, {"compaction": {"contextPromotion": True}})
    maint = SessionMaintenance(Session(), SMALL, settings=settings, models=(SMALL, BIG))
    assert maint.view.threshold() == 23_616
    overflow = {"role": "assistant", "content": [], "stopReason": "error",
                "model": "small-model", "timestamp": 0,
                "errorMessage": "prompt is too long: 45000 tokens > 40000 maximum"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        maint.end_turn(overflow)
    assert maint.model is BIG
    assert maint.view.threshold() == maint.pipeline.threshold() == 170_000
