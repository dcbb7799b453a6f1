"""What one maintenance pass did, as data a harness can record row by row.

Why: a number the harness prints must be about a context production would send. That is only
checkable when every pass says which methods it tried, why each was rejected, which one was
accepted, the frame cap it was given, what it drew (frames by shape, payload bytes) and
whether the post-commit band held. These records are the answer; nothing here decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from snapcompact.agent.frame_cap import FrameCap

__all__ = ["MaintenanceRound", "MethodAttempt"]


@dataclass(frozen=True)
class MethodAttempt:
    """One method of the preference list, tried (or passed over) in one pass.

    ``status``: ``accepted``; ``rejected`` (it ran and a guard refused the result, or it found
    nothing: ``reason`` says which); ``unusable`` (the agent would skip it for this model and
    reason); ``offline`` (the agent would run it, but it needs a language model this run was
    not given, so the next method ran instead: the context is no longer what production
    sends).
    """

    method: str
    status: str
    reason: str | None = None
    frame_cap: FrameCap | None = None
    frames: int = 0
    frames_by_shape: Mapping[str, int] = field(default_factory=dict)
    payload_bytes: int = 0
    projected_tokens: int | None = None
    reduction_baseline: int | None = None
    window_budget: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for records and the ``compact`` command."""
        out: dict[str, Any] = {"method": self.method, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.frame_cap is not None:
            out["frame_cap"] = self.frame_cap.max_frames
        if self.frames or self.frames_by_shape:
            out["frames"] = self.frames
            out["frames_by_shape"] = dict(self.frames_by_shape)
            out["payload_bytes"] = self.payload_bytes
        for key in ("projected_tokens", "reduction_baseline", "window_budget"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class MaintenanceRound:
    """One maintenance pass that found the context over its threshold (or an overflow)."""

    index: int  # 1-based over the session
    check: str  # pre_prompt | post_turn | mid_turn | overflow | incomplete
    reason: str  # threshold | overflow | incomplete
    after_message: int  # source message index the check ran at (-1 when unknown)
    trigger_tokens: int
    threshold_tokens: int
    attempts: tuple[MethodAttempt, ...]
    method: str | None  # the accepted method, None when every method failed
    entry_id: str | None = None  # the compaction entry written (None: shake or nothing)
    tokens_before: int | None = None
    tokens_after: int | None = None
    headroom: bool | None = None  # residual <= 0.8 x threshold after the commit (and rescues)
    rescues: tuple[str, ...] = ()  # frame-rebuild / elide / drop-images, in the order they ran
    dead_end: bool = False
    auto_continue: bool = False
    frames: int = 0  # frames of the archive the context carries after this pass
    frames_by_shape: Mapping[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def committed(self) -> bool:
        """Whether the pass changed the context (an entry written, or a shake applied)."""
        return self.method is not None

    @property
    def offline_divergence(self) -> bool:
        """True when a method production would have run was skipped for want of an LLM."""
        return any(a.status == "offline" for a in self.attempts)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for records and the ``compact`` command."""
        return {
            "index": self.index, "check": self.check, "reason": self.reason,
            "after_message": self.after_message, "trigger_tokens": self.trigger_tokens,
            "threshold_tokens": self.threshold_tokens, "method": self.method,
            "attempts": [a.to_json() for a in self.attempts],
            "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
            "headroom": self.headroom, "rescues": list(self.rescues), "dead_end": self.dead_end,
            "auto_continue": self.auto_continue, "frames": self.frames,
            "frames_by_shape": dict(self.frames_by_shape), "warnings": list(self.warnings),
        }
