"""Snapcompact's own path through a pass: renderability scan, frame cap, draw, three guards.

Why a room: snapcompact is the one method whose acceptance the agent decides itself rather than
the method's caller (``src/session/session-maintenance.ts``, SM:4640-4760). The agent scans the
text it would archive (the previous archive's text and the history about to be summarized,
``renderabilityProbeText``) and turns the method away when the font cannot show enough of it;
sizes the frame cap from the window (:mod:`.frame_budget`); renders; then projects the
context the result would leave (non-message part + summary message + kept tail) and applies
the payload, reduction and window guards (:mod:`.guards`). A rejection hands the pass to the
next method of the order.
"""

from __future__ import annotations

from snapcompact.agent.frame_budget import draw_within_payload, pass_frame_cap
from snapcompact.agent.frame_shapes import frames_by_shape
from snapcompact.agent.guards import snapcompact_rejection
from snapcompact.agent.maintenance_view import MaintenanceView
from snapcompact.agent.probe import ParsedArchiveCache, ProbeScan
from snapcompact.agent.rounds import MethodAttempt
from snapcompact.archive import (
    SerializeOptions,
    archive_source_text,
    get_preserved_archive,
    serialize_conversation,
)
from snapcompact.compaction import CompactionPayload, CompactionPreparation, StrategyFallback
from snapcompact.pricing import resolve_shape, resolve_shape_for_scan, resolve_shape_for_text
from snapcompact.text import Renderability, ScanCounts, scan_renderability

__all__ = ["RenderabilityProbe", "snapcompact_attempt"]


class RenderabilityProbe:
    """What the renderability scan reads, kept across the passes of one maintenance: the
    parsed history (:class:`~.probe.ParsedArchiveCache`) and the scan's counts
    (:class:`~.probe.ProbeScan`, a pass costs what changed since the last)."""

    def __init__(self) -> None:
        self._parsed = ParsedArchiveCache()
        self._scan = ProbeScan()

    @staticmethod
    def head(prep: CompactionPreparation) -> str:
        """The previous archive's source text (else the previous summary), or ``""``."""
        prev = prep.previous_compaction
        archive = get_preserved_archive(prev.preserve_data) if prev is not None else None
        head = archive_source_text(archive) if archive is not None else (
            prev.summary if prev is not None else "")
        return head or ""

    def text(self, view: MaintenanceView, prep: CompactionPreparation) -> str:
        """The probe text: the previous archive's text and the history about to be archived
        (``renderabilityProbeText``)."""
        serialized = serialize_conversation(
            self._parsed.parsed_archive(prep),
            SerializeOptions(include_thinking=view.model.include_thinking))
        head = self.head(prep)
        return f"{head}\n{serialized}" if head else serialized

    def counts(self, view: MaintenanceView, prep: CompactionPreparation) -> ScanCounts | None:
        """The probe text's counts, when ``prep`` is the preparation of the session as it is
        now; else None (the caller scans :meth:`text`)."""
        if not view.preparation.is_current(prep, view.session):
            return None
        sc, model = view.settings.snapcompact, view.model
        fonts = view.derived("probe_fonts", (model, sc), lambda: tuple(dict.fromkeys(
            resolve_shape(model.id, api=model.api, provider=model.provider,
                          shape=shape).shape.font for shape in (sc.shape, "silver16-bw"))))
        return self._scan.counts(
            view.session.branch_index, prep.window_start, prep.first_kept_index,
            self.head(prep), SerializeOptions(include_thinking=model.include_thinking), fonts)

    def scan(self, view: MaintenanceView, prep: CompactionPreparation) -> Renderability:
        """The renderability of the probe text in the font of the shape it resolves to."""
        sc, model = view.settings.snapcompact, view.model
        counts = self.counts(view, prep)
        if counts is not None:
            resolved = resolve_shape_for_scan(counts, model.id, api=model.api,
                                              provider=model.provider, shape=sc.shape)
            return counts.renderability(resolved.shape.font)
        probe = self.text(view, prep)
        resolved = resolve_shape_for_text(probe, model.id, api=model.api,
                                          provider=model.provider, shape=sc.shape)
        return scan_renderability(probe, resolved.shape.font)


def snapcompact_attempt(view: MaintenanceView, probe: RenderabilityProbe,
                        prep: CompactionPreparation, *, trigger: int, pending: int,
                        prepared: int | None) -> tuple[MethodAttempt, CompactionPayload | None]:
    """Snapcompact's path (SM:4640-4760): scan, cap, render, then the three guards. The
    reduction guard's baseline is the trigger count less the pending prompt (pre-prompt: the
    stored count it was measured on swapped for this preparation's own count)."""
    sc = view.settings.snapcompact
    scan = probe.scan(view, prep)
    if not scan.safe:
        return MethodAttempt("snapcompact", "rejected",
                             "unsupported characters for the snapcompact font "
                             f"({scan.ratio * 100:.1f}%)"), None
    cap = pass_frame_cap(view, prep)
    if cap.max_frames < 1:
        return MethodAttempt("snapcompact", "rejected",
                             "kept history alone exceeds the context budget",
                             frame_cap=cap), None
    try:
        drawn = draw_within_payload(view, prep, cap)
    except StrategyFallback as exc:
        return MethodAttempt("snapcompact", "rejected", str(exc), frame_cap=cap), None
    payload = drawn.payload
    by_shape = frames_by_shape(drawn.frames, [n for n in (sc.shape, sc.middle_shape)
                                              if n not in ("auto", "production", "same")])
    summary_message = {"role": "compactionSummary", "summary": payload.summary,
                       "tokensBefore": payload.tokens_before,
                       "preserveData": payload.preserve_data}
    recent = list(prep.recent_messages)
    # The window guard's projection counts every block; the reduction guard compares both
    # sides without opaque replay payloads (SM:4701-4723, ``#projectPreSnapcompactContextTokens``
    # SM:2478-2497), so a signed-thinking tail cannot make an inflating archive look reducing.
    summary_tokens = view.non_message_tokens + view.estimator.message(summary_message)
    projected = summary_tokens + view.estimator.messages(recent)
    local = view.reasoning_free
    projected_local = summary_tokens + local.messages(recent)
    pre = (view.non_message_tokens
           + local.messages([*prep.messages_to_summarize, *prep.turn_prefix_messages, *recent]))
    baseline = max(0, trigger - pending)
    if prepared is not None:
        baseline = max(0, baseline - prepared) + pre
    budget = view.window_budget()
    rejection = snapcompact_rejection(
        payload_bytes=drawn.payload_bytes, projected_tokens=projected,
        reduction_projected=projected_local, reduction_baseline=baseline, window_budget=budget,
        max_payload_bytes=sc.max_frame_data_bytes)
    attempt = MethodAttempt("snapcompact", "rejected" if rejection else "accepted", rejection,
                            frame_cap=drawn.cap, frames=len(drawn.frames),
                            frames_by_shape=by_shape, payload_bytes=drawn.payload_bytes,
                            projected_tokens=projected, reduction_baseline=baseline,
                            window_budget=budget)
    return attempt, (None if rejection else payload)
