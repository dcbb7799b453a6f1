"""Wire messages as the chat-completions request a provider client sends.

Why here and not in the harness: the next turn after a compaction is ``llm_messages()`` turned
into a provider request. An agent built on this library and the eval harness must send the same
bytes, so the conversion is a library function both call; the harness adds only the question.

The target is the OpenAI chat-completions shape, which litellm (and most provider SDK shims)
accept and translate for every other wire API:

* user content: text parts and ``image_url`` parts with a base64 ``data:`` URL; an image block's
  ``detail`` (OpenAI's resolution switch, written by the archive) is carried over;
* assistant: the text blocks joined, tool calls as ``tool_calls`` with JSON-encoded arguments;
  thinking and provider-specific blocks are not replayed (chat completions has no slot for them);
* tool results: ``role: tool`` with the result text; an image in a tool result cannot ride on a
  tool message, so it follows in a user message right after the tool messages of that turn;
* developer messages (custom/hook messages of the agent): ``role: system`` at their position.

Tools. Providers refuse a history with tool calls unless the request declares tools (Anthropic:
"requests which include tool_use or tool_result blocks must define tools"). A replayed session
carries its calls but not the agent's tool schemas, so :func:`tool_definitions` declares every
tool the context calls, by name, with an open object schema; a request that only asks a
question sends them with ``tool_choice: "none"``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from snapcompact.archive import (
    AssistantMessage,
    Block,
    DeveloperMessage,
    ImageBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["image_part", "to_chat_messages", "tool_definitions", "user_question"]


def image_part(block: ImageBlock) -> dict[str, Any]:
    """One image as a chat ``image_url`` part (a ``data:`` URL, never a fetchable address)."""
    ref: dict[str, Any] = {"url": f"data:{block.mime_type};base64,{block.data}"}
    detail = block.extra.get("detail")
    if isinstance(detail, str) and detail:
        ref["detail"] = detail
    return {"type": "image_url", "image_url": ref}


def _parts(content: str | tuple[Block, ...]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextBlock):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            out.append(image_part(block))
    return out


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    calls = [
        {"id": b.id, "type": "function",
         "function": {"name": b.name,
                      "arguments": json.dumps(dict(b.arguments), ensure_ascii=False,
                                              separators=(",", ":"), default=str)}}
        for b in message.content if isinstance(b, ToolCallBlock)
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    elif not text:
        out["content"] = ""
    return out


def to_chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """``llm_messages()`` (or any wire messages) as chat-completions messages, in order."""
    out: list[dict[str, Any]] = []
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            out.append({"role": "user", "content": list(pending_images)})
            pending_images.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
            pending_images.extend(image_part(b) for b in message.content
                                  if isinstance(b, ImageBlock))
            continue
        flush_images()
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _parts(message.content)})
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message))
        elif isinstance(message, DeveloperMessage):
            parts = _parts(message.content)
            text = "".join(p["text"] for p in parts if p["type"] == "text")
            out.append({"role": "system", "content": text})
        else:  # pragma: no cover - Message is a closed union
            raise ValueError(f"unknown wire message type {type(message).__name__}")
    flush_images()
    return out


def user_question(text: str) -> dict[str, Any]:
    """The next user turn: one text part (what an agent appends after the compacted context)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the question must be a non-empty string")
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def tool_definitions(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A function declaration for every tool the chat messages call, in order of first use."""
    names: list[str] = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            name = call.get("function", {}).get("name")
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return [{"type": "function",
             "function": {"name": name,
                          "description": f"The agent's {name} tool, as called in this "
                                         "conversation.",
                          "parameters": {"type": "object", "properties": {},
                                         "additionalProperties": True}}}
            for name in names]
