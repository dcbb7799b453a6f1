"""How much of a compacted context's head a provider's prompt cache still holds.

Why: production pays its context again on every later turn, from the prompt cache as long as
the prefix does not change (:mod:`.next_turns` bills that). A compaction rewrites the prefix
from its first changed block on. Snapcompact frames carried forward unchanged (and a reading
guide that is a pure function of the archive) keep the head of the new context identical to the
previous one, so the turn after a compaction still reads that head from the cache; an LLM
summary rewrites it all.

:func:`stable_prefix_of` counts the tokens at the head of the final context that were already
at the head of the context after the compaction before it: the summary text when unchanged,
then the leading history blocks both archives share, in order. No compaction: all of it; one
compaction: none (it replaced the raw conversation). The caller gathers the live branch (e.g.
a replay's); the archives are read from its compaction entries, as ``Replay.archives`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from snapcompact.archive import get_preserved_archive, history_blocks
from snapcompact.billing.request import RequestBill
from snapcompact.compaction import CompactionEntry
from snapcompact.pricing import count_text_tokens

__all__ = ["stable_prefix_of"]


def _parts(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, list):
        return list(content)
    return [{"type": "text", "text": content}] if isinstance(content, str) else []


def stable_prefix_of(branch: Sequence[Any], chat: Sequence[Mapping[str, Any]],
                     bill: RequestBill, model: str) -> int:
    """Tokens at the head of ``chat`` (the final context) unchanged since the previous
    compaction's context.

    ``branch``: the live branch's entries, oldest first; ``bill``: ``chat``'s
    :func:`~.request.bill_request` for ``model`` (its image bills are reused, in order).
    """
    entries = [e for e in branch if isinstance(e, CompactionEntry)]
    if not entries:
        return bill.billed_tokens
    if len(entries) < 2 or entries[-1].summary != entries[-2].summary or not chat:
        return 0
    texts: list[str] = []
    images = 0
    parts = _parts(chat[0])
    if parts and parts[0].get("type") == "text":
        texts.append(parts[0].get("text", ""))
    archives = [a for e in entries if (a := get_preserved_archive(e.preserve_data)) is not None]
    if len(archives) >= 2:
        before, after = history_blocks(archives[-2]), history_blocks(archives[-1])
        for old, new in zip(before, after, strict=False):
            if old != new:
                break
            if new.get("type") == "image":
                images += 1
            else:
                texts.append(str(new.get("text", "")))
    text_tokens = count_text_tokens("\n".join(texts), model).tokens if texts else 0
    return text_tokens + sum(b.tokens for b in bill.images[:images])
