"""One maintenance pass: each usable method of the order in turn until one is accepted.

Why a room: this is the agent's ``runAutoCompaction`` (``src/session/session-maintenance.ts``,
SM:4142-4780), the loop every check point ends in. For each method of ``compaction.methodOrder``
it skips what the agent would not select for this model and reason (``isCompactionMethodUsable``,
SM:187-203; :mod:`.methods`), runs shake in place (:mod:`.method_attempts`), otherwise prepares
the cut (rescuing an unpreparable branch, :mod:`.recovery`), lets a before-compact hook cancel or
answer, records an LLM method it cannot run as offline (:mod:`.offline`), tries the method, and
commits the first accepted payload (``#commitCompactionEntry``, SM:2359). After the commit the
recovery band decides headroom (``#commitAutoCompactionResult``, SM:5064-5246) and, under the
agent's conditions, the auto-continue prompt is appended (agent-session.ts:4311-4331). The
record of the pass is :mod:`.pass_report`'s.
"""

from __future__ import annotations

from snapcompact.agent.check_points import PassRequest, schedules_continuation
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.agent.method_attempts import method_attempt, shake_attempt
from snapcompact.agent.methods import is_method_usable, unusable_why
from snapcompact.agent.offline import can_run_offline, offline_attempt
from snapcompact.agent.pass_report import PassReport
from snapcompact.agent.recovery import (
    band_tokens,
    ensure_progress,
    rescue_unpreparable,
)
from snapcompact.agent.rounds import MaintenanceRound, MethodAttempt
from snapcompact.agent.snapcompact_path import RenderabilityProbe
from snapcompact.compaction import (
    BeforeCompactEvent,
    Cancel,
    CompactionPayload,
    CompactionPreparation,
    HookCompaction,
    payload_from_hook,
    prompt,
    uses_openai_remote_compaction,
)

__all__ = ["MaintenancePass"]


class MaintenancePass:
    """``runAutoCompaction`` for one :class:`~.check_points.PassRequest`; :meth:`run` returns
    the pass's :class:`~.rounds.MaintenanceRound`."""

    def __init__(self, view: MaintenanceView, probe: RenderabilityProbe,
                 request: PassRequest) -> None:
        self.view = view
        self.probe = probe
        self.request = request
        self.threshold = view.threshold()
        self.report = PassReport(view, request, self.threshold)
        #: Shake ran and was rejected: the rescues then skip their own elide.
        self.fallback_from_shake = False

    def run(self) -> MaintenanceRound:
        """Try each usable method in order until one is accepted (or none is)."""
        view, request, report = self.view, self.request, self.report
        remote_available = bool(view.settings.compaction.remote_endpoint) or \
            uses_openai_remote_compaction(view.model)
        for method in view.method_order():
            if not is_method_usable(method, request.reason,
                                    supports_images=view.model.supports_images,
                                    remote_available=remote_available,
                                    exclude_media=request.exclude_media):
                report.record(MethodAttempt(method, "unusable",
                                            unusable_why(method, request.reason, view.model.id)))
                continue
            if method == "shake":
                shaken = self._shake()
                if shaken is not None:
                    return shaken
                continue
            prep = view.prepare()
            if prep is None:
                prep = rescue_unpreparable(view, request.reason, self.fallback_from_shake,
                                           report.rescues)
                if prep is None:
                    return self._nothing_to_compact(method)
            answer = self._try(method, prep)
            if answer is None:
                return report.finish(None)  # a hook cancelled the compaction
            attempt, payload = answer
            if payload is None:
                offline = attempt.status == "offline"
                report.record(attempt, warn=not offline, note=offline)
                continue
            report.record(attempt)
            return self._commit(method, payload)
        return report.finish(None, tokens_after=view.stored_tokens())

    def _shake(self) -> MaintenanceRound | None:
        """``#runAutoShake`` as a method of the order: the pass's round when it handled the
        maintenance, else None (rejected: the next method runs)."""
        view, request, report = self.view, self.request, self.report
        result = shake_attempt(view, request.reason, request.trigger, self.threshold)
        if result.handled:
            report.record(MethodAttempt("shake", "accepted", result.why))
            headroom = max(0, request.trigger - result.freed) <= band_tokens(self.threshold)
            return report.finish("shake", tokens_after=view.stored_tokens(), headroom=headroom,
                                 auto_continue=schedules_continuation(request, True))
        report.record(MethodAttempt("shake", "rejected", result.why), warn=True)
        self.fallback_from_shake = True
        return None

    def _nothing_to_compact(self, method: str) -> MaintenanceRound:
        view, report = self.view, self.report
        report.record(MethodAttempt(method, "rejected", "nothing to compact: the kept tail alone "
                                    "is over the budget"))
        headroom = view.residual_tokens() <= band_tokens(self.threshold)
        return report.finish("snapcompact-rescue" if "frame-rebuild" in report.rescues else None,
                             tokens_after=view.stored_tokens(), headroom=headroom,
                             dead_end=not headroom)

    def _try(self, method: str, prep: CompactionPreparation
             ) -> tuple[MethodAttempt, CompactionPayload | None] | None:
        """The hook's answer or the method's attempt; None when a hook cancelled."""
        view, request = self.view, self.request
        hooks = view.pipeline.hooks
        # The event copies the branch: made only when a hook will read it.
        hook = hooks.run_before_compact(BeforeCompactEvent(
            prep, tuple(view.session.get_branch()), None, request.reason, request.will_retry)
        ) if hooks.before_compact else None
        if isinstance(hook, Cancel):
            self.report.record(MethodAttempt(method, "rejected", "cancelled by a hook"))
            return None
        if isinstance(hook, HookCompaction):
            return (MethodAttempt(method, "accepted", "a before-compact hook answered"),
                    payload_from_hook(hook, prep))
        if not can_run_offline(view, method):
            return offline_attempt(method), None
        return method_attempt(view, self.probe, method, prep, trigger=request.trigger,
                              pending=request.pending, prepared=request.prepared)

    def _commit(self, method: str, payload: CompactionPayload) -> MaintenanceRound:
        """Append the entry, hold it to the recovery band (rescuing), maybe auto-continue."""
        view, request, report = self.view, self.request, self.report
        report.notes.extend(view.notice(w) for w in payload.warnings)
        entry = view.session.append_compaction(
            payload.summary, payload.first_kept_entry_id, payload.tokens_before,
            short_summary=payload.short_summary, details=payload.details,
            preserve_data=payload.preserve_data, from_extension=payload.from_extension,
            usage=payload.usage)
        view.pipeline.hooks.emit_compact(entry, payload.from_extension)
        headroom = ensure_progress(view, request.reason, request.will_retry,
                                   self.fallback_from_shake, report.rescues)
        if not headroom:
            report.notes.append(view.notice(
                "compaction made no progress: the context is still above the recovery band "
                "(clear large tool output)"))
        cont = schedules_continuation(request, headroom)
        if cont:
            view.session.append_message({
                "role": "developer", "attribution": "agent",
                "content": [{"type": "text", "text": prompt("auto-continue")}],
                "timestamp": int(view.pipeline.clock() * 1000)})
        return report.finish(method, entry_id=entry.id, tokens_after=view.stored_tokens(),
                             headroom=headroom, dead_end=not headroom, auto_continue=cont)
