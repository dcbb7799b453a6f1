"""A handoff asked of the live conversation is billed as that request, its prompt cache applied
(issue 46 item 5).

Expected values are worked here by hand: the request's text is the system prompt and every
message's text joined by newlines (a chat request's text), counted with the billed-text counter
of the model that pays the call; the live turn before the handoff sent (and cached) the system
prompt and the conversation up to its last non-assistant message, so exactly that many tokens
are read from the cache and the rest (the last reply and the handoff prompt) written. The
cache rule is built here with round numbers.
"""

from __future__ import annotations

import re

import pytest

from snapcompact.billing import (
    CacheUse,
    CompactionCall,
    bill_calls,
    billed_text_tokens,
    follow_on_use,
)
from snapcompact.pricing import PromptCacheRule

MODEL = "claude-sonnet-4-5"  # pricing.toml: anthropic-1024, breakpoints, min 1,024 tokens


def _rule(mode: str = "breakpoints", min_tokens: int = 1000, increment: int = 1
          ) -> PromptCacheRule:
    return PromptCacheRule(id="t", vendor="t", mode=mode, patterns=(re.compile("t"),),
                           family_default=None, min_tokens=min_tokens,
                           max_breakpoints=4 if mode == "breakpoints" else 0,
                           increment=increment, ttl_s=300, write_multiplier=1.25,
                           read_multiplier=0.1, source="test", checked="2026-12-06",
                           confidence="test")


def test_a_request_after_a_cached_one_reads_its_prefix_and_writes_the_rest() -> None:
    assert follow_on_use(_rule(), 5_000, 5_600) == CacheUse(uncached=0, written=600, read=5_000)
    # a provider that reads in steps of 128 past its minimum: 1,000 + 31 x 128 = 4,968 read
    assert follow_on_use(_rule(increment=128), 5_000, 5_600) == CacheUse(0, 632, 4_968)
    # below the minimum nothing is read, and a prompt too short to cache is plain input
    assert follow_on_use(_rule(), 900, 950) == CacheUse(uncached=950, written=0, read=0)
    # implicit caching reads the prefix and bills no write apart
    assert follow_on_use(_rule("implicit"), 5_000, 5_600) == CacheUse(600, 0, 5_000)
    assert follow_on_use(None, 5_000, 5_600) == CacheUse(5_600, 0, 0)
    with pytest.raises(ValueError, match="fewer than"):
        follow_on_use(_rule(), 5_000, 4_000)


def _text(role: str, text: str, **extra: object) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}], **extra}


def test_a_live_handoff_is_billed_as_the_live_request_and_reads_what_the_turn_cached() -> None:
    system = "You are the coding agent. " * 40
    history = "The build was green at step 3; the service listens on port 8431. " * 300
    reply = "I changed the port and reran the tests; all green."
    handoff = "Write a handoff document for the next session."
    call = CompactionCall(system, "", "## Handoff\nport 8431", messages=(
        _text("user", history), _text("assistant", reply),
        _text("user", handoff, attribution="agent")))
    bill = bill_calls([call], MODEL, api="anthropic-messages", provider="anthropic")
    whole = billed_text_tokens("\n".join([system, history, reply, handoff]), MODEL)[0]
    cached = billed_text_tokens("\n".join([system, history]), MODEL)[0]
    assert cached > 1_024  # above the provider's minimum: the prefix is read
    assert bill.input_tokens == whole
    assert bill.cache_read_tokens == cached
    assert bill.cache_write_tokens == whole - cached
    assert bill.cache_use == CacheUse(uncached=0, written=whole - cached, read=cached)
    assert bill.output_tokens == billed_text_tokens("## Handoff\nport 8431", MODEL)[0]


def test_a_transcript_summary_reads_nothing_from_the_cache() -> None:
    call = CompactionCall("Summarize.", "<conversation>\n" + "x y z " * 2_000, "done")
    bill = bill_calls([call], MODEL, api="anthropic-messages")
    expected = billed_text_tokens("Summarize.\n<conversation>\n" + "x y z " * 2_000, MODEL)[0]
    assert (bill.input_tokens, bill.cache_read_tokens, bill.cache_write_tokens) == (
        expected, 0, 0)
