"""Dollars for tokens, offline, from litellm's bundled cost map.

Why here and not in the library: prices change weekly and are read from litellm's cost map,
and the library must never import litellm; so the one bill step left in the harness is this
multiplication, tokens x price per token. ``LITELLM_LOCAL_MODEL_COST_MAP`` is set before
litellm is imported so the bundled map is used and nothing is fetched.

Tokens themselves come from the library's billing room (``snapcompact.billing``: ``bill_image``
for frames, ``bill_request`` for a request, ``CacheUse.input_units`` for a cached prompt,
``next_turns_units`` for the turns after a compaction, ``bill_calls`` for compaction calls),
never from ``litellm.token_counter``, which gets images wrong for most providers.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

#: Prefixes tried, in order, when a bare model id is not a key of the cost map.
_PREFIXES: tuple[str, ...] = ("", "anthropic/", "openai/", "gemini/", "moonshot/", "zai/",
                              "vertex_ai/", "openrouter/")


@dataclass(frozen=True)
class TokenPrice:
    """Per-token prices of one model and where they were read."""

    model: str
    key: str
    input_per_token: float
    output_per_token: float
    source: str

    def dollars(self, input_tokens: int, output_tokens: int = 0) -> float:
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        return input_tokens * self.input_per_token + output_tokens * self.output_per_token

    def dollars_cached(self, use: Any, rule: Any, output_tokens: int = 0) -> float:
        """Dollars of a prompt split by the provider's prompt cache (``use``: a
        :class:`snapcompact.billing.CacheUse`; ``rule``: the
        :class:`~snapcompact.pricing.PromptCacheRule` whose multipliers of the base input
        price bill the written and read tokens)."""
        return (use.input_units(rule) * self.input_per_token
                + self.dollars(0, output_tokens))


@lru_cache(maxsize=1)
def _cost_map() -> tuple[Mapping[str, Any], str]:
    import litellm  # imported lazily: slow, and only the harness needs it

    version = getattr(litellm, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("litellm")
    return litellm.model_cost, f"litellm {version} bundled model_cost (offline)"


def _rows(model: str):
    """(key, row) of the cost map for ``model``, bare id first, then each provider prefix."""
    if not isinstance(model, str) or not model:
        raise ValueError(f"model must be a non-empty string, got {model!r}")
    cost_map, _ = _cost_map()
    for prefix in _PREFIXES:
        key = model if model.startswith(prefix) else prefix + model
        row = cost_map.get(key)
        if row:
            yield key, row


def price_of(model: str) -> TokenPrice:
    """Prices of ``model`` from litellm's bundled cost map; ``ValueError`` if it has none."""
    for key, row in _rows(model):
        if row.get("input_cost_per_token") is not None:
            return TokenPrice(model=model, key=key,
                              input_per_token=float(row["input_cost_per_token"]),
                              output_per_token=float(row.get("output_cost_per_token") or 0.0),
                              source=_cost_map()[1])
    raise ValueError(f"no price for model {model!r} in litellm's bundled cost map")


class UnpricedModel(ValueError):
    """A model id with no price row: its dollars would be unknown, never $0."""

    def __init__(self, role: str, model: str, near: list[str]) -> None:
        self.role, self.model, self.near = role, model, list(near)
        hint = (f"closest priced ids: {', '.join(self.near)}" if self.near
                else "no priced id is close")
        #: what is wrong, without the advice (a warning repeats it when the run goes on)
        self.problem = f"{role}={model!r} has no price in litellm's bundled cost map ({hint})"
        super().__init__(f"{self.problem}; fix the id, or set allow_unpriced=true to run with "
                         "its cost unknown")


def closest_priced(model: str, n: int = 3) -> list[str]:
    """Up to ``n`` priced ids of the bundled cost map nearest to ``model`` in spelling.

    Provider prefixes are compared without their prefix (``anthropic/claude-x`` as ``claude-x``),
    so a bare id finds its family whichever way the map spells it.
    """
    cost_map, _ = _cost_map()
    bare: dict[str, str] = {}
    for key, row in cost_map.items():
        if not isinstance(row, dict) or row.get("input_cost_per_token") is None:
            continue
        name = key
        for prefix in _PREFIXES[1:]:
            if key.startswith(prefix):
                name = key[len(prefix):]
                break
        bare.setdefault(name, name)
    return difflib.get_close_matches(model, list(bare), n=n, cutoff=0.6)


def require_price(model: str, role: str = "model.price_model") -> TokenPrice:
    """The price of ``model``, or :class:`UnpricedModel` naming it and the closest priced ids.

    ``role`` names the config key the id came from, so the one-line refusal says what to fix.
    """
    try:
        return price_of(model)
    except ValueError:
        raise UnpricedModel(role, model, closest_priced(model)) from None


#: The key of litellm's cost-map row that holds the model's own input window (data, not our word).
_WINDOW_KEY = "max_input_tokens"


def model_window(model: str) -> int | None:
    """The model's own input window (tokens) from litellm's bundled cost map (None when unknown).

    Not the run's ``context_window`` (the working window maintenance compacts at): this one
    only decides whether the ``full`` arm fits the model at all.
    """
    for _, row in _rows(model):
        if isinstance(row.get(_WINDOW_KEY), int):
            return row[_WINDOW_KEY]
    return None


def input_dollars(model: str, tokens: int) -> float:
    """Dollars for ``tokens`` input tokens of ``model``."""
    return price_of(model).dollars(tokens)
