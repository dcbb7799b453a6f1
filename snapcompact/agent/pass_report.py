"""The per-pass report: what one pass tried, noted and rescued, closed as a MaintenanceRound.

Why a room: every pass of the agent's ``runAutoCompaction`` (``src/session/
session-maintenance.ts``, SM:4142-4780) ends in one of several places (a method accepted, every
method failed, a hook cancelled, nothing to compact), and each must leave the same record
(:class:`~.rounds.MaintenanceRound`): the attempts in order, the notices raised, the rescues
run, the check point and trigger, and the archive the context carries afterwards (frames by
shape). The agent reports the same facts to its UI and session log; a harness needs them to
say whether the context it measures is one production would send.
"""

from __future__ import annotations

from typing import Any

from snapcompact.agent.check_points import PassRequest
from snapcompact.agent.frame_shapes import frames_by_shape
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.agent.rounds import MaintenanceRound, MethodAttempt
from snapcompact.archive import get_preserved_archive

__all__ = ["PassReport"]


class PassReport:
    """The record of one pass while it runs: attempts, notes (notices and offline reasons) and
    rescues; :meth:`finish` appends the :class:`MaintenanceRound` to the view's rounds."""

    def __init__(self, view: MaintenanceView, request: PassRequest, threshold: int) -> None:
        self.view = view
        self.request = request
        self.threshold = threshold
        self.attempts: list[MethodAttempt] = []
        self.notes: list[str] = []
        self.rescues: list[str] = []

    def record(self, attempt: MethodAttempt, *, warn: bool = False, note: bool = False) -> None:
        """Add ``attempt``; with ``warn`` its reason (when it has one) becomes a notice, with
        ``note`` a note of the pass only (an offline method: no warning)."""
        self.attempts.append(attempt)
        if attempt.reason and warn:
            self.notes.append(self.view.notice(attempt.reason))
        elif attempt.reason and note:
            self.notes.append(attempt.reason)

    def finish(self, method: str | None, **extra: Any) -> MaintenanceRound:
        """The pass's round (``method`` accepted, or None), appended to the view's rounds."""
        view, request = self.view, self.request
        entry = view.session.latest_compaction()
        archive = get_preserved_archive(entry.preserve_data) if entry is not None else None
        shape = view.settings.snapcompact.shape
        round_ = MaintenanceRound(
            index=len(view.rounds) + 1, check=request.check, reason=request.reason,
            after_message=view.message_index, trigger_tokens=request.trigger,
            threshold_tokens=self.threshold, attempts=tuple(self.attempts), method=method,
            tokens_before=request.trigger, rescues=tuple(self.rescues),
            frames=len(archive.frames) if archive is not None else 0,
            frames_by_shape=frames_by_shape(archive.frames, None if shape == "auto"
                                            else shape) if archive is not None else {},
            warnings=tuple(self.notes), **extra)
        view.rounds.append(round_)
        return round_
