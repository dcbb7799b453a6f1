"""Twin of the Gemini API's ``POST /v1beta/models/{model}:generateContent``.

Request checks follow ai.google.dev/api/generate-content and .../docs/image-understanding: an
API key in ``x-goog-api-key`` or ``?key=``; ``contents`` of ``{role, parts}`` with role
``user``/``model``; parts ``text`` or ``inline_data``/``inlineData`` with ``mime_type`` and
base64 ``data`` (PNG, JPEG, WEBP, HEIC, HEIF; the twin decodes the first three); inline requests
under 20 MB in total (``[[request_limits]]``). ``generationConfig.mediaResolution`` and a
part's ``mediaResolution.level`` pick the image budget on Gemini 3. Errors are
``{"error": {"code", "message", "status"}}`` (400 INVALID_ARGUMENT, 403 PERMISSION_DENIED,
404 NOT_FOUND, 429 RESOURCE_EXHAUSTED with a ``google.rpc.RetryInfo`` ``retryDelay`` detail,
503 UNAVAILABLE). Usage is ``usageMetadata`` with ``promptTokensDetails`` split by modality.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from evals.twins.server import Billed, Fault, Refusal, WireTwin, request_limits
from evals.twins.vision import ImageError, decode_base64_image, gemini_image_tokens, text_tokens

__all__ = ["GeminiTwin"]

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
           404: "NOT_FOUND", 413: "INVALID_ARGUMENT"}
_MIME = ("image/png", "image/jpeg", "image/webp")


@dataclass
class GeminiTwin(WireTwin):
    name: str = "gemini"
    prefix: str = "/gemini/v1beta"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.limits:
            self.limits = request_limits()["google"]

    def routes(self):
        return [("POST", "/models/{model}:generateContent", self.generate)]

    def check_auth(self, headers, query) -> None:
        if not headers.get("x-goog-api-key") and not query.get("key"):
            raise Refusal(403, "PERMISSION_DENIED",
                          "Method doesn't allow unregistered callers (callers without established "
                          "identity). Please use API Key or other form of API consumer identity "
                          "to call this API.")

    def error_body(self, refusal: Refusal):
        status = 400 if refusal.status == 413 else refusal.status
        return status, {"error": {"code": status, "message": refusal.message,
                                  "status": _STATUS.get(refusal.status, "INVALID_ARGUMENT")}}, {}

    def fault_reply(self, fault: Fault):
        if fault.kind == "overloaded":
            return 503, {"error": {"code": 503, "message": "The model is overloaded. Please try "
                                   "again later.", "status": "UNAVAILABLE"}}, {}
        body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                          "message": "You exceeded your current quota, please check your plan "
                                     "and billing details."}}
        if fault.retry_after_s is not None:  # Gemini states the wait in the body, not a header
            body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                         "retryDelay": f"{fault.retry_after_s:g}s"}]
        return 429, body, {}

    def generate(self, request: Any, body: dict[str, Any], match: Any):
        model = match["model"]
        if not model.startswith("gemini-"):
            raise Refusal(404, "NOT_FOUND", f"models/{model} is not found for API version v1beta")
        config = body.get("generationConfig") or {}
        global_resolution = config.get("mediaResolution")
        texts: list[str] = [p.get("text", "") for p in
                            (body.get("systemInstruction") or {}).get("parts", [])]
        images: list[tuple[int, int]] = []
        tokens: list[int] = []
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise Refusal(400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents "
                          "is not specified")
        for c, content in enumerate(contents):
            if content.get("role", "user") not in ("user", "model"):
                raise Refusal(400, "INVALID_ARGUMENT",
                              f"Please use a valid role: user, model. (contents[{c}])")
            for p, part in enumerate(content.get("parts") or []):
                where = f"contents[{c}].parts[{p}]"
                inline = part.get("inline_data") or part.get("inlineData")
                if "text" in part:
                    texts.append(str(part["text"]))
                elif inline is not None:
                    mime = inline.get("mime_type") or inline.get("mimeType")
                    if mime not in _MIME:
                        raise Refusal(400, "INVALID_ARGUMENT",
                                      f"{where}: Unsupported MIME type: {mime}")
                    try:
                        image = decode_base64_image(inline.get("data") or "")
                    except ImageError as exc:
                        raise Refusal(400, "INVALID_ARGUMENT",
                                      f"{where}: Unable to process input image. {exc}") from None
                    if image.media_type != mime:
                        raise Refusal(400, "INVALID_ARGUMENT",
                                      f"{where}: Unable to process input image: mime type {mime} "
                                      f"does not match the data ({image.media_type})")
                    level = (part.get("mediaResolution") or part.get("media_resolution")
                             or {}).get("level") or global_resolution
                    try:
                        count, _ = gemini_image_tokens(model, image.width, image.height, level)
                    except ImageError as exc:
                        raise Refusal(400, "INVALID_ARGUMENT", f"{where}: {exc}") from None
                    images.append((image.width, image.height))
                    tokens.append(count)
                else:
                    raise Refusal(400, "INVALID_ARGUMENT", f"{where}: part has no data")
        self.check_image_count(len(images))
        answer = self.answer_fn(texts)
        billed = Billed(text_tokens=sum(text_tokens(t) for t in texts), image_tokens=tuple(tokens),
                        image_sizes=tuple(images), completion_tokens=text_tokens(answer))
        details = [{"modality": "TEXT", "tokenCount": billed.text_tokens}]
        if tokens:
            details.append({"modality": "IMAGE", "tokenCount": sum(tokens)})
        reply = {
            "candidates": [{"content": {"parts": [{"text": answer}], "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": billed.prompt_tokens,
                              "candidatesTokenCount": billed.completion_tokens,
                              "totalTokenCount": billed.prompt_tokens + billed.completion_tokens,
                              "promptTokensDetails": details},
            "modelVersion": model,
            "responseId": uuid.uuid4().hex[:22],
        }
        return reply, billed, model
