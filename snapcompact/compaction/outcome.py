"""What one maintenance run of the pipeline did, as the value every entry point returns.

Why a module: the pipeline's rooms (the compaction run, shake, handoff, promotion, the
check points in :mod:`.pipeline`) each end a run their own way, and a caller (the replay, a
harness, the agent's UI in production) reads one record for all of them: which strategy ran,
the entry written or the session handed off to, whether the turn is retried or continued, what
pruning and shake freed, the notices raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snapcompact.compaction.entries import CompactionEntry
from snapcompact.compaction.pruning import PruneResult
from snapcompact.compaction.session import Session
from snapcompact.compaction.shake_write import ShakeApplied

__all__ = ["CompactionOutcome"]


@dataclass(frozen=True)
class CompactionOutcome:
    """What one maintenance run did. ``entry`` is None when nothing was written."""

    reason: str
    strategy: str | None = None
    entry: CompactionEntry | None = None
    handoff_session: Session | None = None
    cancelled: bool = False
    skipped: str | None = None
    error: str | None = None
    will_retry: bool = False
    auto_continue_prompt: str | None = None
    pruned: PruneResult | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: Context promotion: the larger model switched to instead of compacting.
    promoted_to: str | None = None
    #: The shake strategy: what it elided in place (no entry is written).
    shaken: ShakeApplied | None = None
