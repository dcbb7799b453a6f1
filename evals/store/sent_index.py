"""Which arm first sent a context, across the jobs of a sweep that share a results folder.

Why: a multirun sweep (``-m shape=a,b``) runs each job in its own process, so two jobs whose
arms send byte-identical contexts cannot see each other in memory. Each job writes, for every
context it plans, one small file named by the context's sent hash, holding the first arm (and
run) that sent it; a later job finds it at planning and labels its arm ``same_context_as`` that
one. The first writer wins (``O_EXCL``), so concurrent jobs never overwrite each other; a job
racing another may both miss, which the table's own check (``same_context_as`` from the
records' ``sent_hash``) still catches.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["SentIndex"]


class SentIndex:
    """``root/<hash[:2]>/<hash>.json``: the first (arm label, run folder) that sent a context."""

    def __init__(self, root: Path, run: str, *, read_only: bool = False) -> None:
        self.root, self.run, self.read_only = Path(root), run, read_only

    def _path(self, sent_hash: str) -> Path:
        return self.root / sent_hash[:2] / f"{sent_hash}.json"

    def first(self, sent_hash: str, arm: str) -> str | None:
        """The earlier arm (``label (run)``) that sent ``sent_hash``, or None when this arm of
        this run is the first (it is recorded as such unless the index is read-only)."""
        if not sent_hash:
            return None
        path = self._path(sent_hash)
        mine = {"arm": arm, "run": self.run}
        if not self.read_only and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(mine, fh)
                return None
        try:
            seen = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # absent (read-only), or being written this instant
            return None
        if not isinstance(seen, dict) or (seen.get("arm"), seen.get("run")) == (arm, self.run):
            return None
        return f"{seen.get('arm')} (run {seen.get('run')})"
