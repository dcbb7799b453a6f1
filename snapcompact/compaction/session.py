"""An append-only session log with a tree of entries, stored as JSONL.

Why append-only with parent ids: a session is edited by moving the leaf, never by rewriting
history, so branches (tree navigation, retries) coexist in one file and a crash can lose at most
the line being written. Each write is one complete line in a single ``write`` on an ``O_APPEND``
descriptor, followed by ``fsync``; a torn final line (crash mid-write) is ignored on load. The one
sanctioned rewrite, in-place tool-output pruning, goes through a temporary file and an atomic
rename. How the lines are written and read is :mod:`.session_file`'s job; this module is the tree.

Line kinds: the ``session`` header (first line), tree entries (see :mod:`.entries`), and ``leaf``
records that remember a leaf moved without a new entry (so reload restores the same branch).
Reloading a file rebuilds the same entries, the same leaf, and therefore the same context.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from snapcompact.compaction.entries import (
    METADATA_TYPES,
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    MetadataEntry,
    SessionHeader,
    entry_from_json,
)
from snapcompact.compaction.path_index import BranchIndex
from snapcompact.compaction.session_file import (
    EntryLines,
    append_line,
    jsonl_line,
    read_records,
    replace_file,
)

__all__ = ["LEAF_RECORD", "Session", "utc_timestamp"]

LEAF_RECORD = "leaf"


def utc_timestamp(seconds: float | None = None) -> str:
    """ISO-8601 UTC with milliseconds, like the reference's ``new Date().toISOString()``."""
    moment = datetime.now(UTC) if seconds is None else datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Session:
    """Entries in append order, an id index, children lists and the current leaf.

    ``path`` None keeps the session in memory. ``id_factory`` and ``clock`` (seconds since the
    epoch) are injectable so tests are deterministic; ``fsync=False`` skips the flush to disk
    (each write is still one whole line), for throwaway sessions.
    """

    def __init__(self, path: str | Path | None = None, *, cwd: str | None = None,
                 parent_session: str | None = None, id_factory: Callable[[], str] | None = None,
                 clock: Callable[[], float] | None = None, fsync: bool = True,
                 _header: SessionHeader | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.fsync = fsync
        self._new_id = id_factory or (lambda: uuid.uuid4().hex[:8])
        self._clock = clock
        self.entries: list[Entry] = []
        self._by_id: dict[str, Entry] = {}
        self._entry_position: dict[str, int] = {}
        self._children: dict[str | None, list[str]] = {}
        self.leaf_id: str | None = None
        self._leaf_moved = False
        self.source_lines: dict[str, int] = {}  # entry id -> line of the loaded file
        #: What loading repaired (one note per line), see :meth:`from_records`.
        self.load_notes: list[str] = []
        #: Bumped by every change (append, leaf move, replacement): equal versions, equal session.
        self.version = 0
        self._branch_index = BranchIndex(self)
        self._lines = EntryLines()
        if _header is not None:
            self.header = _header
            return
        self.header = SessionHeader(uuid.uuid4().hex, self._now(), cwd=cwd,
                                    parent_session=parent_session)
        if self.path is not None:
            if self.path.exists() and self.path.stat().st_size > 0:
                raise ValueError(f"session file {self.path} already exists; use Session.load")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_line(self.path, jsonl_line(self.header.to_json()), fsync=self.fsync)

    # ------------------------------------------------------------------ storage

    def _now(self) -> str:
        return utc_timestamp(self._clock() if self._clock else None)

    @classmethod
    def load(cls, path: str | Path, *, id_factory: Callable[[], str] | None = None,
             clock: Callable[[], float] | None = None, fsync: bool = True) -> Session:
        """Rebuild a session from its JSONL file (a torn last line is skipped with a warning).

        Every error names the file and the line. A UTF-8 byte-order mark before the header and
        blank lines are tolerated (editors write both); ``source_lines`` maps each entry id to
        its line number, so later checks can point at the line too.
        """
        p = Path(path)
        records = read_records(p)
        return cls.from_records(p, records, id_factory=id_factory, clock=clock, fsync=fsync)

    @classmethod
    def from_records(cls, path: str | Path, records: Iterable[tuple[int, Mapping[str, Any]]], *,
                     id_factory: Callable[[], str] | None = None,
                     clock: Callable[[], float] | None = None, fsync: bool = True,
                     orphans_as_roots: bool = False) -> Session:
        """Build a session from parsed ``(line number, object)`` records, the header first.

        ``orphans_as_roots`` makes an entry whose parent is not in the file a root (the agent's
        branch walk stops at a missing parent, so what it sees is the same) instead of an error;
        each such entry gets one note in ``session.load_notes`` naming its line.
        """
        p = Path(path)
        records = list(records)
        if not records or records[0][1].get("type") != "session":
            raise ValueError(f"{p}: the first record must be a session header")
        session = cls(p, id_factory=id_factory, clock=clock, fsync=fsync,
                      _header=SessionHeader.from_json(records[0][1]))
        lines: dict[str, int] = {}
        for n, obj in records[1:]:
            if obj.get("type") == LEAF_RECORD:
                leaf = obj.get("leafId")
                if leaf is not None and (not isinstance(leaf, str) or leaf not in session._by_id):
                    raise ValueError(f"{p}: line {n} moves the leaf to unknown entry {leaf!r:.60}")
                session.leaf_id = leaf
                session._leaf_moved = True
                session.version += 1
                continue
            entry = entry_from_json(obj, f"{p}: line {n}")
            if (orphans_as_roots and entry.parent_id is not None
                    and entry.parent_id not in session._by_id):
                session.load_notes.append(
                    f"line {n}: entry {entry.id!r} names parent {entry.parent_id!r}, which no "
                    "earlier line holds; the branch starts again here (the agent's walk from the "
                    "leaf stops there too)")
                entry = replace(entry, parent_id=None)
            try:
                session._index(entry)
            except ValueError as exc:
                raise ValueError(f"{p}: line {n}: {exc}") from None
            lines[entry.id] = n
        session.source_lines = lines
        return session

    def _index(self, entry: Entry) -> None:
        if entry.id in self._by_id:
            raise ValueError(f"duplicate entry id {entry.id!r}")
        if entry.parent_id is not None and entry.parent_id not in self._by_id:
            raise ValueError(f"entry {entry.id!r} has unknown parent {entry.parent_id!r} "
                             "(a parent must come before its children: a forward reference "
                             "or a cycle)")
        self._entry_position[entry.id] = len(self.entries)
        self.entries.append(entry)
        self._by_id[entry.id] = entry
        self._children.setdefault(entry.parent_id, []).append(entry.id)
        self.leaf_id = entry.id
        self._leaf_moved = False
        self.version += 1
        self._branch_index.appended(entry)

    def _fresh_id(self) -> str:
        for _ in range(100):
            candidate = self._new_id()
            if candidate not in self._by_id:
                return candidate
        raise ValueError("id factory keeps returning ids already in use")

    def append(self, entry: Entry) -> Entry:
        """Persist and index a fully built entry (its parent must exist)."""
        self._index(entry)
        if self.path is not None:
            append_line(self.path, self._lines.line(entry), fsync=self.fsync)
        return entry

    def rewrite(self) -> None:
        """Atomically rewrite the whole file from memory (used after in-place pruning)."""
        if self.path is None:
            return
        lines = [jsonl_line(self.header.to_json()), *map(self._lines.line, self.entries)]
        if self._leaf_moved:
            lines.append(jsonl_line({"type": LEAF_RECORD, "leafId": self.leaf_id,
                                     "timestamp": self._now()}))
        replace_file(self.path, b"".join(lines), fsync=self.fsync)

    # ------------------------------------------------------------------ appends

    def append_message(self, message: Mapping[str, Any]) -> MessageEntry:
        """Append an agent message under the current leaf and move the leaf to it."""
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValueError("a message must be a mapping with a string 'role'")
        entry = MessageEntry(self._fresh_id(), self.leaf_id, self._now(), dict(message))
        self.append(entry)
        return entry

    def append_compaction(self, summary: str, first_kept_entry_id: str, tokens_before: int, *,
                          short_summary: str | None = None,
                          details: Mapping[str, Any] | None = None,
                          preserve_data: Mapping[str, Any] | None = None,
                          from_extension: bool = False,
                          usage: Mapping[str, Any] | None = None) -> CompactionEntry:
        """Append a compaction entry; ``first_kept_entry_id`` must already be in the session."""
        if first_kept_entry_id not in self._by_id:
            raise ValueError(f"firstKeptEntryId {first_kept_entry_id!r} is not an entry of this "
                             "session")
        entry = CompactionEntry(self._fresh_id(), self.leaf_id, self._now(), summary,
                                first_kept_entry_id,
                                int(tokens_before), short_summary, details, preserve_data,
                                from_extension, usage)
        self.append(entry)
        return entry

    def append_custom_message(self, custom_type: str, content: str | Iterable[Mapping[str, Any]], *,
                              display: bool = True,
                              details: Mapping[str, Any] | None = None) -> CustomMessageEntry:
        """Append an extension message that enters the context as a developer message."""
        body = content if isinstance(content, str) else tuple(dict(b) for b in content)
        entry = CustomMessageEntry(self._fresh_id(), self.leaf_id, self._now(), custom_type, body,
                                   display, details)
        self.append(entry)
        return entry

    def append_metadata(self, kind: str, **data: Any) -> MetadataEntry:
        """Append a state-change entry of a known metadata ``kind`` (model change, label ...)."""
        if kind not in METADATA_TYPES:
            raise ValueError(f"unknown metadata entry type {kind!r} (known: "
                             f"{', '.join(METADATA_TYPES)})")
        entry = MetadataEntry(kind, self._fresh_id(), self.leaf_id, self._now(), data)
        self.append(entry)
        return entry

    def branch(self, entry_id: str | None) -> None:
        """Move the leaf to ``entry_id`` (None = before the first entry); persisted as a leaf
        record."""
        if entry_id is not None and entry_id not in self._by_id:
            raise ValueError(f"unknown entry id {entry_id!r}")
        self.leaf_id = entry_id
        self._leaf_moved = True
        self.version += 1
        if self.path is not None:
            append_line(self.path, jsonl_line({"type": LEAF_RECORD, "leafId": entry_id,
                                               "timestamp": self._now()}), fsync=self.fsync)

    def branch_with_summary(self, target_id: str | None, from_id: str, summary: str, *,
                            details: Mapping[str, Any] | None = None, from_extension: bool = False,
                            usage: Mapping[str, Any] | None = None) -> BranchSummaryEntry:
        """Attach a summary of the abandoned branch as a child of ``target_id``; it becomes the
        leaf."""
        if target_id is not None and target_id not in self._by_id:
            raise ValueError(f"unknown target entry {target_id!r}")
        entry = BranchSummaryEntry(self._fresh_id(), target_id, self._now(), from_id, summary,
                                   details, from_extension, usage)
        self.append(entry)
        return entry

    def replace_entries(self, replacements: Mapping[str, Entry]) -> None:
        """Swap entries in place (same id and parent) and rewrite the file atomically."""
        for entry_id, new in replacements.items():
            old = self._by_id.get(entry_id)
            if old is None:
                raise ValueError(f"unknown entry id {entry_id!r}")
            if new.id != old.id or new.parent_id != old.parent_id or type(new) is not type(old):
                raise ValueError(f"replacement for {entry_id!r} must keep its id, parent and type")
        if not replacements:
            return
        previous = {entry_id: self._by_id[entry_id] for entry_id in replacements}
        for entry_id, new in replacements.items():
            self.entries[self._entry_position[entry_id]] = new
        self._by_id.update(replacements)
        self.version += 1
        self._branch_index.replaced(replacements, previous)
        self.rewrite()

    def replace_messages(self, messages: Mapping[str, Mapping[str, Any]]) -> None:
        """Replace the ``message`` of message entries (pruning) and rewrite the file."""
        swaps: dict[str, Entry] = {}
        for entry_id, message in messages.items():
            old = self._by_id.get(entry_id)
            if not isinstance(old, MessageEntry):
                raise ValueError(f"entry {entry_id!r} is not a message entry")
            swaps[entry_id] = replace(old, message=dict(message))
        self.replace_entries(swaps)

    # ------------------------------------------------------------------ tree

    def get(self, entry_id: str) -> Entry:
        """The entry with this id, or ``ValueError`` naming the unknown id."""
        try:
            return self._by_id[entry_id]
        except KeyError:
            raise ValueError(f"unknown entry id {entry_id!r}") from None

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def children(self, entry_id: str | None) -> list[Entry]:
        """Direct children of an entry (``None``: the roots), in append order."""
        return [self._by_id[c] for c in self._children.get(entry_id, [])]

    def get_branch(self, leaf_id: str | None = ...) -> list[Entry]:  # type: ignore[assignment]
        """Entries from the root to ``leaf_id`` (default: the current leaf), oldest first.

        The current branch is kept indexed as the session grows (see :mod:`.path_index`): asking
        for it costs a list copy, not a walk up the tree. The copy is the caller's to change.
        """
        if leaf_id is ... or leaf_id == self.leaf_id:
            return self._branch_index.snapshot()
        out: list[Entry] = []
        walk = leaf_id
        while walk is not None:
            entry = self.get(walk)
            out.append(entry)
            walk = entry.parent_id
        out.reverse()
        return out

    @property
    def branch_index(self) -> BranchIndex:
        """Running facts about the current branch (token totals, boundary, tool calls), in step
        with the session; read only."""
        return self._branch_index

    def latest_compaction(self) -> CompactionEntry | None:
        """The newest compaction on the current branch, if any (no walk)."""
        index = self._branch_index
        at = index.latest_compaction_index()
        entry = index.path[at] if at is not None else None
        assert entry is None or isinstance(entry, CompactionEntry)
        return entry

    def common_ancestor(self, a: str | None, b: str | None) -> str | None:
        """Id of the deepest entry on both branches, or None when they share no root."""
        ancestors = {e.id for e in self.get_branch(a)}
        for entry in reversed(self.get_branch(b)):
            if entry.id in ancestors:
                return entry.id
        return None

    def fork(self, path: str | Path | None = None) -> Session:
        """A new, empty session whose header points back at this one (handoff)."""
        parent = str(self.path) if self.path is not None else self.header.id
        return Session(path, cwd=self.header.cwd, parent_session=parent, id_factory=self._new_id,
                       clock=self._clock, fsync=self.fsync)
