"""Which runs a table is made of: one experiment at one window per path the command is given.

Why: ``snapcompact-eval-table`` walks folders for records, so ``results/runs`` holding the main
job's ``default/`` and ``small_window/`` beside a sweep's ``multirun/`` would silently pour a
64k sweep into the main job's committed tables. Each path given must therefore hold runs of one
experiment at one context window; runs to combine (the main job's 200k and 32k runs) are named
one path each, which is a decision the caller makes, not one a folder walk makes for them. What
was read is said, per path, on the console and in the report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from evals.store.records import Record, find_record_files, iter_records

__all__ = ["RunSource", "read_sources", "sources_lines"]


@dataclass(frozen=True)
class RunSource:
    """The records one path given to the table command holds."""

    path: str
    experiment: str
    context_window: int | None
    runs: int
    records: int

    def describe(self) -> str:
        window = (f"at the {self.context_window:,}-token window" if self.context_window
                  else "(no window recorded)")
        return (f"experiment {self.experiment} {window}: {self.runs} run(s), "
                f"{self.records} records")


def _key(record: Record) -> tuple[str, int | None]:
    return record.experiment, record.context_window


def _where(key: tuple[str, int | None]) -> str:
    return f"{key[0]} @{key[1]:,}" if key[1] else f"{key[0]} (no window)"


def _one_path(path: str | PathLike[str]) -> tuple[list[Record], RunSource]:
    """A path's records; refused (one line) when they span experiments or windows."""
    folders: dict[tuple[str, int | None], set[str]] = {}
    records: list[Record] = []
    for file in find_record_files([path]):
        for record in iter_records(file):
            records.append(record)
            folders.setdefault(_key(record), set()).add(str(file.parent))
    if len(folders) > 1:
        held = "; ".join(f"{_where(k)}: {', '.join(sorted(v))}" for k, v in sorted(
            folders.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)))
        raise ValueError(
            f"{path} holds runs of {len(folders)} experiments or windows ({held}): one table "
            "would mix them; give the runs to combine one path each")
    if not records:
        raise ValueError(f"{path}: no records found")
    (experiment, window), = folders
    return records, RunSource(str(path), experiment, window,
                              len({r.run_id for r in records}), len(records))


def read_sources(paths: Iterable[str | PathLike[str]]) -> tuple[list[Record],
                                                                tuple[RunSource, ...]]:
    """Every record under ``paths`` and, per path, what it held (see the module docstring)."""
    records: list[Record] = []
    sources = []
    for path in paths:
        rows, source = _one_path(Path(path))
        records += rows
        sources.append(source)
    return records, tuple(sources)


def sources_lines(sources: Sequence[RunSource]) -> list[str]:
    """The report's lines naming what each path held (experiments and windows, not paths: the
    report is the same whichever folder the runs sit in)."""
    return [f"- {s.describe()}" for s in sources]
