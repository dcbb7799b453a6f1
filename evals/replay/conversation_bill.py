"""A replay's stable prefix: what the library's conversation bill needs, read from the replay.

Why a module of its own: production pays its context again on every later turn, from the
prompt cache as long as the prefix does not change, so the tables bill the next turns after a
compaction (:func:`snapcompact.billing.next_turns_units`) with the tokens at the head of the
final context that survived the last compaction (:func:`snapcompact.billing.stable_prefix_of`).
The library counts; this module only hands it the replay's live branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from snapcompact.billing import RequestBill, stable_prefix_of

__all__ = ["stable_prefix_tokens"]


def stable_prefix_tokens(replay: Any, chat: Sequence[Mapping[str, Any]], bill: RequestBill,
                         target_model: str) -> int:
    """Tokens at the head of ``chat`` (the final context of ``replay``, an agent replay)
    unchanged since the previous compaction's context; ``bill`` is its
    :func:`~snapcompact.billing.bill_request`."""
    return stable_prefix_of(replay.pipeline.session.get_branch(), chat, bill, target_model)
