"""LLM summaries through an injected completion function.

Why injected: the library never talks to a provider. A caller passes
``complete(system_prompt, prompt, *, max_tokens)`` returning the reply text (or a mapping with
``text`` and optional ``usage``), sync or async; :mod:`.litellm_adapter` builds one for litellm,
tests pass a fake.

The summarizer sees the history flattened to labelled text (``[User]:``, ``[Assistant]:``,
``[Tool Call]:`` ...) inside ``<conversation>`` tags, so it reads a document instead of
continuing a chat. Tool results are capped at 2,000 characters (head only); useless call/result
pairs are left out. When the text is larger than the summarizer's input budget it is summarized
window by window, each window updating the summary of the previous ones, which is the same
iterative update used when an earlier compaction already left a summary.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snapcompact.archive import js_json_stringify
from snapcompact.compaction.context import to_wire_json
from snapcompact.compaction.control import run_awaitable
from snapcompact.compaction.prompts import prompt
from snapcompact.compaction.tokens import utf16_len

__all__ = [
    "FALLBACK_CONTEXT_WINDOW",
    "MAX_SUMMARY_TOKENS",
    "SPLIT_TURN_SEPARATOR",
    "TOOL_RESULT_MAX_CHARS",
    "CompleteFn",
    "Completion",
    "build_summary_prompt",
    "call_complete",
    "escape_boundary_tags",
    "generate_summary",
    "merge_split_turn",
    "serialize_for_summary",
    "summarizer_budget",
    "summary_max_tokens",
    "summary_windows",
]

MAX_SUMMARY_TOKENS = 16384
TOOL_RESULT_MAX_CHARS = 2000
FALLBACK_CONTEXT_WINDOW = 200_000
SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"

CompleteFn = Callable[..., Any]


@dataclass(frozen=True)
class Completion:
    """One LLM reply to a summary request: its text and the provider's usage, if given."""

    text: str
    usage: Mapping[str, Any] | None = None


def _normalize_reply(reply: Any) -> Completion:
    if isinstance(reply, str):
        return Completion(reply)
    if isinstance(reply, Completion):
        return reply
    if isinstance(reply, Mapping) and isinstance(reply.get("text"), str):
        usage = reply.get("usage")
        return Completion(reply["text"], usage if isinstance(usage, Mapping) else None)
    raise ValueError(f"completion function must return a string or {{'text': ...}}, got "
                     f"{type(reply).__name__}")


def _run_coroutine(coro: Any) -> Any:
    """Await ``coro`` from synchronous code (see :func:`.control.run_awaitable`)."""
    return run_awaitable(coro)


def call_complete(complete: CompleteFn, system_prompt: str, user_prompt: str,
                  max_tokens: int) -> Completion:
    """Call a sync or async completion function and normalize its reply."""
    reply = complete(system_prompt, user_prompt, max_tokens=max_tokens)
    if inspect.isawaitable(reply):
        reply = _run_coroutine(reply)
    return _normalize_reply(reply)


# ------------------------------------------------------------------------------ serialization


def _cap(text: str, limit: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Head of a tool result, ``limit`` UTF-16 units (as the agent counts), with a marker."""
    units = utf16_len(text)
    if units <= limit:
        return text
    head = text.encode("utf-16-le", "surrogatepass")[:2 * limit].decode("utf-16-le",
                                                                         "surrogatepass")
    return f"{head}\n\n[... {units - limit} more characters truncated]"


_BOUNDARY_TAG = re.compile(r"<\s*/?\s*(?:conversation|previous-summary)\s*>", re.IGNORECASE)


def escape_boundary_tags(text: str) -> str:
    """``</conversation>`` -> ``&lt;/conversation>``: content never closes the prompt's own tags."""
    return _BOUNDARY_TAG.sub(lambda m: "&lt;" + m.group(0)[1:], text)


def _joined_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content or () if isinstance(b, Mapping)
                   and b.get("type") == "text")


def _result_text(message: Mapping[str, Any]) -> str:
    text = _joined_text(message.get("content"))
    # A pruned result without text still reads as truncated output (as the agent converts it).
    return text or ("[Output truncated]" if message.get("prunedAt") is not None else "")


def serialize_for_summary(messages: Sequence[Mapping[str, Any]],
                          include_thinking: bool = True) -> str:
    """Agent messages as labelled plain text for the summarizer (one section per part).

    The agent core's legacy serializer: ``[User]:`` (non-empty text), ``[Think]:``, ``[Assistant]:``
    (every text block, empty ones too), ``[Tool Call]: name(k=<json>, ...); ...`` and
    ``[Tool Result]:`` capped at 2,000 UTF-16 units; developer messages are left out, useless
    call/result pairs dropped, and ``<conversation>``/``<previous-summary>`` tags in the content
    escaped. Bash executions are included as the coding agent's ``convertToLlm`` renders them
    (a user message quoting command and output; the agent core's converter drops them).
    ``include_thinking=False`` leaves out ``[Think]:`` (as the agent does for Anthropic targets).
    """

    wire = [w for w in (to_wire_json(m) for m in messages) if w is not None]
    useless = {str(m.get("toolCallId")) for m in wire
               if m.get("role") == "toolResult" and m.get("useless") is True
               and m.get("isError") is not True}
    parts: list[str] = []
    for msg in wire:
        role = msg.get("role")
        if role == "user":
            text = _joined_text(msg.get("content"))
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[Mapping[str, Any]] = []
            for block in msg.get("content") or ():
                kind = block.get("type") if isinstance(block, Mapping) else None
                if kind == "text":
                    texts.append(str(block.get("text", "")))
                elif kind == "thinking":
                    thinking.append(str(block.get("thinking", "")))
                elif kind == "toolCall" and str(block.get("id")) not in useless:
                    calls.append(block)
            if include_thinking and thinking:
                parts.append("[Think]: " + "\n".join(thinking))
            if texts:
                parts.append("[Assistant]: " + "\n".join(texts))
            if calls:
                rendered = []
                for call in calls:
                    args = call.get("arguments")
                    pairs = args.items() if isinstance(args, Mapping) else ()
                    rendered.append(f"{call.get('name', '')}(" + ", ".join(
                        f"{k}={js_json_stringify(v)}" for k, v in pairs) + ")")
                parts.append("[Tool Call]: " + "; ".join(rendered))
        elif role == "toolResult":
            if str(msg.get("toolCallId")) in useless:
                continue
            text = _result_text(msg)
            if text:
                parts.append(f"[Tool Result]: {_cap(text)}")
    return escape_boundary_tags("\n\n".join(parts))


# ------------------------------------------------------------------------------ windows


def summarizer_budget(context_window: int | None, max_tokens: int = MAX_SUMMARY_TOKENS) -> int:
    """Input tokens one summarizer call may carry for a model of ``context_window`` tokens."""
    window = context_window if context_window and context_window > 0 else FALLBACK_CONTEXT_WINDOW
    floor_budget = min(16384, max(1024, window // 8))
    return max(floor_budget, math.floor(0.8 * window) - max_tokens - 16384)


def summary_windows(messages: Sequence[Mapping[str, Any]], budget_tokens: int,
                    include_thinking: bool = True) -> list[str]:
    """Serialized windows, oldest first, each within ``budget_tokens`` at four chars per token.

    A single message bigger than the budget is clamped to 95 % of it (head kept, with a marker).
    """
    if budget_tokens < 1:
        raise ValueError(f"summarizer budget must be positive, got {budget_tokens}")
    limit_chars = budget_tokens * 4
    clamp_chars = math.floor(0.95 * limit_chars)
    windows: list[str] = []
    current: list[str] = []
    size = 0
    for message in messages:
        text = serialize_for_summary([message], include_thinking)
        if not text:
            continue
        if len(text) > clamp_chars:
            text = (f"{text[:clamp_chars]}\n\n"
                    f"[... {len(text) - clamp_chars} more characters truncated]")
        extra = len(text) + (2 if current else 0)
        if current and size + extra > limit_chars:
            windows.append("\n\n".join(current))
            current, size = [], 0
            extra = len(text)
        current.append(text)
        size += extra
    if current:
        windows.append("\n\n".join(current))
    return windows


def build_summary_prompt(conversation: str, instructions: str, *,
                         previous_summary: str | None = None,
                         additional_context: Sequence[str] = (),
                         custom_instructions: str | None = None) -> str:
    """The summary request text: conversation, previous summary and extra context in tags."""
    parts = [f"<conversation>\n{conversation}\n</conversation>"]
    if previous_summary:
        parts.append(f"<previous-summary>\n{previous_summary}\n</previous-summary>")
    if additional_context:
        parts.append("<additional-context>\n" + "\n".join(f"- {c}" for c in additional_context)
                     + "\n</additional-context>")
    parts.append(instructions)
    if custom_instructions:
        parts.append(f"Additional focus requested by the user: {custom_instructions}")
    return "\n\n".join(parts)


def summary_max_tokens(reserve_tokens: int) -> int:
    """Output cap of a summary call: 80 % of the reserve, at most ``MAX_SUMMARY_TOKENS``."""
    return max(256, min(MAX_SUMMARY_TOKENS, math.floor(0.8 * reserve_tokens)))


@dataclass(frozen=True)
class SummaryRun:
    text: str
    calls: int
    usage: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)


def generate_summary(messages: Sequence[Mapping[str, Any]], complete: CompleteFn, *,
                     context_window: int | None,
                     max_tokens: int, previous_summary: str | None = None,
                     custom_instructions: str | None = None,
                     additional_context: Sequence[str] = (), base_prompt: str | None = None,
                     include_thinking: bool = True, turn_prefix: bool = False) -> SummaryRun:
    """Summarize ``messages`` (iteratively over windows, and over ``previous_summary`` if given).

    ``base_prompt`` (from a ``session.compacting`` hook) replaces the first-compaction prompt.
    ``turn_prefix`` selects the split-turn prompt (no previous summary is passed to it).
    """
    budget = summarizer_budget(context_window, max_tokens)
    windows = summary_windows(messages, budget, include_thinking) or [""]
    system = prompt("summarization-system")
    summary = None if turn_prefix else previous_summary
    usages: list[Mapping[str, Any]] = []
    for window in windows:
        if turn_prefix and summary is None:
            instructions = prompt("compaction-turn-prefix")
        elif summary:
            instructions = prompt("compaction-update-summary")
        else:
            instructions = base_prompt or prompt("compaction-summary")
        user = build_summary_prompt(window, instructions, previous_summary=summary,
                                    additional_context=additional_context,
                                    custom_instructions=custom_instructions)
        reply = call_complete(complete, system, user, max_tokens)
        if not reply.text.strip():
            raise ValueError("the summarizer returned an empty summary")
        summary = reply.text.strip()
        if reply.usage:
            usages.append(reply.usage)
    assert summary is not None
    return SummaryRun(summary, len(windows), tuple(usages))


def merge_split_turn(history_summary: str, turn_prefix_summary: str) -> str:
    """One stored summary from the history part and the split turn's prefix part."""
    return f"{history_summary}{SPLIT_TURN_SEPARATOR}{turn_prefix_summary}"
