"""Where a prompt-cache breakpoint goes in a chat request: on the last block of the shared context.

Why in the library: every turn after a compaction (every question, in the harness) repeats the
compacted context and then adds something new. A provider that caches by explicit breakpoints
(Anthropic's ``cache_control``) caches the prefix *up to and including* the marked block, and a
later request hits only when its prefix up to that same block is identical. So the mark belongs
on the context's last block, never on the new turn: a mark on the question would write a new
entry for every question and read none. Placing it is a property of the request, not of a
provider SDK, so an agent built on this library and the eval harness place it the same way.

The marker is the chat-completions form that litellm (and most SDK shims) translate for
Anthropic, Bedrock (a ``cachePoint`` block) and Vertex Claude: a ``cache_control`` key on a
content part, on a tool call, or on the message itself when its content is a plain string or it
is a tool result. The marker's value is the caller's (``{"type": "ephemeral"}`` by default).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CacheBreakpoint", "cache_breakpoint", "with_cache_breakpoint"]

EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}


@dataclass(frozen=True)
class CacheBreakpoint:
    """Where the mark goes: ``message`` index and ``where`` in it (``"part"`` with ``index``,
    ``"tool_call"`` with ``index``, or ``"message"``)."""

    message: int
    where: str
    index: int | None = None


def cache_breakpoint(context: Sequence[Mapping[str, Any]]) -> CacheBreakpoint | None:
    """The breakpoint at the end of ``context`` (the chat messages before the new turn), or None
    when the context is empty."""
    if not context:
        return None
    last = len(context) - 1
    message = context[last]
    content = message.get("content")
    calls = message.get("tool_calls") or ()
    if calls:  # tool calls come after the assistant's text once translated: they are last
        return CacheBreakpoint(last, "tool_call", len(calls) - 1)
    if isinstance(content, list) and content:
        return CacheBreakpoint(last, "part", len(content) - 1)
    return CacheBreakpoint(last, "message")


def with_cache_breakpoint(messages: Sequence[Mapping[str, Any]], context_length: int,
                          marker: Mapping[str, Any] = EPHEMERAL) -> list[dict[str, Any]]:
    """A copy of ``messages`` with one breakpoint on the last block of its first
    ``context_length`` messages (the shared context; what follows is the new turn)."""
    if isinstance(context_length, bool) or not isinstance(context_length, int) \
            or not 0 <= context_length <= len(messages):
        raise ValueError(f"context_length must be an integer in 0..{len(messages)}, got "
                         f"{context_length!r}")
    out = [dict(m) for m in messages]
    point = cache_breakpoint(out[:context_length])
    if point is None:
        return out
    target = out[point.message]
    mark = dict(marker)
    if point.where == "tool_call":
        calls = [dict(c) for c in target["tool_calls"]]
        calls[point.index] = {**calls[point.index], "cache_control": mark}  # type: ignore[index]
        target["tool_calls"] = calls
    elif point.where == "part":
        parts = [dict(p) if isinstance(p, Mapping) else copy.deepcopy(p)
                 for p in target["content"]]
        parts[point.index] = {**parts[point.index], "cache_control": mark}  # type: ignore[index]
        target["content"] = parts
    else:
        target["cache_control"] = mark
    return out
