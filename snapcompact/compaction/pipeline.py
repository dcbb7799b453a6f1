"""The agent-side loop around compaction: the check points that decide when a run happens.

Why one object: every trigger ends the same way (prepare the cut, ask the hooks, run a
strategy, append the entry, rebuild the context), but each enters differently. Overflow and
incomplete output drop the failing message and retry; threshold maintenance prunes tool output
first and compacts only if that was not enough; idle maintenance runs between turns; manual
compaction takes instructions. :class:`CompactionPipeline` owns a :class:`~.session.Session`, the
model facts, the settings, the injected completion function and the hooks.

The class is the pipeline's state (:class:`~.pipeline_state.PipelineState`: what it holds, the
estimator, the context and its size, the threshold) with the check points on top
(:meth:`~CompactionPipeline.after_turn`, :meth:`~CompactionPipeline.before_prompt`,
:meth:`~CompactionPipeline.run_idle`), the prunes they run, the run they end in
(:meth:`~CompactionPipeline.compact`) and the request they lead to
(:meth:`~CompactionPipeline.llm_messages`). Each other job is a room of functions handed the
pipeline as its state:

* :mod:`.compaction_run`: one run (:func:`~.compaction_run.run_compaction`): strategy choice
  per reason, cut, hooks, strategy, entry;
* :mod:`.pipeline_shake`: shake in place, manual
  (:func:`~.pipeline_shake.shake_in_place`) and as a strategy;
* :mod:`.pipeline_handoff`: the handoff document and the new session
  (:func:`~.pipeline_handoff.handoff`);
* :mod:`.promotion`: context promotion to a larger-window model;
* :mod:`.next_request`: the next request's messages and system prompt (inline imaging);
* :mod:`.tree_navigation`: moving the leaf, summarizing the branch left
  (:func:`~.tree_navigation.navigate_tree`).

Strategy choice per reason: ``off`` disables automatic maintenance (manual still summarizes);
``handoff`` is never used for overflow (the handoff request would overflow too) nor for manual
compaction; snapcompact falls back to context-full with a warning when it cannot run; ``shake``
elides heavy content in place (no entry written) and falls back to context-full when it frees
nothing on overflow or leaves the context above 80 % of the threshold (manual compaction
summarizes; :func:`~.pipeline_shake.shake_in_place` is the manual shake).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snapcompact.compaction.compaction_run import run_compaction
from snapcompact.compaction.next_request import llm_messages
from snapcompact.compaction.outcome import CompactionOutcome
from snapcompact.compaction.pipeline_state import PipelineState, iso_to_ms, latest_compaction_ms
from snapcompact.compaction.promotion import promote, promotion_target
from snapcompact.compaction.pruning import (
    PruneResult,
    prune_superseded_tool_results,
    prune_tool_outputs,
)
from snapcompact.compaction.tree_navigation import NavigationOutcome
from snapcompact.compaction.triggers import (
    Reason,
    Trigger,
    decide_after_turn,
    recovery_trigger,
    should_run_idle,
)

__all__ = ["CompactionOutcome", "CompactionPipeline", "NavigationOutcome"]


def _has_tool_calls(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, Mapping) and b.get("type") == "toolCall"
                                             for b in content)


class CompactionPipeline(PipelineState):
    """An agent's compaction loop over one session: pruning, thresholds, strategies, hooks.

    Constructed as :class:`~.pipeline_state.PipelineState` (session, model, settings, the
    injected functions, hooks); the check points are here, the rest in the rooms it hands
    itself to.
    """

    def prune(self) -> PruneResult:
        """The threshold prune, applied to the session (file rewritten when anything changed)."""
        result = prune_tool_outputs(self.session.branch_index.sync(), self.settings.pruning,
                                    protected_paths=self.protected_paths, estimator=self.estimator)
        if result.changed:
            self.session.replace_messages(result.replacements)
        return result

    def prune_stale(self, idle_seconds: float = 0.0) -> PruneResult:
        """Drop superseded and useless tool results (when enabled) and rewrite the session."""
        if not self.settings.compaction.drop_useless:
            return PruneResult({}, 0, {})
        result = prune_superseded_tool_results(self.session.branch_index.sync(),
                                               self.settings.pruning,
                                               idle_seconds=idle_seconds,
                                               protected_paths=self.protected_paths,
                                               estimator=self.estimator)
        if result.changed:
            self.session.replace_messages(result.replacements)
        return result

    def compact(self, custom_instructions: str | None = None, *, reason: Reason = "manual",
                will_retry: bool = False, measured_prompt_tokens: int | None = None,
                auto_continue: bool = False) -> CompactionOutcome:
        """Run one compaction now (see :func:`~.compaction_run.run_compaction`). Manual failures
        raise; automatic ones return ``error``; an aborted run ``cancelled=True``."""
        return run_compaction(self, custom_instructions, reason=reason, will_retry=will_retry,
                              measured_prompt_tokens=measured_prompt_tokens,
                              auto_continue=auto_continue)

    def llm_messages(self) -> list[Any]:
        """The context as wire messages for the LLM, after inline imaging when it is on (see
        :func:`~.next_request.llm_messages`)."""
        return llm_messages(self)

    def after_turn(self, message: Mapping[str, Any], *, measured_prompt_tokens: int | None = None,
                   idle_seconds: float = 0.0) -> CompactionOutcome | None:
        """Record an assistant message and run the maintenance it calls for.

        An overflow or length-cut message is not recorded (it is dropped before the retry); the
        outcome then has ``will_retry``. Otherwise the message is appended, stale results are
        pruned, and if the context still exceeds the threshold tool output is pruned and, if that
        is not enough, the context is compacted.
        """
        cs = self.settings.compaction
        # Overflow and cut-off output try promotion whether or not compaction is on (the coding
        # agent, session-maintenance.ts:2870-2886 and 3050-3068; see recovery_trigger).
        first = recovery_trigger(message, model_id=self.model.id,
                                 latest_compaction_time=latest_compaction_ms(self.session))
        if first is not None and (promotion_target(self) is not None
                                  or (cs.enabled and cs.strategy != "off")):
            return _recover(self, first, measured_prompt_tokens)
        self.session.append_message(message)
        if not cs.enabled or cs.strategy == "off":
            return None
        if message.get("stopReason") in ("error", "aborted"):
            return None
        has_calls = _has_tool_calls(message)
        if self._handoff_pending and not has_calls:
            # The agent's turn is over: run the handoff scheduled while tools were still running.
            self._handoff_pending = False
            return self.compact(reason="threshold", measured_prompt_tokens=measured_prompt_tokens)
        self.prune_stale(idle_seconds)
        tokens = max(measured_prompt_tokens or 0, self.estimate_tokens())
        if tokens <= self.threshold():
            return None
        pruned = self.prune()
        measured_after = ((measured_prompt_tokens - pruned.tokens_saved) if measured_prompt_tokens
                          else None)
        tokens = max(measured_after or 0, self.estimate_tokens())
        trigger = decide_after_turn(message, context_window=self.model.context_window, settings=cs,
                                    context_tokens=tokens, model_id=self.model.id)
        if trigger is None:
            return CompactionOutcome("threshold", skipped="pruning was enough", pruned=pruned,
                                     tokens_before=tokens, tokens_after=self.estimate_tokens())
        failed = self.model.id
        target = promote(self)
        if target is not None:
            return CompactionOutcome("threshold", strategy="promotion", pruned=pruned,
                                     tokens_before=tokens,
                                     promoted_to=target.id, tokens_after=self.estimate_tokens(),
                                     warnings=(self.notice(f"context promoted from {failed} to "
                                                           f"{target.id}"),))
        if cs.strategy == "handoff" and has_calls:
            # A handoff starts a new session; doing it while tool results are pending would strand
            # them. Schedule it for the end of the agent's turn instead.
            self._handoff_pending = True
            return CompactionOutcome("threshold", skipped="handoff scheduled after the turn",
                                     pruned=pruned, tokens_before=tokens)
        outcome = self.compact(reason="threshold", measured_prompt_tokens=measured_after,
                               auto_continue=trigger.auto_continue)
        _inject_auto_continue(self, outcome)
        return CompactionOutcome(**{**outcome.__dict__, "pruned": pruned})

    def before_prompt(self, *,
                      measured_prompt_tokens: int | None = None) -> CompactionOutcome | None:
        """Pre-prompt check, before the next user message is appended: maintenance runs inline.

        When the context is over the threshold (or a handoff was scheduled after the last turn),
        promotion is tried, then the configured maintenance runs now, a handoff included, so it
        cannot race the turn the prompt starts. No auto-continue: the user's prompt is the next
        turn itself.
        """
        cs = self.settings.compaction
        if not cs.enabled or cs.strategy == "off":
            return None
        tokens = max(measured_prompt_tokens or 0, self.estimate_tokens())
        if not self._handoff_pending and tokens <= self.threshold():
            return None
        self._handoff_pending = False
        failed = self.model.id
        target = promote(self)
        if target is not None and tokens <= self.threshold():
            return CompactionOutcome("threshold", strategy="promotion", promoted_to=target.id,
                                     tokens_before=tokens, tokens_after=tokens,
                                     warnings=(self.notice(f"context promoted from {failed} to "
                                                           f"{target.id}"),))
        return self.compact(reason="threshold", measured_prompt_tokens=measured_prompt_tokens)

    def run_idle(self, idle_seconds: float | None = None, *, streaming: bool = False,
                 compacting: bool = False) -> CompactionOutcome | None:
        """Idle maintenance (no auto-continue afterwards)."""
        if idle_seconds is None:
            path = self.session.get_branch()
            last = path[-1].timestamp if path else None
            idle_seconds = (self.clock() - iso_to_ms(last) / 1000) if last else 0.0
        trigger = should_run_idle(self.settings.compaction, context_tokens=self.estimate_tokens(),
                                  idle_seconds=idle_seconds, streaming=streaming,
                                  compacting=compacting)
        if trigger is None:
            return None
        self.prune_stale(idle_seconds)
        return self.compact(reason="idle")


def _recover(pipeline: CompactionPipeline, first: Trigger,
             measured_prompt_tokens: int | None) -> CompactionOutcome:
    """Overflow or cut-off output: promote and retry on the larger model, else compact and
    retry (the failing message is dropped either way)."""
    failed = pipeline.model.id
    target = promote(pipeline)
    if target is not None:
        # Retry on the larger model without compacting (the failing message is dropped).
        return CompactionOutcome(first.reason, strategy="promotion", will_retry=True,
                                 promoted_to=target.id,
                                 warnings=(pipeline.notice(f"context promoted from {failed} "
                                                           f"to {target.id}"),))
    return pipeline.compact(reason=first.reason, will_retry=True,
                            measured_prompt_tokens=measured_prompt_tokens)


def _inject_auto_continue(pipeline: CompactionPipeline, outcome: CompactionOutcome) -> None:
    """After threshold maintenance, the agent-authored developer prompt that resumes the
    work."""
    wrote = outcome.entry is not None or (outcome.shaken is not None
                                          and outcome.shaken.replacements)
    if outcome.auto_continue_prompt and wrote and outcome.error is None:
        pipeline.session.append_message({"role": "developer", "attribution": "agent",
                                         "content": [{"type": "text",
                                                      "text": outcome.auto_continue_prompt}],
                                         "timestamp": int(pipeline.clock() * 1000)})
