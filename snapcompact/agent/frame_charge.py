"""What one archive frame counts in the agent's decisions: production's flat charge or its bill.

Why a module of its own: the coding agent charges every frame the tokenizer's flat 5,024
tokens (``FRAME_TOKEN_ESTIMATE``) when it sizes the frame cap, projects a result and checks the
window. The research knob ``snapcompact.frameCharge`` (``production`` | ``billed``) asks what the
agent would do if it counted frames at what the provider bills instead; this module turns the
knob into the per-frame number the maintenance uses. The bill is
:func:`snapcompact.billing.billed_frame_tokens` (the provider rules of ``pricing.toml``), never
a constant here.
"""

from __future__ import annotations

from snapcompact.billing import billed_frame_tokens
from snapcompact.compaction import FRAME_TOKEN_ESTIMATE, ModelInfo

__all__ = ["frame_tokens_for"]


def frame_tokens_for(charge: str, model: ModelInfo, frame_size: int,
                     detail: str | None = None) -> int:
    """The per-frame charge the cap and the guards use for a full ``frame_size`` square frame:
    5,024 (``production``) or the provider's bill (``billed``)."""
    if charge == "production":
        return FRAME_TOKEN_ESTIMATE
    if charge != "billed":
        raise ValueError(f"snapcompact.frameCharge must be production or billed, got {charge!r}")
    return billed_frame_tokens(model.id, frame_size, frame_size, detail or None, model.api,
                               model.provider)
