"""OpenAI's provider-native compaction (``POST /responses/compact``) for context-full compactions.

Why: for OpenAI and OpenAI Codex models the seed has compaction try the provider's own compact
endpoint first when ``compaction.remoteEnabled`` is on. The endpoint takes the conversation as
Responses input items and answers with a replacement history (an opaque ``compaction`` item,
or a ``compaction_summary``, plus retained messages) that later turns replay instead of the
summarized messages; encrypted reasoning survives that way. The replacement history is kept in
the compaction entry's ``preserveData.openaiRemoteCompaction``; when the request fails the
pipeline summarizes locally.

No HTTP or SDK here: the request goes through an injected ``responses_compact(request) ->
response`` function (request ``{"model", "input", "instructions"}``, response the endpoint's JSON
with ``output``). :func:`snapcompact.compaction.litellm_adapter.litellm_responses_compact` builds
one on litellm's ``compact_responses``.

The input items follow the agent core (18.2.11 ``buildOpenAiNativeHistory``) for what this
library's sessions hold: user/developer text and images, assistant text (``output_text``),
reasoning items carried in a thinking block's JSON signature, function calls and their outputs
(an output whose call is not in the input is dropped). Computer-use and custom-tool items, which
these sessions never hold, are not built. Difference from the agent core, by the seed: an
``openai-codex`` model tries the endpoint too (the agent core only does with an explicit
endpoint, since ChatGPT's Codex backend lacks it; here the injected function decides where the
request goes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from snapcompact.archive import PRESERVE_KEY, compute_file_lists, upsert_file_operations
from snapcompact.compaction.context import to_wire_json
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.provider_history import (
    OPENAI_REMOTE_COMPACTION_KEY,
    RESPONSES_HISTORY_TYPE,
)
from snapcompact.compaction.strategies import CompactionPayload, cumulative_file_ops

__all__ = [
    "OPENAI_REMOTE_COMPACTION_KEY",
    "REMOTE_COMPACTION_SHORT_SUMMARY",
    "ResponsesCompactFn",
    "compact_openai_remote",
    "native_history",
    "remote_compaction_summary",
    "replacement_history",
    "replayed_items",
    "request_openai_remote_compaction",
    "uses_openai_remote_compaction",
]

#: The ``shortSummary`` of a remote compaction (no local LLM call is made for it).
REMOTE_COMPACTION_SHORT_SUMMARY = "Remote compaction"
_RESPONSES_APIS = ("openai-responses", "azure-openai-responses", "openai-codex-responses")
_OPENAI_PROVIDERS = ("openai", "openai-codex")

#: ``responses_compact({"model", "input", "instructions"}) -> {"output": [...], ...}``.
ResponsesCompactFn = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def uses_openai_remote_compaction(model: ModelInfo) -> bool:
    """OpenAI and OpenAI Codex models (by provider, or by a Responses wire API)."""
    return model.provider in _OPENAI_PROVIDERS or (model.provider is None
                                                   and model.api in _RESPONSES_APIS)


def remote_compaction_summary(input_tokens: int = 0) -> str:
    """The entry's summary text when the provider holds the history."""
    text = "Remote compaction preserved provider-native history for this session."
    return text + (f" Compaction processed {input_tokens} input tokens." if input_tokens > 0
                   else "")


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    return ([b for b in content if isinstance(b, Mapping)] if isinstance(content, (list, tuple))
            else [])


def _call_id(raw: Any) -> str:
    """A stored call id may carry ``call_id|item_id``; the Responses call id is the first part."""
    return str(raw).split("|", 1)[0]


def _user_item(message: Mapping[str, Any]) -> dict[str, Any] | None:
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str) and content.strip():
        parts.append({"type": "input_text", "text": content})
    for block in _blocks(content):
        if (block.get("type") == "text" and isinstance(block.get("text"), str)
                and block["text"].strip()):
            parts.append({"type": "input_text", "text": block["text"]})
        elif block.get("type") == "image":
            mime = block.get("mimeType", "image/png")
            parts.append({"type": "input_image", "detail": "auto",
                          "image_url": f"data:{mime};base64,{block.get('data', '')}"})
    return {"type": "message", "role": message["role"], "content": parts} if parts else None


def _reasoning_item(signature: Any) -> dict[str, Any] | None:
    if not isinstance(signature, str):
        return None
    try:
        item = json.loads(signature)
    except json.JSONDecodeError:
        return None
    return item if isinstance(item, dict) else None


def _tool_output(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b["text"]) for b in _blocks(content) if b.get("type") == "text"
                     and isinstance(
        b.get("text"), str))


def replayed_items(message: Mapping[str, Any], provider: str | None) -> list[Any] | None:
    """The Responses items a user/developer wire message replays in its place (its
    ``providerPayload`` of type ``openaiResponsesHistory`` for ``provider``), else None.

    pi-ai ``getOpenAIResponsesHistoryItems`` (utils.ts:512-531: the payload's provider, or the
    current one when it names none, must be the request's), used by the compaction input
    (pi-agent-core openai.ts:528-541) and the live request (pi-ai openai-shared.ts:1997-2026, which
    also requires a ``compaction``/``compaction_summary`` item unless native replay is on; a
    replacement history stored here always has one: :func:`request_openai_remote_compaction`).
    """
    payload = message.get("providerPayload")
    if provider is None or not isinstance(payload, Mapping):
        return None
    if payload.get("type") != RESPONSES_HISTORY_TYPE or not isinstance(payload.get("items"), list):
        return None
    if (payload.get("provider") or provider) != provider:
        return None
    return [dict(i) if isinstance(i, Mapping) else i for i in payload["items"]]


def native_history(messages: Sequence[Mapping[str, Any]],
                   previous: Sequence[Mapping[str, Any]] | None = None, *,
                   provider: str | None = None) -> list[dict[str, Any]]:
    """Responses input items for wire-role ``messages`` (user/developer/assistant/toolResult),
    after the ``previous`` replacement history when the last compaction was remote too.

    With ``provider`` (the request model's), a user/developer message carrying that provider's
    replacement history (a remote compaction's summary in ``llm_messages()``) is replaced by the
    history's items (:func:`replayed_items`)."""
    items: list[dict[str, Any]] = [dict(i) for i in previous or ()]
    known_calls = {str(i["call_id"]) for i in items if i.get("type") == "function_call"
                   and "call_id" in i}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role in ("user", "developer"):
            replay = replayed_items(message, provider)
            if replay is not None:
                items.extend(replay)
                known_calls.update(str(i["call_id"]) for i in replay
                                   if isinstance(i, Mapping) and i.get("type") == "function_call"
                                   and "call_id" in i)
                continue
            item = _user_item(message)
            if item is not None:
                items.append(item)
        elif role == "assistant":
            errored = message.get("stopReason") == "error"
            for block in _blocks(message.get("content")):
                kind = block.get("type")
                if kind == "thinking" and not errored:
                    reasoning = _reasoning_item(block.get("thinkingSignature"))
                    if reasoning is not None:
                        items.append(reasoning)
                elif (kind == "text" and isinstance(block.get("text"), str)
                      and block["text"].strip()):
                    items.append({"type": "message", "role": "assistant", "id": f"msg_{index}",
                                  "content": [{"type": "output_text", "text": block["text"],
                                               "annotations": []}]})
                elif kind == "toolCall":
                    call_id = _call_id(block.get("id"))
                    known_calls.add(call_id)
                    items.append({"type": "function_call", "call_id": call_id,
                                  "name": str(block.get("name")),
                                  "arguments": json.dumps(block.get("arguments"),
                                                          ensure_ascii=False,
                                                          separators=(",", ":"))})
        elif role == "toolResult":
            call_id = _call_id(message.get("toolCallId"))
            if call_id in known_calls:
                items.append({"type": "function_call_output", "call_id": call_id,
                              "output": _tool_output(message)})
    return items


def _kept_output_item(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    if item.get("type") in ("compaction", "compaction_summary"):
        return True
    return item.get("type") == "message" and item.get("role") in ("assistant", "user")


def _is_compaction_item(item: Mapping[str, Any]) -> bool:
    return ((item.get("type") == "compaction" and isinstance(item.get("encrypted_content"), str))
            or item.get("type") == "compaction_summary")


def request_openai_remote_compaction(responses_compact: ResponsesCompactFn, model: ModelInfo,
                                     items: Sequence[Mapping[str, Any]],
                                     instructions: str) -> dict[str, Any]:
    """Ask the endpoint; the preserve-data record ``{provider, replacementHistory,
    compactionItem}``.

    Kept from the output: compaction items and user/assistant messages. An answer without a
    compaction item is an error (the caller falls back to a local summary).
    """
    response = responses_compact({"model": model.id, "input": list(items),
                                  "instructions": instructions})
    output = response.get("output") if isinstance(response, Mapping) else None
    history = ([dict(item) for item in output if _kept_output_item(item)]
               if isinstance(output, list) else None)
    if history is None:
        raise ValueError("remote compaction response has no output list")
    compaction = next((item for item in reversed(history) if _is_compaction_item(item)), None)
    if compaction is None:
        raise ValueError("remote compaction response missing compaction item")
    return {"provider": model.provider, "replacementHistory": history, "compactionItem": compaction}


def replacement_history(preserve_data: Mapping[str, Any] | None,
                        provider: str | None = None) -> list[Any] | None:
    """The stored replacement history (for ``provider`` only, when given), else None."""
    record = (preserve_data or {}).get(OPENAI_REMOTE_COMPACTION_KEY)
    if not isinstance(record, Mapping) or not isinstance(record.get("replacementHistory"), list):
        return None
    item = record.get("compactionItem")
    if not isinstance(item, Mapping) or not _is_compaction_item(item):
        return None
    if provider is not None and record.get("provider") != provider:
        return None
    return list(record["replacementHistory"])


def compact_openai_remote(prep: Any, responses_compact: ResponsesCompactFn, model: ModelInfo,
                          instructions: str) -> Any:
    """A context-full compaction done by the endpoint: the payload the pipeline persists.

    Sent: the previous summary (unless the previous compaction's replacement history, from this
    provider, is replayed instead), the summarized and split-turn messages and the kept ones. The
    entry's summary is a fixed line plus the cumulative ``<files>`` list; no local LLM call.
    """
    previous = prep.previous_compaction
    prev_preserve = dict(previous.preserve_data or {}) if previous is not None else {}
    prev_history = replacement_history(prev_preserve, model.provider)
    messages: list[Mapping[str, Any]] = []
    if previous is not None and previous.summary and prev_history is None:
        messages.append({"role": "compactionSummary", "summary": previous.summary})
    messages += [*prep.messages_to_summarize, *prep.turn_prefix_messages, *prep.recent_messages]
    wire = [w for m in messages if (w := to_wire_json(m)) is not None]
    items = native_history(wire, prev_history, provider=model.provider)
    if not items:
        raise ValueError("nothing to send to the remote compaction endpoint")
    record = request_openai_remote_compaction(responses_compact, model, items, instructions)
    ops = cumulative_file_ops(prep)
    lists = compute_file_lists(ops)
    preserve = {k: v for k, v in prev_preserve.items() if k not in (OPENAI_REMOTE_COMPACTION_KEY,
                                                                    "anthropicCompaction")}
    preserve.pop(PRESERVE_KEY, None)  # a previous frame archive is not carried into a summary
    return CompactionPayload(
        summary=upsert_file_operations(remote_compaction_summary(), lists, ops.read),
        first_kept_entry_id=prep.first_kept_entry_id, tokens_before=prep.tokens_before,
        strategy="context-full", short_summary=REMOTE_COMPACTION_SHORT_SUMMARY,
        details=lists.to_json(), preserve_data={**preserve, OPENAI_REMOTE_COMPACTION_KEY: record})
