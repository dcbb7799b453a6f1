"""One record row per planned question: the coordinates, what was sent, what came back, the score.

Why one function: every row (answered, failed or skipped) is built here from the plan and the
response, so a field is filled the same way whichever path produced the row. ``make_record``
fills the row's groups (``evals.store.record_groups``) one step each: coordinates, context,
frames, tokens and bill, answer and score, provenance.
"""


from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.items import prompts
from evals.items.qa_items import Question
from evals.items.sessions import SessionItem
from evals.pipeline.plan import QA_READER, Planned
from evals.pipeline.probe_grading import grade
from evals.pipeline.reader_side import READER_LABEL_KEY, reader_label
from evals.replay.contexts import Context, compaction_model
from evals.send.price_map import price_of
from evals.spec.provenance import Versions, offline_reader_version
from evals.spec.run_spec import RunSpec
from evals.store.record_groups import (
    AnswerAndScore,
    ContextFacts,
    Coordinates,
    Provenance,
    SentFrames,
    TokensAndBill,
)
from evals.store.records import Record, append_records
from snapcompact.pricing import prompt_cache_rule

OCR_NOTE = "offline OCR reader: legibility floor, not a model ranking"
#: The question's meta kept in its row: where it sits, its probe kind and what grades it.
QUESTION_META = ("depth", "template", "place", "probe", "keywords", "lure_answer",
                 "evidence_message", "evidence_line")
_FLUSH_ROWS = 64
_FLUSH_SECONDS = 2.0


# --------------------------------------------------------------------------------------------
# rows


def make_record(p: Planned | None, response: Any, spec: RunSpec, run_id: str, v: Versions, *,
                item: SessionItem | None = None, context: Context | None = None,
                question: Question | None = None,
                reading: Mapping[str, Any] | None = None) -> Record:
    """The row for one answered (or failed) request, or for a skipped question (``p`` None);
    ``reading`` is the offline reader's reading of it (``evals.store.transcripts``: transcript hash,
    evidence and answer spans). Each group of the row is filled by its own step below."""
    item = p.item if p is not None else item
    context = p.context if p is not None else context
    question = p.question if p is not None else question
    assert item is not None and context is not None and question is not None
    return Record(
        coordinates=_coordinates(spec, run_id, item, context, question),
        context=_context_facts(item, context, question),
        images=_sent_frames(context),
        tokens=_tokens_and_bill(p, response, spec, item, context),
        outcome=_answer_and_score(p, response, question, reading),
        provenance=_provenance(spec, v),
    )


def _coordinates(spec: RunSpec, run_id: str, item: SessionItem, context: Context,
                 question: Question) -> Coordinates:
    """Which measurement: the item and question, the model line, the arm and the seed."""
    model = spec.model
    return Coordinates(
        run_id=run_id,
        experiment=spec.experiment,
        dataset=item.dataset,
        item_id=item.item_id,
        question_id=question.question_id,
        model=model.model_for(QA_READER),
        target_model=model.target_model,
        arm="image" if context.frame_hashes else "text",
        shape=context.shape,
        frame_size=context.frame_size,
        reader=QA_READER,
        seed=item.seed,
        strategy=context.arm.strategy,
        policy=context.arm.policy,
        shape_requested=context.arm.shape.name if context.arm.is_snapcompact else "",
        context_window=spec.context_window,
        research=spec.research.label,
        summarizer=spec.summarizer.litellm_id if spec.summarizer is not None else None,
        model_config=model.name,
        api=model.api,
        provider=model.provider,
        price_model=model.price_model,
        image_detail=model.image_detail,
        settings=dict(spec.settings_overrides),
    )


def _context_facts(item: SessionItem, context: Context, question: Question) -> ContextFacts:
    """The replayed context: compactions, where the question's evidence went, the agent's
    maintenance and whether production would send it."""
    return ContextFacts(
        history_chars=item.history_chars,
        compactions=context.compactions,
        evidence_round=context.discarded_round[item.evidence_index[question.question_id]],
        frames_evicted=context.frames_evicted,
        text_tail_chars=context.text_tail_chars,
        truncated_chars=context.truncated_chars,
        context_hash=context.context_hash,
        sent_hash=context.sent_hash,
        same_context_as=context.same_context_as,
        skipped=context.skipped,
        replay_warnings=tuple(context.replay_warnings[:5]),
        replay_warnings_total=context.replay_warnings_total,
        methods_used=dict(context.methods_used or {}),
        context_tokens_estimate=context.context_tokens_estimate or None,
        agent_token_method=context.agent_token_method,
        fits_window=context.fits_window,
        production_valid=context.production_valid,
        production_note=context.production_note,
        summary_stand_in=context.summary_stand_in,
    )


def _sent_frames(context: Context) -> SentFrames:
    """The frames the context carries and how each image is read and billed."""
    return SentFrames(
        frames=len(context.frame_hashes),
        frame_px=context.frame_px,
        frame_hashes=context.frame_hashes,
        frames_by_shape=dict(context.frames_by_shape or {}),
        shape_asked=context.shape_asked,
        shape_asked_drawn=context.shape_asked_drawn,
        frame_cap=context.frame_cap,
        bill_rules=tuple(context.bill_rules),
        seen_px=tuple(tuple(s) for s in context.seen_px),
        image_tokens_per_frame=tuple(context.image_tokens),
    )


def _tokens_and_bill(p: Planned | None, response: Any, spec: RunSpec, item: SessionItem,
                     context: Context) -> TokensAndBill:
    """The request's predicted and reported tokens and dollars, its prompt cache share, and the
    session's compaction calls. A skipped question (``p`` None) reports the context's text."""
    text_tokens = p.text_tokens if p is not None else context.text_tokens_without_question
    cache_use = p.cache_use if p is not None else None
    return TokensAndBill(
        text_tokens=text_tokens,
        text_token_method=context.text_token_method,
        predicted_image_tokens=context.predicted_image_tokens,
        predicted_prompt_tokens=text_tokens + context.predicted_image_tokens,
        predicted_cost_usd=p.predicted_cost_usd if p is not None else None,
        reported_prompt_tokens=response.prompt_tokens if response is not None else None,
        reported_completion_tokens=response.completion_tokens if response is not None else None,
        reported_reasoning_tokens=response.reasoning_tokens if response is not None else None,
        reported_cost_usd=response.cost_usd if response is not None else None,
        predicted_completion_tokens=spec.reader.answer_max_tokens,
        predicted_spend_usd=p.predicted_spend_usd if p is not None else 0.0,
        prompt_cache_rule=_rule_id(spec) if cache_use is not None else None,
        predicted_cache_write_tokens=cache_use.written if cache_use else 0,
        predicted_cache_read_tokens=cache_use.read if cache_use else 0,
        predicted_cost_cached_usd=p.predicted_cost_cached_usd if p is not None else None,
        reported_cache_write_tokens=(response.cache_write_tokens if response is not None
                                     else None),
        reported_cache_read_tokens=(response.cache_read_tokens if response is not None
                                    else None),
        stable_prefix_tokens=context.stable_prefix_tokens,
        full_history_prompt_tokens=(p.full_history_prompt_tokens if p is not None
                                    else context.full_history_tokens),
        compaction_cost_tokens=context.compaction_cost_tokens,
        **_compaction_fields(context, spec, len(item.questions)),
    )


def _answer_and_score(p: Planned | None, response: Any, question: Question,
                      reading: Mapping[str, Any] | None) -> AnswerAndScore:
    """The question, what came back and its score (a failed or skipped question scores 0)."""
    answer = ""
    em, f1, correct, abstained = 0.0, 0.0, False, False
    if p is not None:
        answer = response.answer if response.answer is not None else ""
        if response.error is None:
            g = grade(answer, question.answers, question.meta)
            em, f1, correct, abstained = g.em, g.f1, g.correct, g.abstained
    return AnswerAndScore(
        answer=answer,
        latency_s=response.latency_s if response is not None else None,
        cached=response.cached if response is not None else False,
        error=response.error if response is not None else None,
        attempts=response.attempts if response is not None else 0,
        em=em,
        f1=f1,
        correct=correct,
        abstained=abstained,
        question=question.question,
        gold_answers=question.answers,
        question_kind=question.meta.get("kind"),
        question_meta={k: question.meta[k] for k in QUESTION_META if k in question.meta},
        reading=dict(reading) if reading is not None else None,
        cache_key=response.key if response is not None else None,
    )


def _provenance(spec: RunSpec, v: Versions) -> Provenance:
    """The versions and hashes of what shaped the request, and when the row was written."""
    offline = spec.model.offline_reader
    return Provenance(
        package_version=v.package_version,
        git_sha=v.git_sha,
        shape_table_sha256=v.shape_table_sha256,
        pricing_table_sha256=v.pricing_table_sha256,
        renderer_version=v.renderer_version,
        prompt_version=prompts.PROMPT_VERSION,
        model_shapes_sha256=v.model_shapes_sha256,
        reader_version=offline_reader_version() if offline else None,
        code_sha256=v.code_sha256,
        dependency_versions=dict(v.dependency_versions),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        # the arm's reader (evals.pipeline.reader_side): told evidence or blind; a field of
        # ``extra`` until the committed tables are regenerated with a column for it
        extra={"note": OCR_NOTE, READER_LABEL_KEY: reader_label(spec)} if offline else {},
    )


def _compaction_fields(context: Context, spec: RunSpec, questions: int) -> dict[str, Any]:
    """The context's compaction calls as bill fields (the session's figures, see
    ``TokensAndBill.compaction_billed_tokens``), priced at the model that pays them
    (``evals.replay.contexts.compaction_model``: the session's, unless a real summarizer is
    configured), their input split by its prompt cache as the provider applies it."""
    bill = context.compaction_bill
    priced_by = compaction_model(spec)
    cost: float | None = 0.0
    if bill.calls:
        rule = prompt_cache_rule(priced_by.target_model, api=priced_by.api)
        try:
            cost = price_of(priced_by.price_model).dollars_cached(bill.cache_use, rule,
                                                                   bill.output_tokens)
        except ValueError:  # unpriced (allow_unpriced): unknown, never $0
            cost = None
    return {"compaction_calls": bill.calls, "compaction_input_tokens": bill.input_tokens,
            "compaction_output_tokens": bill.output_tokens,
            "compaction_billed_tokens": bill.billed_tokens,
            "compaction_cache_read_tokens": bill.cache_read_tokens,
            "compaction_cache_write_tokens": bill.cache_write_tokens,
            "compaction_token_method": bill.token_method,
            "compaction_price_model": priced_by.price_model if bill.calls else None,
            "compaction_cost_usd": cost, "compaction_bill_note": bill.note,
            "context_questions": questions, **_session_fields(context, spec, cost)}


def _session_fields(context: Context, spec: RunSpec, compaction_cost: float | None
                    ) -> dict[str, Any]:
    """What the session costs after its first compaction (``TokensAndBill.session_cost_usd``):
    its turn requests at the target's price with the prompt cache applied, their replies, and
    the compaction calls' dollars."""
    turns = context.session_bill
    cost: float | None = None
    if compaction_cost is not None:
        try:
            cost = price_of(spec.model.price_model).dollars_cached(
                turns.cache_use, prompt_cache_rule(spec.model.target_model, api=spec.model.api),
                turns.output_tokens) + compaction_cost
        except ValueError:  # unpriced (allow_unpriced): unknown, never $0
            cost = None
    return {"session_requests": turns.requests, "session_input_tokens": turns.input_tokens,
            "session_cache_read_tokens": turns.cache_read_tokens,
            "session_cache_write_tokens": turns.cache_write_tokens,
            "session_output_tokens": turns.output_tokens,
            "session_billed_tokens": (turns.input_tokens + turns.output_tokens
                                      + context.compaction_bill.billed_tokens),
            "session_cost_usd": cost}


def _rule_id(spec: RunSpec) -> str | None:
    rule = prompt_cache_rule(spec.model.target_model, api=spec.model.api)
    return rule.id if rule is not None else None


class RecordSink:
    """Buffers rows and appends them atomically every few rows or seconds, and at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[Record] = []
        self.written = 0
        self._last = time.monotonic()

    def add(self, record: Record) -> None:
        self.rows.append(record)
        if len(self.rows) >= _FLUSH_ROWS or time.monotonic() - self._last >= _FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.written += append_records(self.path, self.rows)
            self.rows = []
        self._last = time.monotonic()
