"""The agent's local token estimate of one message, the number every compaction count rests on.

Why a module of its own: cut points, the keep budget, pruning savings, thresholds and branch
budgets all add these numbers up, so they must be the agent core's numbers exactly (its
``Tokenizer.countMessage`` for a model without a native tokenizer family), and a caller with a
better counter (a real tokenizer for its model) must be able to swap it in everywhere at once.

The rule, fragment by fragment: every text fragment of a message is counted on its own as
``ceil(UTF-8 bytes / 4)`` and the fragments are summed (not the characters of the whole message);
a plain image block adds 1,200 tokens and a snapcompact frame of a compaction summary 5,024.
Which fragments a role contributes:

- user, developer, custom, hookMessage, toolResult: the content string, or each non-empty text
  block (image blocks add the image charge);
- assistant: text blocks, thinking text and its signature, each tool call's name and its
  arguments as compact JSON (``null`` when absent), redacted-thinking data, server-tool blocks
  as JSON (signatures, redacted data and server-tool blocks are left out when
  ``exclude_encrypted_reasoning`` is set);
- bashExecution: the command and the output (also when the execution is excluded from context);
- branchSummary: the summary; compactionSummary: the summary plus the text of its archive
  blocks, each archive frame at the frame charge;
- anything else: 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.archive import archive_blocks

__all__ = [
    "DEFAULT_ESTIMATOR",
    "FRAME_TOKEN_ESTIMATE",
    "IMAGE_TOKEN_ESTIMATE",
    "TokenEstimator",
    "byte_estimate",
    "js_json",
    "utf8_len",
    "utf16_len",
]

#: Tokens charged for an ordinary image block (what providers typically bill for an inline image).
IMAGE_TOKEN_ESTIMATE = 1200
#: Tokens charged for each snapcompact frame of a compaction summary (ceil(4784 * 1.05)).
FRAME_TOKEN_ESTIMATE = 5024


def utf8_len(text: str) -> int:
    """UTF-8 byte length; a lone surrogate counts 3 bytes, as the replacement character does in
    JS."""
    return len(text.encode("utf-8", "surrogatepass"))


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (what a JavaScript ``string.length`` reports)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def byte_estimate(fragments: Sequence[str]) -> int:
    """Sum over fragments of ``ceil(bytes / 4)``: the agent's estimate without a native
    tokenizer."""
    return sum((utf8_len(f) + 3) >> 2 for f in fragments)


def _js_value(value: Any) -> Any:
    if (isinstance(value, float) and math.isfinite(value) and value.is_integer()
            and abs(value) < 1e21):
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _js_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_js_value(v) for v in value]
    return value


def js_json(value: Any) -> str:
    """Compact JSON as JavaScript's ``JSON.stringify`` writes it (integral floats without
    ``.0``)."""
    return json.dumps(_js_value(value), ensure_ascii=False, separators=(",", ":"), default=str)


def _blocks(content: Any) -> Sequence[Mapping[str, Any]]:
    if isinstance(content, Sequence) and not isinstance(content, str):
        return [b for b in content if isinstance(b, Mapping)]
    return ()


@dataclass(frozen=True)
class TokenEstimator:
    """Counts a message's tokens; inject one to change the counter or the image charges.

    ``count_text`` receives all text fragments of one message and returns their token count
    (default: :func:`byte_estimate`; pass a real tokenizer's counter for exact numbers:
    ``text_counters.estimator_for(model_id, setting)`` builds one as production counts).
    ``archive_blocks`` turns a compactionSummary message into its history blocks (text and
    frames) when it carries a snapcompact archive, else None.
    """

    image_tokens: int = IMAGE_TOKEN_ESTIMATE
    frame_tokens: int = FRAME_TOKEN_ESTIMATE
    count_text: Callable[[Sequence[str]], int] = byte_estimate
    exclude_encrypted_reasoning: bool = False
    archive_blocks: Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]] | None] | None = (
        archive_blocks)
    #: Tokens one archive frame block counts; None = the flat ``frame_tokens`` (production).
    #: The research knob ``snapcompact.frameCharge = "billed"`` passes the provider's bill.
    frame_charge: Callable[[Mapping[str, Any]], int] | None = None

    def __post_init__(self) -> None:
        for name in ("image_tokens", "frame_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"TokenEstimator {name} must be a non-negative integer, got "
                                 f"{value!r}")

    def fragments(self, message: Mapping[str, Any]) -> tuple[list[str], int]:
        """The text fragments a message is counted by, and its fixed image/frame charge."""
        role = message.get("role")
        out: list[str] = []
        extra = 0
        if role == "bashExecution":
            for key in ("command", "output"):
                if isinstance(message.get(key), str):
                    out.append(message[key])
            return out, 0
        if role in ("user", "developer", "custom", "hookMessage", "toolResult"):
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            for block in _blocks(content):
                if block.get("type") == "text" and block.get("text"):
                    out.append(str(block["text"]))
                elif block.get("type") == "image":
                    extra += self.image_tokens
        elif role == "assistant":
            skip_opaque = self.exclude_encrypted_reasoning
            for block in _blocks(message.get("content")):
                kind = block.get("type")
                if kind == "text":
                    out.append(str(block.get("text", "")))
                elif kind == "thinking":
                    out.append(str(block.get("thinking", "")))
                    if block.get("thinkingSignature") and not skip_opaque:
                        out.append(str(block["thinkingSignature"]))
                elif kind == "toolCall":
                    out.append(str(block.get("name", "")))
                    out.append(js_json(block.get("arguments")) if "arguments" in block else "null")
                elif kind == "redactedThinking" and not skip_opaque:
                    out.append(str(block.get("data", "")))
                elif kind == "anthropicServerTool" and not skip_opaque:
                    out.append(js_json(block.get("block")) if "block" in block else "null")
        elif role in ("branchSummary", "compactionSummary"):
            out.append(str(message.get("summary", "")))
            if role == "compactionSummary":
                blocks = self.archive_blocks(message) if self.archive_blocks is not None else None
                if blocks is None and isinstance(message.get("blocks"), Sequence):
                    blocks = _blocks(message["blocks"])
                if blocks is not None:
                    for block in blocks:
                        if block.get("type") == "text":
                            out.append(str(block.get("text", "")))
                        elif self.frame_charge is not None:
                            extra += self.frame_charge(block)
                        else:
                            extra += self.frame_tokens
                elif isinstance(message.get("images"), Sequence):
                    extra += len(message["images"]) * self.frame_tokens
        return out, extra

    def message(self, message: Mapping[str, Any]) -> int:
        """Estimated tokens of one agent message."""
        fragments, extra = self.fragments(message)
        return extra + (self.count_text(fragments) if fragments else 0)

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Estimated tokens of a message list: the sum over its messages."""
        return sum(self.message(m) for m in messages)


DEFAULT_ESTIMATOR = TokenEstimator()
