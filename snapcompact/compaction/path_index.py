"""Facts about a session's active branch, kept in step with the session as it grows.

Why: every turn the pipeline asks the same questions of the branch (how many tokens does the
context hold, where is the compaction boundary, which tool call produced this result, how many
message tokens follow this entry) and answering them by walking the whole branch made replaying
a session quadratic in its length. :class:`BranchIndex` answers them from running totals that an
append extends in O(1); only a change that is not an append under the leaf costs a walk.

What the caches rely on (the rules they keep; :class:`~.session.Session` calls the hooks):

* entries are immutable: a changed entry is a new object swapped in by
  :meth:`~.session.Session.replace_entries` (same id, parent and type), which reports the swap
  through :meth:`BranchIndex.replaced`; token totals from the first swapped position on are
  recomputed, the tool-call index and the usage list only when an assistant message changed;
* every append goes through ``Session._index`` (:meth:`BranchIndex.appended`): an entry whose
  parent is the indexed leaf extends the branch, any other entry marks the index stale;
* a leaf move (:meth:`~.session.Session.branch`, or ``leaf_id`` assigned from outside) is seen
  by :meth:`BranchIndex.sync`, which then rebuilds everything from a walk up the tree;
* token totals are per estimator object (entries are estimated by
  :func:`~.context.estimate_entry_tokens`, memoized per entry object and estimator).

The indexed branch list is never handed out: :meth:`~.session.Session.get_branch` returns a copy
(a :class:`BranchList` that remembers the session version it was taken at, so functions given
that copy, such as :func:`~.cut_point.prepare_compaction`, can use the index while the session
has not changed since).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from typing import Any, Protocol
from weakref import WeakSet

from snapcompact.compaction.context import estimate_entry_tokens
from snapcompact.compaction.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    MetadataEntry,
)
from snapcompact.compaction.provider_history import kept_tail_anchor
from snapcompact.compaction.tokens import TokenEstimator


class IndexedSession(Protocol):
    """What an index reads of its session (:class:`~.session.Session` is one): the leaf, a
    lookup by id and the version that every change bumps. A protocol, not an import, so the
    index does not depend on the module that owns it."""

    leaf_id: str | None
    version: int

    def get(self, entry_id: str) -> Entry:
        """The entry with this id (``ValueError`` for an unknown id)."""
        ...

__all__ = ["BranchIndex", "BranchList", "BranchSlice", "IndexedSession", "TokenTotals",
           "index_of"]

#: Token totals are kept for at most this many estimators per session (a pipeline uses one).
_MAX_ESTIMATORS = 4
#: The version an index's own branch list carries: always current while it is the index's list.
_LIVE = -1


class BranchList(list):
    """A copy of a session's branch that knows the session version it was taken at.

    Any in-place change to the copy forgets the version, so the index is only used while the
    list still equals the branch it was copied from.
    """

    __slots__ = ("_origin",)

    def __init__(self, entries: Iterable[Entry] = (),
                 origin: tuple[BranchIndex, int] | None = None) -> None:
        super().__init__(entries)
        self._origin = origin


def _detaching(name: str) -> Any:
    """``list.<name>`` that first forgets the copy's session version (the copy is the caller's
    own list from then on)."""
    base = getattr(list, name)

    def method(self: BranchList, *args: Any, **kwargs: Any) -> Any:
        self._origin = None
        return base(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"``list.{name}``; the copy no longer stands for the session's branch."
    return method


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert",
              "pop", "remove", "clear", "sort", "reverse"):
    setattr(BranchList, _name, _detaching(_name))


def index_of(path: Sequence[Entry]) -> BranchIndex | None:
    """The up-to-date index behind ``path`` when it is an unchanged copy of a session's current
    branch (or the indexed list itself), else None (the caller then walks ``path``)."""
    origin = getattr(path, "_origin", None)
    if origin is None:
        return None
    index, version = origin
    if version == _LIVE:
        return index if index.sync() is path else None
    if index.session.version != version:
        return None
    live = index.sync()
    return index if len(live) == len(path) else None


def _is_context_message(entry: Entry) -> bool:
    return isinstance(entry, (MessageEntry, CustomMessageEntry, BranchSummaryEntry))


def _is_tool_result(entry: Entry) -> bool:
    return isinstance(entry, MessageEntry) and entry.role == "toolResult"


#: Message roles a cut may fall on (the same set as :data:`~.cut_point.CUT_POINT_ROLES`, which
#: imports this module).
_CUT_POINT_ROLES = frozenset({"user", "assistant", "bashExecution", "hookMessage",
                              "branchSummary", "compactionSummary"})


def _is_cut_point(entry: Entry) -> bool:
    if isinstance(entry, MessageEntry):
        return entry.role in _CUT_POINT_ROLES
    return isinstance(entry, (CustomMessageEntry, BranchSummaryEntry))


def _call_blocks(entry: Entry) -> list[tuple[str, Mapping[str, Any]]]:
    if not (isinstance(entry, MessageEntry) and entry.role == "assistant"):
        return []
    content = entry.message.get("content")
    if not isinstance(content, (list, tuple)):  # a string holds no calls; other types are
        return []  # reported by the checks that read messages, not here
    return [(str(b.get("id")), b) for b in content
            if isinstance(b, Mapping) and b.get("type") == "toolCall"]


def _has_settled_usage(entry: Entry) -> bool:
    return (isinstance(entry, MessageEntry) and entry.role == "assistant"
            and entry.message.get("stopReason") not in ("aborted", "error")
            and isinstance(entry.message.get("usage"), Mapping))


class BranchSlice:
    """Entries ``[start, end)`` of the index's own branch list as they were when the slice was
    taken, copied only when read.

    Why: a maintenance pass prepares a compaction (the summarized window is the whole history
    since the last one) many times per session and mostly never reads the window's entries;
    copying it every time made a long replay quadratic. The branch list only changes by appends
    (past ``end``) and by swaps, which the index reports here first (:meth:`BranchIndex.replaced`
    calls :meth:`swapping`), so :meth:`entries` returns exactly the copy taken at the start.
    """

    __slots__ = ("_path", "_start", "_end", "_before", "_entries", "__weakref__")

    def __init__(self, path: list[Entry], start: int, end: int) -> None:
        self._path: list[Entry] | None = path
        self._start, self._end = start, end
        #: Position -> the entry it held when the slice was taken (only swapped positions).
        self._before: dict[int, Entry] = {}
        self._entries: tuple[Entry, ...] | None = None

    def swapping(self, position: int, old: Entry) -> None:
        """The entry at ``position`` (``old``) is about to be swapped out."""
        if self._entries is None and self._start <= position < self._end:
            self._before.setdefault(position, old)

    def entries(self) -> tuple[Entry, ...]:
        """The entries as they were when the slice was taken."""
        if self._entries is None:
            assert self._path is not None
            taken = self._path[self._start:self._end]
            for position, old in self._before.items():
                taken[position - self._start] = old
            self._entries = tuple(taken)
            self._path, self._before = None, {}
        return self._entries


class TokenTotals:
    """Prefix sums over the branch for one estimator: ``context[i]`` = tokens the entries before
    position ``i`` add to the LLM context (compactions count 0), ``messages[i]`` = tokens of the
    message entries before ``i``, ``tool_results[i]`` = tokens of the tool results before ``i``.
    Extended lazily up to the branch length; a swapped entry is estimated again and the sums
    from it on are redone from the kept per-entry counts (no walk of the later entries)."""

    __slots__ = ("context", "estimator", "messages", "tool_results", "_each")

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator
        self.context = [0]
        self.messages = [0]
        self.tool_results = [0]
        #: Per position: (context, message, tool-result) tokens of the entry there.
        self._each: tuple[list[int], list[int], list[int]] = ([], [], [])

    def _counts(self, entry: Entry) -> tuple[int, int, int]:
        if isinstance(entry, MessageEntry):
            tokens = estimate_entry_tokens(entry, self.estimator)
            return tokens, tokens, tokens if entry.role == "toolResult" else 0
        if isinstance(entry, (CustomMessageEntry, BranchSummaryEntry)):
            return estimate_entry_tokens(entry, self.estimator), 0, 0
        return 0, 0, 0

    def swapped(self, positions: Iterable[int], path: Sequence[Entry]) -> None:
        """The entries at ``positions`` were swapped: count them again, redo the sums after."""
        each = self._each
        first: int | None = None
        for i in positions:
            if i >= len(each[0]):
                continue
            for column, tokens in zip(each, self._counts(path[i])):
                column[i] = tokens
            first = i if first is None else min(first, i)
        if first is None:
            return
        for sums, column in zip((self.context, self.messages, self.tool_results), each):
            del sums[first + 1:]
            redone = accumulate(column[first:], initial=sums[first])
            next(redone)  # sums[first] itself, kept
            sums.extend(redone)

    def extend(self, path: Sequence[Entry]) -> TokenTotals:
        """Add the totals of the entries not yet counted, up to the length of ``path``."""
        context, messages, tools = self.context, self.messages, self.tool_results
        each_c, each_m, each_t = self._each
        c, m, t = context[-1], messages[-1], tools[-1]
        for i in range(len(context) - 1, len(path)):
            dc, dm, dt = self._counts(path[i])
            each_c.append(dc)
            each_m.append(dm)
            each_t.append(dt)
            c += dc
            m += dm
            t += dt
            context.append(c)
            messages.append(m)
            tools.append(t)
        return self


class BranchIndex:
    """The current branch of one session, with running facts about it (see the module doc)."""

    def __init__(self, session: IndexedSession) -> None:
        self.session = session
        self._stale = True
        self._leaf: str | None = None
        self.path = BranchList((), (self, _LIVE))
        self.position: dict[str, int] = {}
        self._compactions: list[int] = []
        self._resets: list[int] = []
        self._usage: list[int] | None = []
        self._calls: dict[str, Mapping[str, Any]] | None = {}
        self._results: list[int] | None = []
        self._cut_points: list[int] | None = []
        self._totals: dict[int, TokenTotals] = {}
        #: Times the index was rebuilt from a walk (a leaf move, or an append off the leaf).
        self.rebuilds = 0
        #: Positions of swapped entries, in the order they were swapped, since the last rebuild
        #: (a cache keyed by positions reads what changed since it last looked).
        self.swapped: list[int] = []
        #: Every tool-call id added to the branch, in order (a repeat re-points the id), since the
        #: last rebuild; ``calls_version`` moves when a swap changed an assistant's calls.
        self.call_log: list[str] = []
        self.calls_version = 0
        #: Caches derived from this branch by other modules (cleared with the index).
        self.memo: dict[Any, Any] = {}
        #: Slices of ``path`` not read yet (told of every swap before it happens).
        self._slices: WeakSet[BranchSlice] = WeakSet()

    # ------------------------------------------------------------------ upkeep

    def appended(self, entry: Entry) -> None:
        """An entry was indexed by the session (it became the leaf)."""
        if self._stale or entry.parent_id != self._leaf:
            self._stale = True
            return
        self._add(entry)

    def _add(self, entry: Entry) -> None:
        i = len(self.path)
        list.append(self.path, entry)
        self.position[entry.id] = i
        self._leaf = entry.id
        if self._results is not None and _is_tool_result(entry):
            self._results.append(i)
        if self._cut_points is not None and _is_cut_point(entry):
            self._cut_points.append(i)
        if isinstance(entry, CompactionEntry):
            self._compactions.append(i)
        elif isinstance(entry, MetadataEntry) and entry.type == "reset_boundary":
            self._resets.append(i)
        elif isinstance(entry, MessageEntry) and entry.role == "assistant":
            if self._usage is not None and _has_settled_usage(entry):
                self._usage.append(i)
            blocks = _call_blocks(entry)
            for call_id, block in blocks:
                self.call_log.append(call_id)
                if self._calls is not None:
                    self._calls[call_id] = block

    def replaced(self, replacements: Mapping[str, Entry], old: Mapping[str, Entry]) -> None:
        """Entries were swapped in place (same id, parent and type)."""
        if self._stale:
            return
        first: int | None = None
        for entry_id, new in replacements.items():
            i = self.position.get(entry_id)
            if i is None:
                continue
            for taken in self._slices:
                taken.swapping(i, self.path[i])
            list.__setitem__(self.path, i, new)
            self.swapped.append(i)
            first = i if first is None else min(first, i)
            before = old[entry_id]
            if _has_settled_usage(before) != _has_settled_usage(new):
                self._usage = None
            if _call_blocks(before) != _call_blocks(new):
                self._calls = None
                self.calls_version += 1
            if _is_tool_result(before) != _is_tool_result(new):
                self._results = None
            if _is_cut_point(before) != _is_cut_point(new):
                self._cut_points = None
        if first is not None:
            swapped = [self.position[entry_id] for entry_id in replacements
                       if entry_id in self.position]
            for totals in self._totals.values():
                totals.swapped(swapped, self.path)

    def sync(self) -> BranchList:
        """The indexed branch, rebuilt first when the leaf moved or the index went stale.

        The list is the index's own (never change it); functions given it use the index."""
        if self._stale or self.session.leaf_id != self._leaf or self.path._origin is None:
            self._rebuild()
        return self.path

    def _rebuild(self) -> None:
        chain: list[Entry] = []
        walk = self.session.leaf_id
        while walk is not None:
            entry = self.session.get(walk)
            chain.append(entry)
            walk = entry.parent_id
        chain.reverse()
        self.path = BranchList((), (self, _LIVE))
        self.position = {}
        self._compactions, self._resets, self._usage, self._calls = [], [], [], {}
        self._results, self._cut_points = [], []
        self._totals = {}
        self._leaf = None
        self._stale = False
        self.rebuilds += 1
        self.swapped = []
        # Slices taken of the old list stay right: that list is never changed again.
        self._slices = WeakSet()
        self.call_log = []
        self.memo = {}
        for entry in chain:
            self._add(entry)

    # ------------------------------------------------------------------ facts

    def slice(self, start: int, end: int) -> BranchSlice:
        """Entries ``[start, end)`` of the current branch as they are now, copied on first read
        (:class:`BranchSlice`)."""
        taken = BranchSlice(self.sync(), start, end)
        self._slices.add(taken)
        return taken

    def snapshot(self) -> BranchList:
        """A copy of the current branch that remembers this index and the session version."""
        return BranchList(self.sync(), (self, self.session.version))

    def latest_compaction_index(self) -> int | None:
        """Position of the newest compaction on the branch."""
        self.sync()
        return self._compactions[-1] if self._compactions else None

    def latest_reset_index(self) -> int:
        """Position of the newest reset boundary on the branch, -1 when there is none."""
        self.sync()
        return self._resets[-1] if self._resets else -1

    def last_usage_index(self) -> int | None:
        """Position of the newest assistant message with usage that neither errored nor was
        aborted."""
        self.sync()
        if self._usage is None:
            self._usage = [i for i, e in enumerate(self.path) if _has_settled_usage(e)]
        return self._usage[-1] if self._usage else None

    def tool_results(self, start: int = 0) -> list[int]:
        """Positions of the tool-result message entries at or after ``start``, oldest first."""
        self.sync()
        if self._results is None:
            self._results = [i for i, e in enumerate(self.path) if _is_tool_result(e)]
        return self._results[bisect_left(self._results, start):]

    def cut_points(self) -> list[int]:
        """Positions a cut may fall on (:func:`~.cut_point.is_valid_cut_point`), oldest first."""
        self.sync()
        if self._cut_points is None:
            self._cut_points = [i for i, e in enumerate(self.path) if _is_cut_point(e)]
        return self._cut_points

    def calls(self) -> Mapping[str, Mapping[str, Any]]:
        """Tool-call blocks by ``str(id)``; a repeated id maps to its newest call."""
        self.sync()
        if self._calls is None:
            self._calls = {}
            for entry in self.path:
                for call_id, block in _call_blocks(entry):
                    self._calls[call_id] = block
        return self._calls

    def totals(self, estimator: TokenEstimator) -> TokenTotals:
        """Running token totals of the whole branch for ``estimator``."""
        path = self.sync()
        totals = self._totals.get(id(estimator))
        if totals is None or totals.estimator is not estimator:
            if len(self._totals) >= _MAX_ESTIMATORS:
                self._totals.clear()
            totals = self._totals[id(estimator)] = TokenTotals(estimator)
        return totals.extend(path) if len(totals.context) <= len(path) else totals

    def boundary(self) -> int:
        """Position of the latest compaction's first kept entry (after the compaction when that
        entry is not on the branch); 0 without a compaction. Nothing before it reaches the LLM."""
        latest = self.latest_compaction_index()
        if latest is None:
            return 0
        entry = self.path[latest]
        assert isinstance(entry, CompactionEntry)
        return self.position.get(entry.first_kept_entry_id, latest + 1)

    def _kept_start(self, compaction: CompactionEntry, latest: int) -> int | None:
        """Position from which entries before the compaction reach the LLM context (None: none
        do), as :func:`~.context.build_session_context` decides (see :mod:`.provider_history`)."""
        anchor = kept_tail_anchor(compaction.first_kept_entry_id, compaction.preserve_data,
                                  compaction.extra)
        if anchor is None:
            return None
        at = self.position.get(anchor[0])
        return None if at is None or at >= latest else at + anchor[1]

    def context_tokens(self, estimator: TokenEstimator) -> int:
        """Estimated tokens of the LLM context the branch builds (as
        :func:`~.context.estimate_branch_tokens`)."""
        totals = self.totals(estimator).context
        latest = self.latest_compaction_index()
        if latest is None:
            return totals[-1]
        compaction = self.path[latest]
        assert isinstance(compaction, CompactionEntry)
        kept = self._kept_start(compaction, latest)
        before = totals[latest] - totals[kept] if kept is not None and kept < latest else 0
        return (estimate_entry_tokens(compaction, estimator) + before
                + totals[-1] - totals[latest + 1])

    def context_entry_ids(self) -> list[str]:
        """Ids of the entries the LLM context is built from (as
        :func:`~.context.build_session_context`'s ``entry_ids``)."""
        path = self.sync()
        latest = self.latest_compaction_index()
        if latest is None:
            return [e.id for e in path if _is_context_message(e)]
        compaction = path[latest]
        assert isinstance(compaction, CompactionEntry)
        kept = self._kept_start(compaction, latest)
        ids = [compaction.id]
        if kept is not None and kept < latest:
            ids += [e.id for e in path[kept:latest] if _is_context_message(e)]
        ids += [e.id for e in path[latest + 1:] if _is_context_message(e)]
        return ids

    def context_start(self) -> int:
        """Smallest position whose message entries reach the LLM context: every message entry on
        the branch at or after it does, none before it (as :meth:`context_entry_ids`)."""
        path = self.sync()
        latest = self.latest_compaction_index()
        if latest is None:
            return 0
        compaction = path[latest]
        assert isinstance(compaction, CompactionEntry)
        kept = self._kept_start(compaction, latest)
        return kept if kept is not None and kept < latest else latest + 1

    def first_within_message_suffix(self, estimator: TokenEstimator, limit: int) -> int:
        """Smallest position whose following message entries hold at most ``limit`` tokens."""
        messages = self.totals(estimator).messages
        # suffix(i) = messages[-1] - messages[i + 1] <= limit  <=>  messages[i + 1] >= target
        return max(0, bisect_left(messages, messages[-1] - limit) - 1)
