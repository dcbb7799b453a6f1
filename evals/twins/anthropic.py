"""Twin of Anthropic's Messages API (``POST /v1/messages``) and of Bedrock's Converse for Claude.

Request checks follow platform.claude.com/docs/en/api/messages and .../build-with-claude/vision:
``x-api-key`` and ``anthropic-version`` headers, ``model``/``max_tokens``/``messages`` required,
roles ``user``/``assistant``, content blocks ``text`` and ``image`` with a ``base64`` source of
type image/jpeg, image/png, image/gif or image/webp that must match the decoded bytes; at most
5 MB per image, 8000 px per edge (2000 px when a request has more than 20 images), 100 images,
32 MB per request (``[[request_limits]]`` of pricing.toml); ``temperature`` within 0..1, and no sampling parameters at all for Opus 4.7 and later.
Errors are ``{"type": "error", "error": {"type": ..., "message": ...}}`` with the documented
status (400 invalid_request_error, 401 authentication_error, 413 request_too_large,
429 rate_limit_error, 529 overloaded_error). Rate-limit replies carry ``retry-after`` and the
``anthropic-ratelimit-requests-*`` headers.

``BedrockConverseTwin`` speaks Bedrock's Converse wire (``POST /model/{id}/converse``: image
blocks ``{"image": {"format": "png", "source": {"bytes": <base64>}}}``, 3.75 MB per image,
errors named by ``x-amzn-ErrorType``) and bills images by the same Claude rule.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from evals.twins.server import Billed, Fault, Refusal, WireTwin, request_limits
from evals.twins.vision import (
    DecodedImage,
    ImageError,
    anthropic_image_tokens,
    decode_base64_image,
    text_tokens,
)

__all__ = ["AnthropicTwin", "BedrockConverseTwin"]

_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
#: Opus 4.7 and later removed the sampling parameters: any of them is a 400 (Anthropic's Opus 4.7
#: migration notes, as quoted by docs.agentsflare.com and help.apiyi.com; checked 2026-12-01).
_SAMPLING_REMOVED = re.compile(r"claude-opus-(4-([7-9]|[1-9]\d)(?!\d)|[5-9](?!\d))", re.IGNORECASE)


def _rfc3339(seconds_from_now: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds_from_now)).isoformat(
        timespec="seconds").replace("+00:00", "Z")


def _check_edges(images: list[DecodedImage], limits: dict[str, Any]) -> None:
    many = len(images) > 20
    edge = limits.get("max_edge_over_20_images") if many else limits.get("max_edge")
    for i, image in enumerate(images):
        if edge and max(image.width, image.height) > edge:
            extra = " for requests with more than 20 images" if many else ""
            raise Refusal(400, "invalid_request_error",
                          f"image {i}: {image.width}x{image.height} px: at least one of the "
                          f"image dimensions exceed max allowed size{extra}: {edge} pixels "
                          "(max_edge)")


def _bill_claude(model: str, images: list[DecodedImage], texts: list[str],
                 answer: str) -> Billed:
    billed = [anthropic_image_tokens(model, im.width, im.height) for im in images]
    return Billed(text_tokens=sum(text_tokens(t) for t in texts),
                  image_tokens=tuple(t for t, _ in billed),
                  image_sizes=tuple((im.width, im.height) for im in images),
                  completion_tokens=text_tokens(answer))


@dataclass
class AnthropicTwin(WireTwin):
    name: str = "anthropic"
    prefix: str = "/anthropic"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.limits:
            self.limits = request_limits()["anthropic"]

    def routes(self):
        return [("POST", "/v1/messages", self.messages)]

    def check_auth(self, headers, query) -> None:
        if not headers.get("x-api-key") and not headers.get("authorization"):
            raise Refusal(401, "authentication_error", "x-api-key header is required")
        if not headers.get("anthropic-version"):
            raise Refusal(400, "invalid_request_error", "anthropic-version: header is required")

    def error_body(self, refusal: Refusal):
        return refusal.status, {"type": "error", "error": {"type": refusal.kind,
                                                           "message": refusal.message}}, {}

    def fault_reply(self, fault: Fault):
        headers = {"anthropic-ratelimit-requests-limit": "50",
                   "anthropic-ratelimit-requests-remaining": "0"}
        if fault.kind == "overloaded":
            return 529, {"type": "error", "error": {"type": "overloaded_error",
                                                    "message": "Overloaded"}}, {}
        headers["anthropic-ratelimit-requests-reset"] = _rfc3339(fault.reset_s)
        if fault.retry_after_s is not None:
            headers["retry-after"] = f"{fault.retry_after_s:g}"
        body = {"type": "error", "error": {
            "type": "rate_limit_error",
            "message": "This request would exceed the rate limit for your organization of 50 "
                       "requests per minute."}}
        return 429, body, headers

    # -- POST /v1/messages -----------------------------------------------------------------
    def messages(self, request: Any, body: dict[str, Any], match: Any):
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise Refusal(400, "invalid_request_error", "model: Field required")
        if not model.startswith("claude"):
            raise Refusal(404, "not_found_error", f"model: {model}")
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise Refusal(400, "invalid_request_error", "max_tokens: Field required (int >= 1)")
        if _SAMPLING_REMOVED.search(model):
            for name in ("temperature", "top_p", "top_k"):
                if name in body:
                    raise Refusal(400, "invalid_request_error",
                                  f"{name} is deprecated for this model.")
        temperature = body.get("temperature")
        if temperature is not None and not 0 <= temperature <= 1:
            raise Refusal(400, "invalid_request_error",
                          "temperature: range: 0..1")
        texts = _system_texts(body.get("system"))
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refusal(400, "invalid_request_error", "messages: Field required")
        images: list[DecodedImage] = []
        for m, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                raise Refusal(400, "invalid_request_error",
                              f"messages.{m}.role: Input should be 'user' or 'assistant'")
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            if not isinstance(content, list) or not content:
                raise Refusal(400, "invalid_request_error",
                              f"messages.{m}.content: Input should be a string or a list")
            for b, block in enumerate(content):
                where = f"messages.{m}.content.{b}"
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "text":
                    if not isinstance(block.get("text"), str):
                        raise Refusal(400, "invalid_request_error", f"{where}.text: Field required")
                    texts.append(block["text"])
                elif kind == "image":
                    images.append(self._image(block, where, len(images)))
                else:
                    raise Refusal(400, "invalid_request_error",
                                  f"{where}.type: Input tag {kind!r} found using 'type' does not "
                                  "match any of the expected tags: 'text', 'image'")
        self.check_image_count(len(images))
        _check_edges(images, dict(self.limits))
        answer = self.answer_fn(texts)
        billed = _bill_claude(model, images, texts, answer)
        reply = {
            "id": f"msg_twin_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": billed.prompt_tokens,
                      "output_tokens": billed.completion_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }
        return reply, billed, model

    def _image(self, block: dict[str, Any], where: str, index: int) -> DecodedImage:
        source = block.get("source")
        if not isinstance(source, dict) or source.get("type") != "base64":
            raise Refusal(400, "invalid_request_error",
                          f"{where}.source: the twin accepts base64 image sources only")
        declared = source.get("media_type")
        if declared not in _MEDIA_TYPES:
            raise Refusal(400, "invalid_request_error",
                          f"{where}.source.media_type: Input should be "
                          + ", ".join(repr(t) for t in _MEDIA_TYPES))
        data = source.get("data")
        if not isinstance(data, str):
            raise Refusal(400, "invalid_request_error", f"{where}.source.data: Field required")
        self.check_image_bytes(index, len(data))
        try:
            image = decode_base64_image(data)
        except ImageError as exc:
            raise Refusal(400, "invalid_request_error", f"{where}.source.data: {exc}") from None
        if image.media_type != declared:
            raise Refusal(400, "invalid_request_error",
                          f"{where}: Image does not match the provided media type {declared}")
        return image


def _system_texts(system: Any) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [system]
    if isinstance(system, list):
        return [b.get("text", "") for b in system if isinstance(b, dict)]
    raise Refusal(400, "invalid_request_error", "system: Input should be a string or a list")


# --------------------------------------------------------------------------------------------
# Bedrock Converse (Claude)


@dataclass
class BedrockConverseTwin(WireTwin):
    name: str = "bedrock"
    prefix: str = "/bedrock"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.limits:
            self.limits = request_limits()["amazon-bedrock"]

    def routes(self):
        return [("POST", "/model/{model}/converse", self.converse)]

    def check_auth(self, headers, query) -> None:
        if not str(headers.get("authorization", "")).startswith("AWS4-HMAC-SHA256 "):
            raise Refusal(403, "UnrecognizedClientException",
                          "The security token included in the request is invalid.")

    def error_body(self, refusal: Refusal):
        kind = refusal.kind if refusal.kind.endswith("Exception") else "ValidationException"
        return refusal.status, {"message": refusal.message}, {"x-amzn-ErrorType": kind}

    def fault_reply(self, fault: Fault):
        if fault.kind == "overloaded":
            return 503, {"message": "Bedrock is unable to process your request."}, \
                {"x-amzn-ErrorType": "ServiceUnavailableException"}
        headers = {"x-amzn-ErrorType": "ThrottlingException"}
        if fault.retry_after_s is not None:
            headers["retry-after"] = f"{fault.retry_after_s:g}"
        return 429, {"message": "Too many requests, please wait before trying again."}, headers

    def converse(self, request: Any, body: dict[str, Any], match: Any):
        model = match["model"]
        if "anthropic.claude" not in model:
            raise Refusal(400, "ValidationException", "The provided model identifier is invalid.")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refusal(400, "ValidationException", "messages: required")
        texts = [b.get("text", "") for b in body.get("system") or [] if isinstance(b, dict)]
        images: list[DecodedImage] = []
        for m, message in enumerate(messages):
            if message.get("role") not in ("user", "assistant"):
                raise Refusal(400, "ValidationException", f"messages.{m}.role is invalid")
            for b, block in enumerate(message.get("content") or []):
                if "text" in block:
                    texts.append(str(block["text"]))
                elif "image" in block:
                    images.append(self._image(block["image"], f"messages.{m}.content.{b}",
                                              len(images)))
                else:
                    raise Refusal(400, "ValidationException",
                                  f"messages.{m}.content.{b}: unsupported content block")
        _check_edges(images, dict(request_limits()["anthropic"]))
        answer = self.answer_fn(texts)
        billed = _bill_claude(model, images, texts, answer)
        reply = {
            "output": {"message": {"role": "assistant", "content": [{"text": answer}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": billed.prompt_tokens,
                      "outputTokens": billed.completion_tokens,
                      "totalTokens": billed.prompt_tokens + billed.completion_tokens},
            "metrics": {"latencyMs": 1},
        }
        return reply, billed, model

    def _image(self, image: dict[str, Any], where: str, index: int) -> DecodedImage:
        fmt = image.get("format")
        if fmt not in ("png", "jpeg", "gif", "webp"):
            raise Refusal(400, "ValidationException", f"{where}.image.format is invalid: {fmt!r}")
        data = (image.get("source") or {}).get("bytes")
        if not isinstance(data, str):
            raise Refusal(400, "ValidationException", f"{where}.image.source.bytes is required")
        self.check_image_bytes(index, len(data))
        try:
            decoded = decode_base64_image(data)
        except ImageError as exc:
            raise Refusal(400, "ValidationException", f"{where}: {exc}") from None
        if decoded.media_type != f"image/{fmt}":
            raise Refusal(400, "ValidationException",
                          f"{where}: image format {fmt} does not match the image bytes")
        return decoded
