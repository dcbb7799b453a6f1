"""How many frames, and how many bytes of them, one request may carry.

Why policies side by side: the seed (the documented design) clamps the archive to 8 frames per
request, because OpenRouter hard-capped requests at 8 images and silently dropped the rest; the
reference 18.2.11 later raised its caps (80 frames, OpenRouter 90 images) and an unreleased
commit added a wire-API fallback. Production follows the seed; the reference numbers are kept
as data so the harness can compare. Byte budgets follow the reference constants (a rebuilt
request carries at most 3,000,000 base64 bytes of frames, about 170,000 per frame); per-provider
byte and image limits, and the image budgets of each policy, are data rows with sources in
``pricing.toml`` (``[[request_limits]]``, ``[image_budgets.*]``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Mapping

from snapcompact.pricing.billing import RequestLimit, pricing_toml_text, request_limit

Policy = Literal["seed", "reference", "reference-unreleased"]
POLICIES: tuple[str, ...] = ("seed", "reference", "reference-unreleased")

#: Conservative base64 size of one frame (measured high-res frames are about 159 KB).
FRAME_DATA_BYTES_ESTIMATE = 170_000
#: Maximum total frame base64 carried per rebuilt request.
FRAME_DATA_BYTES_BUDGET = 3_000_000


@dataclass(frozen=True)
class ImageBudgetPolicy:
    """One ``[image_budgets.<policy>]`` table of ``pricing.toml``, ``based_on`` already applied."""

    policy: str
    max_frames: int
    default_images: int
    providers: Mapping[str, int]
    apis: Mapping[str, int]
    source: str
    checked: str


def _count(value: object, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"pricing table: {where} must be a positive integer, got {value!r}")
    return value


def parse_image_budgets(data: Mapping[str, Any]) -> dict[str, ImageBudgetPolicy]:
    """The ``[image_budgets]`` tables of a parsed ``pricing.toml``; a ValueError names a bad row."""
    raw = data.get("image_budgets")
    if not isinstance(raw, Mapping) or set(raw) != set(POLICIES):
        found = sorted(raw) if isinstance(raw, Mapping) else raw
        raise ValueError(f"pricing table: [image_budgets] must hold exactly {list(POLICIES)}, got "
                         f"{found}")
    known = {"source", "checked", "based_on", "max_frames", "default_images", "providers", "apis"}
    out: dict[str, ImageBudgetPolicy] = {}

    def build(policy: str, seen: tuple[str, ...] = ()) -> ImageBudgetPolicy:
        if policy in out:
            return out[policy]
        if policy in seen or policy not in raw:
            raise ValueError(f"pricing table: image_budgets.{seen[-1]} based_on {policy!r} is "
                             "unknown or circular")
        row = raw[policy]
        unknown = set(row) - known
        if unknown:
            raise ValueError(f"pricing table: image_budgets.{policy} has unknown keys "
                             f"{sorted(unknown)}")
        base = build(row["based_on"], seen + (policy,)) if "based_on" in row else None
        where = f"image_budgets.{policy}"
        providers = {**(base.providers if base else {}),
                     **{k: _count(v, f"{where}.providers.{k}") for k,
                        v in row.get("providers", {}).items()}}
        apis = {**(base.apis if base else {}),
                **{k: _count(v, f"{where}.apis.{k}") for k, v in row.get("apis", {}).items()}}
        max_frames = row.get("max_frames", base.max_frames if base else None)
        default_images = row.get("default_images", base.default_images if base else None)
        if not row.get("source"):
            raise ValueError(f"pricing table: {where} has no source")
        out[policy] = ImageBudgetPolicy(
            policy=policy, max_frames=_count(max_frames, f"{where}.max_frames"),
            default_images=_count(default_images, f"{where}.default_images"),
            providers=providers, apis=apis, source=str(row["source"]),
            checked=str(row.get("checked", "")))
        return out[policy]

    for policy in POLICIES:
        build(policy)
    return out


@lru_cache(maxsize=1)
def image_budgets() -> dict[str, ImageBudgetPolicy]:
    """The image budget policies of the packaged ``pricing.toml``."""
    return parse_image_budgets(tomllib.loads(pricing_toml_text()))


#: Seed: the per-provider image cap is clamped to this many frames.
MAX_FRAMES = image_budgets()["seed"].max_frames
#: Reference 18.2.11 upper bound on archive frames.
MAX_FRAMES_DEFAULT = image_budgets()["reference"].max_frames
#: Unknown providers (Groq, about 5 images, was the strictest measured).
DEFAULT_PROVIDER_IMAGE_BUDGET = image_budgets()["reference"].default_images
#: Reference 18.2.11 ``PROVIDER_IMAGE_BUDGETS`` (images per request, all images counted).
REFERENCE_PROVIDER_IMAGE_BUDGETS: Mapping[str, int] = image_budgets()["reference"].providers
#: Seed policy: the same caps, but OpenRouter at its measured hard limit of 8 images.
SEED_PROVIDER_IMAGE_BUDGETS: Mapping[str, int] = image_budgets()["seed"].providers
#: Unreleased reference commit 2da08f26 ``API_IMAGE_BUDGETS`` (used when the provider is unknown).
REFERENCE_API_IMAGE_BUDGETS: Mapping[str, int] = image_budgets()["reference-unreleased"].apis


def _check(provider: object, api: object, policy: str) -> None:
    if provider is not None and not isinstance(provider, str):
        raise ValueError(f"provider must be a string, got {provider!r}")
    if api is not None and not isinstance(api, str):
        raise ValueError(f"api must be a string, got {api!r}")
    if policy not in POLICIES:
        raise ValueError(f"unknown budget policy {policy!r} (known: {', '.join(POLICIES)})")


def provider_image_budget(provider: str | None, api: str | None = None,
                          policy: Policy = "seed") -> int:
    """Images one request to ``provider`` may carry (archive, system prompt and tool results).

    ``seed`` and ``reference``: the provider table, else 5. ``reference-unreleased``: the provider
    table, else the wire-API table, else 5. ``api`` is consulted only by that last policy.
    """
    _check(provider, api, policy)
    budget = image_budgets()[policy]
    if provider and provider in budget.providers:
        return budget.providers[provider]
    if api is not None and api in budget.apis:
        return budget.apis[api]
    return budget.default_images


def provider_frame_budget(provider: str | None, api: str | None = None,
                          policy: Policy = "seed") -> int:
    """Archive frames per request: the image budget clamped to 8 (seed) or 80 (reference)."""
    return min(provider_image_budget(provider, api, policy), image_budgets()[policy].max_frames)


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
