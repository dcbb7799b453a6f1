"""The three check points' counts, and when a pass may end in an auto-continue prompt.

Why a room: the agent compacts at three moments and each counts the context its own way
(``src/session/session-maintenance.ts``, SM below). Before a new user prompt the count is the
stored context plus the prompt, floored by the provider-anchored count of a live session
(``#estimatePrePromptContextTokens``, SM:2455-2556; :mod:`.usage_anchor`). Between tool turns
of one run it is the larger of the last reply's usage and the stored context (SM:2568-2720).
After the turn ends the stale-result and threshold prunes run first (:mod:`.turn_prunes`) and
the pass is triggered by the billed count less what they freed, floored by the stored context
(SM:2746-3254). Only the last may schedule the auto-continue prompt, under the agent's
conditions (``scheduleCompactionContinuation``, agent-session.ts:4311-4331).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.agent.counting import context_tokens_of_usage
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.agent.usage_anchor import anchored_context_tokens

__all__ = [
    "PassRequest",
    "PrePromptCount",
    "billed_context_tokens",
    "is_terminal_text_answer",
    "pre_prompt_count",
    "schedules_continuation",
]


@dataclass(frozen=True)
class PassRequest:
    """What a check point asks of one maintenance pass (``runAutoCompaction``'s arguments).

    ``trigger`` is the context count that crossed the threshold; ``pending`` the pending
    prompt's share of it and ``prepared`` the stored context it was measured on (pre-prompt
    only: the reduction guard's baseline); ``will_retry`` marks overflow/cut-off recovery.
    """

    check: str
    reason: str
    trigger: int
    auto_continue: bool = False
    pending: int = 0
    prepared: int | None = None
    suppress_continuation: bool = False
    terminal_text_answer: bool = False
    will_retry: bool = False
    exclude_media: bool = False


@dataclass(frozen=True)
class PrePromptCount:
    """The pre-prompt count: the context with the prompt, the stored part, the prompt's part."""

    context: int
    prepared: int
    pending: int


def pre_prompt_count(view: MaintenanceView,
                     pending: Sequence[Mapping[str, Any]]) -> PrePromptCount:
    """The context the pending prompt would make (``#estimatePrePromptContextTokens``,
    SM:2455-2462): the larger of the context breakdown and the local estimate.

    The two count differently, as the agent's do. The local estimate
    (``#estimateStoredContextTokens``, SM:2440-2453) leaves opaque replay payloads out
    (``excludeEncryptedReasoning``: a signed-thinking turn's base64 signature is not what the
    provider bills). The breakdown (``getContextBreakdown``, session-stats.ts:207-318) counts
    every block: from the usage anchor when ``use_recorded_usage`` finds one
    (:mod:`.usage_anchor`), else the whole context (session-stats.ts:304-306). The pending part
    and the stored part handed on (the reduction guard's baseline, SM:2553-2554) are the local
    estimate's."""
    listed = list(pending)
    pending_local = view.reasoning_free.messages(listed)
    pending_full = view.estimator.messages(listed)
    prepared = view.stored_tokens()
    anchored = None
    if view.use_recorded_usage:
        anchored = anchored_context_tokens(
            view.session.branch_index, view.estimator,
            non_message_tokens=view.non_message_tokens, pending_tokens=pending_full)
    breakdown = view.context_tokens() + pending_full if anchored is None else anchored
    return PrePromptCount(max(breakdown, prepared + pending_local), prepared, pending_local)


def billed_context_tokens(view: MaintenanceView, message: Mapping[str, Any]) -> int:
    """The context an assistant reply's usage reports, when the view trusts recorded usage
    (a live session); 0 for a replay of a recorded one."""
    return context_tokens_of_usage(message.get("usage")) if view.use_recorded_usage else 0


def is_terminal_text_answer(message: Mapping[str, Any] | None) -> bool:
    """The agent's ``isTerminalTextAssistantAnswer``: a finished (``stop``) assistant turn with
    visible text and no tool call; after one, no auto-continue prompt is scheduled."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return False
    if message.get("stopReason") != "stop":
        return False
    has_text = False
    for part in message.get("content") or ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "toolCall":
            return False
        if kind == "text":
            if str(part.get("text", "")).strip():
                has_text = True
            continue
        if kind in ("thinking", "redactedThinking", "fallback", "anthropicServerTool"):
            continue
        return False
    return has_text


def schedules_continuation(request: PassRequest, headroom: bool) -> bool:
    """``scheduleCompactionContinuation`` without queued messages (agent-session.ts:4311):
    asked for, not mid-turn, with headroom, not after a terminal text answer."""
    return (not request.suppress_continuation and request.auto_continue and headroom
            and not request.terminal_text_answer)
