"""The prunes the agent runs after every turn, before it asks whether to compact.

Why a room: the end-of-turn check point (``src/session/session-maintenance.ts``, SM below)
first rewrites tool results in place, and what they free lowers the count that triggers the
pass. Two passes, each with the agent's own settings over ``pruning.*``: the stale-result pass
(``#pruneStaleToolResults``, SM:702-745), gated on ``supersedeReads`` or ``dropUseless``, whose
cache may be flushed whole after 90 idle minutes (SM:316); and the threshold prune
(``#pruneToolOutputs``, SM:659-700), which leaves the 8,000-token warm suffix alone (SM:308).
"""

from __future__ import annotations

from dataclasses import replace

from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.compaction import prune_superseded_tool_results, prune_tool_outputs

__all__ = [
    "PRUNE_CACHE_WARM_SUFFIX_TOKENS",
    "PRUNE_IDLE_FLUSH_SECONDS",
    "prune_stale",
    "prune_threshold",
]

#: The threshold prune leaves results followed by more message tokens than this (SM:308).
PRUNE_CACHE_WARM_SUFFIX_TOKENS = 8000
#: Idle gap after which the stale-result pass may rewrite the whole sent region (SM:316: 90 min).
PRUNE_IDLE_FLUSH_SECONDS = 90 * 60


def prune_stale(view: MaintenanceView, idle_seconds: float) -> int:
    """The per-turn stale-result pass (SM:702-745), gated on supersedeReads or dropUseless;
    the tokens it freed."""
    pruning = view.settings.pruning
    drop_useless = view.settings.compaction.drop_useless
    if not pruning.supersede_reads and not drop_useless:
        return 0
    config = view.derived("stale_prune", (pruning,), lambda: replace(
        pruning, cache_idle_seconds=PRUNE_IDLE_FLUSH_SECONDS))
    result = prune_superseded_tool_results(
        view.session.branch_index.sync(), config, idle_seconds=idle_seconds,
        drop_useless=drop_useless, protected_paths=view.pipeline.protected_paths,
        estimator=view.estimator, now_ms=int(view.pipeline.clock() * 1000))
    if result.changed:
        view.session.replace_messages(result.replacements)
    return result.tokens_saved


def prune_threshold(view: MaintenanceView) -> int:
    """The threshold prune (SM:659-700): every turn, outside the 8,000-token warm suffix; the
    tokens it freed."""
    pruning, cs = view.settings.pruning, view.settings.compaction
    config = view.derived("threshold_prune", (pruning, cs), lambda: replace(
        pruning, prune_useless=cs.drop_useless,
        cache_warm_suffix_tokens=PRUNE_CACHE_WARM_SUFFIX_TOKENS))
    result = prune_tool_outputs(view.session.branch_index.sync(), config,
                                protected_paths=view.pipeline.protected_paths,
                                estimator=view.estimator,
                                now_ms=int(view.pipeline.clock() * 1000))
    if result.changed:
        view.session.replace_messages(result.replacements)
    return result.tokens_saved
