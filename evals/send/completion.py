"""litellm, imported once and quietly, and what its answers say: the answer text, the tokens
and dollars the provider reported, the prompt-cache tokens, the provider a model id bills to.

Why a module: the client (:mod:`evals.send.client`), the retry rule (:mod:`evals.send.retry`)
and the harness's callers all need litellm without paying its ~5 s import before first use,
and every reading of a litellm response must agree on where each figure comes from.
``import litellm`` happens here, after ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set (no
network fetch of the price map).
"""

from __future__ import annotations

import os
from typing import Any


def import_litellm() -> Any:
    """Import litellm offline-safe: local price map, no debug banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


_PROVIDER_CACHE: dict[str, str] = {}


def provider_of(model: str) -> str:
    """The provider a model id is billed and rate-limited by (``anthropic/x`` -> ``anthropic``).

    Bare ids (``gpt-4o``) are resolved through litellm's own table, falling back to the id.
    """
    if "/" in model:
        return model.split("/", 1)[0]
    provider = _PROVIDER_CACHE.get(model)
    if provider is None:
        try:
            provider = import_litellm().get_llm_provider(model)[1]
        except Exception:
            provider = model
        _PROVIDER_CACHE[model] = provider
    return provider


def _count_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def cache_tokens(usage: Any) -> tuple[int | None, int | None]:
    """(read, written) prompt-cache tokens of a litellm usage, as the provider reported them.

    Reads: ``cache_read_input_tokens`` (Anthropic, Bedrock) or ``prompt_tokens_details.
    cached_tokens`` (OpenAI; Gemini's ``cachedContentTokenCount`` as litellm maps it). Writes:
    ``cache_creation_input_tokens`` (Anthropic, Bedrock; OpenAI and Gemini bill none). None when
    the usage carries no such field.
    """
    if usage is None:
        return None, None
    read = _count_of(getattr(usage, "cache_read_input_tokens", None))
    if not read:
        details = getattr(usage, "prompt_tokens_details", None)
        cached = _count_of(getattr(details, "cached_tokens", None)) if details is not None \
            else None
        read = cached if cached is not None else read
    write = _count_of(getattr(usage, "cache_creation_input_tokens", None))
    return read, write


def reasoning_tokens(usage: Any) -> int | None:
    """Reasoning (thinking) tokens of a litellm usage: ``completion_tokens_details.
    reasoning_tokens``, where litellm puts OpenAI's and Gemini's (``thoughtsTokenCount``) count.
    They are part of ``completion_tokens`` (billed as output), reported apart so an arm's
    output bill can say how much of it was reasoning. None when the usage has no such field."""
    details = getattr(usage, "completion_tokens_details", None) if usage is not None else None
    if isinstance(details, dict):
        return _count_of(details.get("reasoning_tokens"))
    return _count_of(getattr(details, "reasoning_tokens", None)) if details is not None else None


def read_completion(raw: Any, model: str) -> tuple[str, int | None, int | None, float | None]:
    """Answer text, provider-reported prompt/completion tokens and cost of a litellm response."""
    try:
        answer = raw.choices[0].message.content or ""
    except (AttributeError, IndexError, TypeError):
        answer = ""
    usage = getattr(raw, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", None)
    completion_tokens = getattr(usage, "completion_tokens", None)
    cost: float | None = None
    reported = getattr(usage, "cost", None)  # OpenRouter reports its own charge
    hidden = getattr(raw, "_hidden_params", None) or {}
    if isinstance(reported, (int, float)) and not isinstance(reported, bool):
        cost = float(reported)
    elif isinstance(hidden.get("response_cost"), (int, float)):
        cost = float(hidden["response_cost"])
    else:
        try:
            # Custom providers answer with a bare model name; price them by the requested id.
            cost = float(import_litellm().completion_cost(completion_response=raw, model=model))
        except Exception:
            cost = None  # the model has no price in litellm's table
    return str(answer), prompt_tokens, completion_tokens, cost
