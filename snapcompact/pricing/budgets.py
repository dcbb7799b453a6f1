"""How many frames, and how many bytes of them, one request may carry.

Why policies side by side: the seed (the documented design) clamps the archive to 8 frames per
request, because OpenRouter hard-capped requests at 8 images and silently dropped the rest; the
reference 18.2.11 later raised its caps (80 frames, OpenRouter 90 images) and an unreleased
commit added a wire-API fallback. Production follows the seed; the reference numbers are kept
as data so the harness can compare. Byte budgets follow the reference constants (a rebuilt
request carries at most 3,000,000 base64 bytes of frames, about 170,000 per frame); per-provider
byte and image limits are data rows with sources in ``pricing.toml``.
"""

from __future__ import annotations

from typing import Literal, Mapping

from snapcompact.pricing.billing import RequestLimit, request_limit

Policy = Literal["seed", "reference", "reference-unreleased"]
POLICIES: tuple[str, ...] = ("seed", "reference", "reference-unreleased")

#: Seed: the per-provider image cap is clamped to this many frames.
MAX_FRAMES = 8
#: Reference 18.2.11 upper bound on archive frames.
MAX_FRAMES_DEFAULT = 80
#: Unknown providers (Groq, about 5 images, was the strictest measured).
DEFAULT_PROVIDER_IMAGE_BUDGET = 5
#: Conservative base64 size of one frame (measured high-res frames are about 159 KB).
FRAME_DATA_BYTES_ESTIMATE = 170_000
#: Maximum total frame base64 carried per rebuilt request.
FRAME_DATA_BYTES_BUDGET = 3_000_000

#: Reference 18.2.11 ``PROVIDER_IMAGE_BUDGETS`` (images per request, all images counted).
REFERENCE_PROVIDER_IMAGE_BUDGETS: Mapping[str, int] = {
    "anthropic": 90, "amazon-bedrock": 90, "openai": 200, "openai-codex": 200, "google": 200,
    "google-vertex": 200, "google-gemini-cli": 200, "openrouter": 90, "umans": 10,
}
#: Seed policy: the same caps, but OpenRouter at its measured hard limit of 8 images.
SEED_PROVIDER_IMAGE_BUDGETS: Mapping[str, int] = {**REFERENCE_PROVIDER_IMAGE_BUDGETS, "openrouter": 8}
#: Unreleased reference commit 2da08f26 ``API_IMAGE_BUDGETS`` (used when the provider is unknown).
#: openai-completions is absent on purpose: generic routers keep the floor of 5.
REFERENCE_API_IMAGE_BUDGETS: Mapping[str, int] = {
    "anthropic-messages": 90, "bedrock-converse-stream": 90, "openai-responses": 200,
    "openai-codex-responses": 200, "azure-openai-responses": 200, "google-generative-ai": 200,
    "google-gemini-cli": 200, "google-vertex": 200, "openrouter": 90,
}


def _check(provider: object, api: object, policy: str) -> None:
    if provider is not None and not isinstance(provider, str):
        raise ValueError(f"provider must be a string, got {provider!r}")
    if api is not None and not isinstance(api, str):
        raise ValueError(f"api must be a string, got {api!r}")
    if policy not in POLICIES:
        raise ValueError(f"unknown budget policy {policy!r} (known: {', '.join(POLICIES)})")


def provider_image_budget(provider: str | None, api: str | None = None, policy: Policy = "seed") -> int:
    """Images one request to ``provider`` may carry (archive, system prompt and tool results).

    ``seed`` and ``reference``: the provider table, else 5. ``reference-unreleased``: the provider
    table, else the wire-API table, else 5. ``api`` is consulted only by that last policy.
    """
    _check(provider, api, policy)
    table = SEED_PROVIDER_IMAGE_BUDGETS if policy == "seed" else REFERENCE_PROVIDER_IMAGE_BUDGETS
    if provider and provider in table:
        return table[provider]
    if policy == "reference-unreleased" and api in REFERENCE_API_IMAGE_BUDGETS:
        return REFERENCE_API_IMAGE_BUDGETS[api]
    return DEFAULT_PROVIDER_IMAGE_BUDGET


def provider_frame_budget(provider: str | None, api: str | None = None, policy: Policy = "seed") -> int:
    """Archive frames per request: the image budget clamped to 8 (seed) or 80 (reference)."""
    cap = MAX_FRAMES if policy == "seed" else MAX_FRAMES_DEFAULT
    return min(provider_image_budget(provider, api, policy), cap)


def max_frames_for_data_budget(budget: int = FRAME_DATA_BYTES_BUDGET,
                               per_frame: int = FRAME_DATA_BYTES_ESTIMATE) -> int:
    """Frame count implied by a base64 byte budget (at least 1): 17 for the defaults."""
    for name, value in (("budget", budget), ("per_frame", per_frame)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive number of bytes, got {value!r}")
    return max(1, budget // per_frame)


def provider_request_limit(provider: str) -> RequestLimit | None:
    """Documented per-image / per-request byte and image-count limits (None if unrecorded)."""
    _check(provider, None, "seed")
    return request_limit(provider)


def frame_fits_provider(frame_bytes: int, provider: str) -> bool:
    """True when one frame of ``frame_bytes`` base64 bytes is within the provider's image limit."""
    if not isinstance(frame_bytes, int) or isinstance(frame_bytes, bool) or frame_bytes < 0:
        raise ValueError(f"frame size in bytes must be a non-negative integer, got {frame_bytes!r}")
    limit = provider_request_limit(provider)
    if limit is None or limit.max_image_bytes is None:
        return True
    return frame_bytes <= limit.max_image_bytes
