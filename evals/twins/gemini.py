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

Function calling (.../docs/function-calling, REST reference of Content/Tool/ToolConfig; proto
field names are accepted in camelCase and snake_case as the API does): ``functionCall`` parts
{name, args object} only in ``model`` turns; ``functionResponse`` parts {name, response object}
in ``user``/``function`` turns, immediately after a function call turn and answering each of
its calls; ``tools[].functionDeclarations[]`` names as documented; ``toolConfig.
functionCallingConfig.mode`` AUTO/ANY/NONE/VALIDATED; on Gemini 3, a ``thoughtSignature`` on
the function calls of the current turn (.../docs/thought-signatures). Calls, responses and
declarations are billed as text.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evals.twins.prompt_cache import digest_chain
from evals.twins.server import Billed, Fault, Refusal, WireTwin, compact_json
from evals.twins.vision import (
    ImageError,
    decode_base64_image,
    gemini_image_tokens,
    text_tokens,
)

__all__ = ["GeminiTwin"]

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
           404: "NOT_FOUND", 413: "INVALID_ARGUMENT"}
_MIME = ("image/png", "image/jpeg", "image/webp")


@dataclass
class _GeminiTurns:
    """The walk over a request's contents: each part checked and billed (texts, images with
    their token counts), function calls paired with the next turn's responses, and the part
    boundaries the implicit cache compares prefixes at."""

    model: str
    resolution: Any  # generationConfig.mediaResolution (a part's own level wins)
    texts: list[str]
    images: list[tuple[int, int]] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    tool_calls: int = 0
    boundaries: list[tuple[Any, int, int]] = field(default_factory=list)  # (part, texts, images)
    open_calls: list[str] = field(default_factory=list)  # names called by the previous content

    def read_content(self, c: int, content: Any) -> None:
        """One content: its parts, then its function responses against the previous turn's
        calls (immediately after it, one response per call)."""
        role = content.get("role", "user")
        if role not in ("user", "model", "function"):
            raise Refusal(400, "INVALID_ARGUMENT",
                          f"Please use a valid role: user, model. (contents[{c}])")
        calls: list[str] = []
        answered: list[str] = []
        for p, part in enumerate(content.get("parts") or []):
            self.boundaries.append(((c, role, p, part), len(self.texts), len(self.tokens)))
            self._read_part(f"contents[{c}].parts[{p}]", role, part, calls, answered)
        if answered and not self.open_calls:
            raise Refusal(400, "INVALID_ARGUMENT",
                          "Please ensure that function response turn comes immediately after "
                          f"a function call turn. (contents[{c}])")
        if self.open_calls and sorted(answered) != sorted(self.open_calls):
            raise Refusal(400, "INVALID_ARGUMENT",
                          "Please ensure that the number of function response parts is equal "
                          "to the number of function call parts of the function call turn. "
                          f"(contents[{c}]: calls {self.open_calls}, responses {answered})")
        self.open_calls = calls
        self.tool_calls += len(calls)

    def _read_part(self, where: str, role: str, part: Any, calls: list[str],
                   answered: list[str]) -> None:
        """One part: text, a model's function call, a user's function response, or inline
        image data; a part with none of them is refused."""
        inline = part.get("inline_data") or part.get("inlineData")
        call = _field(part, "functionCall", "function_call")
        reply = _field(part, "functionResponse", "function_response")
        if "text" in part:
            self.texts.append(str(part["text"]))
        elif call is not None:
            if role != "model":
                raise Refusal(400, "INVALID_ARGUMENT",
                              f"{where}: a function call can only come from the model "
                              f"(role model, got {role})")
            calls.append(_function_part(call, "args", where, self.texts))
        elif reply is not None:
            if role == "model":
                raise Refusal(400, "INVALID_ARGUMENT",
                              f"{where}: a function response must have role user or "
                              "function, not model")
            answered.append(_function_part(reply, "response", where, self.texts))
        elif inline is not None:
            self._read_image(where, part, inline)
        else:
            raise Refusal(400, "INVALID_ARGUMENT", f"{where}: part has no data")

    def _read_image(self, where: str, part: Any, inline: Any) -> None:
        """Inline image data: a supported MIME type matching the bytes, billed at the part's
        media resolution (else the request's)."""
        mime = inline.get("mime_type") or inline.get("mimeType")
        if mime not in _MIME:
            raise Refusal(400, "INVALID_ARGUMENT", f"{where}: Unsupported MIME type: {mime}")
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
                 or {}).get("level") or self.resolution
        try:
            count, _ = gemini_image_tokens(self.model, image.width, image.height, level)
        except ImageError as exc:
            raise Refusal(400, "INVALID_ARGUMENT", f"{where}: {exc}") from None
        self.images.append((image.width, image.height))
        self.tokens.append(count)


@dataclass
class GeminiTwin(WireTwin):
    name: str = "gemini"
    prefix: str = "/gemini/v1beta"
    limits_provider: ClassVar[str | None] = "google"


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
        texts: list[str] = [p.get("text", "") for p in
                            (body.get("systemInstruction") or {}).get("parts", [])]
        declarations = _declarations(body.get("tools"))
        if declarations:
            texts.insert(0, compact_json(declarations))
        _check_tool_config(_field(body, "toolConfig", "tool_config"))
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise Refusal(400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents "
                          "is not specified")
        turns = _GeminiTurns(model, config.get("mediaResolution"), texts)
        for c, content in enumerate(contents):
            turns.read_content(c, content)
        if _GEMINI_3.search(model):
            _check_thought_signatures(contents)
        self.check_image_count(len(turns.images))
        answer = self.answer_fn(texts)
        billed = Billed(text_tokens=sum(text_tokens(t, model) for t in texts),
                        image_tokens=tuple(turns.tokens),
                        image_sizes=tuple(turns.images),
                        completion_tokens=text_tokens(answer, model),
                        tool_calls=turns.tool_calls)
        billed = self._cached(model, body, turns.boundaries, texts, billed)
        details = [{"modality": "TEXT", "tokenCount": billed.text_tokens}]
        if turns.tokens:
            details.append({"modality": "IMAGE", "tokenCount": sum(turns.tokens)})
        reply = {
            "candidates": [{"content": {"parts": [{"text": answer}], "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": billed.prompt_tokens,
                              "candidatesTokenCount": billed.completion_tokens,
                              "totalTokenCount": billed.prompt_tokens + billed.completion_tokens,
                              "promptTokensDetails": details,
                              **({"cachedContentTokenCount": billed.cache_read_tokens}
                                 if billed.cache_read_tokens else {})},
            "modelVersion": model,
            "responseId": uuid.uuid4().hex[:22],
        }
        return reply, billed, model

    def _cached(self, model: str, body: dict[str, Any], boundaries: list[tuple[Any, int, int]],
                texts: list[str], billed: Billed) -> Billed:
        """Implicit caching: the longest prefix (at a part boundary) an earlier request sent."""
        import dataclasses
        import itertools

        text_sums = [0, *itertools.accumulate(text_tokens(t, model) for t in texts)]
        image_sums = [0, *itertools.accumulate(billed.image_tokens)]
        start = [model, body.get("systemInstruction"), body.get("tools")]
        # the prefix before part i: the chain over parts 0..i-1
        digests = digest_chain(start, [b[0] for b in boundaries])
        points = [(digests[i - 1], text_sums[nt] + image_sums[ni])
                  for i, (_, nt, ni) in enumerate(boundaries) if i > 0]
        read = self.prompt_cache.longest_prefix(model, points)
        return dataclasses.replace(billed, cache_read_tokens=read)


_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
_MODES = ("MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED")
_GEMINI_3 = re.compile(r"gemini-([3-9]|\d{2})", re.IGNORECASE)


def _check_thought_signatures(contents: list[Any]) -> None:
    """Gemini 3 validates thought signatures in the current turn (.../docs/thought-signatures):
    every model step after the last user text must carry a ``thoughtSignature`` on its first
    ``functionCall`` part (parallel calls: the first only). Older turns are not validated; the
    twin cannot verify a signature, so any value passes (litellm sends Google's documented
    ``skip_thought_signature_validator`` for history it did not get from the model)."""
    start = max((c for c, content in enumerate(contents)
                 if content.get("role", "user") == "user"
                 and any("text" in p for p in content.get("parts") or [])), default=-1)
    for c in range(start + 1, len(contents)):
        parts = contents[c].get("parts") or []
        for p, part in enumerate(parts):
            call = _field(part, "functionCall", "function_call")
            if call is None:
                continue
            if not _field(part, "thoughtSignature", "thought_signature"):
                raise Refusal(400, "INVALID_ARGUMENT",
                              f"Function call `{call.get('name')}` in the {c}. content block is "
                              "missing a `thought_signature`. (Function call is missing a "
                              "thought_signature in functionCall parts.)")
            break  # parallel calls: only the first carries the signature


def _field(holder: Any, camel: str, snake: str) -> Any:
    """A field under its proto-JSON name or its proto name (the API accepts both)."""
    if not isinstance(holder, dict):
        return None
    return holder[camel] if camel in holder else holder.get(snake)


def _declarations(tools: Any) -> list[Any]:
    """Every ``tools[].functionDeclarations[]`` entry; refuses a malformed declaration."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise Refusal(400, "INVALID_ARGUMENT", "Invalid JSON payload: tools must be a list")
    out: list[Any] = []
    for t, tool in enumerate(tools):
        declared = _field(tool, "functionDeclarations", "function_declarations")
        if declared is None:
            continue  # another kind of tool (googleSearch, codeExecution...)
        for d, declaration in enumerate(declared if isinstance(declared, list) else [None]):
            name = declaration.get("name") if isinstance(declaration, dict) else None
            if not isinstance(name, str) or not _FUNCTION_NAME.match(name):
                raise Refusal(400, "INVALID_ARGUMENT",
                              f"* GenerateContentRequest.tools[{t}].function_declarations[{d}]"
                              ".name: Invalid function name. Must start with a letter or an "
                              "underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), "
                              "dots (.), colons (:) or dashes (-), with a maximum length of 64.")
            out.append(declaration)
    return out


def _check_tool_config(config: Any) -> None:
    if config is None:
        return
    calling = _field(config, "functionCallingConfig", "function_calling_config") or {}
    mode = calling.get("mode", "AUTO") if isinstance(calling, dict) else None
    if mode not in _MODES:
        raise Refusal(400, "INVALID_ARGUMENT",
                      "Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis"
                      f".com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "
                      f"{mode!r}")


def _function_part(value: Any, payload: str, where: str, texts: list[str]) -> str:
    """Check a ``functionCall`` ({name, args}) or ``functionResponse`` ({name, response})."""
    name = value.get("name") if isinstance(value, dict) else None
    if not isinstance(name, str) or not name:
        raise Refusal(400, "INVALID_ARGUMENT", f"* {where}: Name cannot be empty.")
    body = value.get(payload, {})
    if not isinstance(body, dict):
        raise Refusal(400, "INVALID_ARGUMENT",
                      f"Invalid JSON payload received. {where}.{payload}: must be an object "
                      "(google.protobuf.Struct)")
    texts.extend([name, compact_json(body)])
    return name
