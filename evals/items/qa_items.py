"""Dataset items: what every dataset hands the harness.

Why a shared item type: the harness renders each item's history once per shape and asks every
question of the item against those frames (and against the plain text, for the text-only arm).
Scoring needs the gold answers; the offline OCR reader needs the evidence sentence so it can
locate the answer in a transcript, which is only sound if that sentence really occurs verbatim in
the history. `QAItem` therefore refuses to exist unless every evidence string is in `history`.

Ids are content hashes, so the same text and questions give the same ids on every machine and
every run, and records can be joined on them without parsing anything. `meta` (read-only after
construction) is descriptive only: it takes no part in equality or hashing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

ID_HEX_CHARS = 16  # 64 bits of a sha256: collisions are not a concern at eval scale


def content_id(*parts: Any) -> str:
    """A short, stable hex digest of JSON-serializable parts (order matters)."""
    payload = json.dumps(parts, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:ID_HEX_CHARS]


def _frozen_mapping(value: Mapping | None) -> Mapping:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True, eq=True)
class Question:
    """One question with its gold answers and the sentence (or output line) that holds them.

    `answers` are alternatives: scoring takes the best match over them. `evidence` is verbatim
    text of the item's history. `meta` carries dataset-specific facts (kind, depth, offsets).
    """

    question_id: str
    question: str
    answers: tuple[str, ...]
    evidence: str
    meta: Mapping = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.question_id:
            raise ValueError("Question.question_id must be a non-empty string")
        if not self.question.strip():
            raise ValueError(f"question {self.question_id}: question text is empty")
        answers = tuple(self.answers)
        if not answers or any(not isinstance(a, str) or not a.strip() for a in answers):
            raise ValueError(f"question {self.question_id}: needs at least one non-empty answer")
        if not self.evidence.strip():
            raise ValueError(f"question {self.question_id}: evidence is empty")
        object.__setattr__(self, "answers", answers)
        object.__setattr__(self, "meta", _frozen_mapping(self.meta))

    def answer_span(self) -> tuple[int, int] | None:
        """Where the first gold answer sits inside `evidence` (start, end), if it is extractive.

        Datasets that know the exact position (SQuAD's answer_start) store it in
        meta["answer_start_in_evidence"]; otherwise the first occurrence is used. None for
        derived answers (e.g. an indentation width) that do not appear in the evidence.
        """
        answer = self.answers[0]
        start = self.meta.get("answer_start_in_evidence")
        if start is None:
            start = self.evidence.find(answer)
        if start < 0 or self.evidence[start : start + len(answer)] != answer:
            return None
        return start, start + len(answer)

    def to_dict(self) -> dict:
        return {
            "question_id": self.question_id,
            "question": self.question,
            "answers": list(self.answers),
            "evidence": self.evidence,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Question:
        return cls(
            question_id=data["question_id"],
            question=data["question"],
            answers=tuple(data["answers"]),
            evidence=data["evidence"],
            meta=data.get("meta", {}),
        )


@dataclass(frozen=True, eq=True)
class QAItem:
    """One history to render plus every question asked against it.

    `history` is raw text; the harness serializes and normalizes it exactly as production would.
    `seed` is the generator seed that produced the item (0 for loaded data such as SQuAD).
    """

    item_id: str
    dataset: str
    history: str
    questions: tuple[Question, ...]
    seed: int
    meta: Mapping = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.item_id:
            raise ValueError("QAItem.item_id must be a non-empty string")
        if not self.history:
            raise ValueError(f"item {self.item_id}: history is empty")
        questions = tuple(self.questions)
        if not questions:
            raise ValueError(f"item {self.item_id}: has no questions")
        seen: set[str] = set()
        for q in questions:
            if not isinstance(q, Question):
                raise ValueError(f"item {self.item_id}: questions must be Question, got {type(q)}")
            if q.question_id in seen:
                raise ValueError(f"item {self.item_id}: duplicate question_id {q.question_id!r}")
            seen.add(q.question_id)
            if q.evidence not in self.history:
                raise ValueError(
                    f"item {self.item_id}: evidence of question {q.question_id!r} does not occur "
                    f"verbatim in the history: {q.evidence[:80]!r}"
                )
        object.__setattr__(self, "questions", questions)
        object.__setattr__(self, "meta", _frozen_mapping(self.meta))

    def evidence_offset(self, question: Question) -> int:
        """Character offset of the question's evidence in the history (first occurrence)."""
        return self.history.index(question.evidence)

    def to_dict(self) -> dict:
        return {
            "item_id": self.item_id,
            "dataset": self.dataset,
            "history": self.history,
            "questions": [q.to_dict() for q in self.questions],
            "seed": self.seed,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> QAItem:
        return cls(
            item_id=data["item_id"],
            dataset=data["dataset"],
            history=data["history"],
            questions=tuple(Question.from_dict(q) for q in data["questions"]),
            seed=int(data["seed"]),
            meta=data.get("meta", {}),
        )


def make_item(
    dataset: str, history: str, questions: list[Question], seed: int, meta: Mapping
) -> QAItem:
    """Build an item whose id is a hash of its dataset, history and questions."""
    item_id = f"{dataset}-" + content_id(
        dataset, history, [(q.question_id, q.question, list(q.answers)) for q in questions]
    )
    return QAItem(item_id, dataset, history, tuple(questions), seed, meta)
