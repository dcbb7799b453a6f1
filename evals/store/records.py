"""The records file: rows appended to ``records.jsonl`` whole or not at all, and read back.

Rows are appended to ``records.jsonl`` one complete line per ``os.write`` on a file opened with
``O_APPEND`` under an exclusive ``flock``, then fsynced: concurrent writers (threads, Hydra
joblib processes) never interleave, and a crash can at worst lose the row being written, never
corrupt earlier ones.  The append heals the file first: a torn last line (a ``kill -9`` or a
full disk in the middle of a write) is cut off, or terminated when it is a whole row that only
lacks its newline, so the next row never lands inside a fragment.  A write that fails (disk
full) is rolled back to the file's previous end before the error is raised.  On read, a torn
last line is skipped with a warning; any other line that is not a record is an error naming
the file and line.  Rows are type-checked on read (``Record.from_json``), so a hand-edited or
foreign row fails here, not later in a table.

The row itself is :class:`evals.store.record.Record` (its groups in
:mod:`evals.store.record_groups`, its flat columns in :mod:`evals.store.record_columns`, old
rows through :mod:`evals.store.record_upgrade`); frames and contexts are stored by content hash
in :mod:`evals.store.blobs`. Their names are re-exported here, where readers have always
imported them.
"""

from __future__ import annotations

import fcntl
import json
import os
import typing
import warnings
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator

from evals.store.blobs import ContextStore, FrameStore, JsonStore
from evals.store.record import (
    LLM_STRATEGIES,
    ORACLE_SUMMARIZER_PREFIX,
    Record,
    is_oracle_summarizer,
    record_key,
)
from evals.store.record_groups import SCHEMA_VERSION
from evals.store.record_upgrade import RENAMED_FIELDS, upgrade_record

__all__ = [
    "LLM_STRATEGIES", "ORACLE_SUMMARIZER_PREFIX", "RECORDS_FILE", "RENAMED_FIELDS",
    "SCHEMA_VERSION", "ContextStore", "FrameStore", "JsonStore", "Record", "append_records",
    "completed_keys", "find_record_files", "heal_torn_tail", "is_oracle_summarizer",
    "iter_records", "iter_rows", "load_records", "one_row_per_measurement", "record_key",
    "upgrade_record",
]

RECORDS_FILE = "records.jsonl"


Row = typing.TypeVar("Row")


def one_row_per_measurement(rows: Iterable[Row], key: Callable[[Row], Hashable],
                            succeeded: Callable[[Row], bool],
                            created_at: Callable[[Row], str]) -> list[Row]:
    """The one rule that picks a row when a measurement was recorded more than once (a resumed
    run, an error row and its retry): the latest successful row, else the latest row
    (``created_at``, then file order). Rows come back in the order their keys first appeared.

    The tables (:func:`evals.analysis.aggregate.records_frame`), the console summary (through them)
    and the viewer (:func:`evals.view.entries.build_entries`, whose key adds the run id) all pick
    with this function, so they cannot disagree on which row counts.
    """
    chosen: dict[Hashable, tuple[tuple[bool, str, int], Row]] = {}
    for order, row in enumerate(rows):
        rank = (bool(succeeded(row)), str(created_at(row) or ""), order)
        k = key(row)
        if k not in chosen or rank > chosen[k][0]:
            chosen[k] = (rank, row)
    return [row for _, row in chosen.values()]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def heal_torn_tail(fd: int, path: Path) -> None:
    """Make the file end with a newline: cut a torn last line, or terminate a whole row.

    ``fd`` is open for reading and appending, under the caller's exclusive lock.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = size
    chunk = 1 << 16
    while start > 0:  # find the last newline, reading backwards
        lo = max(0, start - chunk)
        block = os.pread(fd, start - lo, lo)
        cut = block.rfind(b"\n")
        if cut >= 0:
            start = lo + cut + 1
            break
        start = lo
    tail = os.pread(fd, size - start, start)
    try:
        Record.from_json(json.loads(tail))
    except (ValueError, RecursionError):
        os.ftruncate(fd, start)
        warnings.warn(f"{path}: cut a torn last line ({len(tail)} bytes) before appending",
                      stacklevel=3)
    else:
        _write_all(fd, b"\n")  # a whole row that only lacks its newline: keep it


def append_records(path: str | os.PathLike[str], records: Iterable[Record]) -> int:
    """Append rows atomically (one write per row, under an exclusive lock); returns the count.

    A torn tail left by an earlier crash is healed first (``heal_torn_tail``). If a write
    fails (``OSError``: disk full, quota), the file is cut back to where it ended before this
    call, so it never keeps half a row, and the error is raised.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        (json.dumps(r.to_json(), ensure_ascii=False, sort_keys=True, allow_nan=False)
         + "\n").encode()
        for r in records
    ]
    if not lines:
        return 0
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            heal_torn_tail(fd, path)
            end = os.fstat(fd).st_size
            try:
                _write_all(fd, b"".join(lines))
                os.fsync(fd)
            except OSError:
                try:
                    os.ftruncate(fd, end)
                except OSError:
                    pass  # the next append heals what is left
                raise
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return len(lines)


def iter_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """Rows of one records file; a torn (unterminated, unparsable) final line is skipped, any
    other bad line is an error naming the file and the line."""
    for number, row in _numbered_rows(path):
        try:
            record = Record.from_json(row)
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
        yield record


def iter_rows(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The raw JSON objects of one records file, torn last line skipped as in ``iter_records``.

    For readers that must accept rows of other schema versions as they are (the viewer).
    """
    for _, row in _numbered_rows(path):
        yield row


def _numbered_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            if number == len(lines):  # unterminated last line: an interrupted append
                warnings.warn(f"{path}: skipping a torn last line", stacklevel=2)
                continue
            raise ValueError(f"{path}:{number}: not a JSON record") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: a record is a JSON object, got "
                             f"{type(row).__name__}")
        yield number, row


def find_record_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every records file under the given files or directories (recursively), sorted."""
    found: set[Path] = set()
    for p in paths:
        p = Path(p)
        if p.is_file():
            found.add(p)
        elif p.is_dir():
            found.update(p.rglob(RECORDS_FILE))
        else:
            raise ValueError(f"no such records file or directory: {p}")
    return sorted(found)


def load_records(paths: Iterable[str | os.PathLike[str]]) -> list[Record]:
    return [r for f in find_record_files(paths) for r in iter_records(f)]


def completed_keys(path: str | os.PathLike[str]) -> set[tuple]:
    """Keys already recorded without an error: a resumed run skips exactly these."""
    return {r.key() for r in iter_records(path) if r.error is None}
