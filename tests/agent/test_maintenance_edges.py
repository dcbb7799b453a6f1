"""The maintenance at its edges, where a one-character change would otherwise pass (issue 37/5).

Every expected value is the coding agent 18.3.4's rule, cited per test, worked by hand:

* the reduction baseline of a pre-prompt pass is ``max(0, trigger - pending)``, re-based on the
  prepared regions (``session-maintenance.ts:4715-4723``), and a projection ``>=`` it is
  rejected (:4724);
* the frame cap is 0 ("kept history alone exceeds the context budget") iff the kept history
  plus the non-message part is ``>= window - effective reserve`` (:3571-3575);
* the request carries at most ``FRAME_DATA_BYTES_BUDGET = 3_000_000`` bytes of frame base64
  (snapcompact 18.2.11, the agent's guard at :4686);
* a cut inside a turn looks for the turn's start down to the window start *inclusive*
  (pi-agent-core ``findTurnStartIndex``: ``for (i = entryIndex; i >= startIndex; i--)``).
"""

from __future__ import annotations

import warnings

from snapcompact.agent import SessionMaintenance, agent_settings, snapcompact_max_frames
from snapcompact.archive import PRESERVE_KEY, Archive, ArchiveFrame
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    ModelInfo,
    Session,
    find_cut_point,
    merge_settings,
    prepare_compaction,
)
from snapcompact.core import get_shape

warnings.simplefilter("ignore", RuntimeWarning)
MODEL = ModelInfo(id="claude-sonnet-4-5", context_window=32_000, provider="anthropic",
                  api="anthropic-messages", include_thinking=False)
#: 32,000 - max(15 % of 32,000, 4,096): threshold and window budget alike.
BUDGET = 27_200


def _settings(keep: int = 500):
    return agent_settings("snapcompact", merge_settings(DEFAULT_SETTINGS, {"compaction": {
        "keepRecentTokens": keep, "reserveTokens": 4096, "textTokenizer": "bytes4"}}))


def _text(role: str, text: str, **extra):
    return {"role": role, "content": [{"type": "text", "text": text}], **extra}


def _small_history(usage=None, *, recorded: bool = False) -> SessionMaintenance:
    """Four short turns (~800 tokens): too little text for an archive to be smaller than it.
    ``usage`` goes on the last assistant message."""
    maint = SessionMaintenance(Session(None, fsync=False), MODEL, settings=_settings(),
                               use_recorded_usage=recorded)
    for i in range(4):
        maint.append(_text("user", f"q{i} " + "q" * 400))
        last = _text("assistant", f"a{i} " + "a" * 400, stopReason="stop")
        if i == 3 and usage is not None:
            last["usage"] = usage
        maint.append(last)
    return maint


def _snapcompact_attempt(round_):
    return next(a for a in round_.attempts if a.method == "snapcompact")


def _prompt_over_threshold(maint: SessionMaintenance):
    return _text("user", "p" * 4 * (BUDGET - maint.view.stored_tokens() + 50))


# ------------------------------------------------------------- (a) pre-prompt reduction band


def test_a_pre_prompt_projection_between_trigger_less_prompt_and_trigger_is_rejected():
    maint = _small_history()
    prompt = _prompt_over_threshold(maint)
    pending = maint.view.estimator.messages([prompt])
    stored = maint.view.stored_tokens()
    done = maint.before_prompt([prompt])
    assert done is not None and done.trigger_tokens == stored + pending
    attempt = _snapcompact_attempt(done)
    # baseline = max(0, trigger - pending) - prepared + pre = stored (prepared = pre = stored)
    assert attempt.reduction_baseline == done.trigger_tokens - pending == stored
    # the projection lies in [trigger - pending, trigger): the prompt is not the context
    assert stored <= attempt.projected_tokens < done.trigger_tokens
    assert attempt.projected_tokens <= BUDGET  # the window guard would let it through
    assert attempt.status == "rejected" and "would not reduce context" in attempt.reason


# ------------------------------------------------------------- (d) projection == baseline


def _round_with_usage(prompt_tokens: int):
    maint = _small_history({"input": prompt_tokens, "output": 1, "cacheRead": 0,
                            "cacheWrite": 0, "totalTokens": prompt_tokens + 1}, recorded=True)
    prompt = _prompt_over_threshold(maint)
    pending = maint.view.estimator.messages([prompt])
    done = maint.before_prompt([prompt])
    assert done is not None
    return done, pending


def test_a_projection_equal_to_the_baseline_is_rejected_one_below_is_committed():
    # The anchor is the last message: trigger = U + pending, baseline = U - prepared + pre = U.
    # The recorded U also sizes the keep budget and the summary's figures, so the projection
    # moves a little with U: find the U whose own pass projects exactly U.
    usage = 2_000
    for _ in range(6):
        equal, pending = _round_with_usage(usage)
        projected = _snapcompact_attempt(equal).projected_tokens
        if projected == usage:
            break
        usage = projected
    attempt = _snapcompact_attempt(equal)
    assert equal.trigger_tokens == usage + pending
    assert attempt.projected_tokens == attempt.reduction_baseline == usage
    assert attempt.status == "rejected" and "would not reduce context" in attempt.reason
    above, _ = _round_with_usage(usage + 1)
    attempt = _snapcompact_attempt(above)
    assert attempt.reduction_baseline == usage + 1 and attempt.projected_tokens <= usage
    assert attempt.status == "accepted" and above.method == "snapcompact"


# ------------------------------------------------------------- (b) frame cap at equality


def test_a_kept_history_exactly_filling_the_budget_skips_snapcompact():
    shape = get_shape("11on16-bw")
    # effective reserve max(4,800, 4,096) = 4,800: total budget 27,200
    at = snapcompact_max_frames(context_window=32_000, reserve_tokens=4_800,
                                base_tokens=BUDGET, shape=shape, provider="anthropic")
    below = snapcompact_max_frames(context_window=32_000, reserve_tokens=4_800,
                                   base_tokens=BUDGET - 1, shape=shape, provider="anthropic")
    assert (at.max_frames, at.total_budget) == (0, BUDGET)
    assert below.max_frames == 1  # one token of headroom: the minimum cap, not a skip


# ------------------------------------------------------------- (c) 3 MB on the production path


def _summary_with_frames(sizes: list[int]) -> dict:
    frames = tuple(ArchiveFrame(data="A" * n, mime_type="image/png", cols=10, rows=10, chars=100)
                   for n in sizes)
    archive = Archive(frames=frames, total_chars=100 * len(sizes), truncated_chars=0)
    return {"role": "compactionSummary", "summary": "s",
            "preserveData": {PRESERVE_KEY: archive.to_json()}}


def _images(maint: SessionMaintenance, message: dict) -> int:
    return sum(1 for b in maint.view.estimator.archive_blocks(message) or ()
               if b.get("type") == "image")


def test_the_production_path_carries_three_megabytes_of_frames():
    maint = SessionMaintenance(Session(None, fsync=False), MODEL,
                               settings=agent_settings("snapcompact", DEFAULT_SETTINGS))
    assert maint.view.settings.snapcompact.max_frame_data_bytes == 3_000_000
    # exactly 3,000,000 B of base64: every frame goes out and is charged
    assert _images(maint, _summary_with_frames([1_000_000] * 3)) == 3
    # one byte more: the oldest frame is left out (priced newest first)
    assert _images(maint, _summary_with_frames([1_000_001, 1_000_000, 1_000_000])) == 2


# ------------------------------------------------------------- (e) split turn at the window start


def test_a_split_turn_starting_at_the_window_start_is_found():
    session = Session(None, fsync=False)
    session.append_message(_text("user", "u " * 200))  # position 0: the window start
    session.append_message({"role": "assistant", "stopReason": "toolUse", "content": [
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py"}}]})
    session.append_message({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                            "isError": False, "content": [{"type": "text", "text": "r " * 400}]})
    session.append_message(_text("assistant", "b " * 50, stopReason="stop"))
    path = session.get_branch()
    cut = find_cut_point(path, 0, len(path), keep_recent_tokens=30)
    assert cut is not None and cut.first_kept_index == 3  # the last assistant message
    assert cut.is_split_turn and cut.turn_start_index == 0
    prep = prepare_compaction(path, 30)
    assert prep is not None and prep.is_split_turn
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user", "assistant", "toolResult"]
    assert list(prep.messages_to_summarize) == []
