"""The requests the agent sends for its replies after a compaction, counted as a replay walks.

Why: what a session costs (:mod:`snapcompact.billing.session_bill`) is every request the agent
sends from its first compaction on, not the one request a question adds. A replay knows each of
them: the agent asks for a reply after its check point (the pre-prompt check before a user
message, the mid-turn check inside a tool loop), so the request for an assistant message is the
context at the moment that message is stored (:class:`TurnLedger` is called there by
``snapcompact.agent.replay``).

Counting every request whole would count the context again on every turn; instead a request is
counted whole (system prompt, tools, ``llm_messages()``; images as billed) only when a
compaction changed the context since the request before, and otherwise as the request before
plus the messages stored since (the previous reply, tool results, a user message), each counted
once with the model line's billed-text counter. A sum of message counts is not a count of their
concatenation to the token (a few tokens per message at the joins); the figures say so where
they are shown. The cached prefix is the request before (same context), or after a compaction
the system prompt and tools plus the head the compaction left unchanged
(:func:`snapcompact.billing.stable_prefix_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from snapcompact.agent.maintenance import SessionMaintenance
from snapcompact.billing import (
    TurnRequest,
    bill_request,
    billed_text_tokens,
    request_text,
    stable_prefix_of,
)
from snapcompact.compaction import CompactionEntry, summarizer_chat_messages, to_chat_messages

__all__ = ["TurnLedger"]


class TurnLedger:
    """The turn requests of one replay after its first compaction, for ``model``'s counter."""

    def __init__(self, maint: SessionMaintenance, model: str, *, api: str | None = None,
                 provider: str | None = None, system_prompt: str | Sequence[str] | None = None,
                 tools: Sequence[Mapping[str, Any]] | None = None,
                 image_detail: str | None = None) -> None:
        self._maint = maint
        self._detail = image_detail  # replaces the detail the archive wrote (as the request)
        self._model, self._api, self._provider = model, api, provider
        system = system_prompt if isinstance(system_prompt, str) else "\n\n".join(
            system_prompt or ())
        head = [{"role": "system", "content": system}] if system else []
        self._head = bill_request(head, model, api=api, provider=provider,
                                  tools=list(tools or ())).text_tokens if (head or tools) else 0
        self._epoch = 0  # accepted maintenance passes at the last request
        self._prompt: int | None = None  # the last request's prompt (None: none yet)
        self._new: list[Mapping[str, Any]] = []  # messages stored since the last request
        self.turns: list[TurnRequest] = []

    def stored(self, message: Mapping[str, Any]) -> None:
        """``message`` went into the session (it is part of every later request)."""
        self._new.append(message)

    def request(self, reply: Mapping[str, Any]) -> None:
        """The agent sends its request for ``reply`` now (before the reply is stored)."""
        epoch = sum(1 for p in self._maint.rounds if p.method is not None)
        if epoch == 0:  # before the first compaction: not part of the session's bill
            self._new.clear()
            return
        if epoch != self._epoch or self._prompt is None:
            prompt, prefix = self._whole()
            self._epoch = epoch
        else:
            prefix = self._prompt
            prompt = self._prompt + self._tokens(self._new)
        self._new.clear()
        self.turns.append(TurnRequest(prompt, prefix, self._tokens([reply])))
        self._prompt = prompt

    def _whole(self) -> tuple[int, int]:
        """(prompt, cached prefix) of the request right after a compaction."""
        chat = to_chat_messages(self._maint.llm_messages())
        if self._detail is not None:
            for message in chat:
                for part in message.get("content") or ():
                    if isinstance(part, dict) and part.get("type") == "image_url":
                        part["image_url"] = {**part["image_url"], "detail": self._detail}
        body = bill_request(chat, self._model, api=self._api, provider=self._provider)
        branch = self._maint.session.get_branch()
        stable = (stable_prefix_of(branch, chat, body, self._model)
                  if any(isinstance(e, CompactionEntry) for e in branch) else 0)
        return self._head + body.billed_tokens, self._head + stable

    def _tokens(self, messages: Sequence[Mapping[str, Any]]) -> int:
        total = 0
        for message in messages:
            text = request_text(summarizer_chat_messages("", [message]))
            total += billed_text_tokens(text, self._model)[0] if text else 0
        return total
