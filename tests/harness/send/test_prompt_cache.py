"""Prompt caches: rules, breakpoint placement, predictions, the twins' caches, the send order.

Expected values come from the providers' documents (cited per test, as read 2026-12-01), never
from the code under test:
- Anthropic prompt caching (platform.claude.com/docs/en/build-with-claude/prompt-caching, as
  quoted in anthropics/anthropic-sdk-python issue 1194 and docs.electronhub.ai): minimum
  cacheable length 1024 tokens for Sonnet 4.5 / Opus 4.1, 4096 for Opus 4.5 / 4.6 and Haiku 4.5,
  2048 for Haiku 3.5 / 3; up to 4 breakpoints; 5-minute writes 1.25x base input, hits 0.1x
  (Sonnet 4.5: $3 base, $3.75 write, $0.30 hit per MTok).
- OpenAI prompt caching (openai-cookbook Prompt_Caching_201, quoting the API docs): automatic
  from 1024 tokens, hits in increments of 128 tokens; litellm's prompt-caching page shows a
  2006-token prompt with 1920 cached tokens. Pricing: gpt-5 $1.25 input, $0.125 cached.
- Gemini context caching (ai.google.dev/gemini-api/docs/caching): implicit caching minimum
  1024 tokens for Gemini 3 Flash Preview; pricing: $0.50 input, $0.05 context caching per MTok.
"""

from __future__ import annotations

import pytest

from snapcompact.billing import cache_uses
from snapcompact.compaction import cache_breakpoint, with_cache_breakpoint
from snapcompact.pricing import prompt_cache_rule


# --- rules (pricing.toml [[prompt_cache]]) ---------------------------------------------------
@pytest.mark.parametrize(("model", "minimum"), [
    ("claude-sonnet-4-5", 1024), ("claude-opus-4-1", 1024), ("claude-haiku-4-5", 4096),
    ("claude-opus-4-5", 4096), ("claude-opus-4-6", 4096), ("claude-3-5-haiku-20241022", 2048),
    ("gpt-5", 1024), ("gpt-4o", 1024), ("gemini-3-flash-preview", 1024)])
def test_minimum_cacheable_lengths_are_the_documented_ones(model: str, minimum: int) -> None:
    assert prompt_cache_rule(model).min_tokens == minimum


def test_anthropic_cache_prices_are_documented_multiples_of_base_input() -> None:
    rule = prompt_cache_rule("claude-sonnet-4-5")
    assert (rule.mode, rule.max_breakpoints, rule.ttl_s) == ("breakpoints", 4, 300)
    # Sonnet 4.5 per MTok: base $3, 5-minute write $3.75, hit $0.30
    assert 3.00 * rule.write_multiplier == pytest.approx(3.75)
    assert 3.00 * rule.read_multiplier == pytest.approx(0.30)


@pytest.mark.parametrize(("model", "base", "cached"), [
    ("gpt-5", 1.25, 0.125), ("gpt-4.1", 2.00, 0.50), ("gpt-4o", 2.50, 1.25),
    ("gemini-3-flash-preview", 0.50, 0.05)])
def test_cached_input_prices_per_model(model: str, base: float, cached: float) -> None:
    rule = prompt_cache_rule(model)
    assert base * rule.read_multiplier == pytest.approx(cached)
    assert rule.write_multiplier == 1.0  # OpenAI and Gemini implicit: writing costs nothing extra


def test_openai_hits_are_counted_in_128_token_steps_from_1024() -> None:
    rule = prompt_cache_rule("gpt-5")
    assert rule.cached_tokens(2006) == 1920  # litellm's documented usage example
    assert rule.cached_tokens(1023) == 0
    assert rule.cached_tokens(1024) == 1024
    assert rule.cached_tokens(1151) == 1024


def test_models_without_a_documented_cache_are_predicted_uncached() -> None:
    assert prompt_cache_rule("glm-4.6") is None
    assert cache_uses(None, 5000, [5010, 5020]) == [
        type(cache_uses(None, 0, [1])[0])(uncached=n, written=0, read=0) for n in (5010, 5020)]


# --- predictions --------------------------------------------------------------------------
def test_first_question_writes_the_context_and_later_ones_read_it() -> None:
    rule = prompt_cache_rule("claude-sonnet-4-5")
    first, second, third = cache_uses(rule, 20_000, [20_030, 20_025, 20_040])
    assert (first.written, first.read, first.uncached) == (20_000, 0, 30)
    assert (second.written, second.read, second.uncached) == (0, 20_000, 25)
    assert third.read == 20_000
    # 1.25 x 20,000 + 30 base-price tokens, then 0.1 x 20,000 + 25
    assert first.input_units(rule) == pytest.approx(25_030)
    assert second.input_units(rule) == pytest.approx(2_025)


def test_below_the_minimum_nothing_is_cached() -> None:
    rule = prompt_cache_rule("claude-haiku-4-5")  # 4096
    uses = cache_uses(rule, 4000, [4010, 4010])
    assert all(u.written == 0 and u.read == 0 for u in uses)


def test_openai_first_request_writes_for_free() -> None:
    rule = prompt_cache_rule("gpt-5")
    first, second = cache_uses(rule, 2000, [2006, 2006])
    assert (first.written, first.read) == (0, 0)
    assert (second.read, second.uncached) == (1920, 86)


def test_a_request_shorter_than_the_shared_prefix_is_an_error() -> None:
    with pytest.raises(ValueError, match="fewer than"):
        cache_uses(prompt_cache_rule("gpt-5"), 2000, [1500])


# --- breakpoint placement ---------------------------------------------------------------------
CONTEXT = [
    {"role": "user", "content": [{"type": "text", "text": "archive"},
                                 {"type": "image_url", "image_url": {"url": "data:,"}}]},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "a", "type": "function", "function": {"name": "read",
                                                                  "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "a", "content": "file text"},
]
QUESTION = {"role": "user", "content": [{"type": "text", "text": "What is X?"}]}


def test_the_breakpoint_marks_the_last_block_of_the_context_not_the_question() -> None:
    # Anthropic: the cache covers the prefix through the marked block; the question follows it
    marked = with_cache_breakpoint([*CONTEXT, QUESTION], len(CONTEXT))
    assert marked[2]["cache_control"] == {"type": "ephemeral"}  # the tool result, whole message
    assert "cache_control" not in marked[3]["content"][0]
    assert sum("cache_control" in str(m) for m in marked) == 1  # one of the four allowed
    assert "cache_control" not in CONTEXT[2]  # the input is not changed


def test_breakpoint_on_a_content_part_and_on_a_tool_call() -> None:
    assert cache_breakpoint(CONTEXT[:1]).where == "part"
    marked = with_cache_breakpoint([CONTEXT[0], QUESTION], 1)
    assert marked[0]["content"][1]["cache_control"] == {"type": "ephemeral"}  # the image
    marked = with_cache_breakpoint([*CONTEXT[:2]], 2)
    assert marked[1]["tool_calls"][0]["cache_control"] == {"type": "ephemeral"}


def test_response_cache_key_ignores_the_breakpoint() -> None:
    from evals.send.response_cache import request_key

    def key(messages):
        return request_key(model="anthropic/claude-sonnet-4-5", messages=messages, params={},
                           frame_hashes=["0" * 64], renderer_version="r")

    plain = [*CONTEXT, QUESTION]
    assert key(plain) == key(with_cache_breakpoint(plain, len(CONTEXT)))
    assert key(plain) == key(with_cache_breakpoint(plain, 1))


# --- usage read back ------------------------------------------------------------------------
def test_cache_tokens_read_from_litellm_usage() -> None:
    from types import SimpleNamespace

    from evals.send.client import cache_tokens

    anthropic = SimpleNamespace(cache_read_input_tokens=188086, cache_creation_input_tokens=0,
                                prompt_tokens_details=SimpleNamespace(cached_tokens=188086))
    assert cache_tokens(anthropic) == (188086, 0)
    openai = SimpleNamespace(prompt_tokens_details=SimpleNamespace(cached_tokens=1920))
    assert cache_tokens(openai) == (1920, None)
    assert cache_tokens(None) == (None, None)


# --- twins ------------------------------------------------------------------------------------
def test_twin_breakpoint_cache_writes_then_reads_and_ignores_short_prefixes() -> None:
    from evals.twins.prompt_cache import PromptCacheStore

    store = PromptCacheStore()
    assert store.breakpoint("claude-sonnet-4-5", "d1", 5000) == (0, 5000)
    assert store.breakpoint("claude-sonnet-4-5", "d1", 5000) == (5000, 0)
    assert store.breakpoint("claude-sonnet-4-5", "d2", 1000) == (0, 0)  # under 1024
    assert store.breakpoint("claude-sonnet-4-5", None, 5000) == (0, 0)  # no breakpoint


def test_twin_automatic_cache_reads_the_longest_shared_prefix() -> None:
    from evals.twins.prompt_cache import PromptCacheStore

    store = PromptCacheStore()
    assert store.longest_prefix("gpt-5", [("a", 600), ("b", 2006)]) == 0
    assert store.longest_prefix("gpt-5", [("a", 600), ("b", 2006), ("c", 2100)]) == 1920


# --- production's next turns ------------------------------------------------------------------
def test_next_turns_stable_prefix_is_cheaper_than_rewritten() -> None:
    from snapcompact.billing import next_turns_units

    rule = prompt_cache_rule("claude-sonnet-4-5")
    bill = next_turns_units(rule, 10_000, 6_000, k=2, turn_tokens=1_000)
    assert bill.uncached == 11_000 + 12_000
    # turn 1: reads 6,000 at 0.1, writes 5,000 at 1.25; turn 2: reads 11,000, writes 1,000
    assert bill.cached == pytest.approx(600 + 6_250 + 1_100 + 1_250)
    assert bill.rewritten == pytest.approx(11_000 * 1.25 + 1_100 + 1_250)
