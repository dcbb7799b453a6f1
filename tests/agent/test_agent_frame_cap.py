"""The frame cap coding agent 18.3.4 gives snapcompact, against the upstream arithmetic.

Expected values are worked by hand from ``session-maintenance.ts`` 3557-3612 and 3951-3985
(18.3.4) with the constants of snapcompact 18.2.11 (``FRAME_TOKEN_ESTIMATE = 5024``,
``MAX_FRAMES_DEFAULT = 80``, ``FRAME_DATA_BYTES_BUDGET = 3_000_000``,
``FRAME_DATA_BYTES_ESTIMATE = 170_000``, ``PROVIDER_IMAGE_BUDGETS.anthropic = 90``), never from
this code: e.g. 11on16-bw at 1568 px holds 142 x 98 = 13,916 cells, so its cap reserve is
ceil(2 * 13,916 * 1.15 / 4) + 2,000 = 10,002.
"""

from __future__ import annotations

import pytest

from snapcompact.agent import (
    cap_reserve_tokens,
    hard_frame_cap,
    rescue_max_frames,
    snapcompact_max_frames,
)
from snapcompact.compaction import (
    FRAME_TOKEN_ESTIMATE,
    CompactionSettings,
    effective_reserve_tokens,
)
from snapcompact.core import get_shape

#: Upstream's flat per-image charge (pi-agent-core tokenizer / snapcompact.ts FRAME_TOKEN_ESTIMATE).
UPSTREAM_FRAME_TOKENS = 5024


def test_frame_charge_is_the_upstream_flat_estimate():
    assert FRAME_TOKEN_ESTIMATE == UPSTREAM_FRAME_TOKENS


@pytest.mark.parametrize(("shape", "reserve"), [("11on16-bw", 10_002), ("8on22-bw", 10_002),
                                                 ("6x6u-bw", 41_170)])
def test_cap_reserve_prices_two_text_edges_and_the_summary_template(shape, reserve):
    assert cap_reserve_tokens(get_shape(shape)) == reserve


def test_hard_cap_is_the_data_budget_for_anthropic():
    # min(80 frames, floor(3,000,000 / 170,000) = 17, min(90, 80) = 80)
    assert hard_frame_cap("anthropic") == 17


# window, keepRecentTokens (= the kept tail R), reserveTokens setting, shape -> cap
CASES = [
    (32_000, 8_000, 4_096, "11on16-bw", 1),   # fb = 27,200 - 8,000 - 10,002 = 9,198 -> 1
    (32_000, 8_000, 4_096, "8on22-bw", 1),
    (32_000, 8_000, 4_096, "6x6u-bw", 1),     # fb < 5,024 but headroom left -> 1
    (32_000, 7_150, 4_096, "11on16-bw", 2),   # two frames need R <= 7,150
    (32_000, 7_151, 4_096, "11on16-bw", 1),
    (32_000, 20_000, 16_384, "11on16-bw", 0),  # base 20,000 >= total 15,616: skip
    (32_000, 20_000, 16_384, "6x6u-bw", 0),
    (200_000, 8_000, 4_096, "11on16-bw", 17),  # floor(151,998 / 5,024) = 30 -> data budget 17
    (200_000, 8_000, 4_096, "8on22-bw", 17),
    (200_000, 8_000, 4_096, "6x6u-bw", 17),    # floor(120,830 / 5,024) = 24 -> 17
    (200_000, 20_000, 16_384, "11on16-bw", 17),
    (200_000, 20_000, 16_384, "6x6u-bw", 17),
]


@pytest.mark.parametrize(("window", "tail", "reserve", "shape", "cap"), CASES)
def test_cap_from_the_window(window, tail, reserve, shape, cap):
    effective = effective_reserve_tokens(window, CompactionSettings(reserve_tokens=reserve))
    got = snapcompact_max_frames(context_window=window, reserve_tokens=effective,
                                 base_tokens=tail, shape=get_shape(shape), provider="anthropic")
    assert got.max_frames == cap


def test_non_message_tokens_shrink_the_cap():
    # 200k, R = 8,000: the window caps below 17 once N > 66,590 (170,000 - 8,000 - 10,002 -
    # 17 * 5,024 = 66,590 leaves exactly 17 frames).
    shape = get_shape("11on16-bw")
    at = snapcompact_max_frames(context_window=200_000, reserve_tokens=30_000,
                                base_tokens=8_000 + 66_590, shape=shape, provider="anthropic")
    past = snapcompact_max_frames(context_window=200_000, reserve_tokens=30_000,
                                  base_tokens=8_000 + 66_591, shape=shape, provider="anthropic")
    assert (at.max_frames, past.max_frames) == (17, 16)


@pytest.mark.parametrize(("kept_tail", "frames"), [(6_660, 1), (7_118, 0)])
def test_rescue_budget_targets_the_recovery_band(kept_tail, frames):
    # 32k / reserve 4,096: threshold 27,200, band floor(0.8 * 27,200) = 21,760;
    # 21,760 - 6,660 - 8,002 - 2,000 = 5,098 -> 1 frame; with 7,118: 4,640 -> 0 (no rebuild).
    assert rescue_max_frames(threshold_tokens=27_200, non_message_tokens=0,
                             kept_tail_tokens=kept_tail, shape=get_shape("11on16-bw"),
                             provider="anthropic", recovery_band=0.8) == frames
