"""After a ``/responses/compact`` compaction, the next request replays the stored history.

Expected values are the coding agent's rules (18.3.4 ``src/session/session-context.ts``), not
this code's output:

* ``getOpenAiRemoteCompactionPayload`` (:197-209): valid when ``openaiRemoteCompaction`` has a
  non-empty string ``provider`` and a ``replacementHistory`` array of objects; it becomes the
  summary message's ``providerPayload = {type: "openaiResponsesHistory", provider, items}``;
* with it the kept tail is not emitted (:546), except the entries after
  ``providerReplayThroughEntryId`` (:584-591); later entries always are (:603-606);
* pi-agent-core ``convertMessageToLlm`` (compaction/messages.ts:232-251) keeps the payload on the
  summary's user message; a Responses request replays its items in the message's place when the
  payload's provider is the request's (pi-ai utils.ts:512-531, openai-shared.ts:1997-2026);
* the tokenizer counts a compactionSummary by its summary text only (pi-agent-core
  tokenizer.ts:294-309), so the context estimate holds no kept tail either.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from snapcompact.agent import SessionMaintenance
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionPipeline,
    ModelInfo,
    Session,
    merge_settings,
)
from snapcompact.compaction.openai_compact import native_history
from snapcompact.compaction.tokens import byte_estimate

GPT = ModelInfo("gpt-5", 60_000, provider="openai", api="openai-responses")
SETTINGS = merge_settings(DEFAULT_SETTINGS, {"compaction": {"reserveTokens": 4000,
                                                            "keepRecentTokens": 3000}})
HISTORY = [{"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "turn 0: please refactor"}]},
           {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque-1"}]
SUMMARY = "Remote compaction preserved provider-native history for this session."


def _remote(provider: str = "openai", history: list | None = None) -> dict:
    items = HISTORY if history is None else history
    return {"openaiRemoteCompaction": {"provider": provider, "replacementHistory": items,
                                       "compactionItem": items[-1] if items else None}}


def _session(preserve: dict | None) -> tuple[Session, list[str]]:
    """u0 a0 u1 a1 | compaction (kept from u1) | u2 a2."""
    s = Session()
    ids = []
    for i in range(2):
        ask = f"question {i} " + "word " * 50
        ids.append(s.append_message({"role": "user", "content": ask}).id)
        ids.append(s.append_message({"role": "assistant", "stopReason": "stop",
                                     "content": [{"type": "text", "text": f"answer {i}"}]}).id)
    s.append_compaction(SUMMARY, ids[2], 9000, short_summary="Remote compaction",
                        preserve_data=preserve)
    for i in (2,):
        ids.append(s.append_message({"role": "user", "content": f"question {i}"}).id)
        ids.append(s.append_message({"role": "assistant", "stopReason": "stop",
                                     "content": [{"type": "text", "text": f"answer {i}"}]}).id)
    return s, ids


def _wire(pipeline: CompactionPipeline) -> list[dict]:
    return [m.to_json() for m in pipeline.llm_messages()]


def _texts(wire: list[dict]) -> list[str]:
    out = []
    for m in wire:
        content = m["content"]
        out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def test_remote_compaction_replaces_the_kept_tail_and_carries_the_history():
    session, _ = _session(_remote())
    wire = _wire(CompactionPipeline(session, GPT, settings=SETTINGS))
    # Summary message, then only the entries after the compaction: u1/a1 (kept) are not sent.
    assert _texts(wire)[1:] == ["question 2", "answer 2"]
    assert SUMMARY in _texts(wire)[0]
    assert wire[0]["role"] == "user"
    assert wire[0]["providerPayload"] == {"type": "openaiResponsesHistory", "provider": "openai",
                                          "items": HISTORY}
    assert all("providerPayload" not in m for m in wire[1:])


def test_without_valid_history_the_kept_tail_is_sent():
    # A local summary, an empty provider, a non-object item: the kept tail (u1, a1) follows.
    for preserve in (None, _remote(provider=""), _remote(history=[*HISTORY, "not an object"])):
        session, _ = _session(preserve)
        wire = _wire(CompactionPipeline(session, GPT, settings=SETTINGS))
        assert _texts(wire)[1:] == ["question 1 " + "word " * 50, "answer 1", "question 2",
                                    "answer 2"]
        assert "providerPayload" not in wire[0]
    # Valid without a compaction item: production's test does not look for one (:197-209).
    session, _ = _session(_remote(history=HISTORY[:1]))
    assert _texts(_wire(CompactionPipeline(session, GPT, settings=SETTINGS)))[1:] == [
        "question 2", "answer 2"]


def test_replay_through_entry_sends_what_the_history_does_not_hold():
    session, ids = _session(_remote())
    compaction = session.latest_compaction()
    session.replace_entries({compaction.id: replace(
        compaction, extra={"providerReplayThroughEntryId": ids[2]})})
    wire = _wire(CompactionPipeline(session, GPT, settings=SETTINGS))
    assert _texts(wire)[1:] == ["answer 1", "question 2", "answer 2"]


def test_the_context_estimate_counts_what_is_sent():
    session, _ = _session(_remote())
    pipeline = CompactionPipeline(session, GPT, settings=SETTINGS)
    # Summary text + u2 + a2, bytes/4 per fragment (the tokenizer's count without a native one).
    expected = byte_estimate([SUMMARY]) + byte_estimate(["question 2"]) + byte_estimate(
        ["answer 2"])
    assert pipeline.estimate_tokens() == expected
    assert session.branch_index.context_entry_ids() == list(pipeline.context().entry_ids)
    maint = SessionMaintenance(session, GPT, settings=SETTINGS)
    assert maint.view.stored_tokens() == expected


def test_a_responses_request_replays_the_items_in_place_of_the_summary():
    session, _ = _session(_remote())
    wire = _wire(CompactionPipeline(session, GPT, settings=SETTINGS))
    items = native_history(wire, provider="openai")
    assert items[:2] == HISTORY
    assert [i.get("role") for i in items[2:]] == ["user", "assistant"]
    # Another provider's request gets the summary text instead (the payload is OpenAI's).
    other = native_history(wire, provider="azure-openai-responses")
    assert other[0]["content"][0]["text"] == _texts(wire)[0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_the_pipeline_and_the_maintenance_send_the_replay_after_a_remote_compaction():
    answers = []

    def responses_compact(request):
        answers.append(request)
        return {"output": [{"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": "kept by the server"}]},
                           {"type": "compaction", "id": "cmp_9", "encrypted_content": "opaque"}]}

    session = Session()
    for i in range(12):
        session.append_message({"role": "user", "content": f"turn {i}: " + "please go on " * 150})
        session.append_message({"role": "assistant", "stopReason": "stop",
                                "content": [{"type": "text", "text": f"done {i}"}]})
    maint = SessionMaintenance(session, GPT, settings=SETTINGS,
                               responses_compact=responses_compact)
    assert maint.view.method_order()[0] == "remote"
    round_ = maint.before_prompt([{"role": "user", "content": "next " * 40000}])
    assert round_ is not None and round_.method == "remote" and answers
    wire = [m.to_json() for m in maint.llm_messages()]
    assert len(wire) == 1 and wire[0]["providerPayload"]["items"][-1]["id"] == "cmp_9"
    assert native_history(wire, provider="openai")[0]["content"][0]["text"] == \
        "kept by the server"
