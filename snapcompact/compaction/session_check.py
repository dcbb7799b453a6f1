"""Checks on a session a user brings: every message well-formed before the replay starts.

Why: a session file is hostile input (another agent's log, a hand edit, a crash). A bad message
found deep in the replay surfaces as a ``TypeError`` in a loop, a renderer refusing an image,
or a recursion error, none of which says which line of which file to fix. Checking every
message up front, with the file and the line (session tree) or the entry (JSON list) in the
message, turns each of those into one clear error. The checks are the archive's own message
model (:func:`snapcompact.archive.message_from_json`) plus what it leaves to later stages:

* the agent-only roles (``custom``, ``hookMessage``, ``bashExecution``, ``compactionSummary``,
  ``branchSummary``) and their fields;
* images: strict base64, an image media type, and bytes whose signature is that type (a PNG
  labelled ``text/plain`` or ``image/jpeg`` would be refused by the provider, or by the renderer);
* nesting: no JSON value deeper than ``MAX_DEPTH`` levels (the replay copies, serializes and
  hashes messages recursively; a deeper one would end in a recursion error).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from snapcompact.archive import message_from_json

__all__ = ["IMAGE_SIGNATURES", "MAX_DEPTH", "check_message"]

#: Deepest nesting of JSON values accepted in a message (real tool arguments stay far below).
MAX_DEPTH = 200

#: Image media types providers accept, and how their bytes begin.
IMAGE_SIGNATURES: Mapping[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # then 4 length bytes and "WEBP"
}

_AGENT_ROLES = ("custom", "hookMessage", "bashExecution", "compactionSummary", "branchSummary")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (iterative: never recurses itself)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def _check_image(block: Mapping[str, Any], where: str) -> None:
    mime = block.get("mimeType")
    if not isinstance(mime, str) or mime not in IMAGE_SIGNATURES:
        raise ValueError(f"{where}: image mimeType {mime!r:.60} is not one of "
                         f"{', '.join(IMAGE_SIGNATURES)}")
    data = block.get("data")
    try:
        raw = base64.b64decode(data if isinstance(data, str) else "", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: image data is not valid base64") from None
    head = raw[:16]
    if not any(head.startswith(sig) for sig in IMAGE_SIGNATURES[mime]) \
            or (mime == "image/webp" and head[8:12] != b"WEBP"):
        found = next((m for m, sigs in IMAGE_SIGNATURES.items()
                      if any(head.startswith(s) for s in sigs)), None)
        what = f"{found} data" if found else "no image data of a known type"
        raise ValueError(f"{where}: image declared {mime} holds {what}")


def _check_agent_role(message: Mapping[str, Any], role: str, where: str) -> None:
    if role in ("custom", "hookMessage"):
        content = message.get("content", "")
        if not isinstance(content, (str, list)):
            raise ValueError(f"{where}: 'content' must be a string or a list of blocks, got "
                             f"{_kind(content)}")
        for i, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
                raise ValueError(f"{where} block {i}: a content block must be an object with a "
                                 "string 'type'")
    elif role == "bashExecution":
        for key in ("command", "output"):
            if not isinstance(message.get(key, ""), str):
                raise ValueError(f"{where}: field {key!r} must be a string, got "
                                 f"{_kind(message.get(key))}")
    elif not isinstance(message.get("summary", ""), str):
        raise ValueError(f"{where}: field 'summary' must be a string, got "
                         f"{_kind(message.get('summary'))}")


def check_message(message: Any, where: str) -> None:
    """``ValueError`` starting with ``where`` if ``message`` cannot be replayed; else None."""
    if not isinstance(message, Mapping):
        raise ValueError(f"{where}: a message must be a JSON object, got {_kind(message)}")
    role = message.get("role")
    if not isinstance(role, str):
        raise ValueError(f"{where}: a message needs a string 'role', got {_kind(role)}")
    if _depth_over(message, MAX_DEPTH):
        raise ValueError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if role in _AGENT_ROLES:
        _check_agent_role(message, role, f"{where} ({role})")
        return
    try:
        message_from_json(message)
    except ValueError as exc:
        text = str(exc).removeprefix("message ")  # "(role) block i: ..." after our own where
        raise ValueError(f"{where} {text}" if text.startswith("(") else f"{where}: {text}") \
            from None
    content = message.get("content")
    if isinstance(content, Sequence) and not isinstance(content, str):
        for i, block in enumerate(content):
            if block.get("type") == "image":
                _check_image(block, f"{where} ({role}) block {i}")
