"""The provider-native history a remote compaction stored, as the next request replays it.

Why a module of its own: after OpenAI's ``/responses/compact`` answers, the compaction entry keeps
the endpoint's replacement history in ``preserveData.openaiRemoteCompaction``. The coding agent
(18.3.4) does not send the kept tail after such a compaction: the replacement history carries
those turns, so the LLM context is the summary message, carrying the history as its
``providerPayload``, and then the entries after the compaction. A Responses request replays the
items in place of that message; any other wire API sends the summary text. Both the context
builder (:mod:`.context`) and the branch index (:mod:`.path_index`, token totals) need the same
test of "does this compaction replay provider history", so it lives here, below both.

Upstream rules (coding agent 18.3.4 ``src/session/session-context.ts``):

* the payload is valid when ``openaiRemoteCompaction`` is an object whose ``provider`` is a
  non-empty string and whose ``replacementHistory`` is an array of objects (:197-209); it becomes
  ``providerPayload = {type: "openaiResponsesHistory", provider, items}`` on the summary message
  (:467-508);
* with a valid payload the kept entries (``firstKeptEntryId`` up to the compaction) are not
  emitted (:546); when the entry names ``providerReplayThroughEntryId``, the entries after that
  one up to the compaction are (:584-591); entries after the compaction always are (:603-606).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "OPENAI_REMOTE_COMPACTION_KEY",
    "PROVIDER_REPLAY_THROUGH_KEY",
    "RESPONSES_HISTORY_TYPE",
    "kept_tail_anchor",
    "provider_history_payload",
]

#: Where a remote compaction keeps the endpoint's replacement history (``preserveData`` key).
OPENAI_REMOTE_COMPACTION_KEY = "openaiRemoteCompaction"
#: The compaction entry field naming the last entry the provider history already holds.
PROVIDER_REPLAY_THROUGH_KEY = "providerReplayThroughEntryId"
#: ``providerPayload.type`` of replayable OpenAI Responses items (pi-ai ``utils.ts:505``).
RESPONSES_HISTORY_TYPE = "openaiResponsesHistory"


def provider_history_payload(preserve_data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``getOpenAiRemoteCompactionPayload`` (session-context.ts:197-209): the summary message's
    ``providerPayload`` for a compaction's preserve data, or None when it holds no valid
    replacement history (then the kept tail is sent as usual)."""
    record = (preserve_data or {}).get(OPENAI_REMOTE_COMPACTION_KEY)
    if not isinstance(record, Mapping):
        return None
    provider = record.get("provider")
    if not isinstance(provider, str) or not provider:
        return None
    items = record.get("replacementHistory")
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        return None
    return {"type": RESPONSES_HISTORY_TYPE, "provider": provider, "items": list(items)}


def kept_tail_anchor(first_kept_entry_id: str, preserve_data: Mapping[str, Any] | None,
                     extra: Mapping[str, Any] | None = None) -> tuple[str, int] | None:
    """Where the LLM context resumes before a compaction: ``(entry id, 0)`` = from that entry
    on, ``(entry id, 1)`` = after it, None = no entry before the compaction is sent.

    Without provider history it is the first kept entry (session-context.ts:546-581); with it,
    nothing, or the entries after ``providerReplayThroughEntryId`` when the entry names one
    (:584-591).
    """
    if provider_history_payload(preserve_data) is None:
        return first_kept_entry_id, 0
    through = (extra or {}).get(PROVIDER_REPLAY_THROUGH_KEY)
    return (through, 1) if isinstance(through, str) and through else None
