"""The three tests a snapcompact result must pass before the coding agent commits it.

Why separate from the maintenance loop: each guard is one comparison with one upstream number,
and each must be testable at its boundary. Coding agent 18.3.4 (``session-maintenance.ts``
4686-4744) rejects, in this order, a result whose frames carry more than 3,000,000 bytes of
base64 ("too much standing image payload"), whose projected context is not smaller than the
context it replaces ("would not reduce context"), or whose projected context still exceeds
``window - effective reserve`` ("could not bring the context under the limit"). A rejection
hands the pass to the next method of ``compaction.methodOrder``.
"""

from __future__ import annotations

from snapcompact.pricing import FRAME_DATA_BYTES_BUDGET

__all__ = ["snapcompact_rejection"]


def snapcompact_rejection(*, payload_bytes: int, projected_tokens: int, reduction_baseline: int,
                          window_budget: int,
                          max_payload_bytes: int = FRAME_DATA_BYTES_BUDGET,
                          reduction_projected: int | None = None) -> str | None:
    """Why the agent would reject this result, or None when it commits it.

    ``payload_bytes``: base64 bytes of the archive's frames; ``projected_tokens``: non-message
    tokens + the summary message (5,024 per frame) + the kept tail; ``reduction_baseline``: the
    context before (the trigger less a pending prompt, or the prepared regions' own count);
    ``window_budget``: window minus the effective reserve; ``reduction_projected``: the
    projection the reduction guard compares, without opaque replay payloads (default
    ``projected_tokens``).
    """
    reducing = projected_tokens if reduction_projected is None else reduction_projected
    if payload_bytes > max_payload_bytes:
        return (f"too much standing image payload ({payload_bytes:,} B of base64 > "
                f"{max_payload_bytes:,})")
    if reducing >= reduction_baseline:
        return (f"projection would not reduce context ({reducing:,} >= "
                f"{reduction_baseline:,})")
    if projected_tokens > window_budget:
        return (f"could not bring the context under the limit ({projected_tokens:,} > "
                f"{window_budget:,})")
    return None
