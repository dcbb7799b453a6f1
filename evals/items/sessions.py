"""Sessions as eval items: an agent conversation plus the questions asked after it.

Why a second item type: production compacts *conversations*, turn by turn, and the harness must
replay one through the compaction pipeline before it can ask anything. A :class:`SessionItem`
holds the agent messages (the pipeline's JSON shape: user, assistant with tool calls,
toolResult) and questions whose evidence sits verbatim in one of them, so every question can be
traced to the message that held its answer, and from there to the compaction round that
discarded it.

Text datasets (needles, SQuAD, tool output, tiny) still yield :class:`~evals.items.qa_items.QAItem`;
:func:`as_session` packs one into a conversation: the history cut at paragraph or line breaks
into user turns ("here is part k"), each acknowledged by the assistant, never splitting an
evidence sentence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from evals.items.qa_items import QAItem, Question, content_id

__all__ = ["PACK_CHUNK_CHARS", "SessionItem", "as_session", "make_session_item", "message_text"]

#: Characters per user turn when a text item is packed into a conversation.
PACK_CHUNK_CHARS = 6_000


def message_text(message: Mapping[str, Any]) -> str:
    """All text a message carries (text blocks, tool-call arguments, tool output), joined."""
    content = message.get("content")
    pieces: list[str] = []
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, Sequence):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                pieces.append(str(block.get("text", "")))
            elif kind == "toolCall":
                pieces.append(json.dumps(block.get("arguments") or {}, ensure_ascii=False))
    for key in ("summary", "command", "output"):  # summaries, bash executions
        if isinstance(message.get(key), str):
            pieces.append(message[key])
    return "\n".join(pieces)


@dataclass(frozen=True, eq=True)
class SessionItem:
    """One conversation to replay and every question asked at its end."""

    item_id: str
    dataset: str
    messages: tuple[Mapping[str, Any], ...]
    questions: tuple[Question, ...]
    seed: int
    meta: Mapping = field(default_factory=dict, compare=False, hash=False)
    evidence_index: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.item_id:
            raise ValueError("SessionItem.item_id must be a non-empty string")
        messages = tuple(self.messages)
        if not messages:
            raise ValueError(f"item {self.item_id}: the session has no messages")
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
                raise ValueError(f"item {self.item_id}: message {i} is not an object with a 'role'")
        questions = tuple(self.questions)
        if not questions:
            raise ValueError(f"item {self.item_id}: has no questions")
        texts = [message_text(m) for m in messages]
        where: dict[str, int] = {}
        for q in questions:
            if q.question_id in where:
                raise ValueError(f"item {self.item_id}: duplicate question_id {q.question_id!r}")
            hit = next((i for i, t in enumerate(texts) if q.evidence in t), None)
            if hit is None:
                raise ValueError(
                    f"item {self.item_id}: evidence of question {q.question_id!r} occurs verbatim "
                    f"in no message: {q.evidence[:80]!r}")
            where[q.question_id] = hit
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "questions", questions)
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta or {})))
        object.__setattr__(self, "evidence_index", MappingProxyType(where))

    @property
    def history_chars(self) -> int:
        return sum(len(message_text(m)) for m in self.messages)


def make_session_item(dataset: str, messages: Sequence[Mapping[str, Any]],
                      questions: Sequence[Question], seed: int, meta: Mapping) -> SessionItem:
    """A session item whose id hashes its dataset, messages and questions."""
    item_id = f"{dataset}-" + content_id(
        dataset, [dict(m) for m in messages],
        [(q.question_id, q.question, list(q.answers)) for q in questions])
    return SessionItem(item_id, dataset, tuple(dict(m) for m in messages), tuple(questions), seed,
                       meta)


def _cut_points(history: str, evidence_spans: list[tuple[int, int]], chunk: int) -> list[int]:
    """Offsets where the history is cut: near every ``chunk`` chars, at a paragraph or line
    break (else a space), never inside an evidence span."""
    cuts: list[int] = []
    start = 0
    n = len(history)
    while n - start > chunk:
        goal = start + chunk
        cut = -1
        for sep in ("\n\n", "\n", " "):
            lo = start + chunk // 2
            cut = history.rfind(sep, lo, goal)
            if cut > 0:
                cut += len(sep)
                break
        if cut <= start:
            cut = goal
        for a, b in evidence_spans:
            if a < cut < b:
                cut = a if a > start else b
        if cut <= start or cut >= n:
            break
        cuts.append(cut)
        start = cut
    return cuts


def as_session(item: QAItem | SessionItem, chunk_chars: int = PACK_CHUNK_CHARS) -> SessionItem:
    """The item as a conversation (a session item is returned as it is)."""
    if isinstance(item, SessionItem):
        return item
    history = item.history
    spans = []
    for q in item.questions:
        a = history.index(q.evidence)
        spans.append((a, a + len(q.evidence)))
    bounds = [0, *_cut_points(history, spans, chunk_chars), len(history)]
    chunks = [history[a:b] for a, b in zip(bounds, bounds[1:]) if history[a:b]]
    messages: list[dict[str, Any]] = []
    total = len(chunks)
    for k, text in enumerate(chunks, start=1):
        messages.append({"role": "user", "content": [
            {"type": "text", "text": f"Here is part {k} of {total} of the document.\n\n{text}"}]})
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Noted part {k} of {total}."}], "stopReason": "stop"})
    meta = {**dict(item.meta), "packed_from": item.item_id, "pack_chunk_chars": chunk_chars}
    return SessionItem(item.item_id, item.dataset, tuple(messages), item.questions, item.seed, meta)
