"""What a strategy's own compaction calls cost: every summary request it made, billed.

Why a module of its own: a handoff document or an LLM (soft) summary is itself a request over
the whole context it summarizes, input and output. A strategy's recall per billed token must
carry that bill; snapcompact renders its frames locally and makes no request, truncate drops the
history and makes none. A question's bill (:func:`.request.bill_request`) says nothing about
these calls, and a summarizer's reported usage can say too little (a mock reports a few dozen
tokens for a 100k-token request; an oracle reports none).

So the calls are counted from what was asked and answered, in the two shapes the coding agent
18.3.4 sends them:

* a *live* call (:attr:`CompactionCall.messages` set): the handoff. The agent builds it "through
  the SAME pipeline a live turn uses ... so the oneshot reads the provider prompt cache the main
  turn populated": its base system prompt, its tools, the live conversation and one
  agent-attributed user message with the handoff prompt, under the live turn's cache key, with
  the session's model (``session-handoff.ts:119-172``). Billed as that request
  (:func:`snapcompact.compaction.summarizer_chat_messages` with the tools), and its prompt cache
  as the provider applies it: the request before it ended at the conversation's last
  non-assistant message, so that prefix is read and the rest written
  (:func:`.cache_use.follow_on_use`).
* a *transcript* call (``user_prompt``): the soft / context-full summary. The agent's
  ``summarizeConversationWindow`` sends the summarization system prompt and one user message,
  the serialized conversation (``pi-agent-core`` 18.2.11 ``compaction.ts:963-1001``): nothing
  in it is a prefix of a live request, so nothing is read from the cache.

Each call's input through :func:`.request.bill_request` for the model line that pays it (its
text counter named in ``token_method``), the reply through :func:`.request.billed_text_tokens`.
Whoever runs the maintenance gathers the calls (the harness wraps its completion and chat
functions, ``evals.replay.compaction_bill``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.billing.cache_use import CacheUse, follow_on_use
from snapcompact.billing.request import bill_request, billed_text_tokens
from snapcompact.compaction import summarizer_chat_messages
from snapcompact.pricing import prompt_cache_rule

__all__ = ["NO_CALLS", "CompactionBill", "CompactionCall", "bill_calls", "summary_request"]


def summary_request(system_prompt: str, user_prompt: str) -> list[dict[str, str]]:
    """The chat messages of one summary request: the system prompt and the user prompt the
    library built (the shape the harness's summarizer sends and the bill counts)."""
    return [{"role": "system", "content": system_prompt},
            {"role": "user", "content": user_prompt}]


@dataclass(frozen=True)
class CompactionCall:
    """One summary request as the library asked it, and the text it got back.

    ``messages`` set: a live call (the agent's wire messages, the handoff prompt last, sent with
    ``system_prompt`` and ``tools``; ``user_prompt`` is then empty); None: a transcript call.
    """

    system_prompt: str
    user_prompt: str
    reply_text: str
    messages: tuple[Mapping[str, Any], ...] | None = None
    tools: tuple[Mapping[str, Any], ...] = ()

    def request(self) -> list[dict[str, Any]]:
        """The chat messages the call sends."""
        if self.messages is None:
            return summary_request(self.system_prompt, self.user_prompt)
        return summarizer_chat_messages(self.system_prompt, self.messages)

    def previous_request(self) -> list[dict[str, Any]] | None:
        """A live call's prefix that the live turn before it sent (and cached): the system
        prompt and the conversation up to its last non-assistant message (the handoff prompt
        and the replies after it are new). None for a transcript call."""
        if self.messages is None:
            return None
        head = list(self.messages[:-1])
        while head and head[-1].get("role") == "assistant":
            head.pop()
        return summarizer_chat_messages(self.system_prompt, head)


@dataclass(frozen=True)
class CompactionBill:
    """The compaction calls of one (session, arm) replay, counted for ``model``.

    ``input_tokens`` is every call's whole prompt; ``cache_read_tokens`` and
    ``cache_write_tokens`` are the parts of it the provider reads from / writes to its prompt
    cache (the rest is plain input). ``note`` says when a figure is not a real request's bill
    (None: a real summarizer's request and reply, counted); dollars are priced later.
    """

    calls: int
    input_tokens: int
    output_tokens: int
    model: str | None  # the model line whose counter counted them (None: no call)
    token_method: str | None  # the counter (e.g. claude-v3 via ctok), None when no call
    note: str | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def billed_tokens(self) -> int:
        """Input + output tokens of every call: the session's compaction bill, paid once."""
        return self.input_tokens + self.output_tokens

    @property
    def cache_use(self) -> CacheUse:
        """The calls' input split as the provider bills it."""
        return CacheUse(uncached=self.input_tokens - self.cache_read_tokens
                        - self.cache_write_tokens,
                        written=self.cache_write_tokens, read=self.cache_read_tokens)


#: The bill of a replay that made no summary request (every figure 0, no counter named).
NO_CALLS = CompactionBill(calls=0, input_tokens=0, output_tokens=0, model=None,
                          token_method=None)


def bill_calls(calls: Sequence[CompactionCall], model: str, *, api: str | None = None,
               provider: str | None = None, note: str | None = None) -> CompactionBill:
    """Input (with its prompt-cache split) and output tokens of ``calls`` as ``model``'s
    provider bills them (see the module doc for the two shapes of call)."""
    if not calls:
        return NO_CALLS
    rule = prompt_cache_rule(model, api=api)
    inputs, outputs, read, written, methods = 0, 0, 0, 0, set()
    for call in calls:
        bill = bill_request(call.request(), model, api=api, provider=provider, tools=call.tools)
        methods.add(bill.text_token_method)
        previous = call.previous_request()
        if previous is None:
            inputs += bill.text_tokens
        else:
            prefix = bill_request(previous, model, api=api, provider=provider,
                                  tools=call.tools).billed_tokens
            use = follow_on_use(rule, min(prefix, bill.billed_tokens), bill.billed_tokens)
            inputs += use.prompt_tokens
            read += use.read
            written += use.written
        if call.reply_text:
            tokens, method = billed_text_tokens(call.reply_text, model)
            outputs += tokens
            methods.add(method)
    return CompactionBill(calls=len(calls), input_tokens=inputs, output_tokens=outputs,
                          model=model, token_method=", ".join(sorted(methods)), note=note,
                          cache_read_tokens=read, cache_write_tokens=written)
