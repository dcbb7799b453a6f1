"""What a provider will bill for one chat request: its text tokens plus every image's tokens.

Why a whole-request bill: a frame saves money only if the *request* it sits in is cheaper than
the same history as text. The compaction pipeline's own estimate (chars/4 and one flat number per
image) decides when to compact; the bill here is what the provider charges for what is sent:
each image priced by :func:`.image.bill_image` at its decoded PNG size (with the provider's
resize, e.g. an older Claude line seeing a 1568 px frame at 1092 px), and the text by
:func:`billed_text_tokens` (the model line's own counter where one exists, exact for OpenAI
models, a labelled estimate elsewhere). Per-message framing tokens that providers add are not
modelled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.billing.image import ImageBill, bill_image
from snapcompact.billing.request_parts import png_size, request_images, request_text
from snapcompact.compaction import byte_estimate, text_counter_for, tokenizer_family
from snapcompact.pricing import count_text_tokens, exact_encoding

__all__ = ["RequestBill", "bill_request", "billed_text_tokens"]


@dataclass(frozen=True)
class RequestBill:
    """Predicted prompt tokens of one request, split by kind."""

    text_tokens: int
    text_token_method: str
    image_tokens: int
    images: tuple[ImageBill, ...]
    text_chars: int

    @property
    def billed_tokens(self) -> int:
        """Text and image tokens together: the predicted prompt bill."""
        return self.text_tokens + self.image_tokens


def billed_text_tokens(text: str, model: str) -> tuple[int, str]:
    """Tokens of ``text`` as ``model``'s provider bills them, and how they were counted.

    The model line's own tokenizer family when it has one (every Claude: claude-v3 and later
    through ``ctok``, the agent's own counter; Kimi, Qwen, GLM, DeepSeek: their calibrated
    estimates), OpenAI's exact tiktoken encoding for OpenAI models, else bytes/4, labelled as
    the estimate it is. The method names the counter in every table that shows the tokens.
    """
    if tokenizer_family(model) is not None:
        counter, method = text_counter_for(model, "auto")
        return counter([text]), method
    if exact_encoding(model) is not None:
        counted = count_text_tokens(text, model)
        return counted.tokens, counted.method
    return byte_estimate([text]), "estimate:bytes4"


def bill_request(messages: Sequence[Mapping[str, Any]], model: str, *, api: str | None = None,
                 provider: str | None = None, detail: str | None = None,
                 tools: Sequence[Mapping[str, Any]] = ()) -> RequestBill:
    """The prompt tokens ``model`` is billed for chat ``messages`` and tool declarations
    (``detail``: default for images that carry none)."""
    text = request_text(messages)
    if tools:
        text += "\n" + json.dumps(list(tools), ensure_ascii=False, separators=(",", ":"))
    text_tokens, text_method = billed_text_tokens(text, model)
    bills = []
    for png, own_detail in request_images(messages):
        width, height = png_size(png)
        bills.append(bill_image(model, width, height, own_detail or detail, api=api,
                                provider=provider))
    return RequestBill(text_tokens=text_tokens, text_token_method=text_method,
                       image_tokens=sum(b.tokens for b in bills), images=tuple(bills),
                       text_chars=len(text))
