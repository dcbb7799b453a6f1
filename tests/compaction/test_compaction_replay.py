"""Replay, chat conversion and the whole-request bill: the library entry points the harness and
``python -m snapcompact compact`` share.

Expected chat messages are written out by hand in the OpenAI chat-completions shape (the
format litellm accepts); image sizes come from Pillow; the Anthropic figure is the documented
28 px patch rule worked by hand.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import warnings

import pytest
from compaction_synth import read_turns
from locations import REPO
from PIL import Image

from snapcompact.archive import messages_from_json
from snapcompact.billing import bill_request, png_size
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionEntry,
    ModelInfo,
    Session,
    load_session_messages,
    merge_settings,
    replay_session,
    replay_settings,
    to_chat_messages,
    user_question,
)


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (width, height), 255).save(out, format="PNG")
    return out.getvalue()


def test_chat_messages_follow_the_chat_completions_shape():
    png = base64.b64encode(_png(4, 3)).decode()
    wire = messages_from_json([
        {"role": "user", "content": [{"type": "text", "text": "summary"},
                                     {"type": "image", "data": png, "mimeType": "image/png",
                                      "detail": "high"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                          {"type": "text", "text": "Reading it."},
                                          {"type": "toolCall", "id": "call_1", "name": "read",
                                           "arguments": {"path": "a.py", "limit": 3}}]},
        {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
         "content": [{"type": "text", "text": "1\tx = 1"}], "isError": False},
        {"role": "developer", "content": "be brief"},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ])
    assert to_chat_messages(wire) == [
        {"role": "user", "content": [
            {"type": "text", "text": "summary"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}",
                                                "detail": "high"}}]},
        {"role": "assistant", "content": "Reading it.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read", "arguments": '{"path":"a.py","limit":3}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1\tx = 1"},
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": "Done."},
    ]
    assert user_question("Q?") == {"role": "user", "content": [{"type": "text", "text": "Q?"}]}
    with pytest.raises(ValueError, match="non-empty"):
        user_question("  ")


def test_tool_result_images_follow_the_tool_messages_in_a_user_message():
    png = base64.b64encode(_png(2, 2)).decode()
    wire = messages_from_json([
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "shot",
                                           "arguments": {}}]},
        {"role": "toolResult", "toolCallId": "c", "toolName": "shot", "isError": False,
         "content": [{"type": "text", "text": "ok"},
                     {"type": "image", "data": png, "mimeType": "image/png"}]},
    ])
    chat = to_chat_messages(wire)
    assert [m["role"] for m in chat] == ["assistant", "tool", "user"]
    assert chat[0]["content"] is None  # tool calls only
    assert chat[2]["content"] == [{"type": "image_url",
                                   "image_url": {"url": f"data:image/png;base64,{png}"}}]


def test_png_size_reads_the_header_like_pillow():
    for w, h in ((1, 1), (1568, 176), (37, 1092)):
        assert png_size(_png(w, h)) == (w, h)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a" + b"\0" * 30)


def test_request_bill_prices_each_image_by_the_provider_rule():
    """claude-sonnet-4-5 sees a 1568 px square frame at 1092 px (its long-edge cap): 28 px patches,
    ceil(1092/28)^2 = 39^2 = 1,521 tokens; a 1568 x 176 strip fits: 56 x 7 = 392 tokens."""
    url = "data:image/png;base64," + base64.b64encode(_png(1568, 1568)).decode()
    strip = "data:image/png;base64," + base64.b64encode(_png(1568, 176)).decode()
    chat = [{"role": "user", "content": [{"type": "text", "text": "abcd" * 10},
                                          {"type": "image_url", "image_url": {"url": url}},
                                          {"type": "image_url", "image_url": {"url": strip}}]}]
    bill = bill_request(chat, "claude-sonnet-4-5", api="anthropic-messages", provider="anthropic")
    assert [b.tokens for b in bill.images] == [1521, 392]
    assert (bill.images[0].seen_width, bill.images[0].seen_height) == (1092, 1092)
    assert bill.image_tokens == 1913 and bill.billed_tokens == bill.text_tokens + 1913
    assert bill.text_chars == 40
    with pytest.raises(ValueError, match="data: URL"):
        bill_request([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.org/x.png"}}]}],
            "claude-sonnet-4-5")


# --------------------------------------------------------------------------------------------
# replay


_session = read_turns


MODEL = ModelInfo(id="claude-sonnet-4-5", context_window=8000, provider="anthropic",
                  api="anthropic-messages", include_thinking=False)
BASE = merge_settings(DEFAULT_SETTINGS, {"compaction": {"keepRecentTokens": 1500,
                                                        "reserveTokens": 1000}})


def _replay(strategy: str, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return replay_session(_session(), MODEL, replay_settings(strategy, BASE, **kw),
                              strategy=strategy)


def test_full_keeps_every_message_and_never_compacts():
    replay = _replay("full")
    assert replay.compactions == 0 and set(replay.discarded_round) == {0}
    assert len(replay.llm_messages()) == len(_session())


@pytest.mark.parametrize("strategy, kw", [("truncate", {}),
                                          ("snapcompact", {"shape": "6x6u-bw",
                                                           "policy": "pinned"})])
def test_discarded_round_says_whether_a_message_reached_the_next_turn(strategy, kw):
    replay = _replay(strategy, **kw)
    compactions = [e for e in replay.pipeline.session.get_branch()
                   if isinstance(e, CompactionEntry)]
    assert replay.compactions == len(compactions) >= (2 if strategy == "truncate" else 1)
    text = json.dumps(to_chat_messages(replay.llm_messages()))
    source = _session()
    for i, message in enumerate(source):
        if message["role"] != "user":
            continue
        marker = message["content"][0]["text"]
        round_ = replay.discarded_round[i]
        assert 0 <= round_ <= replay.compactions
        if strategy == "truncate":  # dropped history is gone from the next turn's text
            assert (marker in text) == (round_ == 0), (i, round_)
        elif round_ == 0:
            assert marker in text
    rounds = [r for r in replay.discarded_round if r]
    assert rounds == sorted(rounds)  # older messages are discarded no later than newer ones
    assert set(rounds) <= set(range(1, replay.compactions + 1))


def test_replay_is_deterministic_byte_for_byte():
    a = _replay("snapcompact", shape="6x6u-bw", policy="pinned")
    b = _replay("snapcompact", shape="6x6u-bw", policy="pinned")
    assert json.dumps(to_chat_messages(a.llm_messages())) == \
        json.dumps(to_chat_messages(b.llm_messages()))
    assert a.frames_in_archive() > 0


def test_llm_strategies_need_a_completion_function_and_count_its_usage():
    with pytest.raises(ValueError, match="give a completion function"):
        replay_session(_session(), MODEL, replay_settings("context-full", BASE),
                       strategy="context-full")
    calls = []

    def complete(system, prompt, *, max_tokens):
        calls.append(max_tokens)
        return {"text": "## Goal\nsummary", "usage": {"input": 100, "output": 7}}

    replay = replay_session(_session(), MODEL, replay_settings("context-full", BASE),
                            strategy="context-full", complete=complete)
    assert replay.compactions >= 1 and replay.llm_calls == len(calls) >= replay.compactions
    assert replay.llm_usage == {"input": 100 * len(calls), "output": 7 * len(calls)}


def test_settings_reject_shapes_for_strategies_without_frames():
    with pytest.raises(ValueError, match="snapcompact only"):
        replay_settings("truncate", BASE, shape="8on22-bw")
    with pytest.raises(ValueError, match="unknown replay strategy"):
        replay_settings("shrink", BASE)


def test_session_files_load_as_tree_or_list(tmp_path):
    messages = _session(3)
    as_list = tmp_path / "s.json"
    as_list.write_text(json.dumps(messages))
    tree = Session(tmp_path / "s.jsonl", fsync=False)
    for m in messages:
        tree.append_message(m)
    assert load_session_messages(as_list) == messages
    assert load_session_messages(tmp_path / "s.jsonl") == messages
    bad = tmp_path / "bad.json"
    bad.write_text('[{"content": "no role"}]')
    with pytest.raises(ValueError, match="string 'role'"):
        load_session_messages(bad)
    with pytest.raises(ValueError, match="does not exist"):
        load_session_messages(tmp_path / "missing.json")


def test_compact_command_writes_session_context_and_frames(tmp_path):
    session = tmp_path / "s.json"
    session.write_text(json.dumps(_session(160)))
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"compaction": {"keepRecentTokens": 4000,
                                                   "reserveTokens": 1000}}))
    out = tmp_path / "out"
    (out / "frames").mkdir(parents=True)
    (out / "frames" / "999.png").write_bytes(b"stale")
    # No system prompt (the default counts the agent's own, ~2k tokens of this small window).
    no_prompt = tmp_path / "empty-prompt.txt"
    no_prompt.write_text("")

    def run(*extra):
        return subprocess.run(
            [sys.executable, "-m", "snapcompact", "compact", str(session), "--model",
             "claude-sonnet-4-5", "--api", "anthropic-messages", "--context-window", "32000",
             "--settings", str(settings), "--system-prompt", str(no_prompt), "--out", str(out),
             *extra],
            capture_output=True, text=True, cwd=REPO, timeout=300, check=False)

    done = run()
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["compactions"] >= 2 and summary["frames"] >= 1
    # what production sends: the frames within the cap, the payload and the window budget
    assert summary["frames"] <= summary["frame_cap"]["max"] <= 2
    assert summary["frame_payload_bytes"] <= 3_000_000 and summary["fits_window"]
    assert summary["passes"] == len(summary["rounds"]) >= summary["compactions"]
    assert all(r["attempts"][0] == {"method": "remote", "status": "unusable", "reason":
                                    r["attempts"][0]["reason"]} for r in summary["rounds"])
    assert summary["context_billed_tokens"] == (summary["context_text_tokens"]
                                                + summary["context_image_tokens"])
    frames = sorted(p.name for p in (out / "frames").iterdir())
    assert frames == [f"{i:03d}.png" for i in range(summary["frames"])]  # stale frame gone
    context = json.loads((out / "context.json").read_text())
    urls = [p["image_url"]["url"] for m in context if isinstance(m["content"], list)
            for p in m["content"] if p["type"] == "image_url"]
    assert urls == [f"frames/{n}" for n in frames]
    reloaded = Session.load(out / "session.jsonl")
    assert sum(isinstance(e, CompactionEntry) for e in reloaded.entries) == summary["compactions"]
    refused = run("--strategy", "context-full")
    assert refused.returncode == 2 and "needs an LLM" in refused.stderr
    assert "Traceback" not in refused.stderr
