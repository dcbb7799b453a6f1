"""Which files a compacted stretch of history touched, and how the summary lists them.

Why it matters: once history is archived as images, the model can no longer grep its own past
for the paths it opened. A short, exact file list in plain text (not in a frame) tells it what
to re-read. The list follows the reference's rules: read/write/edit tool calls with a string
``path``; URL-like paths (``artifact://``, ``https://`` ...) never count; a file both read and
modified is listed once as modified; the rendered list is a prefix-folded directory tree with a
per-file marker, ``(Read)`` for read-only files, ``(RW)`` for modified files also read and
``(Write)`` for blind writes, capped at 20 entries (the seed's ``… (N more files omitted)`` line
announces the rest).

Read selectors are stripped so one file read in slices counts once. The grammar is the agent
core's read-tool splitter: a trailing ``:chunk`` is a selector only when it is a line-range list
(``50``, ``50-200``, ``50+10``, ``L12``, ``3..9``, ``5-16,960-973``, open ``50-``), ``raw`` or
``conflicts`` (any case), alone or as a ``range:raw`` / ``raw:range`` compound. Paths sort by
UTF-16 code units, as JavaScript's ``sort`` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snapcompact.archive.messages import (
    AssistantMessage,
    ToolCallBlock,
    message_from_json,
)

__all__ = [
    "FILE_LIST_LIMIT",
    "FileLists",
    "FileOperations",
    "compute_file_lists",
    "file_ops_from_messages",
    "format_file_list",
    "format_grouped_paths",
    "is_url_scheme_path",
    "js_sorted",
    "split_read_selector",
    "strip_read_selector",
    "upsert_file_operations",
]

#: At most this many files are listed in a summary.
FILE_LIST_LIMIT = 20

_URL_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_URL_LIKE_START = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_RANGE_CHUNK = r"L?[0-9]+(?:(?:[-+]|\.\.)L?[0-9]+|-|\.\.)?"
_RANGE_LIST = rf"{_RANGE_CHUNK}(?:,{_RANGE_CHUNK})*"
_SELECTOR = re.compile(rf"(?:{_RANGE_LIST}|raw|conflicts)", re.IGNORECASE)
_RANGE_ONLY = re.compile(_RANGE_LIST, re.IGNORECASE)
_RAW_ONLY = re.compile("raw", re.IGNORECASE)
_FILE_TAGS = re.compile(r"<(files|read-files|modified-files)>.*?</\1>\s*", re.DOTALL)


def _paths(values: Iterable[str] | None, name: str) -> frozenset[str]:
    if values is None:
        return frozenset()
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be a collection of paths, not a single string")
    out = frozenset(values)
    bad = [p for p in out if not isinstance(p, str)]
    if bad:
        raise ValueError(f"{name} must hold strings, got {bad[0]!r}")
    return out


@dataclass(frozen=True)
class FileOperations:
    """Paths read, written (created or overwritten) and edited in the archived history."""

    read: frozenset[str] = field(default_factory=frozenset)
    written: frozenset[str] = field(default_factory=frozenset)
    edited: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        for name in ("read", "written", "edited"):
            object.__setattr__(self, name, _paths(getattr(self, name), name))

    def merged(self, other: FileOperations) -> FileOperations:
        """Union of both histories' file sets, so a new compaction keeps the earlier ones' files."""
        return FileOperations(self.read | other.read, self.written | other.written,
                              self.edited | other.edited)

    @classmethod
    def from_details(cls, details: Mapping[str, Any] | None) -> FileOperations:
        """Fold a previous compaction's ``details`` back in (readFiles -> read, modifiedFiles ->
        edited)."""
        if not details:
            return cls()
        if not isinstance(details, Mapping):
            raise ValueError(f"details must be a mapping, got {type(details).__name__}")
        read = details.get("readFiles", details.get("read_files", ())) or ()
        modified = details.get("modifiedFiles", details.get("modified_files", ())) or ()
        read_paths = _paths(read, "readFiles")
        return cls(read=frozenset(strip_read_selector(p) for p in read_paths),
                   edited=_paths(modified, "modifiedFiles"))


@dataclass(frozen=True)
class FileLists:
    """The persisted split: modified files, and files only read (both sorted)."""

    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        """The reference's ``details`` shape: ``readFiles`` and ``modifiedFiles``."""
        return {"readFiles": list(self.read_files), "modifiedFiles": list(self.modified_files)}


def is_url_scheme_path(path: str) -> bool:
    """True when ``path`` holds a ``scheme://`` part (artifacts, URLs): not a workspace file."""
    return _URL_SCHEME.search(path) is not None


def split_read_selector(path: str) -> tuple[str, str | None]:
    """``src/a.ts:10-20:raw`` -> (``src/a.ts``, ``10-20:raw``); (path, None) without a selector."""
    colon = path.rfind(":")
    if colon <= 0:
        return path, None
    candidate = path[colon + 1:]
    if not _SELECTOR.fullmatch(candidate):
        return path, None
    base, selector = path[:colon], candidate
    inner = base.rfind(":")
    if inner > 0:
        inner_candidate = base[inner + 1:]
        if (_RAW_ONLY.fullmatch(inner_candidate) and _RANGE_ONLY.fullmatch(candidate)) or (
                _RANGE_ONLY.fullmatch(inner_candidate) and _RAW_ONLY.fullmatch(candidate)):
            selector = f"{inner_candidate}:{candidate}"
            base = base[:inner]
    return base, selector


def strip_read_selector(path: str) -> str:
    """``src/a.ts:10-20:raw`` -> ``src/a.ts`` (see :func:`split_read_selector`)."""
    return split_read_selector(path)[0]


def js_sorted(paths: Iterable[str]) -> list[str]:
    """Sorted by UTF-16 code units (JavaScript's default ``Array.prototype.sort`` order)."""
    return sorted(paths, key=lambda p: p.encode("utf-16-be", "surrogatepass"))


def _tool_calls(messages: Sequence[Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:

    for i, raw in enumerate(messages):
        msg = message_from_json(raw, i)
        if not isinstance(msg, AssistantMessage):
            continue
        for block in msg.content:
            if isinstance(block, ToolCallBlock):
                yield block.name, block.arguments


def file_ops_from_messages(messages: Sequence[Any]) -> FileOperations:
    """Collect read/write/edit paths from assistant tool calls (dataclasses or reference JSON)."""
    read: set[str] = set()
    written: set[str] = set()
    edited: set[str] = set()
    for name, args in _tool_calls(messages):
        path = args.get("path") if isinstance(args, Mapping) else None
        if not isinstance(path, str) or is_url_scheme_path(path):
            continue
        if name == "read":
            read.add(strip_read_selector(path))
        elif name == "write":
            written.add(path)
        elif name == "edit":
            edited.add(path)
    return FileOperations(frozenset(read), frozenset(written), frozenset(edited))


def compute_file_lists(ops: FileOperations) -> FileLists:
    """Modified = edited | written; read-only = read - modified; URL-like paths dropped; sorted."""
    modified = {p for p in ops.edited | ops.written if not is_url_scheme_path(p)}
    read_only = {p for p in ops.read if not is_url_scheme_path(p) and p not in modified}
    return FileLists(tuple(js_sorted(read_only)), tuple(js_sorted(modified)))


class _Dir:
    __slots__ = ("files", "subdirs")

    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # name -> original path (insertion ordered)
        self.subdirs: dict[str, _Dir] = {}


def format_grouped_paths(paths: Sequence[str], annotate: Mapping[str, str] | None = None) -> str:
    """A prefix-folded directory tree: ``# dir/`` headers (one ``#`` per level), bare file names.

    Directories appear in first-seen order; a directory's own files come before its
    subdirectories; chains of directories holding only one subdirectory fold into one header.
    ``annotate`` maps an original path to a suffix for its line (e.g. `` (RW)``). A path ending
    in ``/`` is a directory leaf; URL-like paths stay whole at the root.
    """
    root = _Dir()
    for original in paths:
        norm = original.replace("\\", "/")
        if _URL_LIKE_START.match(norm):
            root.files.setdefault(norm, original)
            continue
        is_dir = norm.endswith("/")
        trimmed = norm[:-1] if is_dir else norm
        if not trimmed:
            continue
        parts = trimmed.split("/")
        node = root
        for part in parts if is_dir else parts[:-1]:
            node = node.subdirs.setdefault(part, _Dir())
        if not is_dir:
            node.files.setdefault(parts[-1], original)
    lines: list[str] = []

    def walk(node: _Dir, depth: int) -> None:
        for name, original in node.files.items():
            lines.append(name + (annotate.get(original, "") if annotate else ""))
        for name, child in node.subdirs.items():
            chain = [name]
            while not child.files and len(child.subdirs) == 1:
                (only, child), = child.subdirs.items()
                chain.append(only)
            lines.append(f"{'#' * (depth + 1)} {'/'.join(chain)}/")
            walk(child, depth + 1)

    walk(root, 0)
    return "\n".join(lines)


def format_file_list(lists: FileLists, read_set: Iterable[str] = (),
                     limit: int = FILE_LIST_LIMIT) -> str:
    """The grouped, marked file list (empty string when no files)."""
    reads = frozenset(read_set)
    mode: dict[str, str] = {p: "Read" for p in lists.read_files}
    for p in lists.modified_files:
        mode[p] = "RW" if p in reads else "Write"
    every = js_sorted(mode)
    if not every:
        return ""
    shown = every[:limit]
    text = format_grouped_paths(shown, {p: f" ({mode[p]})" for p in shown})
    if len(every) > limit:
        text += f"\n\u2026 ({len(every) - limit} more files omitted)"
    return text


def upsert_file_operations(summary: str, lists: FileLists, read_set: Iterable[str] = ()) -> str:
    """Replace any ``<files>`` (or legacy ``<read-files>``/``<modified-files>``) tag in an LLM
    summary."""
    base = _FILE_TAGS.sub("", summary).rstrip()
    files = format_file_list(lists, read_set)
    if not files:
        return base
    block = f"<files>\n{files}\n</files>"
    return f"{base}\n\n{block}" if base else block
