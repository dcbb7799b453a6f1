"""OpenAI's ``/responses/compact`` for OpenAI/Codex models, through litellm to a loopback server.

Expectations are the seed's (compaction.md: OpenAI/Codex models try the provider-native endpoint
first when remote compaction is enabled, keep the replacement history in
``preserveData.openaiRemoteCompaction``, and summarize locally when it fails) and the agent core's
wire shapes (18.2.11 ``openai.ts``): Responses input items, only compaction items and user/assistant
messages kept from the output, a fixed entry summary and ``shortSummary`` "Remote compaction".
"""

from __future__ import annotations

import json

import pytest
from compaction_synth import FakeLLM
from responses_compact_server import ResponsesCompactServer

from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionPipeline,
    ModelInfo,
    Session,
    merge_settings,
    prompt,
)
from snapcompact.compaction.litellm_adapter import litellm_responses_compact
from snapcompact.compaction.openai_compact import (
    native_history,
    replacement_history,
    request_openai_remote_compaction,
    uses_openai_remote_compaction,
)

GPT = ModelInfo("gpt-5", 60_000, provider="openai", api="openai-responses")
SETTINGS = merge_settings(DEFAULT_SETTINGS, {"compaction": {"reserveTokens": 4000, "keepRecentTokens": 3000}})
KEY = "sk-test-NOT-A-REAL-KEY-123"


def _fill(p: CompactionPipeline, turns: int = 12) -> None:
    for i in range(turns):
        p.session.append_message({"role": "user", "content": f"turn {i}: " + "please continue " * 150})
        call = {"type": "toolCall", "id": f"call_{i}|fc_{i}", "name": "read", "arguments": {"path": f"src/f{i}.py"}}
        p.session.append_message({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "thinkingSignature": json.dumps({"type": "reasoning", "id": f"rs_{i}",
                                                                                   "summary": []})},
            {"type": "text", "text": f"reading f{i}"}, call], "stopReason": "toolUse"})
        p.session.append_message({"role": "toolResult", "toolCallId": f"call_{i}|fc_{i}", "toolName": "read",
                                  "content": [{"type": "text", "text": "x = 1\n" * 200}], "isError": False})
        p.session.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                                  "stopReason": "stop"})


def test_which_models_use_the_endpoint():
    assert uses_openai_remote_compaction(GPT)
    assert uses_openai_remote_compaction(ModelInfo("gpt-5-codex", 1000, provider="openai-codex"))
    assert uses_openai_remote_compaction(ModelInfo("gpt-5", 1000, api="openai-responses"))
    assert not uses_openai_remote_compaction(ModelInfo("claude-sonnet-4-5", 1000, provider="anthropic"))
    assert not uses_openai_remote_compaction(ModelInfo("gpt-5", 1000, provider="openrouter", api="openai-completions"))


def test_native_history_items():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "  "},
                                     {"type": "image", "data": "QUJD", "mimeType": "image/png"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "thinkingSignature": '{"type":"reasoning","id":"rs_9"}'},
                                          {"type": "text", "text": "reading"},
                                          {"type": "toolCall", "id": "call_7|fc_7", "name": "read",
                                           "arguments": {"path": "a.py"}}], "stopReason": "toolUse"},
        {"role": "toolResult", "toolCallId": "call_7|fc_7", "toolName": "read",
         "content": [{"type": "text", "text": "line"}], "isError": False},
        {"role": "toolResult", "toolCallId": "orphan", "toolName": "read", "content": "dropped", "isError": False},
        {"role": "developer", "content": "   "},
    ]
    previous = [{"type": "compaction", "encrypted_content": "old"}]
    assert native_history(messages, previous) == [
        {"type": "compaction", "encrypted_content": "old"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "hi"},
            {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,QUJD"}]},
        {"type": "reasoning", "id": "rs_9"},
        {"type": "message", "role": "assistant", "id": "msg_1",
         "content": [{"type": "output_text", "text": "reading", "annotations": []}]},
        {"type": "function_call", "call_id": "call_7", "name": "read", "arguments": '{"path":"a.py"}'},
        {"type": "function_call_output", "call_id": "call_7", "output": "line"},
    ]


def test_output_filtering_and_missing_item():
    answer = {"output": [{"type": "message", "role": "user", "content": []}, {"type": "reasoning"},
                         {"type": "compaction_summary", "summary": "s"}, {"type": "message", "role": "system"}]}
    record = request_openai_remote_compaction(lambda request: answer, GPT, [{"type": "message"}], "sys")
    assert record == {"provider": "openai", "compactionItem": {"type": "compaction_summary", "summary": "s"},
                      "replacementHistory": [{"type": "message", "role": "user", "content": []},
                                             {"type": "compaction_summary", "summary": "s"}]}
    with pytest.raises(ValueError, match="missing compaction item"):
        request_openai_remote_compaction(lambda request: {"output": [{"type": "compaction"}]}, GPT, [], "s")


def test_pipeline_compacts_through_litellm_and_the_loopback_endpoint():
    with ResponsesCompactServer() as server:
        llm = FakeLLM()
        fn = litellm_responses_compact("openai/gpt-5", api_base=server.base_url, api_key=KEY)
        p = CompactionPipeline(Session(), GPT, settings=SETTINGS, complete=llm, responses_compact=fn)
        _fill(p)
        outcome = p.compact()
        assert llm.calls == []  # no local summary, no short-summary call
        entry = outcome.entry
        assert entry.summary.startswith("Remote compaction preserved provider-native history for this session.")
        assert "<files>" in entry.summary and entry.short_summary == "Remote compaction"
        record = entry.preserve_data["openaiRemoteCompaction"]
        assert record["provider"] == "openai"
        assert record["compactionItem"] == {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque-1"}
        # Only user/assistant messages and compaction items are kept from the output.
        assert [i["type"] for i in record["replacementHistory"]] == ["message", "compaction"]
        sent = server.requests[0]
        assert sent["path"] == "/v1/responses/compact"
        assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
        body = sent["body"]
        assert body["model"] == "gpt-5" and body["instructions"] == prompt("summarization-system")
        kinds = {i["type"] for i in body["input"]}
        assert kinds == {"message", "reasoning", "function_call", "function_call_output"}
        # The whole branch went (summarized and kept turns): 12 user prompts.
        assert sum(1 for i in body["input"] if i.get("role") == "user") == 12
        # The next compaction replays the stored history first, instead of the summary text.
        _fill(p, 8)
        p.compact()
        second = server.requests[1]["body"]["input"]
        assert second[:len(record["replacementHistory"])] == record["replacementHistory"]
        assert replacement_history(p.session.get_branch()[-1].preserve_data, "openai")[-1]["encrypted_content"] \
            == "opaque-2"


@pytest.mark.parametrize("server_options", [{"fail": True}, {"no_item": True}])
def test_failure_falls_back_to_the_local_summary(server_options):
    with ResponsesCompactServer(**server_options) as server:
        llm = FakeLLM()
        fn = litellm_responses_compact("openai/gpt-5", api_base=server.base_url, api_key=KEY, num_retries=0)
        p = CompactionPipeline(Session(), GPT, settings=SETTINGS, complete=llm, responses_compact=fn)
        _fill(p)
        with pytest.warns(RuntimeWarning, match="OpenAI remote compaction failed .*: summarizing locally"):
            outcome = p.compact()
        assert len(server.requests) >= 1 and llm.calls and outcome.entry.summary.startswith("## Goal")
        assert "openaiRemoteCompaction" not in (outcome.entry.preserve_data or {})
        assert all(KEY not in w for w in outcome.warnings)


def test_not_used_when_disabled_or_not_openai():
    calls = []
    fn = lambda request: calls.append(request) or {"output": []}
    off = merge_settings(SETTINGS, {"compaction": {"remoteEnabled": False}})
    p = CompactionPipeline(Session(), GPT, settings=off, complete=FakeLLM(), responses_compact=fn)
    _fill(p)
    assert p.compact().entry.short_summary != "Remote compaction"
    claude = ModelInfo("claude-sonnet-4-5", 60_000, provider="anthropic", api="anthropic-messages")
    q = CompactionPipeline(Session(), claude, settings=SETTINGS, complete=FakeLLM(), responses_compact=fn)
    _fill(q)
    q.compact()
    assert calls == []
