"""What a strategy's own compaction calls cost: every summary request it made, billed.

Why a module of its own: a handoff document or an LLM (soft) summary is itself a request over
the whole context it summarizes, input and output, and nothing caches it (its prompt is new
text). A strategy's recall per billed token must carry that bill; snapcompact renders its
frames locally and makes no request, truncate drops the history and makes none. A question's
bill (:func:`.request.bill_request`) says nothing about these calls, and a summarizer's reported
usage can say too little (a mock reports a few dozen tokens for a 100k-token request; an oracle
reports none).

So the calls are counted from what was asked and answered: each :class:`CompactionCall` (the
exact system and user prompt the library built, the text that came back) as the request
:func:`summary_request` shapes, through :func:`.request.bill_request` for the summarizer's model
line (its text counter, named in ``token_method``), and the reply through
:func:`.request.billed_text_tokens`. Whoever runs the maintenance gathers the calls (the
harness wraps its completion function, ``evals.replay.compaction_bill.CallRecorder``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from snapcompact.billing.request import bill_request, billed_text_tokens

__all__ = ["NO_CALLS", "CompactionBill", "CompactionCall", "bill_calls", "summary_request"]


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


#: The bill of a replay that made no summary request (every figure 0, no counter named).
NO_CALLS = CompactionBill(calls=0, input_tokens=0, output_tokens=0, model=None,
                          token_method=None)


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
