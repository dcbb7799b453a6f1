"""Session entries: the typed records of an append-only session log.

Why first-class entry types: a compaction or a branch summary is not a chat message. It carries
its own boundary (``firstKeptEntryId``, ``fromId``), the file lists it accumulated and, for
snapcompact, the frame archive. Keeping them as their own entry types lets the context builder
turn them into exactly one summary message, lets the display transcript show them as dividers,
and lets a later compaction read its predecessor's details without parsing prose.

Every entry has an ``id`` and a ``parentId`` (None for the first one): the log is a tree, and a
branch is the path from the root to a leaf. JSON keys are camelCase like the reference's
session files; fields this module does not know are kept in ``extra`` so a load/save round trip
is lossless.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = [
    "BRANCH_SUMMARY_ENTRY",
    "COMPACTION_ENTRY",
    "CUSTOM_MESSAGE_ENTRY",
    "MESSAGE_ENTRY",
    "METADATA_TYPES",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CustomMessageEntry",
    "Entry",
    "MessageEntry",
    "MetadataEntry",
    "SessionHeader",
    "entry_from_json",
]

MESSAGE_ENTRY = "message"
COMPACTION_ENTRY = "compaction"
BRANCH_SUMMARY_ENTRY = "branch_summary"
CUSTOM_MESSAGE_ENTRY = "custom_message"
#: Entries that carry state but no message: never cut points, pulled into the kept side.
METADATA_TYPES: tuple[str, ...] = ("model_change", "thinking_level_change", "label", "custom",
                                   "session_info")


def _str(raw: Mapping[str, Any], key: str, where: str, optional: bool = False) -> str | None:
    value = raw.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {key!r} must be a string, got {value!r:.60}")
    return value


def _map(raw: Mapping[str, Any], key: str, where: str) -> dict[str, Any] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: field {key!r} must be an object, got {value!r:.60}")
    return dict(value)


def _extra(raw: Mapping[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k not in known}


_BASE = ("type", "id", "parentId", "timestamp")


def _base(raw: Mapping[str, Any], where: str) -> tuple[str, str | None, str]:
    entry_id = _str(raw, "id", where)
    assert entry_id is not None
    if not entry_id:
        raise ValueError(f"{where}: empty id")
    parent = _str(raw, "parentId", where, optional=True)
    timestamp = _str(raw, "timestamp", where)
    assert timestamp is not None
    return entry_id, parent, timestamp


def _base_json(kind: str, entry: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry.id, "parentId": entry.parent_id, "timestamp": entry.timestamp}


@dataclass(frozen=True)
class SessionHeader:
    """First line of a session file; not part of the entry tree."""

    id: str
    timestamp: str
    version: int = 1
    cwd: str | None = None
    parent_session: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The header line's JSON; optional keys only when set."""
        out: dict[str, Any] = {"type": "session", "version": self.version, "id": self.id,
                               "timestamp": self.timestamp}
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SessionHeader:
        """Parse the header line, raising ``ValueError`` on a bad field."""
        where = "session header"
        version = raw.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(f"{where}: version must be an integer, got {version!r}")
        return cls(_str(raw, "id", where) or "", _str(raw, "timestamp", where) or "", version,
                   _str(raw, "cwd", where, True), _str(raw, "parentSession", where, True),
                   _extra(raw, ("type", "version", "id", "timestamp", "cwd", "parentSession")))


@dataclass(frozen=True)
class MessageEntry:
    """One agent message (reference JSON shape: ``{"role": ..., ...}``)."""

    id: str
    parent_id: str | None
    timestamp: str
    message: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)
    type = MESSAGE_ENTRY

    @property
    def role(self) -> str:
        """The message's role (``user``, ``assistant``, ``toolResult`` ...)."""
        return str(self.message.get("role"))

    def to_json(self) -> dict[str, Any]:
        """The entry's JSON line, unknown keys kept."""
        return {**_base_json(self.type, self), "message": dict(self.message), **self.extra}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> MessageEntry:
        """Parse a ``message`` entry, raising ``ValueError`` naming ``where`` on a bad field."""
        message = _map(raw, "message", where)
        if message is None or not isinstance(message.get("role"), str):
            raise ValueError(f"{where}: message entry needs a 'message' object with a string "
                             "'role'")
        return cls(*_base(raw, where), message, _extra(raw, (*_BASE, "message")))


@dataclass(frozen=True)
class CompactionEntry:
    """History before ``first_kept_entry_id`` replaced by ``summary`` (and, for snapcompact,
    frames)."""

    id: str
    parent_id: str | None
    timestamp: str
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    short_summary: str | None = None
    details: Mapping[str, Any] | None = None
    preserve_data: Mapping[str, Any] | None = None
    from_extension: bool = False
    usage: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    type = COMPACTION_ENTRY

    def to_json(self) -> dict[str, Any]:
        """The entry's JSON line in the reference's key order; optional keys only when set."""
        out = {**_base_json(self.type, self), "summary": self.summary}
        if self.short_summary is not None:
            out["shortSummary"] = self.short_summary
        out["firstKeptEntryId"] = self.first_kept_entry_id
        out["tokensBefore"] = self.tokens_before
        for key, value in (("details", self.details), ("preserveData", self.preserve_data),
                           ("usage", self.usage)):
            if value is not None:
                out[key] = value
        if self.from_extension:
            out["fromExtension"] = True
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> CompactionEntry:
        """Parse a ``compaction`` entry (older logs' ``fromHook`` accepted), naming ``where``."""
        tokens = raw.get("tokensBefore")
        if isinstance(tokens, bool) or not isinstance(tokens, (int, float)):
            raise ValueError(f"{where}: tokensBefore must be a number, got {tokens!r}")
        # Older logs call the extension flag fromHook.
        from_ext = bool(raw.get("fromExtension", raw.get("fromHook", False)))
        known = (*_BASE, "summary", "shortSummary", "firstKeptEntryId", "tokensBefore", "details",
                 "preserveData", "usage", "fromExtension", "fromHook")
        return cls(*_base(raw, where), _str(raw, "summary", where) or "",
                   _str(raw, "firstKeptEntryId", where) or "",
                   int(tokens), _str(raw, "shortSummary", where, True), _map(raw, "details", where),
                   _map(raw, "preserveData", where), from_ext, _map(raw, "usage", where),
                   _extra(raw, known))


@dataclass(frozen=True)
class BranchSummaryEntry:
    """Summary of an abandoned branch, attached at the navigation target."""

    id: str
    parent_id: str | None
    timestamp: str
    from_id: str
    summary: str
    details: Mapping[str, Any] | None = None
    from_extension: bool = False
    usage: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    type = BRANCH_SUMMARY_ENTRY

    def to_json(self) -> dict[str, Any]:
        """The entry's JSON line; optional keys only when set."""
        out = {**_base_json(self.type, self), "fromId": self.from_id, "summary": self.summary}
        for key, value in (("details", self.details), ("usage", self.usage)):
            if value is not None:
                out[key] = value
        if self.from_extension:
            out["fromExtension"] = True
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> BranchSummaryEntry:
        """Parse a ``branch_summary`` entry (older logs' ``fromHook`` accepted)."""
        from_ext = bool(raw.get("fromExtension", raw.get("fromHook", False)))
        known = (*_BASE, "fromId", "summary", "details", "usage", "fromExtension", "fromHook")
        return cls(*_base(raw, where), _str(raw, "fromId", where) or "",
                   _str(raw, "summary", where) or "",
                   _map(raw, "details", where), from_ext, _map(raw, "usage", where),
                   _extra(raw, known))


@dataclass(frozen=True)
class CustomMessageEntry:
    """An extension/harness message that enters the LLM context as a developer message."""

    id: str
    parent_id: str | None
    timestamp: str
    custom_type: str
    content: str | tuple[Mapping[str, Any], ...]
    display: bool = True
    details: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    type = CUSTOM_MESSAGE_ENTRY

    def to_json(self) -> dict[str, Any]:
        """The entry's JSON line, unknown keys kept."""
        content = self.content if isinstance(self.content, str) else [dict(b) for b in self.content]
        out = {**_base_json(self.type, self), "customType": self.custom_type, "content": content,
               "display": self.display}
        if self.details is not None:
            out["details"] = self.details
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> CustomMessageEntry:
        """Parse a ``custom_message`` entry, raising ``ValueError`` naming ``where``."""
        content = raw.get("content")
        if isinstance(content, list) and all(isinstance(b, Mapping) for b in content):
            content = tuple(dict(b) for b in content)
        elif not isinstance(content, str):
            raise ValueError(f"{where}: custom_message content must be a string or a list of "
                             "blocks")
        display = raw.get("display", True)
        if not isinstance(display, bool):
            raise ValueError(f"{where}: display must be true or false, got {display!r}")
        known = (*_BASE, "customType", "content", "display", "details")
        return cls(*_base(raw, where), _str(raw, "customType", where) or "", content, display,
                   _map(raw, "details", where), _extra(raw, known))


@dataclass(frozen=True)
class MetadataEntry:
    """A state change with no message: model or thinking-level switch, label, extension state."""

    type: str
    id: str
    parent_id: str | None
    timestamp: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The entry's JSON line: the base keys plus its free-form data."""
        return {**_base_json(self.type, self), **self.data}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> MetadataEntry:
        """Keep an entry of any other type as metadata, its fields untouched."""
        kind = raw.get("type")
        assert isinstance(kind, str)
        return cls(kind, *_base(raw, where), _extra(raw, _BASE))


Entry = Union[MessageEntry, CompactionEntry, BranchSummaryEntry, CustomMessageEntry, MetadataEntry]

_PARSERS: dict[str, Callable[[Mapping[str, Any], str], Entry]] = {
    MESSAGE_ENTRY: MessageEntry.from_json,
    COMPACTION_ENTRY: CompactionEntry.from_json,
    BRANCH_SUMMARY_ENTRY: BranchSummaryEntry.from_json,
    CUSTOM_MESSAGE_ENTRY: CustomMessageEntry.from_json,
}


def entry_from_json(raw: Any, where: str = "entry") -> Entry:
    """Parse one tree entry; unknown types become :class:`MetadataEntry` (never in the context)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{where}: missing string 'type'")
    if kind == "session":
        raise ValueError(f"{where}: a session header can only be the first line")
    parser = _PARSERS.get(kind)
    return parser(raw, where) if parser else MetadataEntry.from_json(raw, where)
