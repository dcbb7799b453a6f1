"""The pre-prompt check reads the provider's recorded count, as coding agent 18.3.4 does.

Expected values come from the agent's source, not from this code: the pre-prompt context is
``max(getContextBreakdown().usedTokens, local estimate)`` (``session-maintenance.ts:2455-2462``;
``compactionContextTokens`` is a max); the breakdown anchors on the newest assistant message
after the latest compaction that ``isTranscriptUsageAnchor`` accepts and adds the local count of
the messages after it and the pending prompt (``session-stats.ts:207-318``); its base is
``contextSnapshot.promptTokens`` or ``calculatePromptTokens(usage)`` (contextTokens, else
input + cacheRead + cacheWrite, else the context tokens) less ``historyRewriteTokensRemoved``,
plus the non-message growth since the snapshot. The real-session case is checked against the
agent's own run (``upstream-agent run kimchi-dev__session.jsonl --window 32000 --steps 1``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from snapcompact.agent import SessionMaintenance, agent_settings
from snapcompact.agent.stepwise import replay_like_upstream_steps
from snapcompact.agent.usage_anchor import is_usage_anchor, prompt_tokens_of_usage
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    ModelInfo,
    Session,
    load_session_messages,
    merge_settings,
)

warnings.simplefilter("ignore", RuntimeWarning)
MODEL = ModelInfo(id="claude-sonnet-4-5", context_window=32_000, provider="anthropic",
                  api="anthropic-messages", include_thinking=False)
#: 32,000 - max(15 % of 32,000, 4,096) (the agent's resolveThresholdTokens).
THRESHOLD = 27_200
REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-sessions"


def _settings():
    return agent_settings("snapcompact", merge_settings(DEFAULT_SETTINGS, {"compaction": {
        "keepRecentTokens": 2000, "reserveTokens": 4096, "textTokenizer": "bytes4"}}))


@pytest.mark.parametrize(("usage", "tokens"), [
    ({"contextTokens": 500, "input": 10, "output": 4, "totalTokens": 14}, 500),
    ({"input": 100, "cacheRead": 20, "cacheWrite": 5, "output": 7, "totalTokens": 132}, 125),
    ({"input": 0, "cacheRead": 0, "cacheWrite": 0, "output": 3, "totalTokens": 50}, 50),
])
def test_prompt_tokens_are_calculate_prompt_tokens(usage, tokens):
    assert prompt_tokens_of_usage(usage) == tokens


ZERO = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}


@pytest.mark.parametrize(("message", "anchor"), [
    ({"role": "assistant", "stopReason": "stop", "usage": {**ZERO, "input": 9}}, True),
    ({"role": "assistant", "stopReason": "stop", "usage": {**ZERO, "contextTokens": 9}}, True),
    # only output tokens: the context is not above the output, nothing says the prompt size
    ({"role": "assistant", "stopReason": "stop", "usage": {**ZERO, "output": 9,
                                                           "totalTokens": 9}}, False),
    ({"role": "assistant", "stopReason": "stop", "usage": ZERO}, False),  # upstream-agent's fill
    ({"role": "assistant", "stopReason": "aborted", "usage": {**ZERO, "input": 9}}, False),
    ({"role": "assistant", "stopReason": "error", "usage": {**ZERO, "input": 9}}, False),
    ({"role": "assistant", "stopReason": "stop"}, False),
    ({"role": "user", "usage": {**ZERO, "input": 9}}, False),
])
def test_which_messages_anchor(message, anchor):
    assert is_usage_anchor(message) is anchor


def _text(role: str, text: str, **extra):
    return {"role": role, "content": [{"type": "text", "text": text}], **extra}


def _history(maint: SessionMaintenance, anchor_usage, snapshot=None) -> list[dict]:
    """Eight small turns, then a tool turn whose assistant message carries ``anchor_usage``;
    returns the messages appended after the anchor."""
    for i in range(8):
        maint.append(_text("user", f"question {i} " + "q" * 400))
        maint.append(_text("assistant", f"answer {i} " + "a" * 400, stopReason="stop"))
    maint.append(_text("user", "read the file"))
    anchor = {"role": "assistant", "stopReason": "toolUse", "usage": anchor_usage,
              "content": [{"type": "toolCall", "id": "c1", "name": "read",
                           "arguments": {"path": "a.py"}}]}
    if snapshot is not None:
        anchor["contextSnapshot"] = snapshot
    maint.append(anchor)
    after = [{"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False,
              "content": [{"type": "text", "text": "x = 1\n" * 50}]},
             _text("assistant", "done", stopReason="stop")]  # no usage: not an anchor
    for m in after:
        maint.append(m)
    return after


def _maintenance(recorded: bool = True) -> SessionMaintenance:
    return SessionMaintenance(Session(None, fsync=False), MODEL, settings=_settings(),
                              use_recorded_usage=recorded)


PROMPT = _text("user", "next question")


def test_recorded_usage_above_the_estimate_compacts_before_the_prompt():
    usage = {**ZERO, "input": 27_000, "cacheRead": 500, "output": 80, "totalTokens": 27_580}
    maint = _maintenance()
    after = _history(maint, usage)
    local = maint.view.stored_tokens([PROMPT])
    assert local < 6_000  # the stored estimate alone is far below the threshold
    estimator = maint.view.estimator
    expected = 27_500 + estimator.messages(after) + estimator.messages([PROMPT])
    assert expected > THRESHOLD
    done = maint.before_prompt([PROMPT])
    assert done is not None and done.check == "pre_prompt"
    assert done.trigger_tokens == expected
    assert done.threshold_tokens == THRESHOLD


def test_without_recorded_usage_the_same_session_does_not_compact():
    usage = {**ZERO, "input": 26_000, "cacheRead": 500, "output": 80, "totalTokens": 26_580}
    maint = _maintenance(recorded=False)
    _history(maint, usage)
    assert maint.before_prompt([PROMPT]) is None


def test_anchor_just_below_the_threshold_does_not_compact():
    maint = _maintenance()
    after = _history(maint, {**ZERO, "input": 1})
    tail = maint.view.estimator.messages(after) + maint.view.estimator.messages([PROMPT])
    maint2 = _maintenance()
    _history(maint2, {**ZERO, "input": THRESHOLD - tail})  # used tokens == threshold: not over
    assert maint2.before_prompt([PROMPT]) is None
    maint3 = _maintenance()
    _history(maint3, {**ZERO, "input": THRESHOLD - tail + 1})
    assert maint3.before_prompt([PROMPT]) is not None


def test_the_snapshot_wins_over_usage_and_counts_history_rewrites():
    # promptTokens 27,500 replaces usage's 10; 300 were removed by a history rewrite; the
    # snapshot saw 0 non-message tokens and the session has none either (growth 0).
    snapshot = {"promptTokens": 27_500, "historyRewriteTokensRemoved": 300,
                "nonMessageTokens": 0, "compactionEpoch": 0}
    maint = _maintenance()
    after = _history(maint, {**ZERO, "input": 10}, snapshot)
    done = maint.before_prompt([PROMPT])
    estimator = maint.view.estimator
    expected = 27_200 + estimator.messages(after) + estimator.messages([PROMPT])
    assert done is not None and done.trigger_tokens == expected


def test_non_message_growth_since_the_snapshot_is_added():
    snapshot = {"promptTokens": 20_000, "nonMessageTokens": 100}
    system = "s" * 40_000  # bytes/4: 10,000 non-message tokens now
    maint = SessionMaintenance(Session(None, fsync=False), MODEL, settings=_settings(),
                               system_prompt=system)
    after = _history(maint, {**ZERO, "input": 10}, snapshot)
    growth = maint.view.non_message_tokens - 100
    assert growth > 0
    done = maint.before_prompt([PROMPT])
    expected = (20_000 + growth + maint.view.estimator.messages(after)
                + maint.view.estimator.messages([PROMPT]))
    assert done is not None and done.trigger_tokens == max(expected,
                                                           maint.view.stored_tokens([PROMPT]))


def test_the_larger_local_estimate_wins():
    maint = _maintenance()
    _history(maint, {**ZERO, "input": 5})
    big = _text("user", "y" * 4 * THRESHOLD)
    local = maint.view.stored_tokens([big])
    done = maint.before_prompt([big])
    assert done is not None and done.trigger_tokens == local


def test_an_anchor_before_the_latest_compaction_is_not_read():
    maint = _maintenance()
    _history(maint, {**ZERO, "input": 26_000})
    branch = maint.session.get_branch()
    maint.session.append_compaction("summary", branch[-2].id, 100)
    assert maint.before_prompt([PROMPT]) is None  # the 26,000 belongs to the replaced context


KIMCHI = REAL / "kimchi-dev__session.jsonl"


@pytest.mark.skipif(not KIMCHI.is_file(), reason="../shared/real-sessions is absent")
def test_kimchi_steps_at_32k_compact_where_the_agent_does():
    # upstream-agent run kimchi-dev__session.jsonl --window 32000 --steps 1 (omp 18.3.4):
    # step 6 compacts (+1, snapcompact) because the appended turn's recorded usage (87k) is the
    # count; the stored estimate alone left step 6 uncompacted (5 compactions before the fix).
    agent_methods = ["soft", "soft", "snapcompact", "snapcompact", "soft", "snapcompact"]
    settings = merge_settings(DEFAULT_SETTINGS, {"compaction": {"enabled": True,
                                                                "strategy": "snapcompact"}})
    run = replay_like_upstream_steps(load_session_messages(str(KIMCHI)), MODEL, settings,
                                     steps=1, system_prompt="s" * 7273)
    assert [s.compactions for s in run.steps] == [1, 2, 3, 4, 5, 6]
    assert [s.method for s in run.steps] == agent_methods


SIGNATURE = "EqQBCkYIBRgCKkB" + "A" * 120_000  # a base64 thinking signature, ~30k bytes/4 tokens


def _signed_turn(maint: SessionMaintenance, usage) -> None:
    """A signed-thinking assistant turn after the history (pi-mono's claude-opus-4-5 turns)."""
    maint.append(_text("user", "think about it"))
    maint.append({"role": "assistant", "stopReason": "stop", "usage": usage, "content": [
        {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": SIGNATURE},
        {"type": "text", "text": "thought"}]})


def test_a_signature_does_not_move_the_local_estimate_of_the_trigger():
    """``#estimateStoredContextTokens`` counts with ``excludeEncryptedReasoning`` (SM:2440-2453):
    a recorded turn whose anchor is far below the threshold does not compact because of its
    base64 signature (issue 45 item 1: ~51k of a 178,911 estimate were signatures)."""
    maint = _maintenance()
    _history(maint, {**ZERO, "input": 10})
    _signed_turn(maint, {**ZERO, "input": 3_000})
    with_signature = maint.view.estimator.messages(
        [m.message for m in maint.session.get_branch() if m.type == "message"])
    assert with_signature > THRESHOLD  # every block counted, the context is over
    assert maint.view.stored_tokens([PROMPT]) < THRESHOLD // 2
    assert maint.before_prompt([PROMPT]) is None


def test_without_an_anchor_the_breakdown_counts_the_signature():
    """No usage anchor: ``getContextBreakdown`` counts every block (session-stats.ts:304-306),
    and the trigger is its max with the local estimate, so the signature counts."""
    maint = _maintenance(recorded=False)
    _history(maint, {**ZERO, "input": 10})
    _signed_turn(maint, ZERO)
    done = maint.before_prompt([PROMPT])
    assert done is not None
    assert done.trigger_tokens == maint.view.context_tokens() + maint.view.estimator.messages(
        [PROMPT])
