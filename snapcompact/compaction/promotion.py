"""Context promotion: switch to a larger-window model instead of compacting.

Why a room: the coding agent, when a model names a larger one (``ModelInfo.promotion_target``)
and ``compaction.contextPromotion`` is on, tries promotion before any compaction: on overflow
and cut-off output whether or not compaction is enabled (``session-maintenance.ts:2870-2886``,
``3050-3068``), and on the threshold paths before compacting (``#tryContextPromotion``,
``#promoteContextModel``, 3260-3318). The target must be known and have a strictly larger
window. After a switch the estimator's frame charge, derived from the model, is made again
(:attr:`~.pipeline_state.PipelineState.estimator` derives it per model).
"""

from __future__ import annotations

from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.pipeline_state import PipelineState

__all__ = ["promote", "promotion_target"]


def promotion_target(state: PipelineState) -> ModelInfo | None:
    """The configured larger-window model to switch to, if promotion is on and one is known."""
    if not state.settings.compaction.context_promotion or state.model.promotion_target is None:
        return None
    target = state.models.get(state.model.promotion_target)
    if (target is None or target.id == state.model.id
        or target.context_window <= state.model.context_window):
        return None
    return target


def promote(state: PipelineState) -> ModelInfo | None:
    """Switch to the promotion target (no compaction); the new model, or None when there is
    none."""
    target = promotion_target(state)
    if target is None:
        return None
    state.model = target
    return target
