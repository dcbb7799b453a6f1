"""The summary requests a replay makes, kept as they are asked, for the library to bill.

Why a module of its own: a handoff document or an LLM (soft) summary is itself a request over the
whole context it summarizes; its bill is :func:`snapcompact.billing.bill_calls`. The bill needs
the calls as they were made, and the summarizer's reported usage says too little offline
(litellm's mock path reports a few dozen tokens for a 100k-token request; the oracle reports
none). So the replay's completion function is wrapped (:class:`CallRecorder`): every call the
library's maintenance makes (handoff, soft / context-full history summary, split-turn prefix,
short summary) is kept with the exact system and user prompt the library built and the text
that came back. This module only gathers; every number comes from :mod:`snapcompact.billing`.
The bill is the session's: the replay makes these calls once per (session, arm), however many
questions are asked after the context.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from snapcompact.billing import CompactionCall

__all__ = ["CallRecorder"]



def _reply_text(reply: Any) -> str:
    """The text of a completion function's reply (a string, ``{"text": ...}`` or ``.text``)."""
    if isinstance(reply, str):
        return reply
    if isinstance(reply, Mapping):
        text = reply.get("text")
    else:
        text = getattr(reply, "text", None)
    if not isinstance(text, str):
        raise ValueError(f"compaction bill: a summary reply must carry text, got "
                         f"{type(reply).__name__}")
    return text


class CallRecorder:
    """``complete`` wrapped to keep every call's prompts and reply text, in call order.

    The reply is passed back unchanged (an awaitable is awaited by whoever awaits it, and the
    call is kept then); a call that raises is not kept (no reply to bill).
    """

    def __init__(self, complete: Callable[..., Any]) -> None:
        self._inner = complete
        self.calls: list[CompactionCall] = []

    def __call__(self, system_prompt: str, user_prompt: str, **kwargs: Any) -> Any:
        reply = self._inner(system_prompt, user_prompt, **kwargs)
        if inspect.isawaitable(reply):
            pending = reply

            async def later() -> Any:
                done = await pending
                self._keep(system_prompt, user_prompt, done)
                return done

            return later()
        self._keep(system_prompt, user_prompt, reply)
        return reply

    def _keep(self, system_prompt: str, user_prompt: str, reply: Any) -> None:
        self.calls.append(CompactionCall(system_prompt, user_prompt, _reply_text(reply)))
