"""The providers' prompt caches in a run: which requests use one, how, and what it saves.

Why: every question of an arm is asked after the *same* compacted context, 17k-100k tokens that
a provider bills at a tenth of the input price once cached. This module decides, per model
config, how the send layer asks for the cache, as each provider documents it, through litellm:

* Anthropic, Bedrock and Vertex Claude (rule mode ``breakpoints``): one ``cache_control``
  breakpoint on the last block of the context (placed by the library,
  :func:`snapcompact.compaction.with_cache_breakpoint`; one of the four a request may carry);
* OpenAI (``automatic``): the context is already the prompt's stable prefix; a
  ``prompt_cache_key`` per context routes its questions to the same cache;
* Gemini (``implicit``): nothing to send; the questions of a context go out back to back.

For every mode the questions of one context are sent consecutively and the first one is
answered before the others leave (:mod:`evals.pipeline.run_loop`), so that the first writes the
prefix and the others read it. The prediction (first question writes, later ones read, nothing below
the rule's minimum length) comes from :func:`snapcompact.billing.cache_uses` with the rows of
``pricing.toml``. Routes not listed here (OpenRouter, z.ai, Moonshot) are sent and predicted
uncached. ``prompt_cache=false`` turns all of it off.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snapcompact.pricing import prompt_cache_rule

__all__ = ["MARKER", "CachePlan", "cache_plan", "prompt_cache_key"]

#: The breakpoint every marked request carries (Anthropic's default 5-minute lifetime).
MARKER: Mapping[str, str] = {"type": "ephemeral"}
#: litellm routes that translate a ``cache_control`` breakpoint (Bedrock: a ``cachePoint``).
_BREAKPOINT_ROUTES = frozenset({"anthropic", "bedrock", "vertex_ai"})
_AUTOMATIC_ROUTES = frozenset({"openai"})
_IMPLICIT_ROUTES = frozenset({"gemini", "vertex_ai"})


@dataclass(frozen=True)
class CachePlan:
    """How one model config's requests use the provider's prompt cache.

    ``rule`` prices the target's cache (None: nothing predicted cached); ``sent`` is whether
    the route really asks for it (False for the offline reader, whose dollars are a target's
    prediction only); ``mark`` adds the breakpoint; ``keyed`` adds a ``prompt_cache_key``.
    """

    rule: Any  # snapcompact.pricing.PromptCacheRule | None
    sent: bool
    mark: bool
    keyed: bool

    @property
    def on(self) -> bool:
        return self.rule is not None


OFF = CachePlan(rule=None, sent=False, mark=False, keyed=False)


def cache_plan(model: Any, litellm_id: str, enabled: bool) -> CachePlan:
    """The cache plan of a model config (``evals.spec.run_spec.ModelSpec``) sending to
    ``litellm_id``."""
    if not enabled:
        return OFF
    rule = prompt_cache_rule(model.target_model, api=model.api)
    if rule is None:
        return OFF
    if model.offline_reader:  # nothing reaches a provider: the target's bill is predicted
        return CachePlan(rule=rule, sent=False, mark=False, keyed=False)
    route = litellm_id.split("/", 1)[0] if "/" in litellm_id else model.provider or ""
    if rule.mode == "breakpoints" and route in _BREAKPOINT_ROUTES:
        return CachePlan(rule=rule, sent=True, mark=True, keyed=False)
    if rule.mode == "automatic" and route in _AUTOMATIC_ROUTES:
        return CachePlan(rule=rule, sent=True, mark=False, keyed=True)
    if rule.mode == "implicit" and route in _IMPLICIT_ROUTES:
        return CachePlan(rule=rule, sent=True, mark=False, keyed=False)
    return OFF  # the route cannot ask for this cache: predict it uncached


def prompt_cache_key(item_id: str, arm_label: str) -> str:
    """A stable, secret-free key per context (OpenAI's ``prompt_cache_key``, at most 64 chars)."""
    digest = hashlib.sha256(f"{item_id}\0{arm_label}".encode()).hexdigest()[:32]
    return f"snapcompact-{digest}"
