"""A session's JSONL file: one line per record, appended whole, read back line by line.

Why a room: :class:`~.session.Session` is the tree of entries and its leaf; how that tree lives
on disk is a job of its own, with its own failure modes. The coding agent's session file
(``session-manager.ts``) is append-only JSONL: each record is one complete line written in a
single ``write`` on an ``O_APPEND`` descriptor and then ``fsync``-ed, so a crash loses at most
the line being written, and a torn final line is ignored on load. The one sanctioned rewrite
(in-place pruning and shake) writes a temporary file and renames it over the old one. Reading
tolerates what editors add (a UTF-8 byte-order mark, blank lines) and names the file and the
line in every error.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from snapcompact.compaction.entries import Entry

__all__ = ["EntryLines", "append_line", "jsonl_line", "read_records", "replace_file"]


def jsonl_line(obj: Mapping[str, Any]) -> bytes:
    """``obj`` as one compact UTF-8 JSON line, newline included."""
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def append_line(path: Path, data: bytes, *, fsync: bool) -> None:
    """Append one whole line in a single ``write`` (``O_APPEND``), then flush it to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        if written != len(data):  # pragma: no cover - regular files write fully
            raise OSError(f"short write to {path}: {written} of {len(data)} bytes")
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, *, fsync: bool) -> None:
    """Atomically replace ``path`` with ``data`` (temporary file, rename, directory flush)."""
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if not fsync:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The file's ``(line number, object)`` records, the header first (a torn last line is
    skipped with a warning; every error names the file and the line)."""
    data = path.read_bytes()
    if not data.strip():
        raise ValueError(f"{path}: the file is empty (a session file starts with a session "
                         "header line)")
    raw_lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    while raw_lines and not raw_lines[-1].strip():
        raw_lines.pop()
    records: list[tuple[int, dict[str, Any]]] = []
    for n, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except RecursionError:
            raise ValueError(f"{path}: line {n} is nested too deeply to read") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, huge integers
            if n == len(raw_lines) and not data.endswith(b"\n"):
                warnings.warn(f"{path}: ignoring torn last line {n} ({exc})", stacklevel=3)
                break
            raise ValueError(f"{path}: line {n} is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{path}: line {n} is not a JSON object")
        records.append((n, obj))
    if not records or records[0][1].get("type") != "session":
        raise ValueError(f"{path}: the first line must be a session header")
    return records


class EntryLines:
    """Each entry's JSONL line, serialized once per entry object (entries are immutable), so a
    rewrite after pruning serializes only the entries that changed."""

    def __init__(self) -> None:
        self._lines: dict[str, tuple[Entry, bytes]] = {}

    def line(self, entry: Entry) -> bytes:
        """The entry's line (cached while the session holds this very entry object)."""
        hit = self._lines.get(entry.id)
        if hit is not None and hit[0] is entry:
            return hit[1]
        line = jsonl_line(entry.to_json())
        self._lines[entry.id] = (entry, line)
        return line
