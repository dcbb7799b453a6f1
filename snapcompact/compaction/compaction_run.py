"""One compaction run: pick the strategy, prepare the cut, ask the hooks, write the entry.

Why a room: every way into compaction (manual, overflow, cut-off output, threshold, idle) ends
in the same run. It chooses the strategy for the reason (:func:`strategy_for`: ``off`` leaves
only manual compaction, which summarizes; ``handoff`` is never used for an overflow nor for
manual compaction; snapcompact with custom instructions summarizes; ``shake`` runs first in
place and hands over to a context-full summary when it cannot recover enough), prepares the
cut point (``prepareCompaction``), lets a ``session_before_compact`` hook cancel or answer,
lets ``session.compacting`` hooks override the prompt, runs the strategy (snapcompact falls
back to OpenAI's remote compaction or a context-full summary with a warning when it cannot
run), appends the compaction entry and reports it. A manual run aborts one already running;
automatic runs are bracketed by ``auto_compaction_start``/``_end`` events and never raise.
:func:`run_compaction` is the run (the pipeline's ``compact``); :func:`openai_remote` the
provider's own compaction, which the agent's maintenance tries too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snapcompact.compaction.context import estimate_entry_tokens
from snapcompact.compaction.control import CompactionAborted, guarded_complete
from snapcompact.compaction.cut_point import CompactionPreparation, prepare_compaction
from snapcompact.compaction.hooks import BeforeCompactEvent, Cancel, CompactingEvent, HookCompaction
from snapcompact.compaction.openai_compact import (
    compact_openai_remote,
    uses_openai_remote_compaction,
)
from snapcompact.compaction.outcome import CompactionOutcome
from snapcompact.compaction.pipeline_handoff import handoff_for_run
from snapcompact.compaction.pipeline_shake import auto_shake
from snapcompact.compaction.pipeline_state import PipelineState, summary_complete
from snapcompact.compaction.prompts import prompt
from snapcompact.compaction.strategies import (
    CompactionPayload,
    StrategyFallback,
    compact_context_full,
    compact_snapcompact,
    payload_from_hook,
)
from snapcompact.compaction.triggers import Reason, failure_message

__all__ = ["openai_remote", "run_compaction", "strategy_for"]


def strategy_for(strategy: str, reason: Reason, custom_instructions: str | None) -> str:
    """The strategy a run with ``reason`` uses under the configured ``strategy``."""
    if strategy == "off":
        return "context-full"  # only manual compaction gets here
    if strategy == "handoff" and reason in ("overflow", "manual"):
        return "context-full"
    if strategy == "snapcompact" and custom_instructions:
        return "context-full"
    if strategy == "shake" and reason == "manual":
        # a manual compaction asks for a summary; shake() is the manual shake
        return "context-full"
    return strategy


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _emit(state: PipelineState, event: Mapping[str, Any]) -> None:
    for listener in state.listeners:
        listener(event)


def run_compaction(state: PipelineState, custom_instructions: str | None = None, *,
                   reason: Reason = "manual", will_retry: bool = False,
                   measured_prompt_tokens: int | None = None,
                   auto_continue: bool = False) -> CompactionOutcome:
    """Run one compaction now. Manual failures raise; automatic ones return ``error``.

    A manual compaction first aborts one already running (in another thread) and waits for it
    to stop. Automatic ones are bracketed by ``auto_compaction_start``/``_end`` events. An
    aborted run returns ``cancelled=True, skipped="aborted"``.
    """
    if reason == "manual" and state.compaction_lock.locked():
        state.abort_signal.abort()
    with state.compaction_lock:
        state.abort_signal.reset()
        automatic = reason != "manual"
        if automatic:
            _emit(state, {"type": "auto_compaction_start", "reason": reason})
        try:
            outcome = _compact(state, custom_instructions, reason, will_retry,
                               measured_prompt_tokens, auto_continue)
        except CompactionAborted:
            outcome = CompactionOutcome(reason, cancelled=True, skipped="aborted")
        except Exception as exc:
            if not automatic:
                raise
            outcome = CompactionOutcome(reason,
                                        error=state.notice(failure_message(reason, str(exc))),
                                        will_retry=False)
        if automatic:
            _emit(state, {"type": "auto_compaction_end", "reason": reason, "outcome": outcome,
                          "aborted": outcome.skipped == "aborted", "error": outcome.error})
        return outcome


def _compact(state: PipelineState, custom_instructions: str | None, reason: Reason,
             will_retry: bool, measured: int | None, auto_continue: bool) -> CompactionOutcome:
    """Shake first when it is the strategy, then cut, hooks, strategy and the entry."""
    notes: list[str] = []
    if strategy_for(state.settings.compaction.strategy, reason, custom_instructions) == "shake":
        # Shake runs first and inline (cheap, no LLM); when it cannot recover enough context
        # the next method of the agent's default order, a context-full summary, runs instead.
        shaken, note = auto_shake(state, reason, will_retry, measured, auto_continue)
        if shaken is not None:
            return shaken
        notes.append(state.notice(note))
    path = state.session.get_branch()
    prep = prepare_compaction(path, state.settings.compaction.keep_recent_tokens,
                              measured_prompt_tokens=measured, estimator=state.estimator)
    if prep is None:
        error = None
        if reason in ("overflow", "incomplete"):
            # Retrying would send the same oversized context again: recovery failed, no retry.
            error = state.notice(failure_message(
                reason, "nothing to compact (the kept recent turn alone is too large)"))
        return CompactionOutcome(reason, skipped="nothing to compact", will_retry=False,
                                 error=error, warnings=tuple(notes))
    hook = state.hooks.run_before_compact(BeforeCompactEvent(prep, tuple(path),
                                                             custom_instructions, reason,
                                                             will_retry))
    if isinstance(hook, Cancel):
        return CompactionOutcome(reason, cancelled=True, skipped=hook.reason)
    if isinstance(hook, HookCompaction):
        payload = payload_from_hook(hook, prep)
    else:
        answer = _run_strategy(state, reason, custom_instructions, prep, notes)
        if isinstance(answer, CompactionOutcome):
            return answer  # a handoff: the session is a new one
        payload = answer
    notes.extend(state.notice(note) for note in payload.warnings)
    entry = state.session.append_compaction(
        payload.summary, payload.first_kept_entry_id, payload.tokens_before,
        short_summary=payload.short_summary,
        details=payload.details, preserve_data=payload.preserve_data,
        from_extension=payload.from_extension, usage=payload.usage)
    state.hooks.emit_compact(entry, payload.from_extension)
    return CompactionOutcome(
        reason, payload.strategy, entry, will_retry=will_retry,
        auto_continue_prompt=prompt("auto-continue") if auto_continue else None,
        tokens_before=payload.tokens_before, tokens_after=state.estimate_tokens(),
        warnings=tuple(notes))


def _run_strategy(state: PipelineState, reason: Reason, custom_instructions: str | None,
                  prep: CompactionPreparation,
                  notes: list[str]) -> CompactionPayload | CompactionOutcome:
    """The strategy's payload (falling back to remote, then context-full), or a handoff's
    outcome."""
    strategy = strategy_for(state.settings.compaction.strategy, reason, custom_instructions)
    overrides = state.hooks.run_compacting(CompactingEvent(prep, reason))
    payload: CompactionPayload | None = None
    if strategy == "shake":
        strategy = "context-full"
    if strategy == "handoff":
        outcome = handoff_for_run(state, reason, custom_instructions, prep)
        if outcome is not None:
            return outcome
        notes.append(state.notice("handoff returned no document: falling back to "
                                  "context-full"))
        strategy = "context-full"
    if strategy == "snapcompact":
        try:
            payload = compact_snapcompact(prep, state.model, state.settings,
                                          kept_tokens=_kept_tokens(state, prep),
                                          custom_instructions=custom_instructions,
                                          overrides=overrides)
        except StrategyFallback as exc:
            notes.append(state.notice(str(exc)))
    if payload is None:
        payload = openai_remote(state, prep, notes)
    if payload is None:
        payload = compact_context_full(prep,
                                       guarded_complete(summary_complete(state),
                                                        state.abort_signal),
                                       state.model, state.settings,
                                       custom_instructions=custom_instructions,
                                       overrides=overrides)
    return payload


def _kept_tokens(state: PipelineState, prep: CompactionPreparation) -> int:
    return sum(estimate_entry_tokens(state.session.get(i), state.estimator)
               for i in prep.kept_entry_ids)


def openai_remote(state: PipelineState, prep: CompactionPreparation,
                  notes: list[str]) -> CompactionPayload | None:
    """OpenAI/Codex models: the provider's compact endpoint first; None = summarize locally
    (a failure is noted in ``notes``)."""
    if (state.responses_compact is None or not state.settings.compaction.remote_enabled
            or not uses_openai_remote_compaction(state.model)):
        return None
    state.abort_signal.check()
    try:
        payload = compact_openai_remote(prep, state.responses_compact, state.model,
                                        prompt("summarization-system"))
    except CompactionAborted:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the native request: summarize locally
        notes.append(state.notice(f"OpenAI remote compaction failed ({_one_line(exc)}): "
                                  "summarizing locally"))
        return None
    state.abort_signal.check()
    return payload
