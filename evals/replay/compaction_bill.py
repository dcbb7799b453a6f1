"""What an arm's own compaction calls cost: every summary request the replay makes, billed.

Why a module of its own: a handoff document or an LLM (soft) summary is itself a request over the
whole context it summarizes, input and output, and nothing caches it (its prompt is new text).
A strategy's recall per billed token must carry that bill; snapcompact renders its frames
locally and makes no request, truncate drops the history and makes none. The questions' bill
(:func:`snapcompact.compaction.bill_request`) says nothing about these calls, and the
summarizer's reported usage says too little offline (litellm's mock path reports a few dozen
tokens for a 100k-token request; the oracle reports none).

So the replay's completion function is wrapped (:class:`CallRecorder`): every call the library's
maintenance makes (handoff, soft / context-full history summary, split-turn prefix, short
summary) is kept with the exact system and user prompt the library built and the text that came
back. :func:`bill_calls` then counts them the way a question's text is counted: the request as
:func:`summary_request` shapes it (what ``evals.pipeline.run_loop.make_summarizer`` sends),
through :func:`snapcompact.compaction.bill_request` for the summarizer's model line (its text
counter, named in ``token_method``), and the reply through
:func:`snapcompact.compaction.billed_text_tokens`. The bill is the session's: the replay makes
these calls once per (session, arm), however many questions are asked after the context.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.compaction import bill_request, billed_text_tokens

__all__ = ["CallRecorder", "CompactionBill", "CompactionCall", "bill_calls", "summary_request"]


def summary_request(system_prompt: str, user_prompt: str) -> list[dict[str, str]]:
    """The chat messages of one summary request: the system prompt and the user prompt the
    library built (the shape the harness's summarizer sends and the bill counts)."""
    return [{"role": "system", "content": system_prompt},
            {"role": "user", "content": user_prompt}]


@dataclass(frozen=True)
class CompactionCall:
    """One summary request as the library asked it, and the text it got back."""

    system_prompt: str
    user_prompt: str
    reply_text: str


@dataclass(frozen=True)
class CompactionBill:
    """The compaction calls of one (session, arm) replay, counted for ``model``.

    ``note`` says when a figure is not a real request's bill (None: a real summarizer's request
    and reply, counted); the dollars are priced later, at the summarizer's price model.
    """

    calls: int
    input_tokens: int
    output_tokens: int
    model: str | None  # the model line whose counter counted them (None: no call)
    token_method: str | None  # the counter (e.g. claude-v3 via ctok), None when no call
    note: str | None = None

    @property
    def billed_tokens(self) -> int:
        """Input + output tokens of every call: the session's compaction bill, paid once."""
        return self.input_tokens + self.output_tokens


NO_CALLS = CompactionBill(calls=0, input_tokens=0, output_tokens=0, model=None,
                          token_method=None)


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


def bill_calls(calls: Sequence[CompactionCall], model: str, *, api: str | None = None,
               provider: str | None = None, note: str | None = None) -> CompactionBill:
    """Input and output tokens of ``calls`` as ``model``'s provider bills them.

    Input: each request's text (:func:`summary_request` through ``bill_request``, as a
    question's text is counted); output: the reply's text through ``billed_text_tokens``.
    """
    if not calls:
        return NO_CALLS
    inputs, outputs, methods = 0, 0, set()
    for call in calls:
        bill = bill_request(summary_request(call.system_prompt, call.user_prompt), model,
                            api=api, provider=provider)
        inputs += bill.text_tokens
        methods.add(bill.text_token_method)
        if call.reply_text:
            tokens, method = billed_text_tokens(call.reply_text, model)
            outputs += tokens
            methods.add(method)
    return CompactionBill(calls=len(calls), input_tokens=inputs, output_tokens=outputs,
                          model=model, token_method=", ".join(sorted(methods)), note=note)
