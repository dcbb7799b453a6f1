"""Every bill: the tokens a provider charges for an image, a request, a cached prefix, the next
turns after a compaction and a strategy's own compaction calls. Depends on compaction (its text
counters, the session's entries), archive and pricing (the tables the bills apply).

Why one room: a strategy is judged by recall per billed token, so every figure a table shows as
"billed" must be counted one way, here, from the rules of ``pricing.toml``; the harness gathers
what was sent and calls these functions for every number. Dollars are not here: prices change
weekly and come from litellm's cost map, which the library never imports (the harness's
``evals.send.price_map`` multiplies these tokens by them).

Rooms (one job each):

* :mod:`.image`: what a provider bills for one image (the rule that applies, the bill);
  :mod:`.image_methods`: the six provider formulas it applies;
* :mod:`.request_parts`: the text and images a chat request carries (PNG size from the header);
  :mod:`.request`: the whole request's bill, text counted by the model line's own counter;
* :mod:`.frames`: one archive frame's bill (the agent's ``frameCharge = billed`` knob);
* :mod:`.cache_use`: how a run of requests sharing a prefix is billed under a prompt cache;
  :mod:`.stable_prefix`: how much of a compacted context's head the cache still holds;
  :mod:`.next_turns`: the next turns after a compaction, cache on;
* :mod:`.compaction_calls`: the summary requests a compaction made, billed;
* :mod:`.session_bill`: every turn request after a compaction, cache applied (a session's cost).

The names below are the public API; everything else is internal and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.billing.cache_use import CacheUse, cache_uses, follow_on_use
    from snapcompact.billing.compaction_calls import (
        NO_CALLS,
        CompactionBill,
        CompactionCall,
        bill_calls,
        summary_request,
    )
    from snapcompact.billing.frames import billed_frame_charge, billed_frame_tokens
    from snapcompact.billing.image import DETAILS, ImageBill, bill_image, select_rule
    from snapcompact.billing.next_turns import NEXT_TURNS, TURN_TOKENS, NextTurns, next_turns_units
    from snapcompact.billing.request import RequestBill, bill_request, billed_text_tokens
    from snapcompact.billing.request_parts import png_size, request_images, request_text
    from snapcompact.billing.session_bill import NO_TURNS, SessionBill, TurnRequest, bill_turns
    from snapcompact.billing.stable_prefix import stable_prefix_of

#: Public name -> the module that defines it (imported on first use).
_WHERE: dict[str, str] = {
    "bill_calls": "compaction_calls",
    "bill_image": "image",
    "bill_request": "request",
    "bill_turns": "session_bill",
    "NO_TURNS": "session_bill",
    "SessionBill": "session_bill",
    "TurnRequest": "session_bill",
    "billed_frame_charge": "frames",
    "billed_frame_tokens": "frames",
    "billed_text_tokens": "request",
    "cache_uses": "cache_use",
    "follow_on_use": "cache_use",
    "CacheUse": "cache_use",
    "CompactionBill": "compaction_calls",
    "CompactionCall": "compaction_calls",
    "DETAILS": "image",
    "ImageBill": "image",
    "NEXT_TURNS": "next_turns",
    "next_turns_units": "next_turns",
    "NextTurns": "next_turns",
    "NO_CALLS": "compaction_calls",
    "png_size": "request_parts",
    "request_images": "request_parts",
    "request_text": "request_parts",
    "RequestBill": "request",
    "select_rule": "image",
    "stable_prefix_of": "stable_prefix",
    "summary_request": "compaction_calls",
    "TURN_TOKENS": "next_turns",
}

__all__ = [
    "DETAILS",
    "NEXT_TURNS",
    "NO_CALLS",
    "NO_TURNS",
    "TURN_TOKENS",
    "CacheUse",
    "CompactionBill",
    "CompactionCall",
    "ImageBill",
    "NextTurns",
    "RequestBill",
    "SessionBill",
    "TurnRequest",
    "bill_calls",
    "bill_image",
    "bill_request",
    "bill_turns",
    "billed_frame_charge",
    "billed_frame_tokens",
    "billed_text_tokens",
    "cache_uses",
    "follow_on_use",
    "next_turns_units",
    "png_size",
    "request_images",
    "request_text",
    "select_rule",
    "stable_prefix_of",
    "summary_request",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
