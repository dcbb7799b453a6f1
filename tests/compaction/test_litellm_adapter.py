"""The litellm adapters run through litellm itself, with litellm's own ``mock_response``.

Why: the compaction adapter (``snapcompact.compaction.litellm_adapter``) used to be tested
against a stand-in module, so its async path and the shape of litellm's real response objects
never ran. Here every call goes through the installed litellm's ``completion`` / ``acompletion``
(wrapped only to record the arguments it was given) and litellm answers from ``mock_response``:
no key, no network. Expected usage is litellm's documented mock usage (its constants
``DEFAULT_MOCK_RESPONSE_PROMPT_TOKEN_COUNT`` / ``..._COMPLETION_TOKEN_COUNT``), not ours.
"""

from __future__ import annotations

import asyncio
import inspect
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from litellm.constants import (
    DEFAULT_MOCK_RESPONSE_COMPLETION_TOKEN_COUNT as MOCK_COMPLETION,
)
from litellm.constants import (
    DEFAULT_MOCK_RESPONSE_PROMPT_TOKEN_COUNT as MOCK_PROMPT,
)

from snapcompact.compaction import litellm_chat, litellm_complete

MOCK_USAGE = {"prompt_tokens": MOCK_PROMPT, "completion_tokens": MOCK_COMPLETION,
              "total_tokens": MOCK_PROMPT + MOCK_COMPLETION}


@pytest.fixture
def sent(monkeypatch):
    """Arguments of every litellm call, which still runs litellm's real (mock) path."""
    calls: list[dict] = []
    real_sync, real_async = litellm.completion, litellm.acompletion

    def completion(**kwargs):
        calls.append({"async": False, **kwargs})
        return real_sync(**kwargs)

    async def acompletion(**kwargs):
        calls.append({"async": True, **kwargs})
        return await real_async(**kwargs)

    monkeypatch.setattr(litellm, "completion", completion)
    monkeypatch.setattr(litellm, "acompletion", acompletion)
    return calls


def test_sync_complete_returns_litellm_text_and_usage(sent):
    complete = litellm_complete("anthropic/claude-sonnet-4-5", temperature=0.0,
                                mock_response="## Goal\nsummary text")
    reply = complete("SYSTEM", "PROMPT", max_tokens=321)
    assert reply == {"text": "## Goal\nsummary text", "usage": MOCK_USAGE}
    (call,) = sent
    assert call["async"] is False and call["model"] == "anthropic/claude-sonnet-4-5"
    assert call["max_tokens"] == 321 and call["temperature"] == 0.0
    assert call["messages"] == [{"role": "system", "content": "SYSTEM"},
                                {"role": "user", "content": "PROMPT"}]


def test_async_complete_awaits_litellm_acompletion(sent):
    acomplete = litellm_complete("openai/gpt-4.1-mini", asynchronous=True,
                                 mock_response="async summary")
    assert inspect.iscoroutinefunction(acomplete)
    reply = asyncio.run(acomplete("S", "P", max_tokens=64))
    assert reply == {"text": "async summary", "usage": MOCK_USAGE}
    (call,) = sent
    assert call["async"] is True and call["max_tokens"] == 64 and "temperature" not in call


def test_async_complete_runs_concurrently(sent):
    acomplete = litellm_complete("openai/gpt-4.1-mini", asynchronous=True, mock_response="x")

    async def many():
        return await asyncio.gather(*(acomplete("S", f"P{i}", max_tokens=8) for i in range(5)))

    replies = asyncio.run(many())
    assert [r["text"] for r in replies] == ["x"] * 5
    assert sorted(c["messages"][1]["content"] for c in sent) == [f"P{i}" for i in range(5)]


def test_litellm_errors_reach_the_caller(sent):
    # litellm turns a mock_response of this form into its own RateLimitError.
    complete = litellm_complete("openai/gpt-4.1-mini", mock_response="litellm.RateLimitError")
    with pytest.raises(litellm.RateLimitError):
        complete("S", "P", max_tokens=8)
    acomplete = litellm_complete("openai/gpt-4.1-mini", asynchronous=True,
                                 mock_response="litellm.RateLimitError")
    with pytest.raises(litellm.RateLimitError):
        asyncio.run(acomplete("S", "P", max_tokens=8))


def test_compaction_summarizes_through_the_async_adapter(sent):
    from test_compaction_pipeline import replay

    p, *_ = replay("context-full", 12, 12)
    p.complete = litellm_complete("anthropic/claude-sonnet-4-5", asynchronous=True,
                                  mock_response="## Goal\nfrom litellm")
    for i in range(20):
        p.session.append_message({"role": "user", "content": f"more {i} " * 400})
    out = p.compact()
    assert out.entry is not None and out.entry.summary.startswith("## Goal\nfrom litellm")
    assert sent and all(call["async"] for call in sent)
    # every summary call's usage is litellm's, added up
    assert out.entry.usage == {key: value * len(sent) for key, value in MOCK_USAGE.items()}


def test_chat_sends_tools_and_tool_choice_through_litellm(sent):
    tools = [{"type": "function", "function": {"name": "read", "description": "read a file",
                                               "parameters": {"type": "object", "properties": {
                                                   "path": {"type": "string"}}}}}]
    chat = litellm_chat("openai/gpt-4o-mini", mock_response="handoff document")
    wire = [{"role": "user", "content": "hi"}]
    reply = chat("SYS", wire, tools=tools, tool_choice="none", max_tokens=100)
    assert reply == {"text": "handoff document", "usage": MOCK_USAGE}
    (call,) = sent
    assert call["tools"] == tools and call["tool_choice"] == "none"
    assert call["messages"][0] == {"role": "system", "content": "SYS"}
    # without tools, neither tools nor tool_choice is sent
    chat("SYS", wire, tools=None, tool_choice="none", max_tokens=100)
    assert "tools" not in sent[1] and "tool_choice" not in sent[1]


# --- the harness's client: async, through litellm.acompletion's mock path ---------------------


def _client(tmp_path):
    from evals.send.client import EvalClient, RetryPolicy
    from evals.send.response_cache import ResponseCache

    return EvalClient(cache=ResponseCache(tmp_path / "cache"), renderer_version="test-renderer",
                      retry=RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02),
                      seed=0)


def test_eval_client_reports_litellm_usage_and_the_cost_map_price(tmp_path, sent):
    from evals.send.client import Request

    client = _client(tmp_path)
    request = Request(model="anthropic/claude-sonnet-4-5",
                      messages=[{"role": "user", "content": "Who wrote the letter?"}],
                      params={"mock_response": "Ada", "max_tokens": 16})
    response = asyncio.run(client.complete(request))
    assert (response.answer, response.prompt_tokens, response.completion_tokens) == (
        "Ada", MOCK_PROMPT, MOCK_COMPLETION)
    price = litellm.model_cost["claude-sonnet-4-5"]
    assert response.cost_usd == pytest.approx(MOCK_PROMPT * price["input_cost_per_token"]
                                              + MOCK_COMPLETION * price["output_cost_per_token"])
    (call,) = sent
    assert call["async"] is True and call["mock_response"] == "Ada"


def test_eval_client_records_a_litellm_client_error_without_raising(tmp_path, sent):
    from evals.send.client import Request

    client = _client(tmp_path)
    bad = litellm.BadRequestError("image too large", model="claude-sonnet-4-5",
                                  llm_provider="anthropic")
    request = Request(model="anthropic/claude-sonnet-4-5",
                      messages=[{"role": "user", "content": "q"}],
                      params={"mock_response": bad})
    response = asyncio.run(client.complete(request))
    assert not response.ok and "image too large" in response.error
    assert response.attempts == 1 and len(sent) == 1  # a 4xx is not retried
