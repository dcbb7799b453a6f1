"""A finished run says so: rerunning it answers "nothing to do" without replaying a session.

Why: resuming needs each row's key, and a key holds what the replay decides (the shape and size
the frames were drawn in), so the plan replays every (item, arm) before it can tell that every
row is recorded: 12-16 s on the main job for a rerun that sends nothing. A run that ends with
every planned row recorded and no error writes ``finished.json`` beside its records: the run id
(what is measured), the provenance that could change a row (code content, tables, renderer,
dependency versions; not the commit, which also moves when only results change) and the records
file's sha256. A rerun whose run id and provenance are the same and whose records file is
byte-identical is finished; anything else (other config, other code, rows appended or removed,
an interrupted or errored run) plans as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.store.records import RECORDS_FILE

__all__ = ["FINISHED_FILE", "Finished", "finished_run", "mark_finished"]

FINISHED_FILE = "finished.json"


@dataclass(frozen=True)
class Finished:
    """What a finished run was: the marker's fields."""

    run_id: str
    provenance: str  # sha256 of the provenance fields that can change a row
    records_sha256: str
    rows: int


def _provenance(versions: Any) -> str:
    fields = {k: v for k, v in dataclasses.asdict(versions).items() if k != "git_sha"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _file_sha256(path: Path) -> tuple[str, int]:
    """The file's sha256 and its non-blank lines (the records), in one read."""
    digest, rows = hashlib.sha256(), 0
    with path.open("rb") as fh:
        for line in fh:
            digest.update(line)
            rows += bool(line.strip())
    return digest.hexdigest(), rows


def mark_finished(run_dir: Path, run_id: str, versions: Any) -> Finished:
    """Write the marker for a run whose every planned row is recorded."""
    sha, rows = _file_sha256(run_dir / RECORDS_FILE)
    marker = Finished(run_id, _provenance(versions), sha, rows)
    tmp = run_dir / (FINISHED_FILE + ".tmp")
    tmp.write_text(json.dumps(dataclasses.asdict(marker), indent=2) + "\n", encoding="utf-8")
    tmp.replace(run_dir / FINISHED_FILE)
    return marker


def finished_run(run_dir: Path, run_id: str, versions: Any) -> Finished | None:
    """The marker when this run, at this code, finished into these very records; else None."""
    path, records = run_dir / FINISHED_FILE, run_dir / RECORDS_FILE
    if not path.is_file() or not records.is_file():
        return None
    try:
        marker = Finished(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError):
        return None  # a marker that does not read is no marker: plan as usual
    if (marker.run_id, marker.provenance) != (run_id, _provenance(versions)):
        return None
    return marker if _file_sha256(records)[0] == marker.records_sha256 else None
