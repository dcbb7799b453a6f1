"""How the agent counts a context: its token estimator, the request's non-message part, a usage.

Why a room: every check point, frame cap and guard of the maintenance compares counts, and they
only mean what production's do when they are made the way the agent makes them. The session
maintenance (``src/session/session-maintenance.ts``, SM below) counts the stored context as the
non-message part (system prompt and tool definitions, ``computeNonMessageTokens``) plus the
messages (``#estimateStoredContextTokens``, SM:2440-2453), charges an archive frame a flat 5,024
tokens (the tokenizer's image estimate), and reads a provider's usage through pi-agent-core's
``calculateContextTokens``. The research knob ``snapcompact.frameCharge`` swaps the flat frame
charge for the billed one (:mod:`.frame_charge`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from snapcompact.agent.frame_charge import frame_tokens_for
from snapcompact.archive import archive_blocks
from snapcompact.billing import billed_frame_charge
from snapcompact.compaction import (
    FRAME_TOKEN_ESTIMATE,
    ModelInfo,
    Settings,
    TokenEstimator,
    asked_shape,
)
from snapcompact.pricing import FRAME_DATA_BYTES_BUDGET

__all__ = [
    "context_tokens_of_usage",
    "usage_number",
    "frame_charge_kwargs",
    "count_non_message_tokens",
    "production_estimator",
]


def production_estimator(*, frame_tokens: int = FRAME_TOKEN_ESTIMATE,
                         count_text: Callable[[Sequence[str]], int] | None = None,
                         max_frame_data_bytes: int = FRAME_DATA_BYTES_BUDGET,
                         frame_charge: Callable[[Mapping[str, Any]], int] | None = None
                         ) -> TokenEstimator:
    """The token counter the agent's maintenance uses: 5,024 per archive frame, the frames a
    rebuilt request would carry (3 MB of base64 at most), text by ``count_text`` (default the
    agent core's bytes/4 per fragment). ``frame_charge`` (research knob ``frameCharge``)
    counts each frame block itself instead of ``frame_tokens``."""
    kwargs: dict[str, Any] = {"frame_charge": frame_charge}
    if count_text is not None:
        kwargs["count_text"] = count_text
    return TokenEstimator(frame_tokens=frame_tokens,
                          archive_blocks=lambda m: archive_blocks(m, max_frame_data_bytes),
                          **kwargs)


def frame_charge_kwargs(model: ModelInfo, settings: Settings) -> dict[str, Any]:
    """The estimator's frame charge under ``snapcompact.frameCharge``: nothing for production;
    for ``billed``, a full frame's bill (the cap) and each frame's own bill (the guards)."""
    sc = settings.snapcompact
    if sc.frame_charge == "production":
        return {}
    size = asked_shape(model, sc).shape.frame_size
    return {"frame_tokens": frame_tokens_for(sc.frame_charge, model, size),
            "frame_charge": billed_frame_charge(model)}


def count_non_message_tokens(estimator: TokenEstimator, system_prompt: str | Sequence[str] | None,
                       tools: Sequence[Mapping[str, Any]] | None) -> int:
    """``computeNonMessageTokens``: the system prompt's parts and each tool definition (compact
    JSON), counted as text; 0 when the request has neither."""
    parts: list[str] = []
    if isinstance(system_prompt, str):
        parts.append(system_prompt)
    elif system_prompt:
        parts.extend(str(p) for p in system_prompt)
    if tools:
        parts.extend(json.dumps(t, separators=(",", ":"), ensure_ascii=False) for t in tools)
    return estimator.count_text(parts) if parts else 0


def usage_number(value: Any) -> int:
    """A usage field as a count: a number, else 0 (a malformed record never raises)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return int(value) if ok else 0


def context_tokens_of_usage(usage: Mapping[str, Any] | None) -> int:
    """pi-agent-core ``calculateContextTokens``: ``contextTokens`` when reported, else
    ``totalTokens`` (or input + output + cache reads + cache writes)."""
    if not isinstance(usage, Mapping):
        return 0

    def num(key: str) -> int:
        return usage_number(usage.get(key))

    if "contextTokens" in usage:
        return max(0, num("contextTokens"))
    raw = num("totalTokens") or (num("input") + num("output") + num("cacheRead")
                                 + num("cacheWrite"))
    return max(0, raw)
