"""Where to cut: which history a compaction replaces and which it keeps verbatim.

Why these rules: the newest ``keepRecentTokens`` of conversation stay as they are (the model
needs them exactly), everything older is summarized or archived. A cut may only fall where a
conversation can legally resume, never between a tool call and its result, so a tool result is
never a cut point; a result is counted with the assistant message that called it. Metadata
entries (model or thinking-level changes, labels) just before the cut move to the kept side, so
the state they set survives. When one turn alone is bigger than the budget the cut lands inside
it (a *split turn*): the turn's first part is summarized on its own so the kept remainder still
reads as a continuation.

A repeated compaction re-partitions from the previous compaction's ``firstKeptEntryId``: what the
previous pass kept is now old enough to summarize together with what came after it, and the
previous summary is handed over for an iterative update.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from snapcompact.compaction.context import (
    entry_to_message,
    estimate_branch_tokens,
    estimate_entry_tokens,
)
from snapcompact.compaction.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    MetadataEntry,
)
from snapcompact.compaction.path_index import _CUT_POINT_ROLES, BranchIndex, BranchSlice, index_of
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator

__all__ = [
    "CUT_POINT_ROLES",
    "TURN_START_ROLES",
    "CompactionPreparation",
    "CutPoint",
    "adapted_keep_tokens",
    "compaction_window_start",
    "entry_tokens",
    "find_cut_point",
    "is_turn_start",
    "is_valid_cut_point",
    "last_assistant_usage",
    "prepare_compaction",
    "usage_context_tokens",
    "usage_prompt_tokens",
]

#: Message roles a cut may fall on (never ``toolResult``; a ``custom``/``developer`` message
#: stored as a plain message entry is not one either, as in the agent core).
CUT_POINT_ROLES = _CUT_POINT_ROLES
#: Message roles that open a user turn.
TURN_START_ROLES = frozenset({"user", "bashExecution"})


def is_valid_cut_point(entry: Entry) -> bool:
    """Whether history may be cut right before ``entry`` (the kept part may start there)."""
    if isinstance(entry, MessageEntry):
        return entry.role in CUT_POINT_ROLES
    return isinstance(entry, (CustomMessageEntry, BranchSummaryEntry))


def is_turn_start(entry: Entry) -> bool:
    """Whether ``entry`` opens a turn (a user message, a shell run, an injected message)."""
    if isinstance(entry, MessageEntry):
        return entry.role in TURN_START_ROLES
    return isinstance(entry, (CustomMessageEntry, BranchSummaryEntry))


def _is_message_bearing(entry: Entry) -> bool:
    return isinstance(entry, (MessageEntry, CustomMessageEntry, BranchSummaryEntry))


def entry_tokens(entry: Entry, estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> int:
    """Tokens a message-bearing entry adds (0 for metadata and compactions)."""
    if isinstance(entry, CompactionEntry):
        return 0
    return estimate_entry_tokens(entry, estimator)


def _is_reset_boundary(entry: Entry) -> bool:
    return isinstance(entry, MetadataEntry) and entry.type == "reset_boundary"


@dataclass(frozen=True)
class CutPoint:
    """Indices into the branch: keep ``[first_kept_index, end)``; ``turn_start_index`` when
    split."""

    first_kept_index: int
    turn_start_index: int | None
    is_split_turn: bool


def find_cut_point(path: Sequence[Entry], start: int, end: int, keep_recent_tokens: int,
                   estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> CutPoint | None:
    """Walk ``path[start:end]`` newest first; None when it holds no valid cut point.

    The cut moves to each valid cut point while the tokens at and after it stay within
    ``keep_recent_tokens``; the newest cut point is always taken, however big.
    """
    if not 0 <= start <= end <= len(path):
        raise ValueError(f"bad window [{start}, {end}) for a branch of {len(path)} entries")
    if keep_recent_tokens < 1:
        raise ValueError(f"keep_recent_tokens must be positive, got {keep_recent_tokens}")
    index = index_of(path)
    cut: int | None
    if index is not None:
        cut = _cut_indexed(index, start, end, keep_recent_tokens, estimator)
    else:
        cut = _cut_walked(path, start, end, keep_recent_tokens, estimator)
    if cut is None:
        return None
    turn_start: int | None = None
    split = False
    if not is_turn_start(path[cut]):
        for j in range(cut - 1, start - 1, -1):
            if is_turn_start(path[j]):
                turn_start, split = j, True
                break
    # Pull metadata just before the cut into the kept side (stop at messages, compactions and
    # reset boundaries).
    while (cut > start and not _is_message_bearing(path[cut - 1])
           and not isinstance(path[cut - 1], CompactionEntry)
           and not _is_reset_boundary(path[cut - 1])):
        cut -= 1
    return CutPoint(cut, turn_start, split)


def _cut_indexed(index: BranchIndex, start: int, end: int, keep: int,
                 estimator: TokenEstimator) -> int | None:
    """:func:`_cut_walked` from running totals: the tokens at and after a position only grow as
    the position moves back, so the walk's answer is the oldest cut point whose tail fits in
    ``keep`` (found by bisection), or the newest cut point when even its tail does not fit."""
    context = index.totals(estimator).context
    points = index.cut_points()
    lo, hi = bisect_left(points, start), bisect_left(points, end)
    if lo == hi:
        return None
    newest = points[hi - 1]
    if context[end] - context[newest] > keep:
        return newest
    # tail(i) = context[end] - context[i] <= keep  <=>  context[i] >= context[end] - keep
    fits_from = bisect_left(context, context[end] - keep)
    return points[bisect_left(points, max(start, fits_from), lo, hi)]


def _cut_walked(path: Sequence[Entry], start: int, end: int, keep_recent_tokens: int,
                estimator: TokenEstimator) -> int | None:
    total = 0
    cut: int | None = None
    for i in range(end - 1, start - 1, -1):
        entry = path[i]
        if isinstance(entry, CompactionEntry):
            continue
        total += entry_tokens(entry, estimator)
        if not is_valid_cut_point(entry):
            continue
        if cut is not None and total > keep_recent_tokens:
            break
        cut = i
    return cut


def adapted_keep_tokens(keep_recent_tokens: int, measured_prompt_tokens: int | None,
                        local_estimate: int) -> int:
    """Shrink the keep budget when the provider counts more tokens than our estimate (ratio > 1)."""
    if not measured_prompt_tokens or local_estimate <= 0:
        return keep_recent_tokens
    ratio = measured_prompt_tokens / local_estimate
    if ratio <= 1:
        return keep_recent_tokens
    return max(1, math.floor(keep_recent_tokens / ratio))


def usage_prompt_tokens(usage: Mapping[str, Any]) -> int:
    """Prompt tokens of a provider usage record (context tokens when given, else input + cache)."""
    if usage.get("contextTokens") is not None:
        return max(0, int(usage["contextTokens"]))
    prompt = sum(int(usage.get(k) or 0) for k in ("input", "cacheRead", "cacheWrite"))
    return prompt if prompt > 0 else usage_context_tokens(usage)


def usage_context_tokens(usage: Mapping[str, Any]) -> int:
    """Context tokens of a usage record (total, else input + output + cache reads and writes)."""
    if usage.get("contextTokens") is not None:
        return max(0, int(usage["contextTokens"]))
    raw = int(usage.get("totalTokens") or 0) or sum(
        int(usage.get(k) or 0) for k in ("input", "output", "cacheRead", "cacheWrite"))
    return max(0, raw)


def last_assistant_usage(path: Sequence[Entry]) -> Mapping[str, Any] | None:
    """Usage of the newest assistant message that neither errored nor was aborted."""
    for entry in reversed(path):
        if isinstance(entry, MessageEntry) and entry.role == "assistant":
            usage = entry.message.get("usage")
            if (entry.message.get("stopReason") not in ("aborted", "error")
                and isinstance(usage, Mapping)):
                return usage
    return None


def _latest_compaction(path: Sequence[Entry]) -> int | None:
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], CompactionEntry):
            return i
    return None


def _latest_reset(path: Sequence[Entry]) -> int:
    for i in range(len(path) - 1, -1, -1):
        if _is_reset_boundary(path[i]):
            return i
    return -1


def compaction_window_start(path: Sequence[Entry]) -> tuple[int, CompactionEntry | None]:
    """First index a new compaction may consider, and the previous compaction (if any).

    The previous compaction's kept entries are re-partitioned, so the window starts at its
    ``firstKeptEntryId``; when that entry is not on the branch, right after the compaction. A
    reset boundary newer than the compaction clears it; an older one bounds the window.
    """
    index = index_of(path)
    if index is not None:
        return _window_start_indexed(index)
    prev_index = _latest_compaction(path)
    reset = _latest_reset(path)
    if prev_index is None or reset > prev_index:
        return reset + 1, None
    prev = path[prev_index]
    assert isinstance(prev, CompactionEntry)
    for i in range(reset + 1, prev_index):
        if path[i].id == prev.first_kept_entry_id:
            return i, prev
    return prev_index + 1, prev


def _window_start_indexed(index: BranchIndex) -> tuple[int, CompactionEntry | None]:
    """:func:`compaction_window_start` from the branch index (no walk)."""
    prev_index = index.latest_compaction_index()
    reset = index.latest_reset_index()
    if prev_index is None or reset > prev_index:
        return reset + 1, None
    prev = index.path[prev_index]
    assert isinstance(prev, CompactionEntry)
    kept = index.position.get(prev.first_kept_entry_id)
    if kept is not None and reset + 1 <= kept < prev_index:
        return kept, prev
    return prev_index + 1, prev


@dataclass(frozen=True, eq=False)
class CompactionPreparation:
    """Everything a strategy needs: the partitions, the boundary, the previous compaction.

    The summarized messages (``messages_to_summarize``, ``turn_prefix_messages`` and their
    entry ids) are made from the entries on first use: a maintenance pass that only sizes a
    cap or finds nothing to do never turns the whole history into messages.
    """

    first_kept_entry_id: str
    first_kept_index: int
    is_split_turn: bool
    tokens_before: int
    keep_recent_tokens: int
    previous_compaction: CompactionEntry | None
    window_start: int
    #: The entries summarized whole (as a :class:`~.path_index.BranchSlice` of the branch
    #: list when prepared from it: ``summarized_entries`` reads it), then the split turn's
    #: prefix (empty unless split), then the entries kept (from the cut on).
    summarized_window: tuple[Entry, ...] | BranchSlice = field(default=(), repr=False)
    prefix_entries: tuple[Entry, ...] = field(default=(), repr=False)
    kept_entries: tuple[Entry, ...] = field(default=(), repr=False)

    @property
    def summarized_entries(self) -> tuple[Entry, ...]:
        """The entries summarized whole, as they were when the preparation was made."""
        window = self.summarized_window
        return window if isinstance(window, tuple) else window.entries()

    @cached_property
    def kept_entry_ids(self) -> tuple[str, ...]:
        """Ids of the entries kept (compactions left out)."""
        return tuple(e.id for e in self.kept_entries if not isinstance(e, CompactionEntry))

    @cached_property
    def recent_messages(self) -> tuple[Mapping[str, Any], ...]:
        """Messages kept verbatim (what the short summary describes)."""
        return _messages(self.kept_entries)[0]

    @cached_property
    def _summarized(self) -> tuple[tuple[Mapping[str, Any], ...], tuple[str, ...]]:
        return _messages(self.summarized_entries)

    @cached_property
    def _prefix(self) -> tuple[tuple[Mapping[str, Any], ...], tuple[str, ...]]:
        return _messages(self.prefix_entries)

    @property
    def messages_to_summarize(self) -> tuple[Mapping[str, Any], ...]:
        """The messages summarized whole (oldest first)."""
        return self._summarized[0]

    @property
    def summarize_entry_ids(self) -> tuple[str, ...]:
        """The entries ``messages_to_summarize`` came from."""
        return self._summarized[1]

    @property
    def turn_prefix_messages(self) -> tuple[Mapping[str, Any], ...]:
        """The split turn's first part (summarized on its own), empty unless split."""
        return self._prefix[0]

    @property
    def turn_prefix_entry_ids(self) -> tuple[str, ...]:
        """The entries ``turn_prefix_messages`` came from."""
        return self._prefix[1]

    def _compared(self) -> tuple[Any, ...]:
        return (self.first_kept_entry_id, self.first_kept_index, self.messages_to_summarize,
                self.turn_prefix_messages, self.summarize_entry_ids, self.turn_prefix_entry_ids,
                self.kept_entry_ids, self.is_split_turn, self.tokens_before,
                self.keep_recent_tokens, self.previous_compaction, self.window_start,
                self.recent_messages)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompactionPreparation):
            return NotImplemented
        return self._compared() == other._compared()

    __hash__ = None  # type: ignore[assignment]

    @property
    def previous_summary(self) -> str | None:
        """Summary text of the previous compaction, if there was one."""
        return self.previous_compaction.summary if self.previous_compaction is not None else None


def _messages(entries: Sequence[Entry]) -> tuple[tuple[Mapping[str, Any], ...], tuple[str, ...]]:
    msgs, ids = [], []
    for entry in entries:
        message = entry_to_message(entry)
        if message is not None:
            msgs.append(message)
            ids.append(entry.id)
    return tuple(msgs), tuple(ids)


def prepare_compaction(path: Sequence[Entry], keep_recent_tokens: int, *,
                       measured_prompt_tokens: int | None = None,
                       estimator: TokenEstimator = DEFAULT_ESTIMATOR,
                       ) -> CompactionPreparation | None:
    """Partition the branch for a compaction; None when there is nothing to replace.

    ``measured_prompt_tokens`` is the provider-reported prompt size of the last request; when not
    given, the usage of the newest settled assistant message on the branch is used. It adapts
    the keep budget (against the local estimate of the messages in the window, as the agent core
    does) and raises ``tokens_before`` above the local estimate of the whole context.
    """
    if path and isinstance(path[-1], CompactionEntry):
        return None
    index = index_of(path)
    start, previous = compaction_window_start(path)
    if index is not None:
        # The same numbers from the branch index's running totals (no walk of the branch).
        estimate = index.context_tokens(estimator)
        if measured_prompt_tokens is None:
            at = index.last_usage_index()
            usage = path[at].message["usage"] if at is not None else None  # type: ignore[union-attr]
            measured_prompt_tokens = usage_prompt_tokens(usage) if usage is not None else None
        context = index.totals(estimator).context
        window_tokens = context[-1] - context[start]
    else:
        estimate = estimate_branch_tokens(path, estimator)
        if measured_prompt_tokens is None:
            usage = last_assistant_usage(path)
            measured_prompt_tokens = usage_prompt_tokens(usage) if usage is not None else None
        window_tokens = estimator.messages(_messages(path[start:])[0])
    keep = adapted_keep_tokens(keep_recent_tokens, measured_prompt_tokens, window_tokens)
    cut = find_cut_point(path, start, len(path), keep, estimator)
    if cut is None:
        return None
    summarize_end = cut.turn_start_index if cut.is_split_turn and cut.turn_start_index is not None \
        else cut.first_kept_index
    prefix = tuple(path[summarize_end:cut.first_kept_index]) if cut.is_split_turn else ()
    if not any(_is_message_bearing(path[i]) for i in range(start, summarize_end)) and not any(
            map(_is_message_bearing, prefix)):
        return None
    # The summarized window is the whole history since the last compaction: from the index's
    # own list it is copied only when read (most passes never read it), else copied now.
    summarized: tuple[Entry, ...] | BranchSlice = (
        index.slice(start, summarize_end) if index is not None and path is index.path
        else tuple(path[start:summarize_end]))
    return CompactionPreparation(
        first_kept_entry_id=path[cut.first_kept_index].id, first_kept_index=cut.first_kept_index,
        is_split_turn=cut.is_split_turn,
        tokens_before=max(estimate, measured_prompt_tokens or 0), keep_recent_tokens=keep,
        previous_compaction=previous, window_start=start,
        summarized_window=summarized, prefix_entries=prefix,
        kept_entries=tuple(path[cut.first_kept_index:]))
