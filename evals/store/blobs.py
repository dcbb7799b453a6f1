"""Content-addressed stores: frames (PNG) and contexts (JSON), each file named by the sha256 of
its bytes.

Why by content: a frame or context sent by many questions, arms or runs is stored once, and a
record points at it by hash (``frame_hashes``, ``context_hash``), so the viewer shows exactly the
bytes that were sent and a name proves its content.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping


class FrameStore:
    """Frames by content hash: ``root/ab/<sha256>.png``, written once, atomically."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @staticmethod
    def digest(png: bytes) -> str:
        return hashlib.sha256(png).hexdigest()

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.png"

    def put(self, png: bytes) -> str:
        digest = self.digest(png)
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(png)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        return digest

    def get(self, digest: str) -> bytes:
        return self.path(digest).read_bytes()


class JsonStore:
    """JSON documents by content hash: ``root/ab/<sha256>.json``, written once, atomically
    (the hash is over the exact bytes stored, so a name proves its content)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.json"

    def put_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.{id(data)}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        return digest

    def get(self, digest: str) -> dict[str, Any]:
        return json.loads(self.path(digest).read_bytes())


class ContextStore(JsonStore):
    """Contexts by content hash. A context is the request of one (item, arm) without the
    question, with every image's data replaced by its frame hash and sizes (the frames live in
    the :class:`FrameStore`). Records point at it by ``context_hash``, so a viewer can show
    exactly what was sent."""

    def put(self, context: Mapping[str, Any]) -> str:
        return self.put_bytes(json.dumps(context, ensure_ascii=False, sort_keys=True,
                                         separators=(",", ":")).encode())
