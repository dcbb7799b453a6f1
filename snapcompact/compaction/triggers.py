"""When to compact: the five triggers and the decision after each turn.

Why separate from the compaction itself: each trigger has its own contract. Overflow recovery
must drop the failing message and retry the turn afterwards (and may not use handoff, whose
request would overflow again); incomplete-output recovery retries too but may hand off;
threshold maintenance runs after a *successful* turn and does not retry; idle maintenance runs
between turns and never auto-continues; manual compaction takes optional instructions. Keeping
the decision a pure function of (message, usage, settings) makes it easy to test.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.settings import CompactionSettings, resolve_threshold_tokens

__all__ = [
    "REASONS",
    "Reason",
    "Trigger",
    "compaction_threshold",
    "decide_after_turn",
    "failure_message",
    "is_context_overflow",
    "is_incomplete_output",
    "recovery_trigger",
    "should_run_idle",
]

Reason = Literal["manual", "overflow", "incomplete", "threshold", "idle"]
REASONS: tuple[str, ...] = ("manual", "overflow", "incomplete", "threshold", "idle")

_OVERFLOW_PATTERNS = re.compile(
    r"prompt is too long|context[ _-]?length|context window|maximum context|too many tokens"
    r"|exceeds? the (?:context|maximum)|input is too long|request too large|token limit"
    r"|context_length_exceeded|reduce the length",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Trigger:
    """A decision to run maintenance: why, whether the turn is retried, what to drop first."""

    reason: Reason
    will_retry: bool
    remove_last_message: bool
    auto_continue: bool
    context_tokens: int | None = None
    threshold_tokens: int | None = None


def compaction_threshold(model: ModelInfo, settings: CompactionSettings) -> int:
    """The session's compaction threshold: context tokens above which maintenance runs on
    ``model`` under ``settings`` (:func:`~.settings.resolve_threshold_tokens` of the model's
    window). The one place both the pipeline and the agent's maintenance read it from, so a
    change of rule or of model (context promotion) moves both together."""
    return resolve_threshold_tokens(model.context_window, settings)


def is_context_overflow(message: Mapping[str, Any]) -> bool:
    """True for an assistant error that says the request did not fit the context window."""
    if message.get("role") != "assistant" or message.get("stopReason") != "error":
        return False
    error = message.get("errorMessage") or ""
    return isinstance(error, str) and _OVERFLOW_PATTERNS.search(error) is not None


def is_incomplete_output(message: Mapping[str, Any]) -> bool:
    """True when the reply was cut off by the output limit (``stopReason == "length"``)."""
    return message.get("role") == "assistant" and message.get("stopReason") == "length"


def _same_model(message: Mapping[str, Any], model_id: str | None) -> bool:
    return model_id is None or message.get("model") in (None, model_id)


def _not_older(message: Mapping[str, Any], latest_compaction_time: float | None) -> bool:
    stamp = message.get("timestamp")
    if latest_compaction_time is None or not isinstance(stamp, (int, float)):
        return True
    return stamp >= latest_compaction_time


def recovery_trigger(message: Mapping[str, Any], *, model_id: str | None = None,
                     latest_compaction_time: float | None = None) -> Trigger | None:
    """Overflow or cut-off output of the current model that the turn must recover from (retried
    after promotion or compaction), or None.

    Whether compaction is enabled does not enter: the coding agent tries context promotion on
    these before it asks whether a compaction method may run (18.3.4 session-maintenance.ts:
    2870-2886 overflow, 3050-3068 ``length``), so a session with compaction off still recovers
    on a larger model. Only errors of the current model, not older than the latest compaction,
    count (:2763-2773).
    """
    if message.get("role") != "assistant":
        raise ValueError("recovery_trigger needs an assistant message, got role "
                         f"{message.get('role')!r}")
    relevant = _same_model(message, model_id) and _not_older(message, latest_compaction_time)
    if is_context_overflow(message):
        return Trigger("overflow", True, True, False) if relevant else None
    if is_incomplete_output(message):
        return Trigger("incomplete", True, True, False) if relevant else None
    return None


def decide_after_turn(message: Mapping[str, Any], *, context_window: int,
                      settings: CompactionSettings,
                      context_tokens: int | None = None, model_id: str | None = None,
                      latest_compaction_time: float | None = None) -> Trigger | None:
    """The maintenance an assistant message calls for, or None.

    ``context_tokens`` is the (post-pruning) context size to compare with the threshold: the
    larger of the provider-reported and the locally estimated size. Overflow and incomplete
    output only count for the current model and when the message is not older than the latest
    compaction (``timestamp`` in ms like the reference, compared with ``latest_compaction_time``).
    """
    if not settings.enabled or settings.strategy == "off":
        return None
    if message.get("role") != "assistant":
        raise ValueError("decide_after_turn needs an assistant message, got role "
                         f"{message.get('role')!r}")
    if is_context_overflow(message) or is_incomplete_output(message):
        return recovery_trigger(message, model_id=model_id,
                                latest_compaction_time=latest_compaction_time)
    if message.get("stopReason") in ("error", "aborted") or context_tokens is None:
        return None
    threshold = resolve_threshold_tokens(context_window, settings)
    if context_tokens > threshold:
        return Trigger("threshold", False, False, settings.auto_continue, context_tokens, threshold)
    return None


def should_run_idle(settings: CompactionSettings, *, context_tokens: int, idle_seconds: float,
                    streaming: bool = False, compacting: bool = False) -> Trigger | None:
    """Idle maintenance: enabled, not busy, idle long enough and the context above its own floor."""
    if (not (settings.enabled and settings.idle_enabled) or settings.strategy == "off"
            or streaming or compacting):
        return None
    if (idle_seconds < settings.idle_timeout_seconds
            or context_tokens < settings.idle_threshold_tokens):
        return None
    return Trigger("idle", False, False, False, context_tokens)


def failure_message(reason: Reason, error: str) -> str:
    """The notice shown when automatic maintenance fails."""
    if reason == "overflow":
        return f"Context overflow recovery failed: {error}"
    if reason == "incomplete":
        return f"Incomplete response recovery failed: {error}"
    if reason == "manual":
        return f"Compaction failed: {error}"
    return f"Auto-compaction failed: {error}"
