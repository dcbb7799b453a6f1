"""Tree navigation: move the session's leaf to another entry, summarizing the branch left.

Why a room: a session is a tree, and moving to another point of it (the agent's ``/tree``)
abandons the current branch. When ``branchSummary.enabled`` (or the caller) asks, the abandoned
entries are summarized (:mod:`.branch`) and the summary is written at the new position, so the
work done there is not lost; a ``session_before_tree`` hook may cancel or answer with its own
summary, and Escape during the summary cancels the move. Nothing else of the pipeline is
involved: no threshold, no strategy.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapcompact.compaction.branch import (
    collect_entries_for_branch_summary,
    generate_branch_summary,
)
from snapcompact.compaction.control import CompactionAborted, guarded_complete
from snapcompact.compaction.entries import Entry
from snapcompact.compaction.hooks import BeforeTreeEvent, Cancel, TreeEvent
from snapcompact.compaction.pipeline_state import PipelineState

__all__ = ["NavigationOutcome", "navigate_tree"]


@dataclass(frozen=True)
class NavigationOutcome:
    """Result of moving the leaf to another entry, with the branch summary written on the way."""

    cancelled: bool
    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry: Entry | None = None
    #: The branch summary was aborted (Escape); nothing changed.
    aborted: bool = False


def navigate_tree(state: PipelineState, target_id: str | None, *, summarize: bool | None = None,
                  custom_instructions: str | None = None) -> NavigationOutcome:
    """Move the leaf to ``target_id``, optionally summarizing the abandoned branch there."""
    if target_id is not None and target_id not in state.session:
        raise ValueError(f"unknown navigation target {target_id!r}")
    old_leaf = state.session.leaf_id
    if summarize is None:
        summarize = state.settings.branch_summary.enabled
    common, abandoned = collect_entries_for_branch_summary(state.session, old_leaf, target_id)
    hook = state.hooks.run_before_tree(BeforeTreeEvent(target_id, old_leaf, common,
                                                       tuple(abandoned), summarize))
    if isinstance(hook, Cancel):
        return NavigationOutcome(True, old_leaf, old_leaf)
    summary_entry = None
    if summarize and abandoned and old_leaf is not None:
        if hook is not None:
            summary, details, usage, from_ext = hook.summary, hook.details, hook.usage, True
        else:
            state.abort_signal.reset()
            try:
                summary, details, usage = generate_branch_summary(
                    abandoned, guarded_complete(state.complete, state.abort_signal), state.model,
                    state.settings,
                    custom_instructions=custom_instructions, estimator=state.estimator)
            except CompactionAborted:
                # Escape during the summary: navigation is cancelled, the leaf stays.
                return NavigationOutcome(True, old_leaf, old_leaf, aborted=True)
            from_ext = False
        summary_entry = state.session.branch_with_summary(target_id, old_leaf, summary,
                                                          details=details,
                                                          from_extension=from_ext, usage=usage)
    else:
        state.session.branch(target_id)
    outcome = NavigationOutcome(False, state.session.leaf_id, old_leaf, summary_entry)
    state.hooks.emit_tree(TreeEvent(outcome.new_leaf_id, old_leaf, summary_entry))
    return outcome
