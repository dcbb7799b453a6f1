"""A session's recovery artifacts, numbered as the coding agent numbers them.

Why a module of its own: a shaken tool result is replaced by a line that links its original,
``[shaken ~N tokens — recover: artifact://K (region R)]``, and that line is part of every later
count (about 12 tokens more than a link-less one). A replay whose placeholders name other ids,
or none, counts another context than the agent's and moves later cut points (issue 45: 25
shaken results on one real session moved a cut point by two messages). So the ids must be the
agent's, in memory as on disk.

The agent's rule (coding agent 18.3.4, ``SessionManager.saveArtifact``,
``src/session/session-manager.ts:2581-2590``; ``ArtifactManager``,
``src/session/artifacts.ts:75-158``):

* a session with a file keeps its artifacts in the folder named like the file without its
  ``.jsonl`` suffix, one file ``{id}.{toolType}.log`` each; ids are decimal and sequential,
  starting after the largest id already in the folder (scanned once, on the first save of a
  manager: a resumed session continues its numbering), from 0 in an empty folder;
* a session without a file keeps them in memory, numbered from 0 by the session manager.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ArtifactStore", "artifact_folder"]

_ARTIFACT_FILE = re.compile(r"^(\d+)\..*\.log$")
_TOOL_TYPE = re.compile(r"[^A-Za-z0-9_-]+")


def _file_kind(tool_type: str) -> str:
    """``sanitizeToolType`` (artifacts.ts:21-27): the tool name as a file-name part."""
    return _TOOL_TYPE.sub("_", tool_type)[:64].strip("_") or "tool"


def artifact_folder(session_path: Path) -> Path:
    """The folder of a session file's artifacts: its path without ``.jsonl``."""
    text = str(session_path)
    return Path(text[: -len(".jsonl")]) if text.endswith(".jsonl") else session_path.with_suffix("")


class ArtifactStore:
    """The artifacts of one session: in a folder next to its file, else in memory."""

    def __init__(self) -> None:
        self.in_memory: dict[str, str] = {}
        self._memory_next = 0
        #: (folder, next id) of the file-backed manager, rescanned when the session moves.
        self._folder: tuple[Path, int] | None = None

    def save(self, session_path: Path | None, content: str, tool_type: str) -> str:
        """Store ``content``; its id (raises ``OSError`` when the folder cannot be written)."""
        if session_path is None:
            key = str(self._memory_next)
            self._memory_next += 1
            self.in_memory[key] = content
            return key
        folder = artifact_folder(session_path)
        if self._folder is None or self._folder[0] != folder:
            folder.mkdir(parents=True, exist_ok=True)
            ids = [int(m.group(1)) for f in folder.iterdir()
                   if (m := _ARTIFACT_FILE.match(f.name))]
            self._folder = (folder, max(ids, default=-1) + 1)
        ident = self._folder[1]
        self._folder = (folder, ident + 1)
        (folder / f"{ident}.{_file_kind(tool_type)}.log").write_text(content, encoding="utf-8")
        return str(ident)
