"""The handoff is asked of the live conversation and billed as the agent pays it (issue 46
item 5).

The coding agent 18.3.4 builds its handoff "through the SAME pipeline a live turn uses":
its system prompt, its tools, the live messages and one agent-attributed user message with the
handoff prompt, under the live turn's cache key, with the session's model
(``session-handoff.ts:119-172``). The replay is given a system prompt here (the agent's own is
package data of issue 45 item 3; any text shows the path), the request the chat function
received is captured, and the expectations are worked from the session's own messages: every
tool result in full (the transcript path cut each to 2,000 characters), the request's tokens and
the prefix the live turn before it cached counted with the session model's billed-text counter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hydra_compose import compose_eval

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from evals.items.datasets import load_dataset
from evals.replay import contexts
from evals.replay.contexts import build_context
from evals.replay.perfect_summary import PERFECT_SUMMARY_HEADER, perfect_chat
from evals.spec.run_spec import ArmSpec, RunSpec
from snapcompact.billing import billed_text_tokens

ONCE = ["experiment=smoke", "context_window=32000", "model=mock", "strategies=[handoff]",
        "summarizer=mock"]  # the smoke session at 32k hands over exactly once
SESSION_MODEL = "claude-sonnet-4-5"  # configs/model/mock.yaml
PROMPT = "You are a coding agent working in the user's repository. " * 30


@pytest.fixture(scope="module")
def session_item():
    return load_dataset("agent_session", target_tokens=30000, depths=(0.2, 0.9))[0]


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def test_the_handoff_request_is_the_live_conversation_read_from_the_cache(
        tmp_path: Path, session_item, monkeypatch) -> None:
    sent: list[tuple] = []

    def chat(system_prompt, messages, *, tools, tool_choice, max_tokens):
        sent.append((system_prompt, list(messages), tools, tool_choice))
        return {"text": "## Handoff\nstub"}

    monkeypatch.setattr(contexts, "_agent_prompt", lambda info: PROMPT)
    monkeypatch.setattr(contexts, "stand_in_chat", lambda complete: chat)
    spec = RunSpec.from_config(compose_eval([f"results_dir={tmp_path}", "progress=false",
                                             *ONCE]), base_dir=tmp_path)
    context = build_context(session_item, ArmSpec("handoff"), spec, frames=None,
                            contexts=None, complete=lambda s, u, *, max_tokens: "unused")
    assert context.methods_used == {"handoff": 1} and len(sent) == 1
    system, messages, tools, tool_choice = sent[0]
    assert system == PROMPT and tool_choice == "none"
    assert sorted(t["function"]["name"] for t in tools) == sorted(
        {b["name"] for m in session_item.messages if m["role"] == "assistant"
         for b in m["content"] if b.get("type") == "toolCall"})
    # the live conversation: the session's messages as they were (tool results in full, the
    # first one 4,941 characters), then the handoff prompt, attributed to the agent
    assert messages[-1]["role"] == "user" and messages[-1]["attribution"] == "agent"
    live = messages[:-1]
    assert [_text(m) for m in live] == [_text(m) for m in session_item.messages[:len(live)]]
    assert len(_text(live[2])) == 4_941
    # billed as that request for the session's model; the live turn before it cached the
    # prompt, the tools and the conversation up to its last non-assistant message
    tool_json = json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))

    def tokens(ms: list[dict]) -> int:
        pieces = [system, *(p for m in ms for p in _pieces(m))]
        return billed_text_tokens("\n".join(p for p in pieces if p) + "\n" + tool_json,
                                  SESSION_MODEL)[0]

    head = live[:max(i for i, m in enumerate(live) if m["role"] != "assistant") + 1]
    bill = context.compaction_bill
    assert bill.model == SESSION_MODEL and bill.calls == 1
    assert bill.input_tokens == tokens(messages)
    assert bill.cache_read_tokens == tokens(head)
    assert bill.cache_write_tokens == tokens(messages) - tokens(head)
    assert bill.input_tokens > 20_000  # the whole live context, not a cut transcript


def _pieces(message: dict) -> list[str]:
    """A wire message's text as a chat request carries it: text blocks, then each tool call's
    name and JSON arguments."""
    out = [_text(message)]
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            out += [block["name"], json.dumps(block.get("arguments") or {})]
    return out


def test_the_oracle_handoff_keeps_a_fact_past_the_transcripts_cut() -> None:
    fact = "The nightly backup of the upper vault server now starts at 03:55 on Saturday."
    result = "x" * 3_000 + " " + fact  # past the 2,000 characters a transcript keeps
    chat = perfect_chat([fact, "never shown"])
    reply = chat("system", [
        {"role": "assistant", "content": [{"type": "toolCall", "id": "1", "name": "read",
                                           "arguments": {"path": "a.txt"}}]},
        {"role": "toolResult", "toolCallId": "1", "content": [{"type": "text", "text": result}]},
        {"role": "user", "attribution": "agent", "content": [{"type": "text", "text": "hand"}]}],
        tools=None, tool_choice="none", max_tokens=100)
    assert reply["text"].splitlines() == [*PERFECT_SUMMARY_HEADER.splitlines(), f"- {fact}"]
