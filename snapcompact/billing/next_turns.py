"""Production's bill over a conversation: the next K turns after a compaction, prompt cache on.

Why: a harness question pays its context once; production pays it again on every later turn,
and from the provider's prompt cache at a tenth of the price (``pricing.toml``
``[[prompt_cache]]``) as long as the prefix does not change. A compaction rewrites the prefix
from its first changed block on; how much of the head survives is :mod:`.stable_prefix`.
"Billed tokens" per question cannot say what that is worth; :func:`next_turns_units` can:

the input bill of the next ``k`` turns, each adding ``turn_tokens`` (a user turn and its answer),
in base-input-token equivalents, with the cache breakpoint moving to the end of each turn as an
agent places it. Turn 1 reads the stable prefix and writes the rest; turn j > 1 reads everything
before its own new tokens and writes those. ``rewritten`` is the same with no stable prefix;
``uncached`` with no cache at all. Dollars are the caller's (tokens x its price).
"""

from __future__ import annotations

from dataclasses import dataclass

from snapcompact.pricing import PromptCacheRule

__all__ = ["NEXT_TURNS", "TURN_TOKENS", "NextTurns", "next_turns_units"]

#: Turns after the compaction that the analysis column bills, and the tokens each one adds (a
#: user message and an answer of an agent session; an assumption, stated in the tables).
NEXT_TURNS = 10
TURN_TOKENS = 2_000


@dataclass(frozen=True)
class NextTurns:
    """The input bill of the next turns, in base-input-token equivalents."""

    uncached: float
    cached: float  # with the arm's stable prefix read by the first turn
    rewritten: float  # the whole compacted prefix written again by the first turn


def next_turns_units(rule: PromptCacheRule | None, context_tokens: int, stable_tokens: int, *,
                     k: int = NEXT_TURNS, turn_tokens: int = TURN_TOKENS) -> NextTurns:
    """Bill the ``k`` turns after the context of ``context_tokens`` (see the module doc)."""
    for name, value in (("context_tokens", context_tokens), ("stable_tokens", stable_tokens),
                        ("k", k), ("turn_tokens", turn_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    stable_tokens = min(stable_tokens, context_tokens)
    uncached = float(sum(context_tokens + j * turn_tokens for j in range(1, k + 1)))
    if rule is None:
        return NextTurns(uncached, uncached, uncached)

    def bill(stable: int) -> float:
        total = 0.0
        for j in range(1, k + 1):
            prompt = context_tokens + j * turn_tokens
            prefix = stable if j == 1 else context_tokens + (j - 1) * turn_tokens
            read = rule.cached_tokens(prefix)
            written = prompt - read
            # below the minimum, or a mode that bills no writes: plain input
            cacheable = rule.cached_tokens(prompt) > 0 and rule.writes_billed
            total += read * rule.read_multiplier + written * (
                rule.write_multiplier if cacheable else 1.0)
        return total

    return NextTurns(uncached, bill(stable_tokens), bill(0))

