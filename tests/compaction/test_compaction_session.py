"""Session storage, tree, context rebuild, settings and triggers (seed defaults and formulas)."""

from __future__ import annotations

import json
import math

import pytest

from snapcompact.archive import DeveloperMessage, ImageBlock, UserMessage
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    DIVIDER,
    CompactionEntry,
    CompactionSettings,
    MessageEntry,
    Session,
    build_session_context,
    convert_to_llm,
    decide_after_turn,
    is_context_overflow,
    load_settings,
    merge_settings,
    resolve_threshold_tokens,
    should_run_idle,
)


def _ids():
    counter = iter(range(10_000))
    return lambda: f"e{next(counter):04d}"


def seed_diagram_session(path=None) -> tuple[Session, list[str]]:
    """The seed's figure: usr ass tool usr ass tool tool ass tool (entries 1..9)."""
    s = Session(path, id_factory=_ids(), clock=lambda: 1_700_000_000.0)
    ids = []
    ids.append(s.append_message({"role": "user", "content": "fix the bug"}).id)
    ids.append(s.append_message({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py"}}]}).id)
    ids.append(s.append_message({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                                 "content": [{"type": "text", "text": "print(1)"}], "isError": False}).id)
    ids.append(s.append_message({"role": "user", "content": "now the tests"}).id)
    ids.append(s.append_message({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "pytest"}},
        {"type": "toolCall", "id": "c3", "name": "read", "arguments": {"path": "t.py"}}]}).id)
    ids.append(s.append_message({"role": "toolResult", "toolCallId": "c2", "toolName": "bash",
                                 "content": [{"type": "text", "text": "1 failed"}], "isError": False}).id)
    ids.append(s.append_message({"role": "toolResult", "toolCallId": "c3", "toolName": "read",
                                 "content": [{"type": "text", "text": "def test(): ..."}], "isError": False}).id)
    ids.append(s.append_message({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c4", "name": "edit", "arguments": {"path": "t.py"}}]}).id)
    ids.append(s.append_message({"role": "toolResult", "toolCallId": "c4", "toolName": "edit",
                                 "content": [{"type": "text", "text": "ok"}], "isError": False}).id)
    return s, ids


def test_seed_diagram_context_starts_at_first_kept_entry():
    s, ids = seed_diagram_session()
    comp = s.append_compaction("SUMMARY", ids[3], 1234)
    ctx = build_session_context(s.get_branch())
    assert ctx.entry_ids == (comp.id, *ids[3:])
    assert ctx.messages[0]["role"] == "compactionSummary" and ctx.messages[0]["summary"] == "SUMMARY"
    # Display transcript: everything, the compaction inline as a divider where it fired.
    tr = build_session_context(s.get_branch(), transcript=True)
    assert tr.entry_ids == (*ids, comp.id)
    assert tr.messages[-1]["divider"] == DIVIDER
    # Later entries follow the kept ones.
    later = s.append_message({"role": "user", "content": "next"})
    assert build_session_context(s.get_branch()).entry_ids[-1] == later.id


def test_context_roles_convert_like_the_seed():
    s, ids = seed_diagram_session()
    s.append_custom_message("note", "raw developer text")
    s.branch_with_summary(s.leaf_id, ids[0], "BRANCH")
    s.append_compaction("SUM", ids[3], 10)
    wire = convert_to_llm(build_session_context(s.get_branch()).messages)
    assert isinstance(wire[0], UserMessage) and "SUM" in wire[0].content[0].text
    dev = [m for m in wire if isinstance(m, DeveloperMessage)]
    assert [m.content for m in dev] == ["raw developer text"]  # custom: raw content, no template
    assert any(isinstance(m, UserMessage) and not isinstance(m.content, str) and "BRANCH" in m.content[0].text
               for m in wire)


def test_snapcompact_summary_reattaches_frames_as_images():
    from snapcompact.archive import compact

    s, ids = seed_diagram_session()
    msgs = [e.message for e in s.get_branch()[:3]] * 20
    result = compact(msgs, model_id="claude-sonnet-4-5", api="anthropic-messages", frame_size=256)
    s.append_compaction(result.summary, ids[3], 100, preserve_data=result.preserve_data)
    first = convert_to_llm(build_session_context(s.get_branch()).messages)[0]
    assert first.content[0].text == result.summary  # guide first, no template
    assert sum(isinstance(b, ImageBlock) for b in first.content) == len(result.archive.frames) > 0


def test_jsonl_reload_is_identical(tmp_path):
    path = tmp_path / "s.jsonl"
    s, ids = seed_diagram_session(path)
    s.append_metadata("model_change", provider="anthropic", modelId="claude")
    s.append_compaction("S", ids[3], 99, details={"readFiles": ["a.py"], "modifiedFiles": []},
                        preserve_data={"x": 1})
    s.branch(ids[4])
    s.append_message({"role": "user", "content": "branch two"})
    s.branch(ids[2])  # leaf moved with no new entry: persisted as a leaf record
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])
    loaded = Session.load(path)
    assert loaded.entries == s.entries and loaded.leaf_id == s.leaf_id == ids[2]
    assert build_session_context(loaded.get_branch()) == build_session_context(s.get_branch())
    assert len(loaded.children(ids[3])) == 1 and len(loaded.children(ids[4])) == 2


def test_torn_last_line_is_ignored_and_rewrite_is_atomic(tmp_path):
    path = tmp_path / "s.jsonl"
    s, ids = seed_diagram_session(path)
    with open(path, "ab") as fh:
        fh.write(b'{"type":"message","id":"zz","par')
    with pytest.warns(UserWarning, match="torn"):
        loaded = Session.load(path)
    assert [e.id for e in loaded.entries] == ids
    new = {**s.get(ids[2]).message, "content": [{"type": "text", "text": "[Output truncated - 9 tokens]"}]}
    s.replace_messages({ids[2]: new})
    again = Session.load(path)
    assert again.get(ids[2]).message == new and again.entries == s.entries


def test_bad_entries_are_rejected(tmp_path):
    s, ids = seed_diagram_session()
    with pytest.raises(ValueError, match="firstKeptEntryId"):
        s.append_compaction("x", "nope", 1)
    with pytest.raises(ValueError, match="unknown parent"):
        s.append(MessageEntry("new", "missing", "t", {"role": "user", "content": ""}))
    with pytest.raises(ValueError, match="duplicate"):
        s.append(MessageEntry(ids[0], None, "t", {"role": "user", "content": ""}))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"message","id":"a"}\n')
    with pytest.raises(ValueError, match="session header"):
        Session.load(bad)
    assert CompactionEntry.from_json(
        {"type": "compaction", "id": "c", "parentId": None, "timestamp": "t", "summary": "s",
         "firstKeptEntryId": "a", "tokensBefore": 3, "fromHook": True}, "x").from_extension


# ---------------------------------------------------------------------------------- settings


def test_seed_defaults():
    c = DEFAULT_SETTINGS.compaction
    assert (c.enabled, c.strategy, c.reserve_tokens, c.keep_recent_tokens, c.auto_continue, c.remote_enabled,
            c.remote_endpoint, c.threshold_percent, c.threshold_tokens, c.idle_enabled, c.idle_threshold_tokens,
            c.idle_timeout_seconds) == (True, "context-full", 16384, 20000, True, True, None, -1, -1, False,
                                        200000, 300)
    assert (DEFAULT_SETTINGS.branch_summary.enabled, DEFAULT_SETTINGS.branch_summary.reserve_tokens) == (False, 16384)
    p = DEFAULT_SETTINGS.pruning
    assert (p.protect_tokens, p.minimum_savings, p.min_prune_tokens, p.protected_tools) == (40000, 20000, 50, ("skill",))


@pytest.mark.parametrize("window", [8_000, 32_000, 128_000, 200_000, 1_000_000])
def test_threshold_is_window_minus_max_15_percent_or_reserve(window):
    expected = window - max(math.floor(0.15 * window), 16384)
    if expected < 1:
        expected = window - math.floor(0.15 * window)
    assert resolve_threshold_tokens(window, CompactionSettings()) == expected


def test_threshold_overrides_clamp():
    assert resolve_threshold_tokens(100_000, CompactionSettings(threshold_tokens=50_000)) == 50_000
    assert resolve_threshold_tokens(100_000, CompactionSettings(threshold_tokens=500_000)) == 99_999
    assert resolve_threshold_tokens(100_000, CompactionSettings(threshold_percent=70)) == 70_000
    assert resolve_threshold_tokens(100_000, CompactionSettings(threshold_percent=150)) == 99_000


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_project_settings_file_merges_over_defaults(tmp_path, suffix):
    f = tmp_path / f"settings{suffix}"
    if suffix == ".toml":
        f.write_text('[compaction]\nstrategy = "snapcompact"\nkeepRecentTokens = 30000\n[branchSummary]\nenabled = true\n')
    else:
        f.write_text(json.dumps({"compaction": {"strategy": "snapcompact", "keepRecentTokens": 30000},
                                 "branchSummary": {"enabled": True}}))
    s = load_settings(f)
    assert s.compaction.strategy == "snapcompact" and s.compaction.keep_recent_tokens == 30000
    assert s.compaction.reserve_tokens == 16384 and s.branch_summary.enabled


@pytest.mark.parametrize("override, message", [
    ({"compaction": {"strategy": "shrink"}}, "compaction.strategy"),
    ({"compaction": {"keepRecentToken": 5}}, "unknown setting compaction.keepRecentToken"),
    ({"compaction": {"reserveTokens": "big"}}, "compaction.reserveTokens must be an integer"),
    ({"pruning": {"protectTokens": -1}}, "pruning.protectTokens must be >= 0"),
    ({"snapcompact": {"shape": "nope"}}, "snapcompact.shape"),
    ({"compactions": {}}, "unknown settings section"),
])
def test_bad_settings_name_the_key(override, message):
    with pytest.raises(ValueError, match=message):
        merge_settings(DEFAULT_SETTINGS, override)


# ---------------------------------------------------------------------------------- triggers


def _assistant(**kw):
    return {"role": "assistant", "content": [{"type": "text", "text": "x"}], "stopReason": "stop", **kw}


def test_triggers_after_turn():
    cs = CompactionSettings()
    overflow = _assistant(stopReason="error", errorMessage="prompt is too long: 210000 tokens > 200000 maximum")
    assert is_context_overflow(overflow)
    t = decide_after_turn(overflow, context_window=200_000, settings=cs)
    assert (t.reason, t.will_retry, t.remove_last_message) == ("overflow", True, True)
    t = decide_after_turn(_assistant(stopReason="length"), context_window=200_000, settings=cs)
    assert (t.reason, t.will_retry) == ("incomplete", True)
    assert decide_after_turn(_assistant(), context_window=200_000, settings=cs, context_tokens=170_000) is None
    t = decide_after_turn(_assistant(), context_window=200_000, settings=cs, context_tokens=170_001)
    assert (t.reason, t.will_retry, t.auto_continue, t.threshold_tokens) == ("threshold", False, True, 170_000)
    # Another model's overflow, or one older than the latest compaction, is not ours to recover.
    assert decide_after_turn({**overflow, "model": "other"}, context_window=200_000, settings=cs, model_id="m") is None
    assert decide_after_turn({**overflow, "timestamp": 5}, context_window=200_000, settings=cs,
                             latest_compaction_time=10) is None
    assert decide_after_turn(overflow, context_window=200_000, settings=CompactionSettings(enabled=False)) is None


def test_idle_trigger():
    on = CompactionSettings(idle_enabled=True)
    assert should_run_idle(CompactionSettings(), context_tokens=300_000, idle_seconds=999) is None  # off by default
    assert should_run_idle(on, context_tokens=300_000, idle_seconds=299) is None
    assert should_run_idle(on, context_tokens=199_999, idle_seconds=301) is None
    assert should_run_idle(on, context_tokens=300_000, idle_seconds=301, streaming=True) is None
    t = should_run_idle(on, context_tokens=300_000, idle_seconds=301)
    assert (t.reason, t.auto_continue, t.will_retry) == ("idle", False, False)
