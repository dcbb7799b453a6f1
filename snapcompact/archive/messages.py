"""The agent message model the serializer reads, as frozen dataclasses.

Why a typed model: history arrives as JSON in the reference's camelCase shape
(``{"role": "toolResult", "toolCallId": ..., "isError": ...}``). Parsing it once, with a
clear ``ValueError`` naming the bad field, keeps the serializer free of defensive checks and
turns the reference's silent oddities (a ``TypeError`` deep in a loop, ``"undefined"`` in the
output) into an early, readable error.

Fields the serializer never reads (``timestamp``, ``usage``, ``textSignature`` ...) are kept
in ``extra`` so ``to_json(from_json(x)) == x`` for well-formed input.

Roles: ``user`` and ``developer`` (content is a string or text/image blocks), ``assistant``
(text, thinking and tool-call blocks, plus provider-specific blocks kept as
:class:`OtherBlock`), and ``toolResult``. The serializer ignores ``developer`` messages,
images and other blocks, as the reference does.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = [
    "TextBlock",
    "ImageBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "OtherBlock",
    "UserMessage",
    "DeveloperMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "Message",
    "Block",
    "message_from_json",
    "messages_from_json",
    "messages_to_json",
]


def _require_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {key!r} must be a string, got {_describe(value)}")
    return value


def _optional_bool(obj: Mapping[str, Any], key: str, where: str) -> bool:
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"{where}: field {key!r} must be true or false, got {_describe(value)}")
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "null/missing"
    # reprlib stops a few levels down: repr() of input nested thousands deep would recurse
    return f"{type(value).__name__} {reprlib.repr(value):.60}"


def _extra(obj: Mapping[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in known}


@dataclass(frozen=True)
class TextBlock:
    """Plain text content; ``extra`` keeps unknown wire keys for a faithful round trip."""

    text: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the block, unknown keys kept."""
        return {"type": "text", **self.extra, "text": self.text}


@dataclass(frozen=True)
class ImageBlock:
    """An inline image (base64 ``data``); the serializer drops images."""

    data: str
    mime_type: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the image (``data`` and ``mimeType``), unknown keys kept."""
        return {"type": "image", **self.extra, "data": self.data, "mimeType": self.mime_type}


@dataclass(frozen=True)
class ThinkingBlock:
    """The model's visible reasoning; serialized as ``thinking`` text."""

    thinking: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the block, unknown keys kept."""
        return {"type": "thinking", **self.extra, "thinking": self.thinking}


@dataclass(frozen=True)
class ToolCallBlock:
    """A tool call. ``intent`` is the harness-derived intent, if any (else ``arguments["i"]``)."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    intent: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the call; ``intent`` only when the harness derived one."""
        out: dict[str, Any] = {"type": "toolCall", **self.extra, "id": self.id, "name": self.name,
                               "arguments": dict(self.arguments)}
        if self.intent is not None:
            out["intent"] = self.intent
        return out


@dataclass(frozen=True)
class OtherBlock:
    """A block type the serializer ignores (redactedThinking, fallback, server tools ...)."""

    type: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The block's fields unchanged, so an unknown type survives a round trip."""
        return {"type": self.type, **self.fields}


Block = Union[TextBlock, ImageBlock, ThinkingBlock, ToolCallBlock, OtherBlock]


@dataclass(frozen=True)
class UserMessage:
    """A user turn: a plain string or content blocks (text, images)."""

    content: str | tuple[Block, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)
    role = "user"

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the message, unknown keys kept."""
        return {"role": self.role, **self.extra, "content": _content_to_json(self.content)}


@dataclass(frozen=True)
class DeveloperMessage:
    """A developer/system-injected message; the serializer skips it like the reference."""

    content: str | tuple[Block, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)
    role = "developer"

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the message, unknown keys kept."""
        return {"role": self.role, **self.extra, "content": _content_to_json(self.content)}


@dataclass(frozen=True)
class AssistantMessage:
    """An assistant turn: text, thinking and tool-call blocks in order."""

    content: tuple[Block, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)
    role = "assistant"

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the message, unknown keys kept."""
        return {"role": self.role, **self.extra, "content": _content_to_json(self.content)}


@dataclass(frozen=True)
class ToolResultMessage:
    """A tool's result. ``useless`` marks a result worth nothing once read (never with errors)."""

    tool_call_id: str
    content: tuple[Block, ...]
    tool_name: str = ""
    is_error: bool = False
    useless: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    role = "toolResult"

    def to_json(self) -> dict[str, Any]:
        """Wire JSON of the result; ``useless`` only when set."""
        out: dict[str, Any] = {"role": self.role, **self.extra, "toolCallId": self.tool_call_id,
                               "toolName": self.tool_name,
                               "content": _content_to_json(self.content), "isError": self.is_error}
        if self.useless:
            out["useless"] = True
        return out


Message = Union[UserMessage, DeveloperMessage, AssistantMessage, ToolResultMessage]


def _content_to_json(content: str | tuple[Block, ...]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [block.to_json() for block in content]


def block_from_json(raw: Any, where: str) -> Block:
    """Parse one content block; unknown ``type`` values become :class:`OtherBlock`."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: a content block must be a JSON object, got {_describe(raw)}")
    kind = raw.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"{where}: content block without a string 'type' (got {_describe(kind)})")
    if kind == "text":
        return TextBlock(_require_str(raw, "text", where), _extra(raw, ("type", "text")))
    if kind == "thinking":
        return ThinkingBlock(_require_str(raw, "thinking", where),
                             _extra(raw, ("type", "thinking")))
    if kind == "image":
        return ImageBlock(
            _require_str(raw, "data", where),
            _require_str(raw, "mimeType", where),
            _extra(raw, ("type", "data", "mimeType")),
        )
    if kind == "toolCall":
        arguments = raw.get("arguments")
        if not isinstance(arguments, Mapping):
            raise ValueError(
                f"{where}: toolCall 'arguments' must be a JSON object, got {_describe(arguments)}"
            )
        for key in arguments:
            if not isinstance(key, str):
                raise ValueError(f"{where}: toolCall argument names must be strings, got {key!r}")
        intent = raw.get("intent")
        return ToolCallBlock(
            id=_require_str(raw, "id", where),
            name=_require_str(raw, "name", where),
            arguments=dict(arguments),
            # A non-string intent is ignored by the reference (it falls back to the "i" argument).
            intent=intent if isinstance(intent, str) else None,
            extra=_extra(raw, ("type", "id", "name", "arguments", "intent")),
        )
    return OtherBlock(kind, _extra(raw, ("type",)))


def _blocks_from_json(raw: Any, where: str, allow_string: bool) -> str | tuple[Block, ...]:
    if allow_string and isinstance(raw, str):
        return raw
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        expected = "a string or a list of blocks" if allow_string else "a list of blocks"
        raise ValueError(f"{where}: 'content' must be {expected}, got {_describe(raw)}")
    return tuple(block_from_json(block, f"{where} block {i}") for i, block in enumerate(raw))


def message_from_json(raw: Any, index: int | None = None) -> Message:
    """Parse one message in the reference's JSON shape (camelCase keys)."""
    where = "message" if index is None else f"message {index}"
    if isinstance(raw, (UserMessage, DeveloperMessage, AssistantMessage, ToolResultMessage)):
        return raw
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be a JSON object, got {_describe(raw)}")
    role = raw.get("role")
    where = f"{where} ({role})"
    if role == "user" or role == "developer":
        content = _blocks_from_json(raw.get("content"), where, allow_string=True)
        cls = UserMessage if role == "user" else DeveloperMessage
        return cls(content, _extra(raw, ("role", "content")))
    if role == "assistant":
        blocks = _blocks_from_json(raw.get("content"), where, allow_string=False)
        assert not isinstance(blocks, str)
        return AssistantMessage(blocks, _extra(raw, ("role", "content")))
    if role == "toolResult":
        blocks = _blocks_from_json(raw.get("content"), where, allow_string=False)
        assert not isinstance(blocks, str)
        tool_name = raw.get("toolName", "")
        if not isinstance(tool_name, str):
            raise ValueError(f"{where}: field 'toolName' must be a string, got "
                             f"{_describe(tool_name)}")
        return ToolResultMessage(
            tool_call_id=_require_str(raw, "toolCallId", where),
            content=blocks,
            tool_name=tool_name,
            is_error=_optional_bool(raw, "isError", where),
            useless=_optional_bool(raw, "useless", where),
            extra=_extra(raw, ("role", "content", "toolCallId", "toolName", "isError", "useless")),
        )
    raise ValueError(
        f"{where}: unknown role {role!r} (expected user, developer, assistant or toolResult)"
    )


def messages_from_json(raw: Any) -> list[Message]:
    """Parse a JSON list of messages (dicts, or already-parsed dataclasses)."""
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Sequence):
        raise ValueError(f"messages must be a list, got {_describe(raw)}")
    return [message_from_json(item, i) for i, item in enumerate(raw)]


def messages_to_json(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Wire JSON of a whole message list (the inverse of parsing it)."""
    return [message.to_json() for message in messages]
