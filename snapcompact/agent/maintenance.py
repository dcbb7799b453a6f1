"""The coding agent's session maintenance: when it compacts, with which method, what it accepts.

Why this layer exists: users run ``@oh-my-pi/pi-coding-agent`` 18.3.4, and its session
maintenance (``src/session/session-maintenance.ts``, SM below) decides which compaction runs,
how many frames snapcompact may draw and whether a result is accepted. The compaction package
ports pi-agent-core's functions (cut points, pruning, summaries, the archive); this class drives
them the way the agent does, so the context a harness measures is one production would send.

:class:`SessionMaintenance` orchestrates and nothing more: it composes a
:class:`~.maintenance_view.MaintenanceView` (its :attr:`~SessionMaintenance.view`) and hands
that view, never itself, to each room; each behaviour it reproduces lives in a room of its own,
with where it lives upstream:

* the three check points (:meth:`~SessionMaintenance.before_prompt`, SM:2455-2556;
  :meth:`~SessionMaintenance.mid_turn`, SM:2568-2720, no auto-continue;
  :meth:`~SessionMaintenance.end_turn`, SM:2746-3254): their counts in :mod:`.check_points`
  (with :mod:`.usage_anchor`), the prunes that come first in :mod:`.turn_prunes`;
* what they read (stored context, threshold, window budget, method order, the cut) and the
  record of the passes: the view (:mod:`.maintenance_view`), counted as the agent counts
  (:mod:`.counting`);
* the pass (``runAutoCompaction``): the ordered method list with the agent's usability rules
  (:mod:`.methods`, ``compaction-methods.ts:44``, SM:187-203), each rejected method handing
  over to the next (:mod:`.method_loop`, SM:4142-4780; the methods in
  :mod:`.method_attempts`);
* snapcompact's own path (:mod:`.snapcompact_path`): renderability scan, a frame cap sized
  from the window and the payload (:mod:`.frame_budget`, :mod:`.frame_cap`), and three guards on
  the result: base64 payload, reduction, window fit (:mod:`.guards`, SM:4640-4760). Frames are
  charged 5,024 tokens each, the tokenizer's flat estimate;
* after a commit, the recovery band and the dead-end rescues (:mod:`.recovery`,
  SM:5064-5246, 3865-4125); the auto-continue prompt only under the agent's conditions
  (agent-session.ts:4311-4331);
* methods that need a model this object was not given (:mod:`.offline`), and the record of
  each pass (:mod:`.pass_report`, :mod:`.rounds`).

What it does not: speculative background compaction and its grace band (only for LLM-first
orders; a snapcompact-first order never speculates), context promotion beyond what
:class:`~snapcompact.compaction.CompactionPipeline` already does, payload-413 classification.
A method that needs a language model this object was not given is recorded as ``offline`` and
the next method runs: the context then differs from production's, and the rounds say so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from snapcompact.agent.check_points import (
    PassRequest,
    billed_context_tokens,
    is_terminal_text_answer,
    pre_prompt_count,
)
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.agent.method_loop import MaintenancePass
from snapcompact.agent.rounds import MaintenanceRound
from snapcompact.agent.snapcompact_path import RenderabilityProbe
from snapcompact.agent.turn_prunes import prune_stale, prune_threshold
from snapcompact.compaction import (
    CompactionPipeline,
    Hooks,
    ModelInfo,
    Session,
    Settings,
    TokenEstimator,
    latest_compaction_ms,
    recovery_trigger,
)

__all__ = ["SessionMaintenance"]


class SessionMaintenance:
    """The agent's maintenance over one session (wraps a :class:`CompactionPipeline`): the
    three check points, each ending in a pass over the method order when the context is over
    the threshold.

    It composes :attr:`view`, a :class:`~.maintenance_view.MaintenanceView` made from the same
    arguments (documented there): the figures every check compares (stored context, threshold,
    window budget, method order) and the record of the passes (``view.rounds``,
    ``view.notices``). The rooms a pass runs through receive the view, never this object. A
    caller reads the session, the model (after a promotion, the larger one), the pipeline,
    the rounds and the notices here; anything else through :attr:`view`.
    """

    def __init__(self, session: Session, model: ModelInfo, *, settings: Settings,
                 complete: Any = None, hooks: Hooks | None = None,
                 estimator: TokenEstimator | None = None,
                 system_prompt: str | Sequence[str] | None = None,
                 tools: Sequence[Mapping[str, Any]] | None = None,
                 responses_compact: Any = None, chat: Any = None,
                 protected_paths: Collection[str] = (), clock: Callable[[], float] = time.time,
                 use_recorded_usage: bool = True,
                 handoff_path: Callable[[Session], str | Path | None] | None = None,
                 models: Collection[ModelInfo] = ()) -> None:
        #: What the maintenance reads; the rooms' one argument.
        self.view = MaintenanceView(
            session, model, settings=settings, complete=complete, hooks=hooks,
            estimator=estimator, system_prompt=system_prompt, tools=tools,
            responses_compact=responses_compact, chat=chat, protected_paths=protected_paths,
            clock=clock, use_recorded_usage=use_recorded_usage, handoff_path=handoff_path,
            models=models)
        #: The renderability probe's memory, kept across passes.
        self._probe = RenderabilityProbe()

    @property
    def session(self) -> Session:
        """The session being maintained."""
        return self.view.session

    @property
    def model(self) -> ModelInfo:
        """The model whose window the maintenance works in (the larger one after a
        promotion: the model the next request goes to)."""
        return self.view.model

    @property
    def pipeline(self) -> CompactionPipeline:
        """The compaction pipeline under the maintenance (its context is what is sent)."""
        return self.view.pipeline

    @property
    def rounds(self) -> list[MaintenanceRound]:
        """Every maintenance pass so far, oldest first."""
        return self.view.rounds

    @property
    def notices(self) -> list[str]:
        """Every warning the maintenance raised, in order."""
        return self.view.notices

    def llm_messages(self) -> list[Any]:
        """The context as wire messages for the LLM (the request after inline imaging)."""
        return self.view.llm_messages()

    def append(self, message: Mapping[str, Any]) -> None:
        """Append a message without any check (user prompts go through :meth:`before_prompt`
        first; tool results between turns through :meth:`mid_turn` before the next call)."""
        self.view.session.append_message(message)

    def before_prompt(self, pending: Sequence[Mapping[str, Any]]) -> MaintenanceRound | None:
        """Pre-prompt check (SM:2498-2556): the context plus the pending prompt over the
        threshold compacts before the prompt is sent. No auto-continue (the prompt is the next
        turn). The prompt is not appended here. The context is the larger of the local count
        and, with ``use_recorded_usage``, the provider-anchored one (SM:2455-2462,
        :mod:`.usage_anchor`)."""
        view = self.view
        if not view.enabled():
            return None
        count = pre_prompt_count(view, pending)
        if count.context <= view.threshold() or view.promoted():
            return None
        return self._run(PassRequest("pre_prompt", "threshold", trigger=count.context,
                                     pending=count.pending, prepared=count.prepared))

    def mid_turn(self, last_assistant: Mapping[str, Any] | None) -> MaintenanceRound | None:
        """Between tool turns of one run (SM:2568-2720): the tool results are in, the next
        provider call is about to go out. Compacts over the threshold, never auto-continues."""
        view = self.view
        if not view.enabled() or last_assistant is None:
            return None
        if last_assistant.get("stopReason") in ("aborted", "error"):
            return None
        context = max(billed_context_tokens(view, last_assistant), view.stored_tokens())
        if context <= view.threshold() or view.promoted():
            return None
        return self._run(PassRequest("mid_turn", "threshold", trigger=context,
                                     suppress_continuation=True))

    def end_turn(self, message: Mapping[str, Any], *,
                 idle_seconds: float = 0.0) -> MaintenanceRound | None:
        """The agent's turn ended with ``message`` (SM:2746-3254): overflow or cut-off output
        recover (the message is dropped and the turn retried); otherwise the message is
        appended, the stale-result and threshold prunes run, and maintenance runs over the
        threshold."""
        view = self.view
        first = recovery_trigger(message, model_id=view.model.id,
                                 latest_compaction_time=latest_compaction_ms(view.session))
        if first is not None:
            # Promotion comes before the test whether compaction may run (SM:2870-2886,
            # 3050-3068), so it recovers with compaction off too.
            if view.promoted():
                return None
            if view.enabled():
                return self._run(PassRequest(first.reason, first.reason,
                                             trigger=view.stored_tokens(), will_retry=True))
        view.session.append_message(message)
        if message.get("stopReason") == "aborted":
            return None
        stale = prune_stale(view, idle_seconds)
        if not view.enabled() or message.get("stopReason") == "error":
            return None
        freed = stale + prune_threshold(view)
        billed = billed_context_tokens(view, message)
        stored = view.stored_tokens()
        if max(billed, stored) <= view.threshold() or view.promoted():
            return None
        return self._run(PassRequest(
            "post_turn", "threshold", trigger=max(max(0, billed - freed), stored),
            auto_continue=view.settings.compaction.auto_continue,
            terminal_text_answer=is_terminal_text_answer(message)))

    def _run(self, request: PassRequest) -> MaintenanceRound:
        """``runAutoCompaction``: try each usable method in order until one is accepted."""
        return MaintenancePass(self.view, self._probe, request).run()
