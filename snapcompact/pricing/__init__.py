"""Model -> shape, and the tables bills are made from: the model table, production's per-frame
estimate, the providers' image rules, request limits and prompt-cache rows, frame budgets and
text-token counts, with their TOML tables. Depends on core and text. What a provider bills
(an image, a request, a cached prefix) is :mod:`snapcompact.billing`, which applies these rules.

Modules: ``model_table`` (which shape each model line reads best, which API bills it, Claude
tiers), ``resolve`` (model id -> shape, priced for its API), ``billing`` (the pricing table and
production's per-frame estimate), ``pricing_rows`` (``pricing.toml`` as typed records),
``prompt_cache`` (the cache rows), ``budgets`` (frames and bytes one request may carry),
``text_tokens`` (text-token counts of the text-only baseline).

The names below are the public API; everything else is internal and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.pricing.billing import (
        ImageRule,
        PricingTable,
        RequestLimit,
        family_image_detail,
        frame_token_estimate,
        parse_pricing_table,
        pricing_table,
        pricing_table_sha256,
        request_limit,
    )
    from snapcompact.pricing.budgets import (
        DEFAULT_PROVIDER_IMAGE_BUDGET,
        FRAME_DATA_BYTES_BUDGET,
        FRAME_DATA_BYTES_ESTIMATE,
        MAX_FRAMES,
        MAX_FRAMES_DEFAULT,
        REFERENCE_PROVIDER_IMAGE_BUDGETS,
        frame_fits_provider,
        max_frames_for_data_budget,
        provider_frame_budget,
        provider_image_budget,
        provider_request_limit,
    )
    from snapcompact.pricing.model_table import (
        FAMILIES,
        ShapeTable,
        api_family,
        api_for,
        is_claude_high_res,
        matching_rule,
        model_shapes_sha256,
        parse_claude_id,
        parse_shape_rules,
        shape_rules,
    )
    from snapcompact.pricing.prompt_cache import (
        CACHE_MODES,
        PromptCacheRule,
        parse_prompt_cache_rules,
        prompt_cache_rule,
        prompt_cache_rules,
    )
    from snapcompact.pricing.resolve import (
        IdealShape,
        ResolvedShape,
        ideal_shape,
        resolve_shape,
        resolve_shape_for_scan,
        resolve_shape_for_text,
    )
    from snapcompact.pricing.text_tokens import count_text_tokens, exact_encoding, tiktoken_encoding

#: Public name -> the module that defines it (imported on first use, so importing one stage
#: does not load the others).
_WHERE: dict[str, str] = {
    "api_family": "model_table",
    "api_for": "model_table",
    "CACHE_MODES": "prompt_cache",
    "parse_prompt_cache_rules": "prompt_cache",
    "prompt_cache_rule": "prompt_cache",
    "prompt_cache_rules": "prompt_cache",
    "PromptCacheRule": "prompt_cache",
    "count_text_tokens": "text_tokens",
    "exact_encoding": "text_tokens",
    "tiktoken_encoding": "text_tokens",
    "DEFAULT_PROVIDER_IMAGE_BUDGET": "budgets",
    "FAMILIES": "model_table",
    "family_image_detail": "billing",
    "FRAME_DATA_BYTES_BUDGET": "budgets",
    "FRAME_DATA_BYTES_ESTIMATE": "budgets",
    "frame_fits_provider": "budgets",
    "frame_token_estimate": "billing",
    "IdealShape": "resolve",
    "ideal_shape": "resolve",
    "ImageRule": "billing",
    "is_claude_high_res": "model_table",
    "matching_rule": "model_table",
    "MAX_FRAMES": "budgets",
    "MAX_FRAMES_DEFAULT": "budgets",
    "max_frames_for_data_budget": "budgets",
    "model_shapes_sha256": "model_table",
    "parse_claude_id": "model_table",
    "parse_pricing_table": "billing",
    "parse_shape_rules": "model_table",
    "pricing_table": "billing",
    "pricing_table_sha256": "billing",
    "PricingTable": "billing",
    "provider_frame_budget": "budgets",
    "provider_image_budget": "budgets",
    "provider_request_limit": "budgets",
    "REFERENCE_PROVIDER_IMAGE_BUDGETS": "budgets",
    "request_limit": "billing",
    "RequestLimit": "billing",
    "resolve_shape": "resolve",
    "resolve_shape_for_scan": "resolve",
    "resolve_shape_for_text": "resolve",
    "ResolvedShape": "resolve",
    "shape_rules": "model_table",
    "ShapeTable": "model_table",
}

__all__ = [
    "CACHE_MODES",
    "PromptCacheRule",
    "parse_prompt_cache_rules",
    "prompt_cache_rule",
    "prompt_cache_rules",
    "DEFAULT_PROVIDER_IMAGE_BUDGET",
    "FAMILIES",
    "FRAME_DATA_BYTES_BUDGET",
    "FRAME_DATA_BYTES_ESTIMATE",
    "ImageRule",
    "MAX_FRAMES",
    "MAX_FRAMES_DEFAULT",
    "PricingTable",
    "REFERENCE_PROVIDER_IMAGE_BUDGETS",
    "RequestLimit",
    "IdealShape",
    "ResolvedShape",
    "ShapeTable",
    "api_family",
    "api_for",
    "count_text_tokens",
    "exact_encoding",
    "family_image_detail",
    "frame_fits_provider",
    "frame_token_estimate",
    "ideal_shape",
    "is_claude_high_res",
    "matching_rule",
    "max_frames_for_data_budget",
    "model_shapes_sha256",
    "parse_claude_id",
    "parse_pricing_table",
    "parse_shape_rules",
    "pricing_table",
    "pricing_table_sha256",
    "provider_frame_budget",
    "provider_image_budget",
    "provider_request_limit",
    "request_limit",
    "tiktoken_encoding",
    "resolve_shape",
    "resolve_shape_for_scan",
    "resolve_shape_for_text",
    "shape_rules",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
