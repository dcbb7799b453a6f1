"""What the offline readers are told beside the prompt, and what a row calls its reader.

Why here: the told reader (``snapocr/context-qa``) gets the question's evidence and gold answers
in litellm metadata; the blind reader (``snapblind/context-qa``, ``reader=blind``) gets neither.
A never-stated probe (``evals.items.probes``) has no evidence to tell: the told reader is handed
its lure line with the lure's value and an evidence threshold no match reaches
(:data:`UNREACHABLE_SCORE`), so it abstains -- told there is nothing to find, the legibility floor
answers as an oracle would. The request is otherwise the same, so the two readers' rows differ
only by the reader.
"""

from __future__ import annotations

from typing import Any

from evals.blind import blind_reader_version
from evals.blind.provider import BLIND_LABEL, TOLD_LABEL, blind_metadata
from evals.items.probes import NEVER_STATED, probe_of
from evals.items.qa_items import Question
from evals.readers.provider import reader_metadata
from evals.replay.contexts import Context
from evals.spec.run_spec import RunSpec

#: Above rapidfuzz's 0-100 scale: the told reader's locator finds nothing and abstains.
UNREACHABLE_SCORE = 101.0
#: The reader column of a real model's rows.
MODEL_LABEL = "model"
#: Where a row keeps its reader label: ``Record.extra[READER_LABEL_KEY]``.
READER_LABEL_KEY = "reader_label"


def is_blind(spec: RunSpec) -> bool:
    return spec.model.offline_reader and spec.reader.locate == "blind"


def reader_label(spec: RunSpec) -> str:
    """The row's ``reader_label``: told evidence (legibility floor), blind, or a model."""
    if not spec.model.offline_reader:
        return MODEL_LABEL
    return BLIND_LABEL if is_blind(spec) else TOLD_LABEL


def blind_view(spec: RunSpec) -> dict[str, str]:
    """The blind reader's code hash for the request's cache key (nothing for the told one, so
    its cache keys stay as they were)."""
    return {"blind_reader": blind_reader_version()} if is_blind(spec) else {}


def offline_metadata(spec: RunSpec, question: Question, context: Context, prompt_tokens: int,
                     ocr_cache_dir: str | None) -> dict[str, Any]:
    """The offline reader's side channel for one question."""
    seen = list(context.seen_px)
    if is_blind(spec):
        return blind_metadata(seen, prompt_tokens, ocr_cache_dir)
    if probe_of(question.meta)[0] == NEVER_STATED:
        return reader_metadata(
            evidence=question.evidence, answers=[str(question.meta["lure_answer"])],
            seen_sizes=seen, billed_prompt_tokens=prompt_tokens, ocr_cache_dir=ocr_cache_dir,
            min_evidence_score=UNREACHABLE_SCORE)
    return reader_metadata(
        evidence=question.evidence, answers=question.answers, seen_sizes=seen,
        billed_prompt_tokens=prompt_tokens, ocr_cache_dir=ocr_cache_dir)
