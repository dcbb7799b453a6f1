"""One method's try inside a pass: shake, handoff, remote, soft, snapcompact.

Why a room: each method of ``compaction.methodOrder`` produces a compaction payload (or elides
in place) in its own way, and the pass only needs to know whether it was accepted. This mirrors
the per-method branches of the agent's ``runAutoCompaction`` (``src/session/
session-maintenance.ts``, SM:4142-4780): ``#runAutoShake`` (SM:5254-5320) elides in place and
counts as handled unless the context is still above the recovery band; handoff writes a
document as a compaction entry that keeps the tail (SM:4583-4624, 375-386); remote asks the
provider's compact endpoint; soft asks the summarizer; snapcompact has its own path
(:mod:`.snapcompact_path`). (A before-compact hook's answer, SM:3453, is the pass's:
:mod:`.method_loop`.) A failure is a rejection with its reason, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.agent.recovery import band_tokens
from snapcompact.agent.rounds import MethodAttempt
from snapcompact.agent.snapcompact_path import RenderabilityProbe, snapcompact_attempt
from snapcompact.archive import compute_file_lists, upsert_file_operations
from snapcompact.compaction import (
    DEFAULT_SHAKE_CONFIG,
    CompactionPayload,
    CompactionPreparation,
    compact_context_full,
    cumulative_file_ops,
    generate_handoff_document,
    openai_remote,
    shake_in_place,
    summary_complete,
)

__all__ = ["ShakeResult", "method_attempt", "shake_attempt"]


@dataclass(frozen=True)
class ShakeResult:
    """The automatic shake: handled (the pass ends with it), why, and the tokens it freed."""

    handled: bool
    why: str
    freed: int


def shake_attempt(view: MaintenanceView, reason: str, trigger: int,
                  threshold: int) -> ShakeResult:
    """``#runAutoShake``: elide in place; handled unless still above the recovery band."""
    applied = shake_in_place(view.pipeline, DEFAULT_SHAKE_CONFIG)
    reclaimed = applied.tool_results_dropped + applied.blocks_dropped > 0
    still_over = max(0, trigger - applied.tokens_freed) > band_tokens(threshold)
    if reason != "idle" and ((reason == "overflow" and not reclaimed) or still_over):
        if reclaimed:
            return ShakeResult(False, f"shake reclaimed ~{applied.tokens_freed} tokens but the "
                               "context is still above the recovery band", applied.tokens_freed)
        return ShakeResult(False, "shake found nothing eligible to drop", 0)
    return ShakeResult(True, f"shake freed ~{applied.tokens_freed} tokens", applied.tokens_freed)


def _handoff(view: MaintenanceView, prep: CompactionPreparation
             ) -> tuple[MethodAttempt, CompactionPayload | None]:
    document = generate_handoff_document(view.pipeline)
    if not document:
        return MethodAttempt("handoff", "rejected", "handoff returned no document"), None
    ops = cumulative_file_ops(prep)
    lists = compute_file_lists(ops)
    summary = upsert_file_operations(document, lists, ops.read)
    payload = CompactionPayload(summary=summary, first_kept_entry_id=prep.first_kept_entry_id,
                                tokens_before=prep.tokens_before, strategy="handoff",
                                details=lists.to_json())
    return MethodAttempt("handoff", "accepted"), payload


def _remote(view: MaintenanceView, prep: CompactionPreparation
            ) -> tuple[MethodAttempt, CompactionPayload | None]:
    notes: list[str] = []
    remote = openai_remote(view.pipeline, prep, notes)
    if remote is None:
        return MethodAttempt("remote", "rejected",
                             "; ".join(notes) or "server compaction unavailable"), None
    return MethodAttempt("remote", "accepted"), remote


def _soft(view: MaintenanceView, prep: CompactionPreparation
          ) -> tuple[MethodAttempt, CompactionPayload | None]:
    try:
        payload = compact_context_full(prep, summary_complete(view.pipeline), view.model,
                                       view.settings)
    except Exception as exc:  # noqa: BLE001 - a failed summary hands over to the next method
        text = " ".join(str(exc).split()) or type(exc).__name__
        return MethodAttempt("soft", "rejected", f"summary failed: {text[:300]}"), None
    return MethodAttempt("soft", "accepted"), payload


def method_attempt(view: MaintenanceView, probe: RenderabilityProbe, method: str,
                   prep: CompactionPreparation, *, trigger: int, pending: int,
                   prepared: int | None) -> tuple[MethodAttempt, CompactionPayload | None]:
    """Try ``method`` (not shake) on ``prep``: the attempt, and the payload when accepted."""
    if method == "snapcompact":
        return snapcompact_attempt(view, probe, prep, trigger=trigger, pending=pending,
                                   prepared=prepared)
    if method == "handoff":
        return _handoff(view, prep)
    if method == "remote":
        return _remote(view, prep)
    return _soft(view, prep)
