"""What a provider will bill for one chat request: its text tokens plus every image's tokens.

Why a whole-request bill: a frame saves money only if the *request* it sits in is cheaper than
the same history as text. The compaction pipeline's own estimate (chars/4 and one flat number per
image) decides when to compact; the bill here is what the provider charges for what is sent:
each image priced by :func:`snapcompact.pricing.billing.bill_image` at its decoded PNG size (with
the provider's resize, e.g. an older Claude line seeing a 1568 px frame at 1092 px), and the text by
:func:`snapcompact.pricing.text_tokens.count_text_tokens` (exact for OpenAI models, a labelled
estimate elsewhere). Per-message framing tokens that providers add are not modelled.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.compaction.text_counters import text_counter_for, tokenizer_family
from snapcompact.compaction.tokens import byte_estimate
from snapcompact.pricing import ImageBill, bill_image, count_text_tokens, exact_encoding

__all__ = ["RequestBill", "bill_request", "png_size", "request_images", "request_text"]

_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]+);base64,(?P<payload>.*)$", re.DOTALL)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class RequestBill:
    """Predicted prompt tokens of one request, split by kind."""

    text_tokens: int
    text_token_method: str
    image_tokens: int
    images: tuple[ImageBill, ...]
    text_chars: int

    @property
    def billed_tokens(self) -> int:
        """Text and image tokens together: the predicted prompt bill."""
        return self.text_tokens + self.image_tokens


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


def billed_text_tokens(text: str, model: str) -> tuple[int, str]:
    """Tokens of ``text`` as ``model``'s provider bills them, and how they were counted.

    The model line's own tokenizer family when it has one (every Claude: claude-v3 and later
    through ``ctok``, the agent's own counter; Kimi, Qwen, GLM, DeepSeek: their calibrated
    estimates), OpenAI's exact tiktoken encoding for OpenAI models, else bytes/4, labelled as
    the estimate it is. The method names the counter in every table that shows the tokens.
    """
    if tokenizer_family(model) is not None:
        counter, method = text_counter_for(model, "auto")
        return counter([text]), method
    if exact_encoding(model) is not None:
        counted = count_text_tokens(text, model)
        return counted.tokens, counted.method
    return byte_estimate([text]), "estimate:bytes4"


def bill_request(messages: Sequence[Mapping[str, Any]], model: str, *, api: str | None = None,
                 provider: str | None = None, detail: str | None = None,
                 tools: Sequence[Mapping[str, Any]] = ()) -> RequestBill:
    """The prompt tokens ``model`` is billed for chat ``messages`` and tool declarations
    (``detail``: default for images that carry none)."""
    text = request_text(messages)
    if tools:
        text += "\n" + json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))
    text_tokens, text_method = billed_text_tokens(text, model)
    bills = []
    for png, own_detail in request_images(messages):
        width, height = png_size(png)
        bills.append(bill_image(model, width, height, own_detail or detail, api=api,
                                provider=provider))
    return RequestBill(text_tokens=text_tokens, text_token_method=text_method,
                       image_tokens=sum(b.tokens for b in bills), images=tuple(bills),
                       text_chars=len(text))
