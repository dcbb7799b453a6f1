"""How many frames the coding agent lets one snapcompact pass draw.

Why a module of its own: the frame cap is the single number that decides whether snapcompact
saves tokens or overflows the window, and production sizes it from the window rather than
from the provider's image limit. The coding agent 18.3.4 (``session-maintenance.ts``,
``#computeSnapcompactMaxFrames`` at 3557-3612 and ``#computeSnapcompactRescueMaxFrames`` at
3951-3985) charges every frame the tokenizer's flat image estimate, reserves room for the two
text edges (one frame *capacity* of characters each, priced at 4 characters per token with a
1.15 drift margin) plus a 2,000-token summary template, and divides what is left by the
per-frame charge. The result is then capped by the archive's 80-frame ceiling, the 3 MB
base64 data budget at 170 KB per frame (17 frames) and the provider's image budget.

The formulas are code here; the numbers they read (5,024 tokens per frame, 80 frames, 170 KB,
3 MB, the provider budgets) come from the tokenizer and ``pricing.toml`` where they live.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from snapcompact.compaction import FRAME_TOKEN_ESTIMATE
from snapcompact.core import Shape, geometry
from snapcompact.pricing import (
    MAX_FRAMES_DEFAULT,
    max_frames_for_data_budget,
    provider_frame_budget,
)

__all__ = [
    "SUMMARY_TEMPLATE_TOKENS",
    "TEXT_EDGE_DRIFT",
    "FrameCap",
    "cap_reserve_tokens",
    "frames_within_payload",
    "hard_frame_cap",
    "rescue_max_frames",
    "snapcompact_max_frames",
]

#: Tokens the archive's summary template (intro, file lists, grid notes) is assumed to bill.
SUMMARY_TEMPLATE_TOKENS = 2000
#: Margin on the 4-characters-per-token price of the text edges (denser content drifts).
TEXT_EDGE_DRIFT = 1.15


def cap_reserve_tokens(shape: Shape, edge_chars: int | None = None) -> int:
    """Tokens kept for the two text edges and the summary template when sizing the cap.

    ``ceil(2 * capacity * 1.15 / 4) + 2000``: 10,002 for a 1568 px 11on16-bw or 8on22-bw
    (capacity 13,916), 41,170 for 6x6u-bw (68,121). ``edge_chars`` (the research knob
    ``snapcompact.textEdgeTokens`` in characters) replaces the capacity; None = production.
    """
    edge = geometry(shape).capacity if edge_chars is None else edge_chars
    return math.ceil((2 * edge * TEXT_EDGE_DRIFT) / 4) + SUMMARY_TEMPLATE_TOKENS


def hard_frame_cap(provider: str | None, data_budget: bool = True) -> int:
    """The caps that hold whatever the window: 80 frames, the data budget (17), the provider's
    image budget (the reference's table: Anthropic 90, clamped to 80). ``data_budget=False``
    leaves out the 17 (research knob ``snapcompact.frameCapBytes = "actual"``: the frames
    drawn are measured against the byte budget instead, :func:`frames_within_payload`)."""
    caps = [MAX_FRAMES_DEFAULT, provider_frame_budget(provider, policy="reference")]
    if data_budget:
        caps.append(max_frames_for_data_budget())
    return min(caps)


def frames_within_payload(frames: int, payload_bytes: int, budget_bytes: int) -> int:
    """The next, smaller frame count to try when ``frames`` frames carried ``payload_bytes`` of
    base64 over ``budget_bytes``: the count their measured mean size fits, and at least one
    fewer than before (never below 1)."""
    if frames <= 1 or payload_bytes <= budget_bytes:
        return frames
    per_frame = payload_bytes / frames
    return max(1, min(frames - 1, math.floor(budget_bytes / per_frame)))


@dataclass(frozen=True)
class FrameCap:
    """The cap one pass was given and the figures it came from (recorded per round)."""

    max_frames: int  # 0 = snapcompact skipped: the kept history alone fills the budget
    total_budget: int  # window - effective reserve
    base_tokens: int  # non-message tokens + the kept tail
    cap_reserve: int  # text edges + summary template
    frame_budget: int  # total_budget - base_tokens - cap_reserve
    frame_tokens: int  # the per-frame charge


def snapcompact_max_frames(*, context_window: int, reserve_tokens: int, base_tokens: int,
                           shape: Shape, provider: str | None,
                           frame_tokens: int = FRAME_TOKEN_ESTIMATE,
                           edge_chars: int | None = None, data_budget: bool = True) -> FrameCap:
    """The frame cap for a threshold/overflow pass (session-maintenance.ts:3557-3612).

    ``reserve_tokens`` is the effective reserve (max of 15 % of the window and
    ``reserveTokens``); ``base_tokens`` the non-message tokens plus the kept tail as the
    tokenizer counts them. No headroom at all gives 0 (skip snapcompact, try the next method);
    less than one frame's charge left after the cap reserve gives 1 (the planner may still fit
    the history into the text edges alone). ``frame_tokens``, ``edge_chars`` and
    ``data_budget`` carry the research knobs (defaults: production).
    """
    if context_window <= 0:
        cap = hard_frame_cap(provider, data_budget)
        return FrameCap(cap, 0, base_tokens, 0, 0, frame_tokens)
    total = context_window - reserve_tokens
    reserve = cap_reserve_tokens(shape, edge_chars)
    frame_budget = total - base_tokens - reserve
    if base_tokens >= total:
        return FrameCap(0, total, base_tokens, reserve, frame_budget, frame_tokens)
    if frame_budget < frame_tokens:
        return FrameCap(1, total, base_tokens, reserve, frame_budget, frame_tokens)
    cap = min(frame_budget // frame_tokens, hard_frame_cap(provider, data_budget))
    return FrameCap(cap, total, base_tokens, reserve, frame_budget, frame_tokens)


def rescue_max_frames(*, threshold_tokens: int, non_message_tokens: int, kept_tail_tokens: int,
                      shape: Shape, provider: str | None, recovery_band: float,
                      frame_tokens: int = FRAME_TOKEN_ESTIMATE,
                      edge_chars: int | None = None, data_budget: bool = True) -> int:
    """Frames a dead-end rescue may rebuild the archive into (session-maintenance.ts:3951-3985).

    The target is the recovery band (``floor(band * threshold)``), not the window: the rebuilt
    context must land back under the maintenance trigger. 0 when not even one frame fits.
    """
    band_tokens = math.floor(threshold_tokens * recovery_band)
    frame_budget = (band_tokens - non_message_tokens - kept_tail_tokens
                    - cap_reserve_tokens(shape, edge_chars))
    if frame_budget < frame_tokens:
        return 0
    return min(frame_budget // frame_tokens, hard_frame_cap(provider, data_budget))
