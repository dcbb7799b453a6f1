"""The handoff reuses the live system prompt, tools and history; the litellm chat sends the live
request offline; handoff file names do not grow with each generation.
"""

from __future__ import annotations

import re

from compaction_synth import FakeLLM
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.compaction import (
    CompactionPipeline,
    Session,
    handoff,
)

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]


def test_handoff_reuses_the_live_system_prompt_tools_and_history(tmp_path):
    from snapcompact.compaction import prompt, to_wire_json

    requests = []

    def chat(system_prompt, messages, *, tools, tool_choice, max_tokens):
        requests.append({"system": system_prompt, "messages": messages, "tools": tools,
                         "tool_choice": tool_choice, "max_tokens": max_tokens})
        return {"text": "  # Handoff\nwhere we are  "}

    summarizer = FakeLLM()
    p = CompactionPipeline(Session(tmp_path / "h.jsonl", fsync=False), CLAUDE, settings=_settings("handoff"),
                           complete=summarizer, chat=chat, system_prompt=["You are the agent.", "Rules."],
                           tools=TOOLS)
    _fill(p, 18, 6)
    history = [to_wire_json(m) for m in p.context().messages]
    outcome = handoff(p, "mind the parser")
    assert summarizer.calls == []  # no transcript under the summarizer prompt
    (request,) = requests
    assert request["system"] == ["You are the agent.", "Rules."] and request["tools"] == TOOLS
    assert request["tool_choice"] == "none" and request["max_tokens"] == 3200
    assert request["messages"][:-1] == history  # the real history, as the agent sent it
    assert request["messages"][-1] == {"role": "user", "attribution": "agent", "content": [
        {"type": "text", "text": prompt("handoff-document") + "\n\nAdditional focus requested by the user: "
         "mind the parser"}]}
    assert outcome.handoff_session.entries[0].content == "# Handoff\nwhere we are"
    # Without the live parts the document comes from a serialized transcript, as before.
    p2 = CompactionPipeline(Session(), CLAUDE, settings=_settings("handoff"), complete=summarizer)
    _fill(p2, 18, 6)
    handoff(p2)
    assert summarizer.calls[-1]["kind"] == "handoff" and "<conversation>" in summarizer.calls[-1]["prompt"]


def test_litellm_chat_sends_the_live_request_offline():
    from snapcompact.compaction import litellm_chat, summarizer_chat_messages

    wire = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "reading"},
                                              {"type": "toolCall", "id": "c1", "name": "read",
                                               "arguments": {"path": "a.py"}}]},
            {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
             "content": [{"type": "text", "text": "x = 1"}]},
            {"role": "developer", "content": [{"type": "text", "text": "note"}]}]
    assert summarizer_chat_messages(["S1", "S2"], wire) == [
        {"role": "system", "content": "S1\n\nS2"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": "reading", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "system", "content": [{"type": "text", "text": "note"}]}]
    chat = litellm_chat("gpt-4o-mini", mock_response="the handoff document")
    reply = chat("S", wire, tools=TOOLS, tool_choice="none", max_tokens=100)
    assert reply["text"] == "the handoff document"


def test_handoff_file_names_do_not_grow_with_each_generation(tmp_path):
    p = CompactionPipeline(Session(tmp_path / "work.jsonl", fsync=False), CLAUDE, settings=_settings("handoff"),
                           complete=FakeLLM())
    names = []
    for generation in range(30):
        _fill(p, 30 + generation, 2)
        names.append(handoff(p).handoff_session.path.name)
    assert all(re.fullmatch(r"work\.handoff-[0-9a-f]{8}\.jsonl", n) for n in names), names[-1]
    assert len(set(names)) == 30
