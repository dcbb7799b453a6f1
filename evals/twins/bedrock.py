"""Twin of Bedrock's Converse for Claude (``POST /model/{id}/converse``).

Why a module of its own: the same Claude models behind another wire. Image blocks are
``{"image": {"format": "png", "source": {"bytes": <base64>}}}``, 3.75 MB per image, errors
named by ``x-amzn-ErrorType``; images are billed by the same Claude rule and the prompt cache
works the same way (:mod:`evals.twins.anthropic`). Its tool use follows the Converse reference
(ToolUseBlock {toolUseId, name, input}, ToolResultBlock {toolUseId, content[], status},
``toolConfig.tools[].toolSpec``, ``toolChoice`` auto/any/tool only): toolUse/toolResult blocks
need a ``toolConfig``, and each assistant turn's toolUse ids are answered by the next user
turn's toolResult blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from evals.twins.anthropic import ClaudeTurns, bill_claude, cached_bill, check_edges
from evals.twins.server import Fault, Refusal, WireTwin, compact_json, request_limits
from evals.twins.vision import DecodedImage, ImageError, decode_base64_image

__all__ = ["BedrockConverseTwin"]


@dataclass
class BedrockConverseTwin(WireTwin):
    name: str = "bedrock"
    prefix: str = "/bedrock"
    limits_provider: ClassVar[str | None] = "amazon-bedrock"


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
        declared = _converse_tools(body.get("toolConfig"))
        if declared:
            texts.insert(0, compact_json(body["toolConfig"]["tools"]))
        turns = self._read_turns(messages, ClaudeTurns(texts))
        if turns.uses_tools and not declared:
            raise Refusal(400, "ValidationException",
                          "The toolConfig field must be defined when using toolUse and toolResult "
                          "content blocks.")
        check_edges(turns.images, dict(request_limits()["anthropic"]))
        answer = self.answer_fn(turns.texts)
        billed = bill_claude(model, turns.images, turns.texts, answer, turns.tool_calls)
        billed = cached_bill(self.prompt_cache, model, {**body, "system": body.get("system"),
                                                        "tools": body.get("toolConfig")},
                             turns.mark, turns.texts, billed)
        reply = {
            "output": {"message": {"role": "assistant", "content": [{"text": answer}]}},
            "stopReason": "end_turn",
            # Converse usage: inputTokens excludes the cache's reads and writes
            "usage": {"inputTokens": (billed.prompt_tokens - billed.cache_read_tokens
                                      - billed.cache_write_tokens),
                      "outputTokens": billed.completion_tokens,
                      "cacheReadInputTokens": billed.cache_read_tokens,
                      "cacheWriteInputTokens": billed.cache_write_tokens,
                      "totalTokens": billed.prompt_tokens + billed.completion_tokens},
            "metrics": {"latencyMs": 1},
        }
        return reply, billed, model

    def _read_turns(self, messages: list[Any], turns: ClaudeTurns) -> ClaudeTurns:
        """Walk the turns: each block checked and billed (a ``cachePoint`` marks the prompt
        cache's breakpoint); each assistant turn's toolUse ids must be answered, exactly, by
        the next user turn's toolResult blocks."""
        open_calls: tuple[int, list[str]] | None = None
        for m, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                raise Refusal(400, "ValidationException", f"messages.{m}.role is invalid")
            calls: list[str] = []
            answered: list[str] = []
            for b, block in enumerate(message.get("content") or []):
                self._read_block(turns, message["role"], m, b, block, calls, answered)
            expected = open_calls[1] if open_calls else []
            if len(answered) > len(expected):
                raise Refusal(400, "ValidationException",
                              f"The number of toolResult blocks at messages.{m}.content exceeds "
                              "the number of toolUse blocks of previous turn.")
            stray = [i for i in answered if i not in expected]
            missing = [i for i in expected if i not in answered]
            if stray or missing:
                raise Refusal(400, "ValidationException",
                              f"Expected toolResult blocks at messages.{m}.content for the "
                              f"following Ids: {', '.join(missing or expected)}"
                              + (f" (got unknown Ids: {', '.join(stray)})" if stray else ""))
            open_calls = (m, calls) if calls else None
            turns.tool_calls += len(calls)
        return turns

    def _read_block(self, turns: ClaudeTurns, role: str, m: int, b: int, block: Any,
                    calls: list[str], answered: list[str]) -> None:
        """One content block (exactly one member): cachePoint, text, image, an assistant's
        toolUse or a user's toolResult; anything else is refused."""
        where = f"messages.{m}.content.{b}"
        if not isinstance(block, dict) or len(block) != 1:
            raise Refusal(400, "ValidationException",
                          f"{where}: a content block must set exactly one member")
        if "cachePoint" in block:  # the prompt cache's breakpoint: caches what precedes
            turns.mark = (m, b, len(turns.texts), len(turns.images))
        elif "text" in block:
            turns.texts.append(str(block["text"]))
        elif "image" in block:
            turns.images.append(self._image(block["image"], where, len(turns.images)))
        elif "toolUse" in block and role == "assistant":
            turns.uses_tools = True
            calls.append(_converse_tool_use(block["toolUse"], where, turns.texts))
        elif "toolResult" in block and role == "user":
            turns.uses_tools = True
            answered.append(self._tool_result(block["toolResult"], where, turns.texts,
                                              turns.images))
        elif "toolUse" in block or "toolResult" in block:
            raise Refusal(400, "ValidationException",
                          f"{where}: {next(iter(block))} blocks are not allowed in "
                          f"{role} messages")
        else:
            raise Refusal(400, "ValidationException",
                          f"messages.{m}.content.{b}: unsupported content block")

    def _tool_result(self, result: Any, where: str, texts: list[str],
                     images: list[DecodedImage]) -> str:
        """Check one ``toolResult`` ({toolUseId, content[], status?}); bill its content."""
        if not isinstance(result, dict):
            raise Refusal(400, "ValidationException", f"{where}.toolResult must be an object")
        use_id = result.get("toolUseId")
        if not isinstance(use_id, str) or not _CONVERSE_ID.match(use_id):
            raise Refusal(400, "ValidationException",
                          f"{where}.toolResult.toolUseId: must match [a-zA-Z0-9_-]+ "
                          "(1 to 64 characters)")
        if result.get("status") not in (None, "success", "error"):
            raise Refusal(400, "ValidationException",
                          f"{where}.toolResult.status: must be one of success, error")
        content = result.get("content")
        if not isinstance(content, list):
            raise Refusal(400, "ValidationException", f"{where}.toolResult.content is required")
        for c, inner in enumerate(content):
            if not isinstance(inner, dict) or len(inner) != 1:
                raise Refusal(400, "ValidationException",
                              f"{where}.toolResult.content.{c}: set exactly one member")
            if "text" in inner:
                texts.append(str(inner["text"]))
            elif "json" in inner:
                texts.append(compact_json(inner["json"]))
            elif "image" in inner:
                images.append(self._image(inner["image"], f"{where}.toolResult.content.{c}",
                                          len(images)))
            else:
                raise Refusal(400, "ValidationException",
                              f"{where}.toolResult.content.{c}: unsupported member "
                              f"{next(iter(inner))!r}")
        return use_id

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


_CONVERSE_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_CONVERSE_CHOICES = ("auto", "any", "tool")


def _converse_tools(config: Any) -> list[str]:
    """Names in ``toolConfig.tools[].toolSpec``; refuses a malformed config or ``toolChoice``."""
    if config is None:
        return []
    tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list) or not tools:
        raise Refusal(400, "ValidationException", "toolConfig.tools: must contain at least 1 tool")
    names: list[str] = []
    for t, tool in enumerate(tools):
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if spec is None and isinstance(tool, dict) and "cachePoint" in tool:
            continue
        if not isinstance(spec, dict):
            raise Refusal(400, "ValidationException", f"toolConfig.tools.{t}.toolSpec is required")
        name = spec.get("name")
        if not isinstance(name, str) or not _CONVERSE_ID.match(name):
            raise Refusal(400, "ValidationException",
                          f"toolConfig.tools.{t}.toolSpec.name: must match [a-zA-Z0-9_-]+ "
                          "(1 to 64 characters)")
        schema = spec.get("inputSchema")
        if not isinstance(schema, dict) or not isinstance(schema.get("json"), dict):
            raise Refusal(400, "ValidationException",
                          f"toolConfig.tools.{t}.toolSpec.inputSchema.json is required")
        names.append(name)
    choice = config.get("toolChoice")
    if choice is not None:
        kinds = list(choice) if isinstance(choice, dict) else []
        if len(kinds) != 1 or kinds[0] not in _CONVERSE_CHOICES:
            raise Refusal(400, "ValidationException",
                          f"toolConfig.toolChoice: must set exactly one of "
                          f"{', '.join(_CONVERSE_CHOICES)} (got {kinds})")
        if kinds[0] == "tool" and (choice["tool"] or {}).get("name") not in names:
            raise Refusal(400, "ValidationException",
                          "toolConfig.toolChoice.tool.name: not a tool of toolConfig.tools")
    return names


def _converse_tool_use(use: Any, where: str, texts: list[str]) -> str:
    """Check one ``toolUse`` ({toolUseId, name, input}); bill its name and input."""
    if not isinstance(use, dict):
        raise Refusal(400, "ValidationException", f"{where}.toolUse must be an object")
    use_id, name = use.get("toolUseId"), use.get("name")
    for field_name, value in (("toolUseId", use_id), ("name", name)):
        if not isinstance(value, str) or not _CONVERSE_ID.match(value):
            raise Refusal(400, "ValidationException",
                          f"{where}.toolUse.{field_name}: must match [a-zA-Z0-9_-]+ "
                          "(1 to 64 characters)")
    if "input" not in use:
        raise Refusal(400, "ValidationException", f"{where}.toolUse.input is required")
    texts.extend([name, compact_json(use["input"])])
    return use_id
