"""The shape snapcompact's settings ask for, resolved for the model: one home for that decision.

Why a module of its own: the same question (which shape, at which frame size, does
``snapcompact.shape`` / ``snapcompact.frameSize`` mean for this model and its API?) is asked by
the pipeline's token estimator, the agent's frame cap, its rescue budget, its billed frame
charge and the replay's report of what it drew. Each once asked :func:`resolve_shape` with the
same five arguments; now they ask here, so the answer cannot drift between them. Resolutions
that look at the text (``auto`` narrowed by a renderability scan, the archive's per-text pick)
are different questions and stay with :func:`~snapcompact.pricing.resolve_shape_for_text`.
"""

from __future__ import annotations

from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.settings import SnapcompactSettings
from snapcompact.pricing import ResolvedShape, resolve_shape

__all__ = ["asked_shape"]


def asked_shape(model: ModelInfo, sc: SnapcompactSettings) -> ResolvedShape:
    """``sc.shape`` at ``sc.frame_size`` for ``model`` (``auto``/None: the model table's pick)."""
    return resolve_shape(model.id, api=model.api, provider=model.provider, shape=sc.shape,
                         frame_size=sc.frame_size)
