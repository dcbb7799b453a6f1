"""Twin of Anthropic's Messages API (``POST /v1/messages``).

Request checks follow platform.claude.com/docs/en/api/messages and .../build-with-claude/vision:
``x-api-key`` and ``anthropic-version`` headers, ``model``/``max_tokens``/``messages`` required,
roles ``user``/``assistant``, content blocks ``text`` and ``image`` with a ``base64`` source of
type image/jpeg, image/png, image/gif or image/webp that must match the decoded bytes; at most
5 MB per image, 8000 px per edge (2000 px when a request has more than 20 images), 100 images,
32 MB per request (``[[request_limits]]`` of pricing.toml); ``temperature`` within 0..1, and
no sampling parameters at all for Opus 4.7 and later.

Tool use (.../agents-and-tools/tool-use): ``tool_use`` blocks {id, name, input object} only in
assistant turns; ``tool_result`` blocks {tool_use_id, content} only in user turns, first in
their content, each answering a ``tool_use`` id of the previous assistant turn, which must have
all its ids answered in that next message; a request carrying either block must define
``tools`` ({name, input_schema of type object}); ``tool_choice`` type auto/any/tool/none.
Tool names and inputs, tool results and the tool definitions are billed as text.
Errors are ``{"type": "error", "error": {"type": ..., "message": ...}}`` with the documented
status (400 invalid_request_error, 401 authentication_error, 413 request_too_large,
429 rate_limit_error, 529 overloaded_error). Rate-limit replies carry ``retry-after`` and the
``anthropic-ratelimit-requests-*`` headers.

Bedrock's Converse for Claude is :mod:`evals.twins.bedrock` (the same image rule and prompt
cache, another wire).
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from evals.twins.prompt_cache import prefix_digest
from evals.twins.server import (
    Billed,
    Fault,
    Refusal,
    WireTwin,
    compact_json,
)
from evals.twins.vision import (
    DecodedImage,
    ImageError,
    anthropic_image_tokens,
    decode_base64_image,
    text_tokens,
)

__all__ = ["AnthropicTwin", "ClaudeTurns", "bill_claude", "cached_bill", "check_edges"]

_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
#: Opus 4.7 and later removed the sampling parameters: any of them is a 400 (Anthropic's Opus 4.7
#: migration notes, as quoted by docs.agentsflare.com and help.apiyi.com; checked 2026-12-01).
_SAMPLING_REMOVED = re.compile(r"claude-opus-(4-([7-9]|[1-9]\d)(?!\d)|[5-9](?!\d))", re.IGNORECASE)


def _rfc3339(seconds_from_now: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds_from_now)).isoformat(
        timespec="seconds").replace("+00:00", "Z")


def check_edges(images: list[DecodedImage], limits: dict[str, Any]) -> None:
    many = len(images) > 20
    edge = limits.get("max_edge_over_20_images") if many else limits.get("max_edge")
    for i, image in enumerate(images):
        if edge and max(image.width, image.height) > edge:
            extra = " for requests with more than 20 images" if many else ""
            raise Refusal(400, "invalid_request_error",
                          f"image {i}: {image.width}x{image.height} px: at least one of the "
                          f"image dimensions exceed max allowed size{extra}: {edge} pixels "
                          "(max_edge)")


def bill_claude(model: str, images: list[DecodedImage], texts: list[str],
                 answer: str, tool_calls: int) -> Billed:
    billed = [anthropic_image_tokens(model, im.width, im.height) for im in images]
    return Billed(text_tokens=sum(text_tokens(t, model) for t in texts),
                  image_tokens=tuple(t for t, _ in billed),
                  image_sizes=tuple((im.width, im.height) for im in images),
                  completion_tokens=text_tokens(answer, model), tool_calls=tool_calls)


@dataclass
class ClaudeTurns:
    """What a Claude request's turns carry, as the walk over its content blocks collects it:
    the billed texts and images, tool calls, and the last prompt-cache breakpoint (message,
    block, texts and images before it)."""

    texts: list[str]
    images: list[DecodedImage] = field(default_factory=list)
    uses_tools: bool = False
    tool_calls: int = 0
    mark: tuple[int, int, int, int] | None = None


def cached_bill(prompt_cache: Any, model: str, body: dict[str, Any],
                mark: tuple[int, int, int, int] | None, texts: list[str],
                billed: Billed) -> Billed:
    """The bill with the prompt cache: the prefix through the last ``cache_control`` block
    (tools, system, then the messages up to it) read or written (evals.twins.prompt_cache)."""
    if mark is None:
        return billed
    m, b, n_texts, n_images = mark
    messages = body["messages"]
    content = messages[m].get("content")
    head = [*messages[:m], {**messages[m], "content": (content[: b + 1]
                                                       if isinstance(content, list)
                                                       else content)}]
    digest = prefix_digest(model, body.get("tools"), body.get("system"), head)
    prefix = (sum(text_tokens(t, model) for t in texts[:n_texts])
              + sum(billed.image_tokens[:n_images]))
    read, written = prompt_cache.breakpoint(model, digest, prefix)
    return dataclasses.replace(billed, cache_read_tokens=read, cache_write_tokens=written)


@dataclass
class AnthropicTwin(WireTwin):
    name: str = "anthropic"
    prefix: str = "/anthropic"
    limits_provider: ClassVar[str | None] = "anthropic"


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
        model = _checked_model(body)
        tools = _anthropic_tools(body.get("tools"), body.get("tool_choice"))
        texts = _system_texts(body.get("system"))
        if tools:  # tool definitions are billed as text (Anthropic puts them in the system prompt)
            texts.insert(0, compact_json(body["tools"]))
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refusal(400, "invalid_request_error", "messages: Field required")
        turns = self._read_turns(messages, ClaudeTurns(texts))
        if turns.uses_tools and not tools:
            raise Refusal(400, "invalid_request_error",
                          "Requests which include `tool_use` or `tool_result` blocks must define "
                          "tools.")
        self.check_image_count(len(turns.images))
        check_edges(turns.images, dict(self.limits))
        answer = self.answer_fn(turns.texts)
        billed = bill_claude(model, turns.images, turns.texts, answer, turns.tool_calls)
        billed = cached_bill(self.prompt_cache, model, body, turns.mark, turns.texts, billed)
        reply = {
            "id": f"msg_twin_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            # input_tokens: the tokens after the last breakpoint (prompt-caching docs: the
            # three fields add up to the prompt)
            "usage": {"input_tokens": (billed.prompt_tokens - billed.cache_read_tokens
                                       - billed.cache_write_tokens),
                      "output_tokens": billed.completion_tokens,
                      "cache_creation_input_tokens": billed.cache_write_tokens,
                      "cache_read_input_tokens": billed.cache_read_tokens},
        }
        return reply, billed, model

    def _read_turns(self, messages: list[Any], turns: ClaudeTurns) -> ClaudeTurns:
        """Walk the turns: each block checked and billed; each assistant turn's ``tool_use``
        ids must all be answered by the next message's ``tool_result`` blocks."""
        open_calls: tuple[int, list[str]] | None = None  # previous turn: (index, tool_use ids)
        for m, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                raise Refusal(400, "invalid_request_error",
                              f"messages.{m}.role: Input should be 'user' or 'assistant'")
            content = message.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            if not isinstance(content, list) or not content:
                raise Refusal(400, "invalid_request_error",
                              f"messages.{m}.content: Input should be a string or a list")
            calls: list[str] = []
            answered: list[str] = []
            for b, block in enumerate(content):
                self._read_block(turns, message["role"], m, b, block, calls, answered,
                                 open_calls)
                if block.get("cache_control") is not None:
                    turns.mark = (m, b, len(turns.texts), len(turns.images))
            if open_calls is not None:
                missing = [i for i in open_calls[1] if i not in answered]
                if missing:
                    raise Refusal(400, "invalid_request_error",
                                  f"messages.{open_calls[0]}: `tool_use` ids were found without "
                                  f"`tool_result` blocks immediately after: {', '.join(missing)}. "
                                  "Each `tool_use` block must have a corresponding `tool_result` "
                                  "block in the next message.")
            open_calls = (m, calls) if calls else None
            turns.tool_calls += len(calls)
        return turns

    def _read_block(self, turns: ClaudeTurns, role: str, m: int, b: int, block: Any,
                    calls: list[str], answered: list[str],
                    open_calls: tuple[int, list[str]] | None) -> None:
        """One content block: text, image, an assistant's ``tool_use`` or a user's
        ``tool_result`` (first in its message); anything else is refused."""
        where = f"messages.{m}.content.{b}"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise Refusal(400, "invalid_request_error", f"{where}.text: Field required")
            turns.texts.append(block["text"])
        elif kind == "image":
            turns.images.append(self._image(block, where, len(turns.images)))
        elif kind == "tool_use" and role == "assistant":
            turns.uses_tools = True
            calls.append(_tool_use(block, where, turns.texts))
        elif kind == "tool_result" and role == "user":
            turns.uses_tools = True
            if b != len(answered):
                raise Refusal(400, "invalid_request_error", _RESULTS_FIRST.format(m=m))
            answered.append(self._tool_result(block, where, turns.texts, turns.images,
                                              open_calls))
        elif kind in ("tool_use", "tool_result"):
            raise Refusal(400, "invalid_request_error",
                          f"{where}: `{kind}` blocks are only allowed in "
                          f"{'assistant' if kind == 'tool_use' else 'user'} messages")
        else:
            raise Refusal(400, "invalid_request_error",
                          f"{where}.type: Input tag {kind!r} found using 'type' does not "
                          "match any of the expected tags: 'text', 'image', 'tool_use', "
                          "'tool_result'")

    def _tool_result(self, block: dict[str, Any], where: str, texts: list[str],
                     images: list[DecodedImage], open_calls: tuple[int, list[str]] | None
                     ) -> str:
        """Check one ``tool_result`` block against the previous turn's calls; bill its content."""
        use_id = block.get("tool_use_id")
        if not isinstance(use_id, str) or not use_id:
            raise Refusal(400, "invalid_request_error", f"{where}.tool_use_id: Field required")
        if open_calls is None or use_id not in open_calls[1]:
            raise Refusal(400, "invalid_request_error",
                          f"{where}: unexpected `tool_use_id` found in "
                          f"`tool_result` blocks: {use_id}. Each `tool_result` block must have a "
                          "corresponding `tool_use` block in the previous message.")
        if "is_error" in block and not isinstance(block["is_error"], bool):
            raise Refusal(400, "invalid_request_error", f"{where}.is_error: Input should be a "
                          "valid boolean")
        content = block.get("content", "")
        if isinstance(content, str):
            texts.append(content)
            return use_id
        if not isinstance(content, list):
            raise Refusal(400, "invalid_request_error",
                          f"{where}.content: Input should be a string or a list")
        for c, inner in enumerate(content):
            kind = inner.get("type") if isinstance(inner, dict) else None
            if kind == "text" and isinstance(inner.get("text"), str):
                texts.append(inner["text"])
            elif kind == "image":
                images.append(self._image(inner, f"{where}.content.{c}", len(images)))
            else:
                raise Refusal(400, "invalid_request_error",
                              f"{where}.content.{c}.type: Input tag {kind!r} found using 'type' "
                              "does not match any of the expected tags: 'text', 'image'")
        return use_id

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


def _checked_model(body: dict[str, Any]) -> str:
    """The request's model, after the checks on it and on the sampling parameters."""
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
    return model


def _system_texts(system: Any) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [system]
    if isinstance(system, list):
        return [b.get("text", "") for b in system if isinstance(b, dict)]
    raise Refusal(400, "invalid_request_error", "system: Input should be a string or a list")


_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_CHOICES = ("auto", "any", "tool", "none")
_RESULTS_FIRST = ("messages.{m}: `tool_result` blocks must come first in the content of a user "
                  "message; any text must come after all tool results")


def _anthropic_tools(tools: Any, choice: Any) -> list[str]:
    """Names of the declared tools; refuses a malformed ``tools`` or ``tool_choice``."""
    names: list[str] = []
    if tools is not None:
        if not isinstance(tools, list):
            raise Refusal(400, "invalid_request_error", "tools: Input should be a valid list")
        for t, tool in enumerate(tools):
            if not isinstance(tool, dict):
                raise Refusal(400, "invalid_request_error", f"tools.{t}: Input should be an object")
            name = tool.get("name")
            if not isinstance(name, str) or not _TOOL_NAME.match(name):
                raise Refusal(400, "invalid_request_error",
                              f"tools.{t}.name: String should match pattern "
                              "'^[a-zA-Z0-9_-]{1,64}$'")
            if tool.get("type") in (None, "custom"):
                schema = tool.get("input_schema")
                if not isinstance(schema, dict) or schema.get("type") != "object":
                    raise Refusal(400, "invalid_request_error",
                                  f"tools.{t}.custom.input_schema.type: Input should be 'object'")
            if name in names:
                raise Refusal(400, "invalid_request_error", f"tools: Tool names must be unique. "
                              f"{name!r} appears more than once")
            names.append(name)
    if choice is not None:
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in _CHOICES:
            raise Refusal(400, "invalid_request_error",
                          f"tool_choice.type: Input tag {kind!r} found using 'type' does not match "
                          "any of the expected tags: " + ", ".join(repr(c) for c in _CHOICES))
        if kind == "tool" and choice.get("name") not in names:
            raise Refusal(400, "invalid_request_error",
                          f"tool_choice.name: tool {choice.get('name')!r} is not defined in tools")
    return names


def _tool_use(block: dict[str, Any], where: str, texts: list[str]) -> str:
    """Check one ``tool_use`` block ({id, name, input object}); bill its name and input."""
    use_id, name, given = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(use_id, str) or not _TOOL_ID.match(use_id):
        raise Refusal(400, "invalid_request_error",
                      f"{where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
    if not isinstance(name, str) or not name:
        raise Refusal(400, "invalid_request_error", f"{where}.tool_use.name: Field required")
    if not isinstance(given, dict):
        raise Refusal(400, "invalid_request_error",
                      f"{where}.tool_use.input: Input should be a valid dictionary")
    texts.extend([name, compact_json(given)])
    return use_id
