"""The coding agent's maintenance: method order, fallbacks, the band, rescues, check points.

Expected behaviour comes from coding agent 18.3.4's source (cited per test), not from this
code: the default order (compaction-methods.ts:44-50), the legacy migration
(config/settings.ts:2551-2600), usability (session-maintenance.ts:187-203), the recovery band
0.8 (session-maintenance.ts:329), terminal answers (queued-messages.ts:39-58), handoff as a
compaction entry that keeps the tail (session-maintenance.ts:375-386, 4583-4624).
"""

from __future__ import annotations

import math
import warnings

import pytest
from compaction_synth import read_turns

from snapcompact.agent import (
    DEFAULT_METHOD_ORDER,
    SessionMaintenance,
    agent_settings,
    is_method_usable,
    is_terminal_text_answer,
    replay_agent_session,
)
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionEntry,
    ModelInfo,
    Session,
    TokenEstimator,
    merge_settings,
)

warnings.simplefilter("ignore", RuntimeWarning)
#: The recovery band of session-maintenance.ts:329.
UPSTREAM_BAND = 0.8
MODEL_32K = ModelInfo(id="claude-sonnet-4-5", context_window=32_000, provider="anthropic",
                      api="anthropic-messages", include_thinking=False)


_session = read_turns


def _base(keep: int = 4000, reserve: int = 1000):
    # bytes/4 text counts: these tests pin rules, not the tokenizer (tests/compaction/test_token_counts.py)
    return merge_settings(DEFAULT_SETTINGS, {"compaction": {"keepRecentTokens": keep,
                                                            "reserveTokens": reserve,
                                                            "textTokenizer": "bytes4"}})


# ---------------------------------------------------------------- method order


def test_default_order_is_the_agents():
    assert DEFAULT_METHOD_ORDER == ("remote", "snapcompact", "handoff", "shake", "soft")
    assert DEFAULT_SETTINGS.compaction.method_order is None  # None = the agent's default


@pytest.mark.parametrize(("section", "order"), [
    ({"strategy": "snapcompact"}, ("snapcompact", "remote", "soft")),
    ({"strategy": "snapcompact", "remoteEnabled": False}, ("snapcompact", "soft")),
    ({"strategy": "context-full"}, ("remote", "soft")),
    ({"strategy": "handoff"}, ("handoff", "remote", "soft")),
    ({"strategy": "shake", "remoteEnabled": False}, ("shake", "soft")),
    ({"strategy": "off"}, ()),
    ({"strategy": "snapcompact", "methodOrder": ["shake", "soft"]}, ("shake", "soft")),
])
def test_a_legacy_strategy_migrates_to_the_method_list(section, order):
    assert merge_settings(DEFAULT_SETTINGS, {"compaction": section}).compaction.method_order \
        == order


def test_unknown_methods_are_refused_by_name():
    with pytest.raises(ValueError, match="methodOrder.*'summary'"):
        merge_settings(DEFAULT_SETTINGS, {"compaction": {"methodOrder": ["snapcompact",
                                                                         "summary"]}})


@pytest.mark.parametrize(("method", "reason", "images", "remote", "media", "usable"), [
    ("remote", "threshold", True, False, False, False),
    ("remote", "threshold", True, True, False, True),
    ("snapcompact", "threshold", False, False, False, False),
    ("snapcompact", "overflow", True, False, True, False),
    ("snapcompact", "threshold", True, False, False, True),
    ("handoff", "overflow", True, False, False, False),
    ("handoff", "threshold", True, False, False, True),
    ("shake", "overflow", True, False, False, True),
    ("soft", "overflow", True, False, False, True),
])
def test_usability_rules(method, reason, images, remote, media, usable):
    assert is_method_usable(method, reason, supports_images=images, remote_available=remote,
                            exclude_media=media) is usable


# ---------------------------------------------------------------- fallbacks

def _summarizer(calls: list[str]):
    def complete(system_prompt: str, user_prompt: str, **kwargs):
        calls.append(user_prompt)
        return {"text": "## Handoff\nwhere we are", "usage": {"input": 10, "output": 3}}
    return complete


def test_a_rejected_snapcompact_hands_over_to_handoff_which_keeps_the_tail():
    # 16k window, reserve 1,000 -> budget 13,600: snapcompact's text edges alone overflow it.
    model = ModelInfo(id="claude-sonnet-4-5", context_window=16_000, provider="anthropic",
                      api="anthropic-messages", include_thinking=False)
    calls: list[str] = []
    settings = agent_settings("snapcompact", _base(keep=1500))
    replay = replay_agent_session(_session(40), model, settings, strategy="snapcompact",
                                  complete=_summarizer(calls))
    first = replay.passes[0]
    assert [(a.method, a.status) for a in first.attempts] == [
        ("remote", "unusable"), ("snapcompact", "rejected"), ("handoff", "accepted")]
    assert first.method == "handoff" and calls
    entry = replay.pipeline.session.get(first.entry_id)
    assert isinstance(entry, CompactionEntry) and entry.summary.startswith("## Handoff")
    # the tail production keeps is still there after the handoff entry
    kept = [m for m in replay.pipeline.context().messages if m.get("role") == "toolResult"]
    assert kept, "handoff must keep the recent tail (it is not a fresh session)"


def test_without_a_summarizer_llm_methods_are_recorded_offline_not_silently_skipped():
    model = ModelInfo(id="claude-sonnet-4-5", context_window=16_000, provider="anthropic",
                      api="anthropic-messages", include_thinking=False)
    replay = replay_agent_session(_session(40), model, agent_settings("snapcompact",
                                                                      _base(keep=1500)),
                                  strategy="snapcompact")
    statuses = {(a.method, a.status) for a in replay.passes[0].attempts}
    assert ("handoff", "offline") in statuses and ("soft", "offline") in statuses
    assert replay.offline_divergence


# ---------------------------------------------------------------- band and rescues


@pytest.fixture(scope="module")
def agent_replays():
    """The main job's generated agent session (~80k tokens) at 32k, keep 8k, reserve 4,096."""
    from evals.items.datasets.agent_session import build_session

    messages = build_session(0, 0, 80_000, [0.1, 0.5, 0.9]).messages
    base = _base(keep=8000, reserve=4096)
    return {shape: replay_agent_session(messages, MODEL_32K, agent_settings(
        "snapcompact", base, shape=shape), strategy="snapcompact")
        for shape in ("auto", "6x6u-bw")}


@pytest.mark.parametrize("shape", ["auto", "6x6u-bw"])
def test_committed_passes_land_in_the_recovery_band_or_say_dead_end(agent_replays, shape):
    replay = agent_replays[shape]
    band = math.floor(27_200 * UPSTREAM_BAND)  # threshold: 32,000 - max(4,800, 4,096)
    committed = [p for p in replay.passes if p.method == "snapcompact"]
    assert len(committed) >= 2
    for p in committed:
        assert p.threshold_tokens == 27_200
        if p.headroom:
            assert p.tokens_after <= band
        else:
            assert p.dead_end and not p.auto_continue


def test_a_pass_over_the_band_runs_the_rescues_in_order(agent_replays):
    rescued = [p for r in agent_replays.values() for p in r.passes if p.rescues]
    assert rescued, "this session leaves passes above the band"
    order = ("frame-rebuild", "elide", "drop-images")
    for p in rescued:
        assert list(p.rescues) == sorted(p.rescues, key=order.index)


def test_frame_caps_at_32k_are_one_or_two(agent_replays):
    caps = {a.frame_cap.max_frames for r in agent_replays.values() for p in r.passes
            for a in p.attempts if a.frame_cap is not None}
    assert caps and caps <= {1, 2}
    for r in agent_replays.values():
        assert r.frames_in_archive() <= 2


def test_frames_are_charged_the_flat_estimate_in_the_projection():
    replay = replay_agent_session(_session(160), MODEL_32K, agent_settings("snapcompact",
                                                                           _base()),
                                  strategy="snapcompact")
    maint = replay.maintenance
    attempt = next(a for p in replay.passes for a in p.attempts
                   if a.method == "snapcompact" and a.frames > 0)
    entry = next(e for e in maint.session.entries if isinstance(e, CompactionEntry))
    message = {"role": "compactionSummary", "summary": entry.summary,
               "preserveData": entry.preserve_data}
    free = TokenEstimator(frame_tokens=0)
    charged = maint.view.estimator.message(message) - free.message(message)
    frames = len([b for b in (maint.view.estimator.archive_blocks(message) or ())
                  if b.get("type") != "text"])
    assert attempt.frames >= 1 and charged == 5024 * frames


# ---------------------------------------------------------------- check points


def test_the_pre_prompt_check_counts_the_pending_prompt():
    model = ModelInfo(id="claude-sonnet-4-5", context_window=32_000, provider="anthropic",
                      api="anthropic-messages", include_thinking=False)
    maint = SessionMaintenance(Session(None, fsync=False), model,
                               settings=agent_settings("snapcompact", _base()),
                               use_recorded_usage=False)
    for m in _session(60):
        maint.append(m)
        if maint.view.stored_tokens() > 25_000:
            break
    room = maint.view.threshold() - maint.view.stored_tokens()
    assert room > 200
    small = {"role": "user", "content": [{"type": "text", "text": "x" * 40}]}
    assert maint.before_prompt([small]) is None
    big = {"role": "user", "content": [{"type": "text", "text": "y" * (4 * room + 40)}]}
    done = maint.before_prompt([big])
    assert done is not None and done.check == "pre_prompt" and not done.auto_continue


@pytest.mark.parametrize(("message", "terminal"), [
    ({"role": "assistant", "stopReason": "stop", "content": [{"type": "text", "text": "done"}]},
     True),
    ({"role": "assistant", "stopReason": "stop", "content": [{"type": "text", "text": "  "}]},
     False),
    ({"role": "assistant", "stopReason": "toolUse", "content": [
        {"type": "toolCall", "id": "a", "name": "read", "arguments": {}}]}, False),
    ({"role": "assistant", "stopReason": "stop", "content": [
        {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "ok"}]}, True),
    ({"role": "assistant", "stopReason": "length", "content": [{"type": "text", "text": "x"}]},
     False),
])
def test_terminal_text_answers(message, terminal):
    assert is_terminal_text_answer(message) is terminal


def test_no_auto_continue_after_a_terminal_answer_or_mid_turn():
    replay = replay_agent_session(_session(160), MODEL_32K, agent_settings("snapcompact",
                                                                           _base()),
                                  strategy="snapcompact")
    assert replay.passes
    # every pass here is mid-turn (suppressed) or after a terminal "Noted fact" answer
    assert not any(p.auto_continue for p in replay.passes)
    roles = [m.get("role") for m in replay.pipeline.context().messages]
    assert "developer" not in roles
