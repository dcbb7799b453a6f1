"""The renderability probe's parsed history, parsed once per message instead of once per pass.

Why: snapcompact's path scans the text it would archive (the previous archive's text and the
history about to be summarized) before it sizes the frame cap. In a session that stays above
its threshold every check point runs a pass, and each pass re-parsed every summarized message
from JSON: the replay of a long session spent most of its time turning the same messages into
the same dataclasses again. The messages a pass summarizes are shallow copies of immutable
session entries, so their ``content`` objects are the entries' own; a parsed message is kept
per ``content`` object (and the message's other fields, compared on every hit), and a message
is parsed again only when pruning or shake swapped in new content.

Nothing here decides: :func:`parsed_archive` returns exactly what
``messages_from_json(archived_messages_json(prep))`` returns (an unparsable message falls back
to that very call, so its error is the same).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping
from typing import Any

from snapcompact.archive import (
    Message,
    SerializeOptions,
    ToolResultMessage,
    message_from_json,
    message_sections,
    messages_from_json,
    result_fact,
)
from snapcompact.compaction import (
    CompactionPreparation,
    archived_message_json,
    archived_messages_json,
    entry_to_message,
)
from snapcompact.text import ScanCounts, piece_scan_counts, scan_counts

__all__ = ["ParsedArchiveCache", "ProbeScan"]

#: Roles whose wire form is the message itself (``to_wire_json`` copies it unchanged).
_PLAIN_ROLES = frozenset({"user", "assistant", "toolResult", "developer"})


class ParsedArchiveCache:
    """Parsed messages per content object, for one maintenance (one session)."""

    def __init__(self) -> None:
        # id(content) -> (content kept alive, the other fields as (type, value), parsed message)
        self._memo: dict[int, tuple[Any, dict[str, tuple[type, Any]], Message]] = {}

    def parsed_archive(self, prep: CompactionPreparation) -> list[Message]:
        """``messages_from_json(archived_messages_json(prep))``, parsing only new messages."""
        messages = (*prep.messages_to_summarize, *prep.turn_prefix_messages)
        if any(not isinstance(m, Mapping) or m.get("role") not in _PLAIN_ROLES
               or "content" not in m for m in messages):
            return messages_from_json(archived_messages_json(prep))
        memo = self._memo
        if len(memo) > 2 * len(messages) + 1000:
            # Mostly messages a compaction archived already (or content pruning replaced): keep
            # only this pass's, so the memo follows the live window, not the whole session.
            live = {id(m["content"]) for m in messages}
            memo = self._memo = {k: v for k, v in memo.items() if k in live}
        out: list[Message] = []
        for message in messages:
            content = message["content"]
            others = {k: (type(v), v) for k, v in message.items() if k != "content"}
            hit = memo.get(id(content))
            if hit is not None and hit[0] is content and hit[1] == others:
                out.append(hit[2])
                continue
            try:
                parsed = message_from_json(dict(message), len(out))
            except ValueError:
                return messages_from_json(archived_messages_json(prep))
            memo[id(content)] = (content, others, parsed)
            out.append(parsed)
        return out


class _Merged(set):
    """The merged call ids as :func:`message_sections` updates them, with the message that
    merged each (so a rescan from message ``k`` forgets exactly the later ones)."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[tuple[int, str]] = []  # (message, call id), in the walk's order
        self.current = 0
        #: The ids the current message adds, when the walk records them (else None).
        self.added: list[str] | None = None

    def add(self, call_id: str) -> None:
        if call_id not in self:
            self.order.append((self.current, call_id))
        if self.added is not None:
            self.added.append(call_id)
        super().add(call_id)

    def forget_from(self, k: int) -> None:
        order = self.order
        while order and order[-1][0] >= k:
            self.discard(order.pop()[1])


class _Useless:
    def __init__(self, values: dict[str, tuple[bool, str | None]]) -> None:
        self._kept = values

    def __contains__(self, call_id: object) -> bool:
        hit = self._kept.get(call_id)  # type: ignore[call-overload]
        return hit is not None and hit[0]


class _Paired(Mapping[str, str]):
    """The paired result texts by call id, read from the kept values."""

    def __init__(self, values: dict[str, tuple[bool, str | None]]) -> None:
        self._kept = values

    def __getitem__(self, call_id: str) -> str:
        hit = self._kept.get(call_id)
        if hit is None or hit[1] is None:
            raise KeyError(call_id)
        return hit[1]

    def __iter__(self) -> Iterator[str]:
        return (k for k, v in self._kept.items() if v[1] is not None)

    def __len__(self) -> int:
        return sum(1 for v in self._kept.values() if v[1] is not None)


_EMPTY_ROW: tuple[Any, ...] = (None, None, None, None, 0)


class ProbeScan:
    """The renderability probe's counts, kept across passes (see the module doc).

    The probe text is the previous archive's text, then the serialized window of the branch a
    pass would archive (positions ``[window_start, first_kept_index)``). Serialization is a
    walk over the window's messages whose only look across messages is at call ids (a call
    prints its result; a useless result drops its call) and at the previous section's tag
    (same-tag sections merge). This keeps, per message, the sections' counts summed so far,
    and on the next pass re-walks only from the first message that changed: an entry swapped
    (pruning, shake), the window's new end, or a call id whose result changed. Each section is
    counted once (:func:`~snapcompact.text.piece_scan_counts`), so a pass costs what it adds.

    :meth:`counts` answers None when it cannot keep up exactly (the branch was rebuilt, a
    message does not parse, a piece cannot be counted apart); the caller then scans the text.

    A re-walk mostly meets messages it has walked before (a shake swaps a few hundred results
    deep in the window; the window's end moves back and forth by a turn): a message keeps its
    parse while its entry is the same object, and its sections' counts while what they read is
    unchanged (see :meth:`_walk`). In a 60,000-message replay ~40 % of the walked messages were
    such re-walks.
    """

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._heads: tuple[str, Any] | None = None
        #: (piece, first, last) -> its counts: a re-walk meets the same sections again.
        self._pieces: dict[tuple[str, bool, bool], ScanCounts | None] = {}
        self._fonts: tuple[str, ...] = ()

    def _piece(self, piece: str, first: bool = False, last: bool = False) -> ScanCounts | None:
        key = (piece, first, last)
        try:
            return self._pieces[key]
        except KeyError:
            pass
        if len(self._pieces) > 20_000:
            self._pieces.clear()
        counts = self._pieces[key] = piece_scan_counts(piece, self._fonts, first=first,
                                                       last=last)
        return counts

    def _reset(self, key: tuple[Any, ...], start: int) -> None:
        self._key = key
        self._seen = 0  # swapped positions read
        self._end = start  # branch position the window was parsed up to
        self._positions: list[int] = []
        self._entries: list[Any] = []  # the entry each message was parsed from
        self._messages: list[Message] = []
        #: Branch position -> (entry, parsed message) of messages dropped from the window and
        #: not read again yet (the entry checked on reuse).
        self._spare: dict[int, tuple[Any, Message]] = {}
        #: Per walked message, what its walk read and added (see :meth:`_walk`).
        self._records: list[tuple[Any, ...]] = []
        self._last_total: tuple[Any, ...] | None = None
        self._facts: dict[str, list[tuple[int, bool, str]]] = {}
        self._values: dict[str, tuple[bool, str | None]] = {}
        self._first_lookup: dict[str, int] = {}
        self._looked: list[list[str]] = []
        self._merged = _Merged()
        # Per walked message: (running counts, last tag, first piece, last piece) after it.
        self._rows: list[tuple[Any, ...]] = []

    def counts(self, index: Any, start: int, end: int, head: str,
               options: SerializeOptions, fonts: tuple[str, ...]) -> ScanCounts | None:
        """Counts of ``head + "\\n" + serialize(window)`` (just the window when ``head`` is
        empty), the window being the archived messages of ``index.path[start:end]``."""
        key = (id(index), index.rebuilds, start, options, fonts)
        if key != self._key:
            self._reset(key, start)
        if fonts != self._fonts:
            self._fonts = fonts
            self._pieces.clear()
        path = index.sync()
        if end > len(path) or end < start:
            return None
        # The first branch position whose message may differ from the last pass's.
        dirty = min(self._end, end)
        swapped = index.swapped
        for at in swapped[self._seen:]:
            if at >= start:
                dirty = min(dirty, at)
        self._seen = len(swapped)
        changed: set[str] = set()
        k = bisect_left(self._positions, dirty)
        for j in range(k, len(self._messages)):
            fact = result_fact(self._messages[j])
            if fact is not None:
                facts = self._facts[fact[0]]
                facts[:] = [f for f in facts if f[0] < k]
                changed.add(fact[0])
        spare = self._spare
        if len(spare) > 20_000:
            spare.clear()
        for j in range(k, len(self._messages)):
            spare[self._positions[j]] = (self._entries[j], self._messages[j])
        del self._positions[k:]
        del self._entries[k:]
        del self._messages[k:]
        for p in range(dirty, end):
            entry = path[p]
            kept = spare.pop(p, None)
            if kept is not None and kept[0] is entry:
                parsed = kept[1]  # the same entry, the same parse (the index only names an
                # error, and this one parsed)
            else:
                message = entry_to_message(entry)
                wire = archived_message_json(message) if message is not None else None
                if wire is None:
                    continue
                try:
                    parsed = message_from_json(wire, len(self._messages))
                except ValueError:
                    self._key = None
                    return None
            fact = result_fact(parsed)
            if fact is not None:
                self._facts.setdefault(fact[0], []).append((len(self._messages),) + fact[1:])
                changed.add(fact[0])
            self._positions.append(p)
            self._entries.append(entry)
            self._messages.append(parsed)
        self._end = end
        # Call ids whose entry in the maps changed: the walk must restart where one was read.
        walk_from = k
        for call_id in changed:
            facts = self._facts.get(call_id, [])
            useless = any(f[1] for f in facts)
            paired = next((f[2] for f in reversed(facts) if not f[1] and f[2]), None)
            value = (useless, paired)
            if self._values.get(call_id, (False, None)) != value:
                if value == (False, None):
                    self._values.pop(call_id, None)
                else:
                    self._values[call_id] = value
                walk_from = min(walk_from, self._first_lookup.get(call_id, walk_from))
        if not self._walk(walk_from, options, fonts):
            self._key = None
            return None
        return self._total(head, fonts)

    def _walk(self, k: int, options: SerializeOptions, fonts: tuple[str, ...]) -> bool:
        """Redo the running rows from message ``k`` on.

        A message's sections read only the message, the maps' values at the call ids it looks
        up, and (a tool result) whether its call id was merged before it; its first piece also
        reads the tag before it. When all of these are what its last walk read, the message
        adds what it added then (the same sections, the same merged ids) and is not serialized
        again: the rows take its counts from that walk's rows (``after - before``: integer
        sums, exact)."""
        for j in range(k, len(self._looked)):
            for call_id in self._looked[j]:
                if self._first_lookup.get(call_id, -1) >= k:
                    del self._first_lookup[call_id]
        del self._looked[k:]
        del self._rows[k:]
        merged = self._merged
        merged.forget_from(k)
        values = self._values
        useless, paired = _Useless(values), _Paired(values)
        records = self._records
        del records[len(self._messages):]
        running, tag, first, last, pieces = self._rows[-1] if self._rows else _EMPTY_ROW
        for j in range(k, len(self._messages)):
            message = self._messages[j]
            merged.current = j
            merged_in = (message.tool_call_id in merged
                         if isinstance(message, ToolResultMessage) else None)
            record = records[j] if j < len(records) else None
            if (record is not None and record[0] is message and record[1] == tag
                    and record[2] == merged_in
                    and tuple(map(values.get, record[3])) == record[4]):
                _, _, _, looked, _, added, before, after, n, opening, closing, out_tag = record
                for call_id in added:
                    merged.add(call_id)
                if n:
                    if running is before:
                        running = after
                    else:
                        step = after if before is None else after - before
                        running = step if running is None else running + step
                    tag, last = out_tag, closing
                    pieces += n
                    if first is None:
                        first = opening
            else:
                looked = []
                added = merged.added = []
                in_tag, before, n, opening = tag, running, 0, None
                for prefix, content in message_sections(message, options, useless, paired,
                                                        merged, looked):
                    piece = content if prefix == tag else prefix + content
                    counts = self._piece(piece)
                    if counts is None:
                        merged.added = None
                        return False
                    running = counts if running is None else running + counts
                    tag, last = prefix, piece
                    pieces += 1
                    n += 1
                    if opening is None:
                        opening = piece
                    if first is None:
                        first = piece
                merged.added = None
                record = (message, in_tag, merged_in, tuple(looked),
                          tuple(map(values.get, looked)), tuple(added), before, running, n,
                          opening, last if n else None, tag)
                if j < len(records):
                    records[j] = record
                else:
                    records.append(record)
            for call_id in looked:
                self._first_lookup.setdefault(call_id, j)
            self._looked.append(list(looked))
            self._rows.append((running, tag, first, last, pieces))
        return True

    def _head(self, head: str, fonts: tuple[str, ...]) -> tuple[Any, Any, Any] | None:
        """(interior, as the first piece, as the only piece) counts of ``head``."""
        hit = self._heads
        if hit is not None and hit[0] is head:
            return hit[1]
        counts = (piece_scan_counts(head, fonts), piece_scan_counts(head, fonts, first=True),
                  piece_scan_counts(head, fonts, first=True, last=True))  # once per head
        self._heads = (head, counts)
        return counts

    def _total(self, head: str, fonts: tuple[str, ...]) -> ScanCounts | None:
        row = self._rows[-1] if self._rows else _EMPTY_ROW
        kept = self._last_total
        if kept is not None and kept[0] is row and kept[1] is head:
            return kept[2]  # the same last row and head as the last pass: the same total
        total = self._sum(row, head, fonts)
        self._last_total = (row, head, total)
        return total

    def _sum(self, row: tuple[Any, ...], head: str, fonts: tuple[str, ...]) -> ScanCounts | None:
        running, _, first, last, pieces = row
        if running is None:  # no section: the text is the head alone (or empty)
            if not head:
                return scan_counts("", fonts)
            heads = self._head(head, fonts)
            return heads[2] if heads is not None else None
        # The running sum counts every piece between line breaks; the text's first and last
        # pieces are counted again as edges (the text's own trim applies there).
        if head:
            heads = self._head(head, fonts)
            if heads is None or heads[1] is None:
                return None
            total: ScanCounts = heads[1] + running
        elif pieces == 1:
            return self._piece(first, True, True)
        else:
            opening, inner = self._piece(first, first=True), self._piece(first)
            if opening is None or inner is None:
                return None
            total = running + opening - inner
        closing, inner = self._piece(last, last=True), self._piece(last)
        if closing is None or inner is None:
            return None
        return total + closing - inner
