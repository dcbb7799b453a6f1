"""The ``shake`` strategy in the pipeline and the replay (the coding agent's auto-shake).

Expectations come from the coding agent 18.3.4 (``session-maintenance.ts``): shake runs inline
with the default preset (16k protected tail, 4k minimum savings) at the latest compaction
boundary; a region's placeholder is ``[shaken ~N tokens — recover: artifact://ID (region K)]``
and the artifact holds ``### region K (label, ~N tok)`` then the original; no compaction entry is
written; when shake frees nothing on overflow, or leaves the context above 80 % of the threshold,
the next method (a context-full summary) runs; idle maintenance never falls back. The sessions are
built so the elided results can be counted by hand: every tool result is exactly 2,000 tokens
(8,000 ASCII bytes) and everything else is a few tokens.
"""

from __future__ import annotations

import warnings

import pytest
from compaction_synth import FakeLLM

from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionEntry,
    CompactionPipeline,
    CompactionSettings,
    ModelInfo,
    Session,
    build_session_context,
    merge_settings,
    prompt,
    replay_session,
    replay_settings,
    shake_in_place,
)

MODEL = ModelInfo("claude-sonnet-4-5", 40_000, provider="anthropic", api="anthropic-messages")
# threshold = 40,000 - max(15 % = 6,000, reserve 8,000) = 32,000
RESULT = ("alpha " * 1400)[:8000]  # 8,000 bytes = 2,000 tokens


def _settings(strategy: str = "shake"):
    return merge_settings(DEFAULT_SETTINGS, {"compaction": {"strategy": strategy, "reserveTokens": 8000,
                                                            "keepRecentTokens": 8000}})


def _messages(results: int, *, opening: str = "start") -> list[dict]:
    out: list[dict] = [{"role": "user", "content": opening}]
    for i in range(results):
        call = {"type": "toolCall", "id": f"c{i}", "name": "read", "arguments": {"path": f"src/f{i}.py"}}
        out.append({"role": "assistant", "content": [call], "stopReason": "toolUse"})
        out.append({"role": "toolResult", "toolCallId": f"c{i}", "toolName": "read",
                    "content": [{"type": "text", "text": RESULT}], "isError": False})
    return out


def _pipeline(session: Session, strategy: str = "shake", complete=None) -> CompactionPipeline:
    return CompactionPipeline(session, MODEL, settings=_settings(strategy), complete=complete or FakeLLM(),
                              clock=lambda: 5_000.0)


def _feed(p: CompactionPipeline, messages: list[dict]) -> None:
    for m in messages:
        p.session.append_message(m)


def _result_texts(p: CompactionPipeline) -> list[str]:
    return [e.message["content"][0]["text"] for e in p.session.get_branch()
            if e.type == "message" and e.role == "toolResult"]


def test_threshold_shake_elides_old_results_in_place_with_recovery_artifact(tmp_path):
    session_file = tmp_path / "s.jsonl"
    p = _pipeline(Session(session_file))
    events = []
    p.listeners.append(events.append)
    _feed(p, _messages(17))
    assert p.estimate_tokens() > p.threshold() == 32_000
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback notice
        outcome = p.after_turn({"role": "assistant", "content": [{"type": "text", "text": "done"}],
                                "stopReason": "stop"})
    assert outcome.strategy == "shake" and outcome.entry is None and outcome.error is None
    # Results 0..8 have at least 8 x 2,000 = 16,000 tokens after them; 9..16 are the protected tail.
    texts = _result_texts(p)
    expected = [f"[shaken ~2000 tokens \u2014 recover: artifact://0 (region {k + 1})]" for k in range(9)]
    assert texts == expected + [RESULT] * 8
    assert outcome.shaken.tool_results_dropped == 9 and outcome.shaken.blocks_dropped == 0
    placeholder_tokens = sum(-(-len(t.encode()) // 4) for t in expected)
    assert outcome.shaken.tokens_freed == 9 * 2000 - placeholder_tokens
    assert outcome.tokens_before - outcome.tokens_after == outcome.shaken.tokens_freed
    assert not any(isinstance(e, CompactionEntry) for e in p.session.get_branch())
    # The originals are recoverable, one heading per region.
    artifact = (tmp_path / "s" / "0.shake.log").read_text()
    assert artifact == "".join(f"### region {k + 1} (read, ~2000 tok)\n\n{RESULT}\n\n" for k in range(9))[:-1]
    # Elided results are stamped like pruned ones; the tool calls are untouched.
    results = [e for e in p.session.get_branch() if e.type == "message" and e.role == "toolResult"]
    assert {e.message["prunedAt"] for e in results[:9]} == {5_000_000}  # the pipeline clock, in ms
    assert all("prunedAt" not in e.message for e in results[9:])
    # Threshold maintenance resumes the work; the session file reloads to the same context.
    last = p.session.get_branch()[-1]
    assert last.message["content"] == [{"type": "text", "text": prompt("auto-continue")}]
    assert build_session_context(Session.load(session_file).get_branch()) == p.context()
    assert [e["type"] for e in events] == ["auto_compaction_start", "auto_compaction_end"]


def test_nothing_to_elide_falls_back_to_context_full():
    llm = FakeLLM()
    p = _pipeline(Session(), complete=llm)
    # Chat text only (no tool results, no fenced blocks): shake finds nothing.
    for i in range(40):
        p.session.append_message({"role": "user", "content": f"turn {i} " + "word " * 800})
        p.session.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                                  "stopReason": "stop"})
    with pytest.warns(RuntimeWarning, match="shake found nothing to elide: falling back to context-full"):
        outcome = p.compact(reason="threshold")
    assert outcome.strategy == "context-full" and isinstance(outcome.entry, CompactionEntry)
    assert "shake found nothing to elide: falling back to context-full" in outcome.warnings
    assert [c["kind"] for c in llm.calls][:1] == ["initial"]


def test_still_above_the_recovery_band_falls_back_after_eliding():
    p = _pipeline(Session())
    # A 30,000-token opening prompt shake cannot touch, then 17 results: after eliding 9 the
    # context (~46k) is still above the threshold, so the summary runs as well.
    _feed(p, _messages(17, opening="word " * 24_000))
    with pytest.warns(RuntimeWarning, match=r"shake freed ~\d+ tokens but the context is still above"):
        outcome = p.compact(reason="threshold")
    assert outcome.strategy == "context-full" and outcome.entry is not None
    assert _result_texts(p)[0].startswith("[shaken ~2000 tokens")  # the elision stays


def test_measured_prompt_is_checked_against_the_recovery_band():
    # Provider-anchored: 40,000 measured less ~17,850 freed = ~22,150 <= 0.8 x 32,000 = 25,600: done.
    p = _pipeline(Session())
    _feed(p, _messages(17))
    assert p.compact(reason="threshold", measured_prompt_tokens=40_000).strategy == "shake"
    # 45,000 measured leaves ~27,150 > 25,600: falls back.
    q = _pipeline(Session())
    _feed(q, _messages(17))
    with pytest.warns(RuntimeWarning, match="still above"):
        assert q.compact(reason="threshold", measured_prompt_tokens=45_000).strategy == "context-full"


def test_idle_shake_never_falls_back_and_overflow_does_when_nothing_is_freed():
    p = _pipeline(Session())
    _feed(p, _messages(17, opening="word " * 24_000))
    outcome = p.compact(reason="idle")
    assert outcome.strategy == "shake" and outcome.entry is None and outcome.auto_continue_prompt is None
    q = _pipeline(Session())
    _feed(q, _messages(6))  # nothing outside the 16,000-token protected tail
    with pytest.warns(RuntimeWarning, match="nothing to elide"):
        outcome = q.compact(reason="overflow", will_retry=True)
    assert outcome.strategy == "context-full" and outcome.will_retry
    assert outcome.warnings[0] == "shake found nothing to elide: falling back to context-full"


def test_manual_compaction_summarizes_and_manual_shake_is_aggressive():
    p = _pipeline(Session())
    _feed(p, _messages(17))
    assert p.compact().strategy == "context-full"
    q = _pipeline(Session())
    _feed(q, _messages(5))
    # The aggressive preset keeps a 4,000-token tail only and has no minimum saving: 3 of 5 go
    # (result 2 has exactly 2 results = 4,000 tokens plus nothing else after it... and the calls).
    applied = shake_in_place(q)
    assert applied.tool_results_dropped == 3
    # In memory the agent keeps the artifact in memory and links it (session-manager.ts:2585-2589).
    assert _result_texts(q) == [f"[shaken ~2000 tokens \u2014 recover: artifact://0 (region {k})]"
                                for k in (1, 2, 3)] + [RESULT] * 2


def test_setting_accepts_shake():
    assert CompactionSettings(strategy="shake").strategy == "shake"
    with pytest.raises(ValueError, match="compaction.strategy must be one of context-full, snapcompact, handoff, "
                                         "shake, off, got 'shak'"):
        CompactionSettings(strategy="shak")


def test_replay_with_shake_counts_elided_messages_as_discarded():
    messages = _messages(17) + [{"role": "assistant", "content": [{"type": "text", "text": "done"}],
                                 "stopReason": "stop"}]
    with pytest.raises(ValueError, match="summarizes with an LLM"):
        replay_session(messages, MODEL, replay_settings("shake", _settings()), strategy="shake")
    replay = replay_session(messages, MODEL, replay_settings("shake", _settings()), strategy="shake",
                            complete=FakeLLM())
    assert [(r.strategy, r.reason) for r in replay.rounds] == [("shake", "threshold")]
    result_positions = [i for i, m in enumerate(messages) if m["role"] == "toolResult"]
    # The threshold is crossed at the assistant message calling the 17th read (16 results, 32,000+
    # tokens): results 0..7 have 8 results after them and go; the protected tail and result 16 stay.
    assert [replay.discarded_round[i] for i in result_positions] == [1] * 8 + [0] * 9
    assert replay.llm_calls == 0


def test_shake_artifacts_are_numbered_as_the_agent_numbers_them(tmp_path):
    """The agent's ids (session-manager.ts:2581-2590, artifacts.ts:75-158): in memory from 0 per
    session; on disk ``{id}.shake.log`` in the folder named like the session file without
    ``.jsonl``, continuing after the largest id already there (a resumed session)."""
    from snapcompact.compaction.artifacts import ArtifactStore

    memory = ArtifactStore()
    assert [memory.save(None, t, "shake") for t in ("a", "b")] == ["0", "1"]
    assert memory.in_memory == {"0": "a", "1": "b"}
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "4.bash-original.log").write_text("x")
    (folder / "notes.txt").write_text("x")
    disk = ArtifactStore()
    assert disk.save(tmp_path / "s.jsonl", "c", "shake") == "5"
    assert disk.save(tmp_path / "s.jsonl", "d", "shake") == "6"
    assert (folder / "6.shake.log").read_text() == "d"


def test_in_memory_shake_links_its_placeholders():
    """A session without a file gets the agent's linked placeholder too (no link-less line)."""
    p = _pipeline(Session(None))
    _feed(p, _messages(17))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p.after_turn({"role": "assistant", "content": [{"type": "text", "text": "done"}],
                      "stopReason": "stop"})
    texts = _result_texts(p)
    assert texts[:9] == [f"[shaken ~2000 tokens \u2014 recover: artifact://0 (region {k + 1})]"
                         for k in range(9)]
    assert p.artifacts.in_memory["0"].startswith("### region 1 (read, ~2000 tok)")
