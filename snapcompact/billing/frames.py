"""What a provider bills for one archive frame, for the agent's research knob ``frameCharge``.

Why a module of its own: the coding agent charges every frame the tokenizer's flat 5,024 tokens
when it sizes the frame cap, projects a result and checks the window, while a provider bills
far less for the same frame (claude-sonnet-4-5 sees a 1568 px frame at 1092 px and bills 1,521;
a thin last strip bills a few hundred). ``snapcompact.frameCharge = billed`` asks what the agent
would do if it counted frames at their bill; :mod:`snapcompact.agent.frame_charge` turns the
knob into numbers and takes the bill from here. The bill itself is :func:`.image.bill_image`
(the provider rules of ``pricing.toml``), never a constant here.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from snapcompact.billing.image import bill_image
from snapcompact.billing.request_parts import png_size
from snapcompact.compaction import ModelInfo

__all__ = ["billed_frame_charge", "billed_frame_tokens"]

#: Base64 characters that hold a PNG's signature and IHDR size fields (24 bytes).
_HEADER_B64 = 32


@lru_cache(maxsize=256)
def billed_frame_tokens(model_id: str, width: int, height: int, detail: str | None = None,
                        api: str | None = None, provider: str | None = None) -> int:
    """Tokens ``model_id`` is billed for one ``width`` x ``height`` frame (at the size its
    encoder sees it)."""
    return bill_image(model_id, width, height, detail, api=api, provider=provider).tokens


def billed_frame_charge(model: ModelInfo) -> Callable[[Mapping[str, Any]], int]:
    """A :class:`~snapcompact.compaction.TokenEstimator` ``frame_charge``: each archive image
    block billed at its own PNG size (read from the header, never decoded)."""

    def charge(block: Mapping[str, Any]) -> int:
        data = str(block.get("data", ""))
        width, height = png_size(base64.b64decode(data[:_HEADER_B64]))
        detail = block.get("detail")
        return billed_frame_tokens(model.id, width, height,
                                   detail if isinstance(detail, str) and detail else None,
                                   model.api, model.provider)

    return charge
