"""Production's bill over a conversation: the next K turns after a compaction, prompt cache on.

Why: a harness question pays its context once; production pays it again on every later turn,
and from the provider's prompt cache at a tenth of the price (pricing.toml ``[[prompt_cache]]``)
as long as the prefix does not change. A compaction rewrites the prefix from its first changed
block on. Snapcompact frames carried forward unchanged (and a reading guide that is a pure
function of the archive) keep the head of the new context identical to the previous one, so the
turn after a compaction still reads that head from the cache; an LLM summary rewrites it all.
"Billed tokens" per question cannot say that; this module can, per arm:

* ``stable_prefix_tokens``: tokens at the head of the final context that were already at the
  head of the context after the compaction before it (the summary text when unchanged, then
  the leading history blocks both archives share, in order). No compaction: all of it; one
  compaction: none (it replaced the raw conversation).
* ``next_turns_units``: the input bill of the next ``k`` turns, each adding ``turn_tokens`` (a
  user turn and its answer), in base-input-token equivalents, with the cache breakpoint moving
  to the end of each turn as an agent places it. Turn 1 reads the stable prefix and writes the
  rest; turn j > 1 reads everything before its own new tokens and writes those.
  ``rewritten`` is the same with no stable prefix; ``uncached`` with no cache at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.archive import history_blocks
from snapcompact.compaction import CompactionEntry
from snapcompact.pricing import count_text_tokens

__all__ = ["NEXT_TURNS", "TURN_TOKENS", "NextTurns", "next_turns_units", "stable_prefix_tokens"]

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


def next_turns_units(rule: Any, context_tokens: int, stable_tokens: int, *,
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


def _parts(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content}] if isinstance(content, str) else []


def stable_prefix_tokens(replay: Any, chat: Sequence[Mapping[str, Any]], bill: Any,
                         target_model: str) -> int:
    """Tokens at the head of ``chat`` (the final context) unchanged since the previous
    compaction's context; ``bill`` is its :func:`~snapcompact.compaction.bill_request`."""
    entries = [e for e in replay.pipeline.session.get_branch()
               if isinstance(e, CompactionEntry)]
    if not entries:
        return bill.billed_tokens
    if len(entries) < 2 or entries[-1].summary != entries[-2].summary or not chat:
        return 0
    texts: list[str] = []
    images = 0
    parts = _parts(chat[0])
    if parts and parts[0].get("type") == "text":
        texts.append(parts[0].get("text", ""))
    archives = replay.archives()
    if len(archives) >= 2:
        before, after = history_blocks(archives[-2]), history_blocks(archives[-1])
        for old, new in zip(before, after, strict=False):
            if old != new:
                break
            if new.get("type") == "image":
                images += 1
            else:
                texts.append(str(new.get("text", "")))
    text_tokens = count_text_tokens("\n".join(texts), target_model).tokens if texts else 0
    return text_tokens + sum(b.tokens for b in bill.images[:images])
