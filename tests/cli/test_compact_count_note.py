"""``compact`` says why the agent's count and the next request's bill differ.

A session with thinking blocks, replayed at a window it fits: nothing is compacted, so the next
request is the session itself. The agent counts the thinking text and the chat request does not
send it. The expected thinking share is measured without the code under test: the same session
with its thinking blocks removed, replayed the same way; the agent's counts differ by exactly
that share, and the bill does not change.
"""

from __future__ import annotations

import json

from compaction_synth import read_turns

from snapcompact.agent import CompactRequest, compact_session_file

THOUGHT = "Let me think about which file holds the fact before I answer. " * 12


def _with_thinking(turns: int = 6) -> list[dict]:
    out = []
    for message in read_turns(turns, size=400):
        if message["role"] == "assistant":
            message = {**message, "content": [{"type": "thinking", "thinking": THOUGHT},
                                              *message["content"]]}
        out.append(message)
    return out


def _compact(tmp_path, name: str, messages: list[dict]) -> dict:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(messages))
    return compact_session_file(CompactRequest(
        session=str(path), model="claude-sonnet-4-5", out=str(tmp_path / name),
        context_window=200_000))


def test_the_summary_names_the_thinking_blocks_between_count_and_bill(tmp_path):
    thinking = _with_thinking()
    plain = [{**m, "content": [b for b in m["content"] if b.get("type") != "thinking"]}
             if m["role"] == "assistant" else m for m in thinking]
    with_t, without = _compact(tmp_path, "t", thinking), _compact(tmp_path, "p", plain)
    assert with_t["compactions"] == without["compactions"] == 0
    share = with_t["context_tokens_estimate"] - without["context_tokens_estimate"]
    assert share > 0 and with_t["context_billed_tokens"] == without["context_billed_tokens"]
    note = with_t["count_note"]
    assert f"{share:,} tokens of thinking blocks, which the next request does not send" in note
    assert f"agent's count ({with_t['context_tokens_estimate']:,}" in note
    assert f"next request's bill ({with_t['context_billed_tokens']:,}" in note
    assert "thinking" not in (without["count_note"] or "")
