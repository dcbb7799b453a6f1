"""From the active branch to LLM messages, and to the display transcript.

Why two views: the LLM only needs what survives compaction (one summary message, the kept
entries, everything after), while a person scrolling the session wants all of it, with each
compaction shown as a slim divider where it fired. Both come from the same branch walk.

Agent-level roles beyond the wire roles: ``compactionSummary``, ``branchSummary``, ``custom``,
``bashExecution`` and ``hookMessage``. :func:`convert_to_llm` turns them into wire messages:
summaries become user messages through the context templates (a snapcompact summary instead
carries its history blocks, text and frames, after the reading guide, with no template), custom
and hook messages become developer messages with their raw content, and a bash execution
becomes a user message quoting the command and its output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snapcompact.archive import archive_blocks, message_from_json
from snapcompact.compaction.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    MetadataEntry,
)
from snapcompact.compaction.prompts import render
from snapcompact.compaction.provider_history import kept_tail_anchor, provider_history_payload
from snapcompact.compaction.tokens import (
    DEFAULT_ESTIMATOR,
    IMAGE_TOKEN_ESTIMATE,
    TokenEstimator,
)
from snapcompact.core import estimate_text_tokens
from snapcompact.pricing import FRAME_DATA_BYTES_BUDGET

__all__ = [
    "DIVIDER",
    "IMAGE_TOKEN_ESTIMATE",
    "SessionContext",
    "archive_blocks",
    "build_session_context",
    "compaction_summary_message",
    "convert_to_llm",
    "entry_to_message",
    "estimate_branch_tokens",
    "estimate_context_tokens",
    "estimate_entry_tokens",
    "estimate_message_tokens",
    "text_tokens",
]

#: How the display transcript marks a compaction (expanding it reveals the summary).
DIVIDER = "\u2500\u2500 \U0001f4f7 compacted \u00b7 ctrl+o \u2500\u2500"
#: Per-request cap on frame base64 bytes when re-attaching an archive.


@dataclass(frozen=True)
class SessionContext:
    """Agent messages (custom roles included) and, in parallel, the entry each came from."""

    messages: tuple[Mapping[str, Any], ...]
    entry_ids: tuple[str, ...]
    model: Mapping[str, Any] | None = None
    thinking_level: str | None = None
    compaction_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def compaction_summary_message(entry: CompactionEntry) -> dict[str, Any]:
    """The context message standing in for the history a compaction replaced."""
    out: dict[str, Any] = {"role": "compactionSummary", "summary": entry.summary,
                           "tokensBefore": entry.tokens_before, "timestamp": entry.timestamp}
    if entry.short_summary is not None:
        out["shortSummary"] = entry.short_summary
    if entry.preserve_data is not None:
        out["preserveData"] = entry.preserve_data
    # A remote compaction's replacement history rides on the summary message and replaces the
    # kept tail on a Responses request (coding agent 18.3.4 session-context.ts:467-508).
    payload = provider_history_payload(entry.preserve_data)
    if payload is not None:
        out["providerPayload"] = payload
    return out


def entry_to_message(entry: Entry) -> dict[str, Any] | None:
    """The agent message an entry contributes to the LLM context (None for metadata/compactions)."""
    if isinstance(entry, MessageEntry):
        return dict(entry.message)
    if isinstance(entry, CustomMessageEntry):
        content = (entry.content if isinstance(entry.content, str)
                   else [dict(b) for b in entry.content])
        out: dict[str, Any] = {"role": "custom", "customType": entry.custom_type,
                               "content": content,
                               "display": entry.display, "timestamp": entry.timestamp}
        if entry.details is not None:
            out["details"] = entry.details
        return out
    if isinstance(entry, BranchSummaryEntry):
        return {"role": "branchSummary", "summary": entry.summary, "fromId": entry.from_id,
                "timestamp": entry.timestamp}
    return None


def build_session_context(path: Sequence[Entry], *, transcript: bool = False) -> SessionContext:
    """Messages for the branch ``path`` (root first).

    LLM view (default): the latest compaction becomes one ``compactionSummary`` message, then the
    entries from its ``firstKeptEntryId`` up to it (none when it replays provider history: see
    :mod:`.provider_history`), then every later entry. Transcript view: every
    entry in order, each compaction as a ``compactionSummary`` message with ``divider`` set.
    """
    model: Mapping[str, Any] | None = None
    thinking: str | None = None
    for entry in path:
        if isinstance(entry, MetadataEntry):
            if entry.type == "model_change":
                model = entry.data
            elif entry.type == "thinking_level_change":
                level = entry.data.get("thinkingLevel")
                thinking = level if isinstance(level, str) else thinking
    messages: list[Mapping[str, Any]] = []
    ids: list[str] = []

    def add(entry: Entry) -> None:
        message = entry_to_message(entry)
        if message is not None:
            messages.append(message)
            ids.append(entry.id)

    latest = None
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], CompactionEntry):
            latest = i
            break
    if transcript:
        for entry in path:
            if isinstance(entry, CompactionEntry):
                messages.append({**compaction_summary_message(entry), "divider": DIVIDER})
                ids.append(entry.id)
            else:
                add(entry)
        return SessionContext(tuple(messages), tuple(ids), model, thinking,
                              path[latest].id if latest is not None else None)
    if latest is None:
        for entry in path:
            add(entry)
        return SessionContext(tuple(messages), tuple(ids), model, thinking)
    compaction = path[latest]
    assert isinstance(compaction, CompactionEntry)
    messages.append(compaction_summary_message(compaction))
    ids.append(compaction.id)
    # The kept tail, unless the compaction's provider history already holds it
    # (session-context.ts:546-591; see :mod:`.provider_history`).
    anchor = kept_tail_anchor(compaction.first_kept_entry_id, compaction.preserve_data,
                              compaction.extra)
    if anchor is not None:
        anchor_id, after = anchor
        kept = False
        for entry in path[:latest]:
            if kept:
                add(entry)
            elif entry.id == anchor_id:
                kept = True
                if not after:
                    add(entry)
    for entry in path[latest + 1:]:
        add(entry)
    return SessionContext(tuple(messages), tuple(ids), model, thinking, compaction.id)


# ------------------------------------------------------------------------------- to the wire


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(b.get("text", "") for b in content if isinstance(b, Mapping)
                       and b.get("type") == "text")
    return ""


def _bash_text(message: Mapping[str, Any]) -> str:
    command = message.get("command", "")
    output = message.get("output", "")
    text = f"Ran `{command}`\n```\n{output}\n```" if output else f"Ran `{command}`\n(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code not in (None, 0):
        text += f"\n\nCommand exited with code {code}"
    return text


def to_wire_json(message: Mapping[str, Any], *,
                 max_frame_data_bytes: int = FRAME_DATA_BYTES_BUDGET) -> dict[str, Any] | None:
    """One agent message as a wire-role JSON message (None when it does not reach the LLM).

    ``max_frame_data_bytes`` caps the base64 bytes of archive frames re-attached to a
    compaction summary (``snapcompact.maxFrameDataBytes``); frames past it become a notice.
    """
    role = message.get("role")
    if role in ("user", "assistant", "toolResult", "developer"):
        return dict(message)
    if role == "compactionSummary":
        summary = str(message.get("summary", ""))
        blocks = archive_blocks(message, max_frame_data_bytes)
        # pi-agent-core convertMessageToLlm (compaction/messages.ts:232-251): the user message
        # keeps the summary's providerPayload, which a Responses request replays in its place.
        payload = message.get("providerPayload")
        carried = {"providerPayload": dict(payload)} if isinstance(payload, Mapping) else {}
        if blocks is not None:
            return {"role": "user", **carried,
                    "content": [{"type": "text", "text": summary}, *blocks]}
        text = render("compaction-summary-context", summary=summary)
        return {"role": "user", **carried, "content": [{"type": "text", "text": text}]}
    if role == "branchSummary":
        text = render("branch-summary-context", summary=str(message.get("summary", "")))
        return {"role": "user", "content": [{"type": "text", "text": text}]}
    if role in ("custom", "hookMessage"):
        return {"role": "developer", "content": message.get("content", "")}
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return {"role": "user", "content": [{"type": "text", "text": _bash_text(message)}]}
    raise ValueError(f"unknown message role {role!r}")


def convert_to_llm(messages: Sequence[Mapping[str, Any]], *,
                   max_frame_data_bytes: int = FRAME_DATA_BYTES_BUDGET) -> list[Any]:
    """Agent messages -> :mod:`snapcompact.archive.messages` wire messages, dropping what the LLM
    never sees."""
    out = []
    for i, message in enumerate(messages):
        wire = to_wire_json(message, max_frame_data_bytes=max_frame_data_bytes)
        if wire is not None:
            out.append(message_from_json(wire, i))
    return out


# ------------------------------------------------------------------------------- token estimates


def text_tokens(chars: int) -> int:
    """The rough character estimate (:data:`snapcompact.core.CHARS_PER_TOKEN`); counts use the
    estimator."""
    return estimate_text_tokens(chars)


def estimate_message_tokens(message: Mapping[str, Any],
                            estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> int:
    """Estimated prompt tokens of one agent message (the agent core's count; see :mod:`.tokens`)."""
    return estimator.message(message)


_ENTRY_TOKENS: dict[int, tuple[object, TokenEstimator, int]] = {}


def estimate_entry_tokens(entry: Entry, estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> int:
    """Tokens an entry adds to the LLM context (a compaction: its summary message); memoized.

    Entries are immutable, so the estimate is cached per entry object and estimator (pruning
    swaps in a new object, which is estimated afresh).
    """
    cached = _ENTRY_TOKENS.get(id(entry))
    if cached is not None and cached[0] is entry and cached[1] is estimator:
        return cached[2]
    message = (compaction_summary_message(entry) if isinstance(entry, CompactionEntry)
               else entry_to_message(entry))
    tokens = 0 if message is None else estimator.message(message)
    if len(_ENTRY_TOKENS) > 500_000:
        _ENTRY_TOKENS.clear()
    _ENTRY_TOKENS[id(entry)] = (entry, estimator, tokens)
    return tokens


def estimate_branch_tokens(path: Sequence[Entry],
                           estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> int:
    """Estimated tokens of the LLM context rebuilt from ``path`` (same as the messages'
    estimate)."""
    by_id = {e.id: e for e in path}
    return sum(estimate_entry_tokens(by_id[i], estimator)
               for i in build_session_context(path).entry_ids)


def estimate_context_tokens(messages: Sequence[Mapping[str, Any]],
                            estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> int:
    """Estimated prompt tokens of a context's messages, by ``estimator``."""
    return estimator.messages(messages)
