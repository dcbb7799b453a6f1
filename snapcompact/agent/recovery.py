"""The recovery band after a commit, and the dead-end rescues that run when a pass misses it.

Why a room: the agent does not trust a compaction because it committed. After a threshold pass
the residual context must land at or below 0.8 x the threshold (``COMPACTION_RECOVERY_BAND``,
``src/session/session-maintenance.ts`` SM:329); a retry after overflow must fit the window
(the progress guard of ``#commitAutoCompactionResult``, SM:5120-5200). When it does not, the
rescues of ``#rescueCompactionDeadEnd`` (SM:3865-4125) run in order, each followed by the same
test: rebuild the latest snapcompact archive at a frame budget sized to the band
(``#rescueSnapcompactFrameOverflow``, SM:4004), elide heavy tool results (shake's rescue
config), drop every image (``dropImages``, SM:747). A pass that still has no headroom is a dead
end and blocks auto-continue. When nothing can be prepared at all (the kept tail alone is over
the budget) the same rescues run until a cut point appears (SM:4410-4540).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from snapcompact.agent.frame_cap import rescue_max_frames
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.archive import FileOperations, archive_source_text, compact, get_preserved_archive
from snapcompact.compaction import (
    RESCUE_SHAKE_CONFIG,
    CompactionEntry,
    CompactionPreparation,
    CustomMessageEntry,
    MessageEntry,
    asked_shape,
    shake_in_place,
    text_edge_chars,
)

__all__ = [
    "COMPACTION_RECOVERY_BAND",
    "band_tokens",
    "drop_images",
    "ensure_progress",
    "has_headroom",
    "rescue_frame_budget",
    "rescue_frames",
    "rescue_unpreparable",
]

#: Residual context after a commit must land at or below this share of the threshold (SM:329).
COMPACTION_RECOVERY_BAND = 0.8


def band_tokens(threshold: int) -> int:
    """The recovery band's ceiling for ``threshold``: floor(0.8 x threshold)."""
    return math.floor(threshold * COMPACTION_RECOVERY_BAND)


def has_headroom(view: MaintenanceView) -> bool:
    """The residual context is inside the recovery band (SM:3769-3786)."""
    return view.residual_tokens() <= band_tokens(view.threshold())


def _fits_window(view: MaintenanceView) -> bool:
    return view.residual_tokens() <= view.window_budget()


def ensure_progress(view: MaintenanceView, reason: str, will_retry: bool,
                    fallback_from_shake: bool, rescues: list[str]) -> bool:
    """The progress guard (SM:5120-5200): a retry must fit the window, a threshold pass
    must land in the recovery band; otherwise the rescues run. Whether it made progress."""
    if reason == "idle":
        return True

    def progress() -> bool:
        return _fits_window(view) if will_retry else has_headroom(view)

    if progress():
        return True
    return _rescue_dead_end(view, fallback_from_shake, progress, rescues)


def _elided(view: MaintenanceView) -> bool:
    applied = shake_in_place(view.pipeline, RESCUE_SHAKE_CONFIG)
    return applied.tool_results_dropped + applied.blocks_dropped > 0


def _rescue_dead_end(view: MaintenanceView, skip_elide: bool, progress: Callable[[], bool],
                     rescues: list[str]) -> bool:
    """``#rescueCompactionDeadEnd``: frame rebuild, then elide, then drop images."""
    if rescue_frames(view):
        rescues.append("frame-rebuild")
        if progress():
            return True
    if not skip_elide and _elided(view):
        rescues.append("elide")
        if progress():
            return True
    if drop_images(view):
        rescues.append("drop-images")
        if progress():
            return True
    return False


def rescue_unpreparable(view: MaintenanceView, reason: str, fallback_from_shake: bool,
                        rescues: list[str]) -> CompactionPreparation | None:
    """Nothing to summarize (SM:4410-4540): rebuild the archive smaller, else elide or drop
    images until a cut point appears; the preparation found, or None."""
    if reason == "idle":
        return None
    if rescue_frames(view):
        rescues.append("frame-rebuild")
        if has_headroom(view):
            return None
    if not fallback_from_shake and _elided(view):
        rescues.append("elide")
        prep = view.prepare()
        if prep is not None:
            return prep
    if drop_images(view):
        rescues.append("drop-images")
        prep = view.prepare()
        if prep is not None:
            return prep
    return None


def rescue_frame_budget(view: MaintenanceView, kept_tail_tokens: int) -> int:
    """The frames a dead-end rebuild may draw: sized so the rebuilt context lands in the
    recovery band (``#computeSnapcompactRescueMaxFrames``, SM:3938-3990)."""
    sc = view.settings.snapcompact
    shape = asked_shape(view.model, sc).shape
    return rescue_max_frames(
        threshold_tokens=view.threshold(), non_message_tokens=view.non_message_tokens,
        kept_tail_tokens=kept_tail_tokens, shape=shape, provider=view.model.provider,
        recovery_band=COMPACTION_RECOVERY_BAND, frame_tokens=view.estimator.frame_tokens,
        edge_chars=text_edge_chars(sc), data_budget=sc.frame_cap_bytes == "estimate")


def _kept_tail_tokens(view: MaintenanceView, stale: CompactionEntry) -> int:
    kept_tail = 0
    in_kept = False
    for entry in view.session.get_branch():
        if entry.id == stale.first_kept_entry_id:
            in_kept = True
        if entry.id == stale.id:
            in_kept = True
            continue
        if in_kept and isinstance(entry, MessageEntry):
            kept_tail += view.estimator.message(entry.message)
    return kept_tail


def rescue_frames(view: MaintenanceView) -> bool:
    """``#rescueSnapcompactFrameOverflow``: re-render the latest archive's own text at a
    frame budget sized to the recovery band; appended only when it has fewer frames."""
    model = view.model
    if not model.supports_images:
        return False
    stale = view.session.latest_compaction()
    if stale is None:
        return False
    kept_tail = _kept_tail_tokens(view, stale)
    archive = get_preserved_archive(stale.preserve_data)
    if archive is None or len(archive.frames) <= 1 or not archive_source_text(archive):
        return False
    sc = view.settings.snapcompact
    max_frames = rescue_frame_budget(view, kept_tail)
    if max_frames < 1 or max_frames >= len(archive.frames):
        return False
    ops = FileOperations.from_details(stale.details) if stale.details else FileOperations()
    try:
        result = compact([], model_id=model.id, api=model.api, provider=model.provider,
                         shape=None if sc.shape == "auto" else sc.shape,
                         policy=sc.policy,  # type: ignore[arg-type]
                         previous=stale.preserve_data, max_frames=max_frames,
                         frame_size=sc.frame_size,
                         serialize_options={"include_thinking": model.include_thinking},
                         file_ops=ops, first_kept_entry_id=stale.first_kept_entry_id,
                         text_edge_chars=text_edge_chars(sc), middle_shape=sc.middle_shape)
    except (ValueError, RuntimeError) as exc:
        view.notice(f"snapcompact frame rescue failed: {exc}")
        return False
    if len(result.archive.frames) >= len(archive.frames):
        return False
    view.session.append_compaction(result.summary, stale.first_kept_entry_id,
                                   stale.tokens_before, short_summary=result.short_summary,
                                   details=result.details.to_json(),
                                   preserve_data=result.preserve_data)
    view.notice("compaction dead-end recovery: rebuilt the snapcompact archive at a smaller "
                f"frame budget ({len(archive.frames)} -> {len(result.archive.frames)} frames)")
    return True


def _strip_images(content: Any) -> tuple[Any, int]:
    if not isinstance(content, list):
        return content, 0
    kept = [b for b in content if not (isinstance(b, Mapping) and b.get("type") == "image")]
    removed = len(content) - len(kept)
    if removed and not kept:
        kept = [{"type": "text", "text": "[image removed]"}]
    return kept, removed


def drop_images(view: MaintenanceView) -> int:
    """``dropImages``: strip image blocks from every message on the branch; how many."""
    replacements: dict[str, Mapping[str, Any]] = {}
    entries: dict[str, Any] = {}
    removed = 0
    for entry in view.session.get_branch():
        if isinstance(entry, MessageEntry):
            content, n = _strip_images(entry.message.get("content"))
            if n:
                replacements[entry.id] = {**entry.message, "content": content}
                removed += n
        elif isinstance(entry, CustomMessageEntry) and not isinstance(entry.content, str):
            content, n = _strip_images(list(entry.content))
            if n:
                entries[entry.id] = replace(entry, content=tuple(content))
                removed += n
    if replacements:
        view.session.replace_messages(replacements)
    if entries:
        view.session.replace_entries(entries)
    return removed
