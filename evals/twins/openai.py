"""Twin of OpenAI's chat completions (``POST /v1/chat/completions``) and Responses
(``POST /v1/responses``) APIs, and of the OpenAI-compatible APIs of OpenRouter, Z.ai, Moonshot.

Request checks follow platform.openai.com/docs/api-reference and .../guides/images-vision:
``Authorization: Bearer`` required; content parts ``text``/``image_url`` (chat) and
``input_text``/``input_image`` (Responses) with a base64 ``data:`` URL; ``detail`` one of
low/high/auto on tile-billed models (``original`` is refused: it exists only for newer
patch-billed models); reasoning models (gpt-5, o-series) refuse ``max_tokens`` (they take
``max_completion_tokens``) and any ``temperature`` but the default 1. Limits from
``[[request_limits]]``: 20 MB per image, 500 images, 50 MB per request. Errors are
``{"error": {"message", "type", "param", "code"}}``. Rate-limit replies carry ``retry-after``,
``retry-after-ms`` and the ``x-ratelimit-*`` headers (reset as a duration such as ``1.5s``).

An OpenAI-compatible flavour (``OpenAITwin(name="openrouter", flavour="openrouter")``) applies
that provider's limits on top (OpenRouter: 8 images) and bills images by the rule of the model's
vendor where one is documented (Claude through OpenRouter: Anthropic's rule). GLM and Kimi
publish no image-token rule, so their twins bill text only and leave images unbilled
(``Exchange.image_tokens`` is then empty): a drift on those rows says "no documented rule".
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from evals.twins.server import Billed, Fault, Refusal, WireTwin, request_limits
from evals.twins.vision import (
    DecodedImage,
    ImageError,
    anthropic_image_tokens,
    decode_base64_image,
    openai_image_tokens,
    openai_tile_prices,
    parse_data_url,
    text_tokens,
)

__all__ = ["OpenAITwin"]

_REASONING = re.compile(r"(^|/)(gpt-5|o[1-9])", re.IGNORECASE)
_EFFORTS = ("minimal", "low", "medium", "high")
_STATUS_TYPE = {400: "invalid_request_error", 401: "invalid_request_error",
                404: "invalid_request_error", 413: "invalid_request_error"}


@dataclass
class OpenAITwin(WireTwin):
    name: str = "openai"
    prefix: str = "/openai/v1"
    flavour: str = "openai"  # openai | openrouter | zai | moonshot

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.limits:
            self.limits = dict(request_limits().get(self.flavour, {}))

    def routes(self):
        routes = [("POST", "/chat/completions", self.chat)]
        if self.flavour == "openai":
            routes.append(("POST", "/responses", self.responses))
        return routes

    def check_auth(self, headers, query) -> None:
        value = str(headers.get("authorization", ""))
        if not value.startswith("Bearer ") or len(value) < 12:
            raise Refusal(401, "invalid_api_key",
                          "You didn't provide an API key. You need to provide your API key in an "
                          "Authorization header using Bearer auth.")

    def error_body(self, refusal: Refusal):
        kind = _STATUS_TYPE.get(refusal.status, "invalid_request_error")
        code = refusal.kind if refusal.kind != kind else None
        return refusal.status, {"error": {"message": refusal.message, "type": kind,
                                          "param": None, "code": code}}, {}

    def fault_reply(self, fault: Fault):
        if fault.kind == "overloaded":
            return 503, {"error": {"message": "The server is overloaded, please try again later.",
                                   "type": "server_error", "param": None, "code": None}}, {}
        wait = fault.reset_s
        headers = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                   "x-ratelimit-reset-requests": f"{wait:g}s",
                   "x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "0",
                   "x-ratelimit-reset-tokens": f"{wait:g}s"}
        if fault.retry_after_s is not None:
            headers["retry-after-ms"] = f"{round(fault.retry_after_s * 1000)}"
            headers["retry-after"] = f"{max(1, round(fault.retry_after_s))}"
        body = {"error": {"message": "Rate limit reached for requests. Please try again later.",
                          "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
        return 429, body, headers

    # -- shared request checks ----------------------------------------------------------------
    def _check_model(self, body: dict[str, Any]) -> str:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise Refusal(400, "invalid_request_error", "you must provide a model parameter")
        if self.flavour == "openai" and openai_tile_prices(model) is None:
            raise Refusal(404, "model_not_found",
                          f"The model `{model}` does not exist or you do not have access to it.")
        if self.flavour == "openai" and _REASONING.search(model):
            temperature = body.get("temperature")
            if temperature is not None and temperature != 1:
                raise Refusal(400, "unsupported_value",
                              f"Unsupported value: 'temperature' does not support {temperature} "
                              "with this model. Only the default (1) value is supported.")
            effort = body.get("reasoning_effort", (body.get("reasoning") or {}).get("effort"))
            if effort is not None and effort not in _EFFORTS:
                raise Refusal(400, "invalid_value",
                              f"Invalid value: {effort!r}. Supported values are: "
                              + ", ".join(repr(e) for e in _EFFORTS) + ".")
        return model

    def _image(self, model: str, url: Any, detail: Any, where: str, index: int
               ) -> tuple[DecodedImage, str]:
        if not isinstance(url, str):
            raise Refusal(400, "invalid_request_error", f"{where}: image url is required")
        detail = "auto" if detail is None else detail
        if self.flavour == "openai" and detail not in ("low", "high", "auto"):
            raise Refusal(400, "invalid_value",
                          f"Invalid value for '{where}.detail': {detail!r} is not supported "
                          "with this model. Supported values are: 'low', 'high' and 'auto'.")
        try:
            declared, data = parse_data_url(url)
            self.check_image_bytes(index, len(data))
            image = decode_base64_image(data)
        except ImageError as exc:
            raise Refusal(400, "invalid_image", f"{where}: {exc}") from None
        if declared != image.media_type:
            raise Refusal(400, "invalid_image_format",
                          f"{where}: the data URL says {declared} but the bytes are "
                          f"{image.media_type}")
        return image, detail

    def _bill(self, model: str, images: list[tuple[DecodedImage, str]], texts: list[str],
              answer: str) -> Billed:
        self.check_image_count(len(images))
        tokens: list[int] = []
        if self.flavour == "openai":
            tokens = [openai_image_tokens(model, im.width, im.height, d)[0] for im, d in images]
        elif "claude" in model:  # OpenRouter forwards Claude to Anthropic, usage included
            tokens = [anthropic_image_tokens(model.replace(".", "-"), im.width, im.height)[0]
                      for im, _ in images]
        return Billed(text_tokens=sum(text_tokens(t) for t in texts), image_tokens=tuple(tokens),
                      image_sizes=tuple((im.width, im.height) for im, _ in images),
                      completion_tokens=text_tokens(answer))

    # -- POST /chat/completions ------------------------------------------------------------
    def chat(self, request: Any, body: dict[str, Any], match: Any):
        model = self._check_model(body)
        if self.flavour == "openai" and _REASONING.search(model) and "max_tokens" in body:
            raise Refusal(400, "unsupported_parameter",
                          "Unsupported parameter: 'max_tokens' is not supported with this model. "
                          "Use 'max_completion_tokens' instead.")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refusal(400, "invalid_request_error", "'messages' must be a non-empty array")
        texts: list[str] = []
        images: list[tuple[DecodedImage, str]] = []
        for m, message in enumerate(messages):
            if message.get("role") not in ("system", "developer", "user", "assistant", "tool"):
                raise Refusal(400, "invalid_value", f"messages[{m}].role is invalid")
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            for p, part in enumerate(content or []):
                where = f"messages[{m}].content[{p}]"
                kind = part.get("type")
                if kind == "text":
                    texts.append(str(part.get("text", "")))
                elif kind == "image_url":
                    ref = part.get("image_url") or {}
                    images.append(self._image(model, ref.get("url"), ref.get("detail"), where,
                                              len(images)))
                else:
                    raise Refusal(400, "invalid_value", f"{where}.type: invalid value {kind!r}")
        answer = self.answer_fn(texts)
        billed = self._bill(model, images, texts, answer)
        reply = {
            "id": f"chatcmpl-twin{uuid.uuid4().hex[:20]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer, "refusal": None}}],
            "usage": {"prompt_tokens": billed.prompt_tokens,
                      "completion_tokens": billed.completion_tokens,
                      "total_tokens": billed.prompt_tokens + billed.completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": 0}},
        }
        return reply, billed, model

    # -- POST /responses -------------------------------------------------------------------
    def responses(self, request: Any, body: dict[str, Any], match: Any):
        model = self._check_model(body)
        items = body.get("input")
        texts: list[str] = [body["instructions"]] if isinstance(body.get("instructions"),
                                                                 str) else []
        images: list[tuple[DecodedImage, str]] = []
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list) or not items:
            raise Refusal(400, "invalid_request_error", "'input' is required")
        for i, item in enumerate(items):
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            for p, part in enumerate(content or []):
                where = f"input[{i}].content[{p}]"
                kind = part.get("type")
                if kind in ("input_text", "output_text"):
                    texts.append(str(part.get("text", "")))
                elif kind == "input_image":
                    images.append(self._image(model, part.get("image_url"), part.get("detail"),
                                              where, len(images)))
                else:
                    raise Refusal(400, "invalid_value", f"{where}.type: invalid value {kind!r}")
        answer = self.answer_fn(texts)
        billed = self._bill(model, images, texts, answer)
        now = int(time.time())
        reply = {
            "id": f"resp_twin{uuid.uuid4().hex[:24]}",
            "object": "response",
            "created_at": now,
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "model": model,
            "output": [{"type": "message", "id": f"msg_twin{uuid.uuid4().hex[:20]}",
                        "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": answer,
                                     "annotations": []}]}],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {"input_tokens": billed.prompt_tokens,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": billed.completion_tokens,
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": billed.prompt_tokens + billed.completion_tokens},
        }
        return reply, billed, model
