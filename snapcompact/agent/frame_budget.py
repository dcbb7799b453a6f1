"""The frames one pass lets snapcompact draw: the cap sized from the window, then the payload.

Why a room: :mod:`.frame_cap` holds the agent's formulas; this room feeds them the session's
figures at the moment of a pass, as the agent's session maintenance does
(``src/session/session-maintenance.ts``, SM below). The cap is sized from the window less the
effective reserve and what stays in the context besides the archive (the non-message part and
the kept tail), ``#computeSnapcompactMaxFrames`` (SM:3557-3612), and lowered to
``snapcompact.maxFrames`` when that is smaller. Under ``snapcompact.frameCapBytes = "actual"``
(a research knob; production estimates 170 KB per frame and never redraws) the archive is drawn
again with fewer frames until its base64 fits the 3 MB budget (``#snapcompactFramePayloadBytes``,
SM:3614). (The dead-end rescue sizes its rebuild to the recovery band instead: :mod:`.recovery`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from snapcompact.agent.frame_cap import (
    FrameCap,
    frames_within_payload,
    snapcompact_max_frames,
)
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.archive import get_preserved_archive
from snapcompact.compaction import (
    CompactionPayload,
    CompactionPreparation,
    asked_shape,
    compact_snapcompact,
    effective_reserve_tokens,
    text_edge_chars,
)
from snapcompact.core import Shape

__all__ = ["Drawn", "draw_within_payload", "pass_frame_cap"]


def _cap_shape(view: MaintenanceView) -> Shape:
    sc, model = view.settings.snapcompact, view.model
    shape: Shape = view.derived("cap_shape", (model, sc), lambda: asked_shape(model, sc).shape)
    return shape


def pass_frame_cap(view: MaintenanceView, prep: CompactionPreparation) -> FrameCap:
    """The cap this pass gives snapcompact (``#computeSnapcompactMaxFrames``)."""
    sc = view.settings.snapcompact
    window = view.model.context_window
    recent = view.preparation.recent_tokens(prep, view.session, view.estimator)
    cap = snapcompact_max_frames(
        context_window=window,
        reserve_tokens=effective_reserve_tokens(window, view.settings.compaction),
        base_tokens=view.non_message_tokens + recent,
        shape=_cap_shape(view), provider=view.model.provider,
        frame_tokens=view.estimator.frame_tokens,
        edge_chars=text_edge_chars(sc), data_budget=sc.frame_cap_bytes == "estimate")
    if sc.max_frames is not None and cap.max_frames > sc.max_frames:
        cap = replace(cap, max_frames=sc.max_frames)
    return cap


@dataclass(frozen=True)
class Drawn:
    """A snapcompact payload, its archive's frames and their base64 bytes, and the cap it was
    drawn at (lowered when the payload redraw took frames off)."""

    payload: CompactionPayload
    frames: Sequence[Any]
    payload_bytes: int
    cap: FrameCap


def draw_within_payload(view: MaintenanceView, prep: CompactionPreparation,
                        cap: FrameCap) -> Drawn:
    """Render the archive at ``cap``; with ``frameCapBytes = "actual"`` redraw with fewer
    frames until the frames drawn fit the byte budget. Raises ``StrategyFallback`` as
    :func:`~snapcompact.compaction.compact_snapcompact` does."""
    sc = view.settings.snapcompact
    drawn_cap = cap.max_frames
    while True:
        payload = compact_snapcompact(prep, view.model, view.settings, kept_tokens=0,
                                      max_frames=drawn_cap, check_reduction=False)
        archive = get_preserved_archive(payload.preserve_data)
        frames = archive.frames if archive is not None else ()
        payload_bytes = sum(len(f.data) for f in frames)
        # frameCapBytes = "actual": the cap left the 170 KB estimate out; redraw with fewer
        # frames until the frames drawn fit the byte budget (production: never loops).
        fewer = frames_within_payload(len(frames), payload_bytes, sc.max_frame_data_bytes)
        if sc.frame_cap_bytes == "estimate" or fewer >= len(frames):
            break
        drawn_cap = fewer
    if drawn_cap != cap.max_frames:
        cap = replace(cap, max_frames=drawn_cap)
    return Drawn(payload, frames, payload_bytes, cap)
