"""The renderability probe's parsed history, parsed once per message instead of once per pass.

Why: snapcompact's path scans the text it would archive (the previous archive's text and the
history about to be summarized) before it sizes the frame cap. In a session that stays above
its threshold every check point runs a pass, and each pass re-parsed every summarized message
from JSON: the replay of a long session spent most of its time turning the same messages into
the same dataclasses again. The messages a pass summarizes are shallow copies of immutable
session entries, so their ``content`` objects are the entries' own; a parsed message is kept
per ``content`` object (and the message's other fields, compared on every hit), and a message
is parsed again only when pruning or shake swapped in new content.

Nothing here decides: :func:`parsed_archive` returns exactly what
``messages_from_json(archived_messages_json(prep))`` returns (an unparsable message falls back
to that very call, so its error is the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snapcompact.archive import Message, message_from_json, messages_from_json
from snapcompact.compaction import CompactionPreparation, archived_messages_json

__all__ = ["ParsedArchiveCache"]

#: Roles whose wire form is the message itself (``to_wire_json`` copies it unchanged).
_PLAIN_ROLES = frozenset({"user", "assistant", "toolResult", "developer"})


class ParsedArchiveCache:
    """Parsed messages per content object, for one maintenance (one session)."""

    def __init__(self) -> None:
        # id(content) -> (content kept alive, the other fields as (type, value), parsed message)
        self._memo: dict[int, tuple[Any, dict[str, tuple[type, Any]], Message]] = {}

    def parsed_archive(self, prep: CompactionPreparation) -> list[Message]:
        """``messages_from_json(archived_messages_json(prep))``, parsing only new messages."""
        messages = (*prep.messages_to_summarize, *prep.turn_prefix_messages)
        if any(not isinstance(m, Mapping) or m.get("role") not in _PLAIN_ROLES
               or "content" not in m for m in messages):
            return messages_from_json(archived_messages_json(prep))
        memo = self._memo
        if len(memo) > 2 * len(messages) + 1000:
            # Mostly messages a compaction archived already (or content pruning replaced): keep
            # only this pass's, so the memo follows the live window, not the whole session.
            live = {id(m["content"]) for m in messages}
            memo = self._memo = {k: v for k, v in memo.items() if k in live}
        out: list[Message] = []
        for message in messages:
            content = message["content"]
            others = {k: (type(v), v) for k, v in message.items() if k != "content"}
            hit = memo.get(id(content))
            if hit is not None and hit[0] is content and hit[1] == others:
                out.append(hit[2])
                continue
            try:
                parsed = message_from_json(dict(message), len(out))
            except ValueError:
                return messages_from_json(archived_messages_json(prep))
            memo[id(content)] = (content, others, parsed)
            out.append(parsed)
        return out
