"""What a chat request carries that a provider bills: its text and its images.

Why a module of its own: a request's bill is counted from what is *sent*, the OpenAI-style chat
messages the harness and the ``compact`` command build (``to_chat_messages``), not from the
session. This module reads them: every piece of text (text parts, tool-call names and
arguments) and every image (a base64 ``data:`` URL, its PNG size read from the header without
decoding the pixels). :mod:`.request` bills what it finds.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["png_size", "request_images", "request_text"]

_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]+);base64,(?P<payload>.*)$", re.DOTALL)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, without decoding the pixels."""
    if len(png) < 24 or not png.startswith(_PNG_SIGNATURE) or png[12:16] != b"IHDR":
        raise ValueError("image is not a PNG (no PNG signature and IHDR chunk)")
    width, height = struct.unpack(">II", png[16:24])
    if width < 1 or height < 1:
        raise ValueError(f"PNG has an empty size {width}x{height}")
    return width, height


def _decode_data_url(url: object) -> bytes:
    match = _DATA_URL.match(url) if isinstance(url, str) else None
    if match is None:
        raise ValueError("an image part must carry a base64 data: URL")
    try:
        return base64.b64decode(match["payload"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"an image part has a bad base64 payload: {exc}") from None


def _content_parts(message: Mapping[str, Any]) -> Sequence[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, Sequence) else ()


def request_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """Every piece of text a request carries (text parts, tool-call names and arguments), joined."""
    pieces: list[str] = []
    for message in messages:
        for part in _content_parts(message):
            if isinstance(part, Mapping) and part.get("type") == "text":
                pieces.append(str(part.get("text", "")))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            pieces.append(str(function.get("name", "")))
            arguments = function.get("arguments", "")
            pieces.append(arguments if isinstance(arguments, str) else json.dumps(arguments))
    return "\n".join(p for p in pieces if p)


def request_images(messages: Sequence[Mapping[str, Any]]) -> list[tuple[bytes, str | None]]:
    """Every image of a request in order: (PNG bytes, detail)."""
    out: list[tuple[bytes, str | None]] = []
    for message in messages:
        for part in _content_parts(message):
            if isinstance(part, Mapping) and part.get("type") == "image_url":
                ref = part.get("image_url")
                url = ref.get("url") if isinstance(ref, Mapping) else ref
                detail = ref.get("detail") if isinstance(ref, Mapping) else None
                out.append((_decode_data_url(url), detail))
    return out

