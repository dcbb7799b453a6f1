"""What a provider bills when consecutive requests share a prefix: each request's cache use.

Why: after a compaction every later turn (and, in the harness, every question) starts with the
same compacted context, which a provider bills at a fraction of the input price once cached.
"Billed tokens" that ignore the cache overstate what a strategy costs, and differently per
strategy. The provider's rule (mode, minimum, step, multipliers) is a ``[[prompt_cache]]`` row
of ``pricing.toml``, read by :func:`snapcompact.pricing.prompt_cache_rule`; this module splits a
run of requests into uncached, written and read tokens by that rule and weighs them in
multiples of the base input price, never in dollars (prices belong to the caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from snapcompact.pricing import PromptCacheRule

__all__ = ["CacheUse", "cache_uses", "follow_on_use"]


@dataclass(frozen=True)
class CacheUse:
    """One request's prompt split by how it is billed (the three add up to its prompt)."""

    uncached: int  # billed at the base input price
    written: int  # written to the cache (``cache_creation_input_tokens``)
    read: int  # read from the cache (``cache_read_input_tokens`` / ``cached_tokens``)

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt."""
        return self.uncached + self.written + self.read

    def input_units(self, rule: PromptCacheRule | None) -> float:
        """The prompt's bill in base-input-token equivalents (tokens x multiplier)."""
        if rule is None:
            return float(self.prompt_tokens)
        return (self.uncached + self.written * rule.write_multiplier
                + self.read * rule.read_multiplier)


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def cache_uses(rule: PromptCacheRule | None, prefix_tokens: int,
               prompt_tokens: Sequence[int]) -> list[CacheUse]:
    """How each of a run of requests that share ``prefix_tokens`` leading tokens is billed.

    The requests are sent in order, within the cache lifetime: the first one finds the cache
    cold (writes the prefix when the mode bills writes), every later one reads it. Without a
    rule, or below the rule's minimum, nothing is cached.
    """
    prefix_tokens = _count(prefix_tokens, "prefix_tokens")
    out: list[CacheUse] = []
    cached = rule.cached_tokens(prefix_tokens) if rule is not None else 0
    for i, total in enumerate(prompt_tokens):
        total = _count(total, "prompt_tokens")
        if total < prefix_tokens:
            raise ValueError(f"request {i}: {total:,} prompt tokens, fewer than the "
                             f"{prefix_tokens:,}-token shared prefix")
        if rule is None or not cached:
            out.append(CacheUse(uncached=total, written=0, read=0))
        elif i == 0:
            written = cached if rule.writes_billed else 0
            out.append(CacheUse(uncached=total - written, written=written, read=0))
        else:
            out.append(CacheUse(uncached=total - cached, written=0, read=cached))
    return out



def follow_on_use(rule: PromptCacheRule | None, prefix_tokens: int,
                  prompt_tokens: int) -> CacheUse:
    """How one request is billed when the request before it, within the cache lifetime, ended
    at ``prefix_tokens`` of this one's prompt: an agent places its last cache breakpoint at the
    end of every request, so the next request (a turn, or a handoff asked of the live
    conversation) reads that prefix and writes the rest (plain input where writes are not
    billed apart, or the prompt is below the rule's minimum)."""
    prefix_tokens = _count(prefix_tokens, "prefix_tokens")
    prompt_tokens = _count(prompt_tokens, "prompt_tokens")
    if prompt_tokens < prefix_tokens:
        raise ValueError(f"{prompt_tokens:,} prompt tokens, fewer than the "
                         f"{prefix_tokens:,}-token prefix of the request before")
    if rule is None:
        return CacheUse(uncached=prompt_tokens, written=0, read=0)
    read = rule.cached_tokens(prefix_tokens)
    rest = prompt_tokens - read
    if rule.writes_billed and rule.cached_tokens(prompt_tokens) > 0:
        return CacheUse(uncached=0, written=rest, read=read)
    return CacheUse(uncached=rest, written=0, read=read)
