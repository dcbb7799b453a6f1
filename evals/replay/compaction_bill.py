"""The summary requests a replay makes, kept as they are asked, for the library to bill.

Why a module of its own: a handoff document or an LLM (soft) summary is itself a request over
the whole context it summarizes; its bill is :func:`snapcompact.billing.bill_calls`. The bill
needs the calls as they were made, and the summarizer's reported usage says too little offline
(litellm's mock path reports a few dozen tokens for a 100k-token request; the oracle reports
none). So the replay's completion function is wrapped (:class:`CallRecorder`): every call the
library's maintenance makes (handoff, soft / context-full history summary, split-turn prefix,
short summary) is kept with the exact system and user prompt the library built and the text that
came back; a handoff asked of the live conversation goes through the chat function
(:class:`ChatRecorder`), kept with the system prompt, the live messages and the tools it sent.
This module only gathers; every number comes from :mod:`snapcompact.billing`. The bill is the
session's: the replay makes these calls once per (session, arm), however many questions are
asked after the context.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from snapcompact.billing import CompactionCall

__all__ = ["CallRecorder", "ChatRecorder", "stand_in_chat"]


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


def _joined(system_prompt: str | Sequence[str]) -> str:
    return system_prompt if isinstance(system_prompt, str) else "\n\n".join(system_prompt)


class ChatRecorder:
    """``chat`` (the live handoff's ``chat(system_prompt, messages, *, tools, tool_choice,
    max_tokens)``) wrapped to keep every call as a live :class:`~snapcompact.billing.
    CompactionCall`, appended to ``calls`` (shared with a :class:`CallRecorder`, so the replay's
    calls stay in call order). A call that raises is not kept."""

    def __init__(self, chat: Callable[..., Any], calls: list[CompactionCall]) -> None:
        self._inner = chat
        self.calls = calls

    def __call__(self, system_prompt: str | Sequence[str],
                 messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> Any:
        reply = self._inner(system_prompt, messages, **kwargs)
        if inspect.isawaitable(reply):
            raise ValueError("compaction bill: the live chat function must answer synchronously")
        tools = tuple(kwargs.get("tools") or ())
        self.calls.append(CompactionCall(_joined(system_prompt), "", _reply_text(reply),
                                         messages=tuple(messages), tools=tools))
        return reply


def stand_in_chat(complete: Callable[..., Any]) -> Callable[..., Any]:
    """The live handoff's ``chat`` for a summarizer stand-in whose text does not depend on the
    request (the offline stand-in, litellm's mock): it answers what ``complete`` answers for the
    handoff prompt (the last message's text). The request billed is the live one the chat was
    given, not this call."""

    def chat(system_prompt: str | Sequence[str], messages: Sequence[Mapping[str, Any]], *,
             tools: Any = None, tool_choice: str = "none", max_tokens: int = 0) -> Any:
        last = messages[-1].get("content") if messages else ""
        text = last if isinstance(last, str) else "\n".join(
            str(b.get("text", "")) for b in last or () if isinstance(b, Mapping))
        return complete(_joined(system_prompt), text, max_tokens=max_tokens)

    return chat
