"""Shake as a pipeline step: elide heavy content in place, the manual shake and the strategy.

Why a room: shake is the one maintenance that writes no compaction entry. It replaces heavy
tool results and blocks on the branch with placeholders (:mod:`.shake` finds and applies the
regions), keeps the originals in a recovery artifact numbered as the agent numbers them
(``#saveShakeArtifact``, ``session-maintenance.ts:1031``; :mod:`.artifacts`), and as the
``shake`` strategy counts as handled only when the context is back under the recovery band;
otherwise the next method, a context-full summary, runs (``#runAutoShake``,
``session-maintenance.ts:5254-5320``). :func:`shake_in_place` is the manual shake (aggressive
by default), :func:`auto_shake` the strategy.
"""

from __future__ import annotations

from dataclasses import replace

from snapcompact.compaction.outcome import CompactionOutcome
from snapcompact.compaction.pipeline_state import PipelineState
from snapcompact.compaction.prompts import prompt
from snapcompact.compaction.shake import (
    AGGRESSIVE_SHAKE_CONFIG,
    DEFAULT_SHAKE_CONFIG,
    ShakeConfig,
    collect_shake_regions,
)
from snapcompact.compaction.shake_write import (
    ShakeApplied,
    apply_shake_regions,
    shake_artifact_text,
    shake_placeholder,
)
from snapcompact.compaction.triggers import Reason

__all__ = ["SHAKE_RECOVERY_BAND", "auto_shake", "shake_in_place"]

#: After an automatic shake the context must be back under this share of the threshold (the coding
#: agent's recovery band), else the next method runs: shaking again would find nothing new.
SHAKE_RECOVERY_BAND = 0.8


def _shake_config(state: PipelineState, base: ShakeConfig) -> ShakeConfig:
    """``base`` at the latest compaction boundary, with the caller's protected paths (the
    plan)."""
    latest = state.session.latest_compaction()  # from the branch index (no walk)
    boundary = latest.first_kept_entry_id if latest is not None else None
    # Every maintenance pass shakes (39,555 in a 60,000-message replay), nearly always with
    # the same base, boundary and plan: the config made last for them is reused (frozen).
    made = state.shake_configs.get(id(base))
    if made is not None and made[0] is base and made[1] == boundary \
            and made[2] == state.protected_paths:
        return made[3]
    config = replace(base, keep_boundary_id=boundary,
                     protected_paths=(*base.protected_paths, *state.protected_paths))
    if len(state.shake_configs) > 8:
        state.shake_configs.clear()
    state.shake_configs[id(base)] = (base, boundary, state.protected_paths, config)
    return config


def _save_shake_artifact(state: PipelineState, text: str) -> str | None:
    """Keep the shaken originals as the agent does (``#saveShakeArtifact``, SM:1031-1037:
    :class:`~.artifacts.ArtifactStore`, in the session's artifact folder or in memory); the
    artifact id, or None when it could not be written (placeholders then carry no link)."""
    try:
        return state.artifacts.save(state.session.path, text, "shake")
    except OSError as exc:
        state.notice(f"shake could not save a recovery artifact ({exc}); placeholders carry no "
                     "link")
        return None


def shake_in_place(state: PipelineState,
                   config: ShakeConfig = AGGRESSIVE_SHAKE_CONFIG) -> ShakeApplied:
    """Elide heavy content now (the manual shake: aggressive by default).

    The session is rewritten when anything was elided; the originals go to a recovery artifact
    (in the session's artifact folder, or in memory for a session without a file).
    """
    state.abort_signal.check()
    path = state.session.branch_index.sync()  # read only: the index's own list, not a copy
    regions = collect_shake_regions(path, _shake_config(state, config), estimator=state.estimator)
    if not regions:
        return ShakeApplied({}, 0, 0, 0)
    artifact_id = _save_shake_artifact(state, shake_artifact_text(regions))
    state.abort_signal.check()
    applied = apply_shake_regions(path, regions, [shake_placeholder(r, i, artifact_id)
                                                  for i, r in enumerate(regions)],
                                  now_ms=int(state.clock() * 1000), estimator=state.estimator)
    state.session.replace_entries(applied.replacements)
    return applied


def auto_shake(state: PipelineState, reason: Reason, will_retry: bool, measured: int | None,
               auto_continue: bool) -> tuple[CompactionOutcome | None, str]:
    """The shake strategy: an outcome when shake handled the maintenance, else (None, why)."""
    tokens_before = max(measured or 0, state.estimate_tokens())
    applied = shake_in_place(state, DEFAULT_SHAKE_CONFIG)
    reclaimed = applied.tool_results_dropped + applied.blocks_dropped > 0
    threshold = state.threshold()
    if measured is not None:
        # Provider-anchored: the measured prompt less what shake freed, against the recovery
        # band.
        still_over = (max(0, measured - applied.tokens_freed)
                      > int(threshold * SHAKE_RECOVERY_BAND))
    else:
        still_over = state.estimate_tokens() > threshold
    if reason != "idle" and ((reason == "overflow" and not reclaimed) or still_over):
        if reclaimed:
            return None, (f"shake freed ~{applied.tokens_freed} tokens but the context is "
                          "still above "
                          "the threshold: falling back to context-full")
        return None, "shake found nothing to elide: falling back to context-full"
    return CompactionOutcome(reason, "shake", will_retry=will_retry,
                             auto_continue_prompt=prompt("auto-continue") if auto_continue
                             and reclaimed else None,
                             tokens_before=tokens_before, tokens_after=state.estimate_tokens(),
                             shaken=applied), ""
