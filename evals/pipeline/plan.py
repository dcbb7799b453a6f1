"""Planning a run: every session replayed per arm, every question planned against its context.

Why before sending: the whole run is priced (and looked up in the cache) before the first
request, so a budget refuses it up front and a resumed run skips the rows it already has.
"""


from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evals.items import prompts
from evals.items.datasets import load_dataset
from evals.items.qa_items import Question
from evals.items.sessions import SessionItem, as_session
from evals.pipeline.reader_side import blind_view, offline_metadata
from evals.replay.contexts import Context, build_context, fill_images
from evals.send.client import Request
from evals.send.price_map import UnpricedModel, model_window, price_of, require_price
from evals.send.prompt_cache import MARKER, cache_plan, prompt_cache_key
from evals.spec.provenance import offline_reader_version
from evals.spec.run_spec import RunSpec
from evals.store.records import (
    RECORDS_FILE,
    ContextStore,
    FrameStore,
    completed_keys,
    record_key,
)
from evals.store.sent_index import SentIndex
from evals.support.console import console
from snapcompact.billing import billed_text_tokens, cache_uses
from snapcompact.compaction import user_question, with_cache_breakpoint

QA_READER = "qa"


def _dollars(price_model: str, prompt_tokens: int, completion_tokens: int,
             use: Any = None, rule: Any = None) -> float | None:
    """The target's dollars; with ``use`` (a :class:`snapcompact.billing.CacheUse`), its
    prompt billed as written, read and uncached tokens at ``rule``'s multipliers."""
    try:
        price = price_of(price_model)
    except ValueError:
        return None
    if use is None:
        return price.dollars(prompt_tokens, completion_tokens)
    return price.dollars_cached(use, rule, completion_tokens)


def check_prices(spec: RunSpec, log: Callable[[str], None] = console) -> tuple[str, ...]:
    """Refuse a run whose dollars would be unknown, before anything is replayed or sent.

    Every price model the run bills (the target's, and the summarizer's when one is set) must
    have a price row; otherwise :class:`~evals.send.price_map.UnpricedModel` names it and the
    closest priced ids. With ``allow_unpriced`` the run goes on: the ids are returned and a
    warning says the dollars are unknown and the budget cannot guard them.
    """
    roles = [("model.price_model", spec.model.price_model)]
    if spec.summarizer is not None:
        roles.append(("summarizer.price_model", spec.summarizer.price_model))
    unpriced: list[str] = []
    for role, model in roles:
        try:
            require_price(model, role)
        except UnpricedModel as exc:
            if not spec.allow_unpriced:
                raise
            log(f"warning: {exc.problem}; allow_unpriced=true: its dollars are unknown and the "
                "budget cannot guard them")
            unpriced.append(model)
    return tuple(unpriced)


# --------------------------------------------------------------------------------------------
# planned questions


@dataclass(frozen=True)
class Planned:
    """One question against one context, and the row it becomes. Images by hash only."""

    item: SessionItem
    question: Question
    context: Context
    model_id: str
    question_text: str
    params: Mapping[str, Any]
    metadata: Mapping[str, Any]
    text_tokens: int  # the request's text: the context's text + the question
    predicted_completion_tokens: int
    predicted_cost_usd: float | None  # the target model's dollars (input + output bound)
    predicted_spend_usd: float  # what the budget reserves: what calling model_id costs
    evidence_round: int
    # the provider's prompt cache (evals.send.prompt_cache): this request's predicted use of it,
    # the target's dollars with it, and how the request asks for it
    cache_use: Any = None  # snapcompact.billing.CacheUse | None (None: predicted uncached)
    predicted_cost_cached_usd: float | None = None
    cache_mark: bool = False  # a cache_control breakpoint at the end of the context
    cache_group: int = 0  # requests of one group share a context: sent back to back

    @property
    def question_id(self) -> str:
        return self.question.question_id

    @property
    def predicted_prompt_tokens(self) -> int:
        return self.context.predicted_image_tokens + self.text_tokens

    def key(self, spec: RunSpec) -> tuple:
        c = self.context
        return record_key(self.item.dataset, self.item.item_id, self.question_id, self.model_id,
                          spec.model.target_model, c.shape, c.frame_size, QA_READER,
                          self.item.seed, c.arm.strategy, c.arm.policy,
                          c.arm.shape.name if c.arm.is_snapcompact else "",
                          spec.context_window, spec.research.label,
                          spec.summarizer.litellm_id if spec.summarizer is not None else None)

    def messages(self, data_url: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
        """The request: the context (placeholders, or images when ``data_url`` is given) and
        the question as the next user message."""
        context = (fill_images(self.context.messages, self.context.frame_hashes, data_url)
                   if data_url is not None else [dict(m) for m in self.context.messages])
        messages = [*context, user_question(self.question_text)]
        if self.cache_mark:
            messages = with_cache_breakpoint(messages, len(context), MARKER)
        return messages

    def request(self, data_url: Callable[[str], str] | None = None):
        return Request(
            model=self.model_id,
            messages=self.messages(data_url),
            params=dict(self.params),
            frame_hashes=self.context.pixel_hashes,  # the cache keys on pixels, not PNG bytes
            metadata=dict(self.metadata),
            predicted_prompt_tokens=self.predicted_prompt_tokens,
            predicted_cost_usd=self.predicted_spend_usd,
        )


def plan_questions(item: SessionItem, context: Context, spec: RunSpec,
                   ocr_cache_dir: str | None) -> list[Planned]:
    """Every question of one item against one context (none when the context was skipped)."""
    if context.skipped is not None:
        return []
    model = spec.model
    plan = cache_plan(model, model.model_for(QA_READER), spec.prompt_cache)
    out: list[Planned] = []
    questions = item.questions[: spec.max_questions_per_item]
    texts = [prompts.question_text(q.question) for q in questions]
    q_tokens_of = [billed_text_tokens(t, model.target_model)[0] for t in texts]
    prefix = context.text_tokens_without_question + context.predicted_image_tokens
    uses = (cache_uses(plan.rule, prefix, [prefix + q for q in q_tokens_of]) if plan.on
            else [None] * len(questions))
    for question, text, q_tokens, use in zip(questions, texts, q_tokens_of, uses, strict=True):
        text_tokens = context.text_tokens_without_question + q_tokens
        prompt_tokens = text_tokens + context.predicted_image_tokens
        completion = spec.reader.answer_max_tokens
        target_cost = _dollars(model.price_model, prompt_tokens, completion)
        cached_cost = (_dollars(model.price_model, prompt_tokens, completion, use, plan.rule)
                       if use is not None else target_cost)
        params: dict[str, Any] = {**model.params,
                                  "max_tokens": completion + model.reasoning_headroom_tokens}
        if plan.keyed:  # an arm repeating another's context is asked exactly as that one
            params["prompt_cache_key"] = prompt_cache_key(
                item.item_id, context.same_context_as or context.arm.label)
        if context.tools:  # the context calls tools: declare them; the question needs none
            params["tools"] = [dict(t) for t in context.tools]
            if not model.model_for(QA_READER).startswith("bedrock/"):
                # Bedrock's Converse has no "none" (auto/any/tool only; litellm refuses it
                # before sending): its default, auto, is left in place there
                params["tool_choice"] = "none"
        metadata: dict[str, Any] = {}
        if model.offline_reader:
            metadata = offline_metadata(spec, question, context, prompt_tokens, ocr_cache_dir)
            # the target's resize and the reader's own code change the answer but not the
            # prompt: make them part of the cache key
            params["reader_view"] = {"target_model": model.target_model, "api": model.api,
                                     "provider": model.provider,
                                     "seen_px": [list(s) for s in context.seen_px],
                                     "reader": offline_reader_version(),
                                     **blind_view(spec)}
            spend = 0.0
        else:
            billed = cached_cost if plan.sent else target_cost
            spend = billed if billed is not None else 0.0
        out.append(Planned(
            item=item, question=question, context=context, model_id=model.model_for(QA_READER),
            question_text=text, params=params, metadata=metadata, text_tokens=text_tokens,
            predicted_completion_tokens=completion, predicted_cost_usd=target_cost,
            predicted_spend_usd=spend,
            evidence_round=context.discarded_round[item.evidence_index[question.question_id]],
            cache_use=use, predicted_cost_cached_usd=cached_cost, cache_mark=plan.mark))
    return out


def _consecutive(groups: Sequence[Sequence[Planned]]) -> list[Planned]:
    """Group after group: the questions about one context back to back, each group numbered
    (the send layer answers a group's first question before sending the others, so that the
    provider's prompt cache is written once and read by the rest within its lifetime)."""
    import dataclasses

    out: list[Planned] = []
    for number, group in enumerate(groups):
        out.extend(dataclasses.replace(p, cache_group=number) for p in group)
    return out


def _interleave(groups: Sequence[Sequence[Planned]]) -> list[Planned]:
    """Round-robin over (item, arm) groups, so questions about one frame set are spread out.

    The offline reader transcribes a frame once and reuses the transcript; asking two questions
    about the same frames at the same moment would transcribe them twice.
    """
    out: list[Planned] = []
    depth = max((len(g) for g in groups), default=0)
    for i in range(depth):
        out.extend(g[i] for g in groups if i < len(g))
    return out


@dataclass
class Plan:
    """Everything a run would send, before anything is sent."""

    planned: list[Planned]
    skipped_done: int
    items: int
    contexts: list[tuple[SessionItem, Context]] = field(default_factory=list)


def same_context(context: Context, first_of: dict[str, str]) -> Context:
    """``context`` marked ``same_context_as`` the first arm of its item that sent the same bytes.

    ``first_of`` maps each sent hash seen so far for the item to its first arm's label (it is
    updated). Two arms that send byte-identical contexts are one measurement: the second is
    asked exactly as the first (same request, so the response cache answers it and nothing is
    billed twice) and its rows say whose measurement they repeat.
    """
    if context.skipped is not None or not context.sent_hash:
        return context
    first = first_of.setdefault(context.sent_hash, context.arm.label)
    if first == context.arm.label:
        return context
    return replace(context, same_context_as=first)


def context_warnings(context: Context) -> list[str]:
    """What a console line must say about an arm whose label is not what it measured."""
    out = []
    if context.same_context_as is not None:
        out.append(f"same context as {context.same_context_as} (byte-identical: asked once, "
                   f"recorded as same_context_as={context.same_context_as})")
    if context.shape_asked_drawn is False:
        drawn = ", ".join(f"{n} x {k}" for k, n in sorted((context.frames_by_shape or {}).items()))
        out.append(f"no frame drawn in {context.shape_asked} (drawn: {drawn or context.shape}): "
                   "this arm does not measure the shape it names")
    return out


def load_items(spec: RunSpec) -> list[SessionItem]:
    items = load_dataset(spec.dataset.name, **dict(spec.dataset.params))
    if spec.max_items is not None:
        items = items[: spec.max_items]
    if not items:
        raise ValueError(f"dataset {spec.dataset.name!r} gave no items")
    return [as_session(item) for item in items]


def build_plan(spec: RunSpec, run_dir: Path, *, log: Callable[[str], None] = console,
               summarizer: Callable[..., Any] | None = None) -> Plan:
    """Replay every (item, arm) once and plan every question; drop rows already recorded."""
    frames = None if spec.dry_run else FrameStore(run_dir / "frames")
    contexts = None if spec.dry_run else ContextStore(run_dir / "contexts")
    ocr_dir = str(spec.ocr_cache_dir) if spec.ocr_cache_dir is not None else None
    items = load_items(spec)

    window = model_window(spec.model.price_model)
    groups: list[list[Planned]] = []
    built: list[tuple[SessionItem, Context]] = []
    started = time.perf_counter()
    index = SentIndex(spec.cache_dir.parent / "sent", run_dir.name, read_only=spec.dry_run)
    for item in items:
        first_of: dict[str, str] = {}  # sent_hash -> the first arm that sends it
        for arm in spec.arms():
            begun = time.perf_counter()
            context = build_context(item, arm, spec, frames=frames, contexts=contexts,
                                    complete=summarizer, model_window=window)
            context = same_context(context, first_of)
            if context.same_context_as is None and context.skipped is None:
                # another job of the sweep (same results_dir) may have sent it already
                earlier = index.first(context.sent_hash, arm.label)
                if earlier is not None:
                    context = replace(context, same_context_as=earlier)
            built.append((item, context))
            note = f"; skipped: {context.skipped}" if context.skipped else ""
            log(f"  {item.item_id} {arm.label}: {context.compactions} compactions, "
                f"{len(context.frame_hashes)} frames, "
                f"{context.text_tokens_without_question + context.predicted_image_tokens:,} "
                f"context tokens "
                f"({time.perf_counter() - begun:.1f} s){note}")
            for warning in context_warnings(context):
                log(f"  {item.item_id} {arm.label}: {warning}")
            groups.append(plan_questions(item, context, spec, ocr_dir))
    # The offline reader: round-robin (it transcribes a frame once; two questions about the
    # same frames at once would transcribe them twice). Real providers: consecutive, for their
    # prompt caches (which expire after minutes).
    planned = (_interleave(groups) if spec.model.offline_reader or not spec.prompt_cache
               else _consecutive(groups))
    log(f"planned {len(planned)} requests over {len(items)} items and {len(spec.arms())} arms "
        f"(replay took {time.perf_counter() - started:.1f} s)")
    done = completed_keys(run_dir / RECORDS_FILE)
    todo = [p for p in planned if p.key(spec) not in done]
    return Plan(planned=todo, skipped_done=len(planned) - len(todo), items=len(items),
                contexts=built)
