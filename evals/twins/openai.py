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

Tool calls (.../guides/function-calling): an assistant message's ``tool_calls`` ({id, type
function, function {name, arguments as a JSON string}}) must be followed by ``tool`` messages
answering every ``tool_call_id`` before any other message, and a ``tool`` message must answer a
call of the assistant turn right before it; ``tools`` are function declarations with names
matching ``^[a-zA-Z0-9_-]{1,64}$``; ``tool_choice`` (none/auto/required or a named function)
only with ``tools``. Responses: ``function_call`` items and ``function_call_output`` items that
answer a preceding ``call_id``. Calls, results and declarations are billed as text.

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

from evals.twins.prompt_cache import digest_chain
from evals.twins.server import (
    Billed,
    Fault,
    Refusal,
    WireTwin,
    compact_json,
    request_limits,
)
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
              answer: str, tool_calls: int = 0) -> Billed:
        self.check_image_count(len(images))
        tokens: list[int] = []
        if self.flavour == "openai":
            tokens = [openai_image_tokens(model, im.width, im.height, d)[0] for im, d in images]
        elif "claude" in model:  # OpenRouter forwards Claude to Anthropic, usage included
            tokens = [anthropic_image_tokens(model.replace(".", "-"), im.width, im.height)[0]
                      for im, _ in images]
        # a reasoning model's hidden tokens are output tokens too (OpenAI's usage counts them
        # in completion_tokens and again in completion_tokens_details.reasoning_tokens)
        reasoning = (self.reasoning_fn(texts)
                     if self.flavour == "openai" and _REASONING.search(model) else 0)
        return Billed(text_tokens=sum(text_tokens(t, model) for t in texts),
                      image_tokens=tuple(tokens),
                      image_sizes=tuple((im.width, im.height) for im, _ in images),
                      completion_tokens=text_tokens(answer, model) + reasoning,
                      tool_calls=tool_calls, reasoning_tokens=reasoning)

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
        tools = body.get("tools")
        texts: list[str] = [compact_json(tools)] if _chat_tools(tools, body) else []
        images: list[tuple[DecodedImage, str]] = []
        calls: tuple[int, list[str]] | None = None  # last assistant turn: (index, open call ids)
        answerable: set[str] = set()  # ids the tool messages after that turn may answer
        tool_calls = 0
        boundaries: list[tuple[int, int, int]] = []  # (messages before, texts, images)
        for m, message in enumerate(messages):
            if m:
                boundaries.append((m, len(texts), len(images)))
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("system", "developer", "user", "assistant", "tool"):
                raise Refusal(400, "invalid_value", f"messages[{m}].role is invalid")
            if role == "tool":
                call_id = message.get("tool_call_id")
                if not isinstance(call_id, str) or not call_id:
                    raise Refusal(400, "missing_required_parameter",
                                  f"Missing required parameter: 'messages[{m}].tool_call_id'.")
                if call_id not in answerable:
                    raise Refusal(400, "invalid_request_error",
                                  f"Invalid parameter: messages with role 'tool' must be a "
                                  f"response to a preceeding message with 'tool_calls'. "
                                  f"(messages[{m}].tool_call_id {call_id!r})")
                calls[1].remove(call_id)
                answerable.discard(call_id)
            else:
                _check_answered(calls)
                calls, answerable = None, set()
            if role == "assistant" and message.get("tool_calls") is not None:
                ids = _chat_tool_calls(message["tool_calls"], m, texts)
                calls, answerable = (m, list(ids)), set(ids)
                tool_calls += len(ids)
            elif "tool_calls" in message and message["tool_calls"] is not None:
                raise Refusal(400, "invalid_request_error",
                              f"messages[{m}].tool_calls: only assistant messages carry tool calls")
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            for p, part in enumerate(content or []):
                where = f"messages[{m}].content[{p}]"
                kind = part.get("type")
                if kind == "text":
                    texts.append(str(part.get("text", "")))
                elif kind == "image_url" and role == "user":
                    ref = part.get("image_url") or {}
                    images.append(self._image(model, ref.get("url"), ref.get("detail"), where,
                                              len(images)))
                else:
                    raise Refusal(400, "invalid_value", f"{where}.type: invalid value {kind!r}"
                                  + (f" in a {role} message" if kind == "image_url" else ""))
        _check_answered(calls)
        answer = self.answer_fn(texts)
        billed = self._bill(model, images, texts, answer, tool_calls)
        if self.flavour == "openai":  # automatic prefix caching (evals.twins.prompt_cache)
            billed = self._cached(model, body, boundaries, texts, billed)
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
                      "prompt_tokens_details": {"cached_tokens": billed.cache_read_tokens},
                      "completion_tokens_details": {
                          "reasoning_tokens": billed.reasoning_tokens}},
        }
        return reply, billed, model

    def _cached(self, model: str, body: dict[str, Any],
                boundaries: list[tuple[int, int, int]], texts: list[str],
                billed: Billed) -> Billed:
        """Automatic prefix caching: the longest prefix at a message boundary that an earlier
        request sent (1024 tokens and up, read in 128-token steps; writes are free)."""
        import dataclasses
        import itertools

        text_sums = [0, *itertools.accumulate(text_tokens(t, model) for t in texts)]
        image_sums = [0, *itertools.accumulate(billed.image_tokens)]
        digests = digest_chain([model, body.get("tools")], body["messages"])
        points = [(digests[m - 1], text_sums[nt] + image_sums[ni]) for m, nt, ni in boundaries]
        read = self.prompt_cache.longest_prefix(model, points)
        return dataclasses.replace(billed, cache_read_tokens=read)

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
        if _responses_tools(body.get("tools"), body):
            texts.insert(0, compact_json(body["tools"]))
        called: set[str] = set()
        for i, item in enumerate(items):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "function_call":
                call_id, name, arguments = (item.get("call_id"), item.get("name"),
                                            item.get("arguments"))
                if not all(isinstance(v, str) and v for v in (call_id, name)) \
                        or not isinstance(arguments, str):
                    raise Refusal(400, "missing_required_parameter",
                                  f"Missing required parameter: 'input[{i}]': a function_call "
                                  "needs call_id, name and arguments (a JSON string)")
                called.add(call_id)
                texts.extend([name, arguments])
                continue
            if kind == "function_call_output":
                call_id, output = item.get("call_id"), item.get("output")
                if call_id not in called:
                    raise Refusal(400, "invalid_request_error",
                                  f"No tool call found for function call output with call_id "
                                  f"{call_id}.")
                if isinstance(output, str):
                    texts.append(output)
                    continue
                if not isinstance(output, list):  # a string, or a list of input content parts
                    raise Refusal(400, "invalid_type",
                                  f"Invalid type for 'input[{i}].output': expected a string or "
                                  "an array of content parts.")
                item = {"content": output}
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
        billed = self._bill(model, images, texts, answer, len(called))
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
                      "output_tokens_details": {"reasoning_tokens": billed.reasoning_tokens},
                      "total_tokens": billed.prompt_tokens + billed.completion_tokens},
        }
        return reply, billed, model


_FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TOOL_CHOICES = ("none", "auto", "required")


def _check_function_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not _FUNCTION_NAME.match(name):
        raise Refusal(400, "invalid_value",
                      f"Invalid '{where}': string does not match pattern. Expected a string that "
                      "matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.")


def _check_tool_choice(choice: Any, names: list[str], has_tools: bool) -> None:
    if choice is None:
        return
    if not has_tools:
        raise Refusal(400, "invalid_request_error",
                      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
                      "'tools' are specified.")
    if isinstance(choice, str):
        if choice not in _TOOL_CHOICES:
            raise Refusal(400, "invalid_value",
                          f"Invalid value: {choice!r}. Supported values are: 'none', 'auto' and "
                          "'required'.")
        return
    name = choice.get("name") or (choice.get("function") or {}).get("name") \
        if isinstance(choice, dict) else None
    if name not in names:
        raise Refusal(400, "invalid_value",
                      f"Invalid value for 'tool_choice': no function named {name!r} in 'tools'.")


def _chat_tools(tools: Any, body: dict[str, Any]) -> list[str]:
    """Names of chat ``tools`` ({type: function, function: {name, parameters}}), checked."""
    names: list[str] = []
    if tools is not None:
        if not isinstance(tools, list):
            raise Refusal(400, "invalid_type", "Invalid type for 'tools': expected an array.")
        for t, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(function, dict) or tool.get("type") != "function":
                raise Refusal(400, "missing_required_parameter",
                              f"Missing required parameter: 'tools[{t}].function'.")
            _check_function_name(function.get("name"), f"tools[{t}].function.name")
            if not isinstance(function.get("parameters", {}), dict):
                raise Refusal(400, "invalid_type",
                              f"Invalid type for 'tools[{t}].function.parameters': expected an "
                              "object.")
            names.append(function["name"])
    _check_tool_choice(body.get("tool_choice"), names, bool(tools))
    return names


def _responses_tools(tools: Any, body: dict[str, Any]) -> list[str]:
    """Names of Responses ``tools`` ({type: function, name, parameters}), checked."""
    names: list[str] = []
    for t, tool in enumerate(tools or []):
        if isinstance(tool, dict) and tool.get("type") == "function":
            _check_function_name(tool.get("name"), f"tools[{t}].name")
            names.append(tool["name"])
    _check_tool_choice(body.get("tool_choice"), names, bool(tools))
    return names


def _chat_tool_calls(tool_calls: Any, m: int, texts: list[str]) -> list[str]:
    """Ids of an assistant turn's ``tool_calls``, each checked; bills names and arguments."""
    if not isinstance(tool_calls, list) or not tool_calls:
        raise Refusal(400, "empty_array",
                      f"Invalid 'messages[{m}].tool_calls': empty array. Expected an array with "
                      "minimum length 1, but got an empty array instead.")
    ids: list[str] = []
    for k, call in enumerate(tool_calls):
        where = f"messages[{m}].tool_calls[{k}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call.get("id") if isinstance(call, dict) else None, str) \
                or not isinstance(function, dict):
            raise Refusal(400, "missing_required_parameter",
                          f"Missing required parameter: '{where}.id' or '{where}.function'.")
        if call.get("type") != "function":
            raise Refusal(400, "invalid_value",
                          f"Invalid value: {call.get('type')!r}. Supported values are: "
                          f"'function'. ({where}.type)")
        _check_function_name(function.get("name"), f"{where}.function.name")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise Refusal(400, "invalid_type",
                          f"Invalid type for '{where}.function.arguments': expected a string, "
                          f"but got {type(arguments).__name__} instead.")
        texts.extend([function["name"], arguments])
        ids.append(call["id"])
    return ids


def _check_answered(calls: tuple[int, list[str]] | None) -> None:
    if calls is not None and calls[1]:
        raise Refusal(400, "invalid_request_error",
                      "An assistant message with 'tool_calls' must be followed by tool messages "
                      "responding to each 'tool_call_id'. The following tool_call_ids did not "
                      f"have response messages: {', '.join(calls[1])} (messages[{calls[0]}])")
