"""One run: sessions -> replay through the compaction pipeline -> next-turn context -> questions
-> answers -> scores -> records.

Why this order, and why through the library: the harness is a validation of production. Each
item is a session (a generated agent session, a user's session file, or a text item packed as
a conversation) replayed turn by turn through ``CompactionPipeline`` at ``context_window``
(:mod:`evals.contexts`), once per arm: a strategy (``full``, ``truncate``, ``snapcompact`` x
policy x shape, ``context-full``, ``handoff``). The context a question is asked against is the
pipeline's ``llm_messages()`` for the next turn, as a chat request, plus the question as the next
user message: byte for byte what production would send, billed as the provider bills it.

Every question of the item is asked against that one context; its row says where the answer was
(``evidence_round``: 0 = still in the kept tail, k = discarded by the k-th compaction) and what
the context cost (text and image tokens of the whole request, the summarizer's tokens).

Planning comes before sending: every context is built and every request planned (image data as
placeholders, which the cache key does not read), rows already in ``records.jsonl`` are dropped
(resume), the client prices the rest and looks them up in the response cache (dry run), and the
budget refuses the run before anything is sent if the predicted spend is past ``budget_usd``.
Summarizer calls of the LLM strategies happen during planning, through the same client (cache,
budget, retries): a rerun replays them from the cache.

The offline OCR reader (``model=ocr``) stands in for a target model: it reads the text parts as
text and OCRs every frame at the size the target sees it (from the request bill), told the
evidence and the gold answers in litellm ``metadata``. What changes its answer but not the
prompt (target, seen sizes, its own code) travels as a ``reader_view`` request param, which the
cache key includes. Its numbers are a legibility floor, never a model ranking, and are printed
with ``OCR_NOTE`` wherever they appear.

Progress lines, the plan and the summary go to the ``log`` callable, by default
:data:`evals.reporter.console` (stdout, mirrored into Hydra's job log).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals import prompts
from evals.budget import Budget, BudgetExceeded, DryRunSummary, format_dry_run
from evals.contexts import Context, build_context, fill_images
from evals.items import Question
from evals.records import (
    RECORDS_FILE,
    ContextStore,
    FrameStore,
    Record,
    append_records,
    completed_keys,
    record_key,
)
from evals.reporter import console
from evals.scoring import score
from evals.sessions import SessionItem, as_session
from evals.spec import RunSpec
from evals.transcripts import TRANSCRIPTS_DIR, TranscriptStore

OCR_NOTE = "offline OCR reader: legibility floor, not a model ranking"
QA_READER = "qa"
_FLUSH_ROWS = 64
_FLUSH_SECONDS = 2.0


# --------------------------------------------------------------------------------------------
# versions


@dataclass(frozen=True)
class Versions:
    """What produced a row: code, tables, renderer (design §5) and the packages that change
    answers or prices (``evals.dependency_versions``)."""

    package_version: str
    git_sha: str
    shape_table_sha256: str
    pricing_table_sha256: str
    model_shapes_sha256: str
    renderer_version: str
    dependency_versions: Mapping[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def versions() -> Versions:
    from importlib.metadata import PackageNotFoundError, version

    from evals.dependency_versions import dependency_versions
    from snapcompact.core import shape_table_sha256
    from snapcompact.pricing import model_shapes_sha256, pricing_table_sha256
    from snapcompact.render import RENDERER_VERSION

    try:
        package = version("snapcompact-evals")
    except PackageNotFoundError:
        package = "unknown"
    return Versions(package, _git_sha(), shape_table_sha256(), pricing_table_sha256(),
                    model_shapes_sha256(), RENDERER_VERSION, dependency_versions())


def _git_sha() -> str:
    """HEAD of the checkout the code runs from, with ``-dirty`` for uncommitted changes."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        # an installed wheel: site-packages may sit inside some other checkout (a venv in a
        # repository), whose HEAD says nothing about this code
        return "unknown"
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=20, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


@functools.lru_cache(maxsize=1)
def offline_reader_version() -> str:
    """Hash of the offline reader's code plus the OCR engine and its language data.

    The response cache keys on the prompt, not on the reader's code: without this, a fix to
    the OCR reader would keep serving answers from the reader before the fix.
    """
    import hashlib

    import evals.readers as readers_pkg

    digest = hashlib.sha256()
    for path in sorted(Path(readers_pkg.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    try:
        from evals.readers.ocr import engine_version

        engine = engine_version()
    except (ImportError, OSError, RuntimeError, ValueError):
        engine = "engine unavailable"
    return f"{digest.hexdigest()[:16]}; {engine}"


def _dollars(price_model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    from evals.costs import price_of

    try:
        return price_of(price_model).dollars(prompt_tokens, completion_tokens)
    except ValueError:
        return None


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
    text_tokens: int  # the whole request: context text + question
    predicted_completion_tokens: int
    predicted_cost_usd: float | None  # the target model's dollars (input + output bound)
    spend_predicted_usd: float  # what the budget reserves: what calling model_id costs
    evidence_round: int

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
                          self.item.seed, c.arm.strategy, c.arm.policy)

    def messages(self, data_url: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
        """The request: the context (placeholders, or images when ``data_url`` is given) and
        the question as the next user message."""
        from snapcompact.compaction import user_question

        context = (fill_images(self.context.messages, self.context.frame_hashes, data_url)
                   if data_url is not None else [dict(m) for m in self.context.messages])
        return [*context, user_question(self.question_text)]

    def request(self, data_url: Callable[[str], str] | None = None):
        from evals.client import Request

        return Request(
            model=self.model_id,
            messages=self.messages(data_url),
            params=dict(self.params),
            frame_hashes=self.context.pixel_hashes,  # the cache keys on pixels, not PNG bytes
            metadata=dict(self.metadata),
            predicted_prompt_tokens=self.predicted_prompt_tokens,
            predicted_cost_usd=self.spend_predicted_usd,
        )


def plan_questions(item: SessionItem, context: Context, spec: RunSpec,
                   ocr_cache_dir: str | None) -> list[Planned]:
    """Every question of one item against one context (none when the context was skipped)."""
    from snapcompact.pricing import count_text_tokens

    if context.skipped is not None:
        return []
    model = spec.model
    out: list[Planned] = []
    for question in item.questions[: spec.max_questions_per_item]:
        text = prompts.question_text(question.question)
        q_tokens = count_text_tokens(text, model.target_model).tokens
        text_tokens = context.text_tokens + q_tokens
        prompt_tokens = text_tokens + context.predicted_image_tokens
        completion = spec.reader.answer_max_tokens
        target_cost = _dollars(model.price_model, prompt_tokens, completion)
        params: dict[str, Any] = {**model.params,
                                  "max_tokens": completion + model.reasoning_headroom_tokens}
        if context.tools:  # the context calls tools: declare them; the question needs none
            params["tools"] = [dict(t) for t in context.tools]
            if not model.model_for(QA_READER).startswith("bedrock/"):
                # Bedrock's Converse has no "none" (auto/any/tool only; litellm refuses it
                # before sending): its default, auto, is left in place there
                params["tool_choice"] = "none"
        metadata: dict[str, Any] = {}
        if model.offline_reader:
            from evals.readers.provider import reader_metadata

            metadata = reader_metadata(
                evidence=question.evidence, answers=question.answers,
                seen_sizes=list(context.seen_px), billed_prompt_tokens=prompt_tokens,
                ocr_cache_dir=ocr_cache_dir)
            # the target's resize and the reader's own code change the answer but not the
            # prompt: make them part of the cache key
            params["reader_view"] = {"target_model": model.target_model, "api": model.api,
                                     "provider": model.provider,
                                     "seen_px": [list(s) for s in context.seen_px],
                                     "reader": offline_reader_version()}
            spend = 0.0
        else:
            spend = target_cost if target_cost is not None else 0.0
        out.append(Planned(
            item=item, question=question, context=context, model_id=model.model_for(QA_READER),
            question_text=text, params=params, metadata=metadata, text_tokens=text_tokens,
            predicted_completion_tokens=completion, predicted_cost_usd=target_cost,
            spend_predicted_usd=spend,
            evidence_round=context.discarded_round[item.evidence_index[question.question_id]]))
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


def load_items(spec: RunSpec) -> list[SessionItem]:
    from evals.datasets import load_dataset

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
    from evals.costs import max_input_tokens

    window = max_input_tokens(spec.model.price_model)
    groups: list[list[Planned]] = []
    built: list[tuple[SessionItem, Context]] = []
    started = time.perf_counter()
    for item in items:
        for arm in spec.arms():
            begun = time.perf_counter()
            context = build_context(item, arm, spec, frames=frames, contexts=contexts,
                                    complete=summarizer, max_input_tokens=window)
            built.append((item, context))
            note = f"; skipped: {context.skipped}" if context.skipped else ""
            log(f"  {item.item_id} {arm.label}: {context.compactions} compactions, "
                f"{len(context.frame_hashes)} frames, "
                f"{context.text_tokens + context.predicted_image_tokens:,} context tokens "
                f"({time.perf_counter() - begun:.1f} s){note}")
            groups.append(plan_questions(item, context, spec, ocr_dir))
    planned = _interleave(groups)
    log(f"planned {len(planned)} requests over {len(items)} items and {len(spec.arms())} arms "
        f"(replay took {time.perf_counter() - started:.1f} s)")
    done = completed_keys(run_dir / RECORDS_FILE)
    todo = [p for p in planned if p.key(spec) not in done]
    return Plan(planned=todo, skipped_done=len(planned) - len(todo), items=len(items),
                contexts=built)


# --------------------------------------------------------------------------------------------
# rows


def make_record(p: Planned | None, response: Any, spec: RunSpec, run_id: str, v: Versions, *,
                item: SessionItem | None = None, context: Context | None = None,
                question: Question | None = None,
                reading: Mapping[str, Any] | None = None) -> Record:
    """The row for one answered (or failed) request, or for a skipped question (``p`` None);
    ``reading`` is the offline reader's reading of it (``evals.transcripts``: transcript hash,
    evidence and answer spans)."""
    item = p.item if p is not None else item
    context = p.context if p is not None else context
    question = p.question if p is not None else question
    assert item is not None and context is not None and question is not None
    model = spec.model
    if p is None:
        answer, em, f1, correct, abstained = "", 0.0, 0.0, False, False
    else:
        answer = response.answer if response.answer is not None else ""
        if response.error is not None:
            em = f1 = 0.0
            correct = abstained = False
        else:
            s = score(answer, question.answers)
            em, f1, correct, abstained = s.em, s.f1, s.correct, s.abstained
    evidence_round = context.discarded_round[item.evidence_index[question.question_id]]
    text_tokens = p.text_tokens if p is not None else context.text_tokens
    prompt_tokens = text_tokens + context.predicted_image_tokens
    extra: dict[str, Any] = {"note": OCR_NOTE} if model.offline_reader else {}
    return Record(
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
        package_version=v.package_version,
        git_sha=v.git_sha,
        shape_table_sha256=v.shape_table_sha256,
        pricing_table_sha256=v.pricing_table_sha256,
        renderer_version=v.renderer_version,
        dependency_versions=dict(v.dependency_versions),
        frames=len(context.frame_hashes),
        frame_px=context.frame_px,
        frame_hashes=context.frame_hashes,
        history_chars=item.history_chars,
        text_tokens=text_tokens,
        text_token_method=context.text_token_method,
        predicted_image_tokens=context.predicted_image_tokens,
        predicted_prompt_tokens=prompt_tokens,
        predicted_cost_usd=p.predicted_cost_usd if p is not None else None,
        answer=answer,
        reported_prompt_tokens=response.prompt_tokens if response is not None else None,
        reported_completion_tokens=response.completion_tokens if response is not None else None,
        reported_cost_usd=response.cost_usd if response is not None else None,
        latency_s=response.latency_s if response is not None else None,
        cached=response.cached if response is not None else False,
        error=response.error if response is not None else None,
        attempts=response.attempts if response is not None else 0,
        em=em,
        f1=f1,
        correct=correct,
        abstained=abstained,
        strategy=context.arm.strategy,
        policy=context.arm.policy,
        compactions=context.compactions,
        evidence_round=evidence_round,
        frames_evicted=context.frames_evicted,
        text_tail_chars=context.text_tail_chars,
        compaction_cost_tokens=context.compaction_cost_tokens,
        context_hash=context.context_hash,
        skipped=context.skipped,
        model_config=model.name,
        api=model.api,
        provider=model.provider,
        price_model=model.price_model,
        shape_requested=context.arm.shape.variant if context.arm.is_snapcompact else "",
        image_detail=model.image_detail,
        context_window=spec.context_window,
        settings=dict(spec.settings_overrides),
        summarizer=spec.summarizer.litellm_id if spec.summarizer is not None else None,
        bill_rules=tuple(context.bill_rules),
        seen_px=tuple(tuple(s) for s in context.seen_px),
        image_tokens_per_frame=tuple(context.image_tokens),
        predicted_completion_tokens=spec.reader.answer_max_tokens,
        spend_predicted_usd=p.spend_predicted_usd if p is not None else 0.0,
        prompt_version=prompts.PROMPT_VERSION,
        model_shapes_sha256=v.model_shapes_sha256,
        reader_version=offline_reader_version() if model.offline_reader else None,
        cache_key=response.key if response is not None else None,
        replay_warnings=tuple(context.replay_warnings[:5]),
        question=question.question,
        gold_answers=question.answers,
        question_kind=question.meta.get("kind"),
        question_meta={k: question.meta[k] for k in ("depth", "template", "place")
                       if k in question.meta},
        reading=dict(reading) if reading is not None else None,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        extra=extra,
    )


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


# --------------------------------------------------------------------------------------------
# summaries


def summarize(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Per arm (strategy, policy, shape, frame size): questions, recall, context tokens.

    When a key was recorded more than once (an error row and its later success), the last
    row wins. Skipped questions are counted apart and never scored.
    """
    latest: dict[tuple, Record] = {}
    for r in records:
        latest[r.key()] = r
    groups: dict[tuple, list[Record]] = defaultdict(list)
    for r in latest.values():
        groups[(r.strategy, r.policy, r.shape, r.frame_size, r.model, r.target_model)].append(r)
    rows = []
    for (strategy, policy, shape, size, model, target), rs in sorted(groups.items()):
        asked = [r for r in rs if r.skipped is None]
        ok = [r for r in asked if r.error is None]
        n = len(ok) or 1
        discarded = [r for r in ok if (r.evidence_round or 0) >= 1]
        rows.append({
            "strategy": strategy, "policy": policy, "shape": shape, "frame_size": size,
            "model": model, "target_model": target, "n": len(asked),
            "skipped": len(rs) - len(asked), "errors": len(asked) - len(ok),
            "recall": sum(r.correct for r in ok) / n,
            "recall_discarded": (sum(r.correct for r in discarded) / len(discarded)
                                 if discarded else None),
            "n_discarded": len(discarded),
            "f1": sum(r.f1 for r in ok) / n,
            "compactions": max((r.compactions for r in rs), default=0),
            "frames": max((r.frames for r in rs), default=0),
            "context_tokens": (sum(r.predicted_prompt_tokens for r in rs) / len(rs)) if rs else 0,
            "predicted_usd": sum(r.predicted_cost_usd or 0.0 for r in asked),
        })
    return rows


def format_summary(rows: Sequence[Mapping[str, Any]], offline_reader: bool) -> str:
    lines = []
    if offline_reader:
        lines.append(f"[{OCR_NOTE}]")
    header = (f"{'arm':<36} {'n':>4} {'skip':>4} {'err':>3} {'recall':>6} {'disc.':>6} "
              f"{'rounds':>6} {'frames':>6} {'ctx tok':>8} {'pred $':>8}")
    lines += [header, "-" * len(header)]
    for r in rows:
        arm = r["strategy"] if not r["policy"] else (
            f"{r['strategy']}/{r['policy']}/{r['shape']}@{r['frame_size']}")
        disc = f"{r['recall_discarded']:.2f}" if r["recall_discarded"] is not None else "-"
        lines.append(
            f"{arm:<36} {r['n']:>4} {r['skipped']:>4} {r['errors']:>3} {r['recall']:>6.2f} "
            f"{disc:>6} {r['compactions']:>6} {r['frames']:>6} {r['context_tokens']:>8,.0f} "
            f"{r['predicted_usd']:>8.4f}")
    lines.append("disc. = recall on questions whose evidence a compaction discarded "
                 "(evidence_round >= 1)")
    return "\n".join(lines)


def format_plan(plan: Plan, summary: DryRunSummary, spec: RunSpec) -> str:
    """The dry-run report: the client's numbers plus the target model's tokens and dollars."""
    target_tokens = sum(p.predicted_prompt_tokens for p in plan.planned)
    target_usd = sum(p.predicted_cost_usd or 0.0 for p in plan.planned)
    per_arm: dict[str, list[Planned]] = defaultdict(list)
    for p in plan.planned:
        per_arm[p.context.arm.label].append(p)
    head, _, rest = format_dry_run(summary, spec.budget_usd).partition("\n")
    if not spec.dry_run:
        head = "plan (predicted before anything is sent)"
    lines = [head + "\n" + rest,
             f"  rows already recorded {plan.skipped_done:>11,}   (skipped: resume)",
             (f"  target model         {spec.model.target_model}"
              f" via {spec.model.api or spec.model.provider}: {target_tokens:,} prompt tokens, "
              f"${target_usd:,.4f} if sent to it (input + output bound)")]
    if spec.model.offline_reader:
        lines.append(f"  reader               {spec.model.name}: requests cost nothing "
                     f"({OCR_NOTE})")
    if per_arm:
        lines.append("  per arm:  arm                                   requests  frames/q  "
                     "tokens/q    target $")
        for label, ps in sorted(per_arm.items()):
            frames = sum(len(p.context.frame_hashes) for p in ps) / len(ps)
            tokens = sum(p.predicted_prompt_tokens for p in ps) / len(ps)
            usd = sum(p.predicted_cost_usd or 0.0 for p in ps)
            lines.append(f"            {label:<37} {len(ps):>8} {frames:>9.1f} "
                         f"{tokens:>9.0f} {usd:>11.4f}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# running


def _quiet_litellm() -> None:
    """litellm logs every call at INFO, and Hydra's logging setup would print all of it."""
    import logging

    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)


class MissingCredentials(RuntimeError):
    """The model's provider needs environment variables that are not set."""


def check_environment(spec: RunSpec) -> None:
    missing = [name for name in spec.model.required_env if not os.environ.get(name)]
    if missing:
        raise MissingCredentials(
            f"model {spec.model.name!r} needs the environment variable(s) {', '.join(missing)} "
            "(keys come from the environment only; see docs/running-real-models.md). "
            "A dry run (dry_run=true) works without them.")


@dataclass(frozen=True)
class RunResult:
    """What a run did; counters come from the client (requests really sent, cache hits)."""

    run_dir: Path
    planned: int
    skipped_done: int
    dry_run: bool
    summary: DryRunSummary
    requests_sent: int = 0
    cache_hits: int = 0
    dedup_hits: int = 0
    errors: int = 0
    records_written: int = 0
    wall_s: float = 0.0
    table: tuple[Mapping[str, Any], ...] = ()


def make_client(spec: RunSpec, *, completion_fn: Any = None, model: Any = None):
    from evals.cache import ResponseCache
    from evals.client import EvalClient, Progress, RetryPolicy, provider_of
    from snapcompact.render import RENDERER_VERSION

    model = model if model is not None else spec.model
    providers = {provider_of(model.model_for(QA_READER)), provider_of(model.litellm_id)}
    concurrency = {p: model.concurrency for p in providers}
    rates = ({p: model.rate_limit_rps for p in providers}
             if model.rate_limit_rps is not None else None)
    return EvalClient(
        cache=ResponseCache(spec.cache_dir),
        renderer_version=RENDERER_VERSION,
        budget=Budget(spec.budget_usd),
        concurrency=concurrency,
        rate_limits=rates,
        tokens_per_minute=model.tokens_per_minute,
        limits_dir=spec.limits_dir,
        retry=RetryPolicy(max_attempts=spec.max_attempts),
        timeout_s=spec.timeout_s,
        progress=Progress(),
        completion_fn=completion_fn,
    )


def make_summarizer(spec: RunSpec, *, completion_fn: Any = None) -> Callable[..., Any] | None:
    """The ``complete(system, prompt, *, max_tokens)`` the LLM strategies summarize with.

    It goes through an :class:`~evals.client.EvalClient` of its own (same response cache, same
    budget rules, retries), so a rerun replays every summary from the cache and pays nothing.
    Returns the summary text and its usage (``input``/``output`` tokens) for the rows.
    """
    if spec.summarizer is None:
        return None
    from evals.client import Request

    model = spec.summarizer
    client = make_client(spec, completion_fn=completion_fn, model=model)

    def complete(system_prompt: str, user_prompt: str, *, max_tokens: int) -> dict[str, Any]:
        request = Request(
            model=model.litellm_id,
            messages=[{"role": "system", "content": system_prompt},
                      {"role": "user", "content": user_prompt}],
            params={**model.params, "max_tokens": max_tokens + model.reasoning_headroom_tokens})
        response = asyncio.run(client.complete(request))
        if response.error is not None:
            raise RuntimeError(f"summarizer {model.name}: {response.error}")
        return {"text": response.answer or "",
                "usage": {"input": response.prompt_tokens or 0,
                          "output": response.completion_tokens or 0}}

    return complete


async def _send(plan: Plan, client: Any, store: FrameStore, sink: RecordSink, spec: RunSpec,
                run_id: str, v: Versions, window: int) -> None:
    import base64

    @functools.lru_cache(maxsize=64)
    def data_url(digest: str) -> str:
        return "data:image/png;base64," + base64.b64encode(store.get(digest)).decode("ascii")

    gate = asyncio.Semaphore(window)
    readings = (TranscriptStore(sink.path.parent / TRANSCRIPTS_DIR)
                if spec.model.offline_reader else None)

    def store_reading(p: Planned) -> dict[str, Any] | None:
        from evals.readers.provider import parse_request, reading_of

        request = p.request(data_url)
        reading = reading_of(parse_request(request.model, request.messages, request.metadata))
        return readings.put(reading) if reading is not None and readings is not None else None

    async def one(p: Planned) -> None:
        async with gate:
            response = await client.complete(p.request(data_url))
            reading = None
            if readings is not None and response.error is None:
                # the reader's transcript and spans, for the viewer (OCR caches: no re-read)
                reading = await asyncio.to_thread(store_reading, p)
            sink.add(make_record(p, response, spec, run_id, v, reading=reading))

    await asyncio.gather(*(one(p) for p in plan.planned))


def _skipped_rows(plan: Plan, spec: RunSpec, run_id: str, v: Versions,
                  run_dir: Path) -> list[Record]:
    """Rows for questions not asked because their context was refused (e.g. too long)."""
    done = completed_keys(run_dir / RECORDS_FILE)
    rows = []
    for item, context in plan.contexts:
        if context.skipped is None:
            continue
        for question in item.questions[: spec.max_questions_per_item]:
            row = make_record(None, None, spec, run_id, v, item=item, context=context,
                              question=question)
            if row.key() not in done:
                rows.append(row)
    return rows


def run(spec: RunSpec, run_dir: str | os.PathLike[str], *, completion_fn: Any = None,
        log: Callable[[str], None] = console) -> RunResult:
    """Plan, check the budget, send, score and record. Raises ``BudgetExceeded`` before sending
    if the predicted spend is past ``budget_usd``, ``MissingCredentials`` if keys are unset,
    ``PreflightError`` if a request breaks a provider limit (nothing is sent then either)."""
    started = time.perf_counter()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if spec.model.offline_reader:
        from evals.readers.provider import register

        register()
    from evals.client import import_litellm

    import_litellm()
    _quiet_litellm()
    if not spec.dry_run:
        check_environment(spec)
    v = versions()
    run_id = spec.run_id()
    summarizer = make_summarizer(spec, completion_fn=completion_fn)
    plan = build_plan(spec, run_dir, log=log, summarizer=summarizer)
    client = make_client(spec, completion_fn=completion_fn)
    summary = client.plan(p.request() for p in plan.planned)
    log(format_plan(plan, summary, spec))
    if spec.dry_run:
        return RunResult(run_dir, len(plan.planned), plan.skipped_done, True, summary,
                         wall_s=time.perf_counter() - started)
    client.budget.check(summary)
    sink = RecordSink(run_dir / RECORDS_FILE)
    for row in _skipped_rows(plan, spec, run_id, v, run_dir):
        sink.add(row)
    store = FrameStore(run_dir / "frames")
    # -- preflight (evals.preflight): every request within the provider's limits, or stop now --
    if plan.planned and not spec.model.offline_reader:
        from evals.preflight import check_planned, check_routes, data_urls

        check_routes(spec.model.model_for(r) for r in spec.reader.readers)
        check_planned(plan.planned, spec.model, data_urls(store))
    # -- end preflight --------------------------------------------------------------------------
    window = max(8, 4 * spec.model.concurrency)
    bar = None
    if spec.progress and plan.planned:
        from evals.client import ProgressBar

        bar = ProgressBar(client.progress, total=len(plan.planned), desc=spec.experiment,
                          file=sys.stderr)
    try:
        if plan.planned:
            asyncio.run(_send(plan, client, store, sink, spec, run_id, v, window))
    finally:
        sink.flush()
        if bar is not None:
            bar.close()
    from evals.records import iter_records

    table = summarize(iter_records(run_dir / RECORDS_FILE))
    (run_dir / "summary.json").write_text(json.dumps(
        {"note": OCR_NOTE if spec.model.offline_reader else None, "run_id": run_id,
         "rows": table}, indent=2) + "\n")
    progress = client.progress
    result = RunResult(
        run_dir=run_dir, planned=len(plan.planned), skipped_done=plan.skipped_done,
        dry_run=False, summary=summary, requests_sent=progress.requests_sent,
        cache_hits=progress.cache_hits, dedup_hits=progress.dedup_hits, errors=progress.errors,
        records_written=sink.written, wall_s=time.perf_counter() - started, table=tuple(table))
    log(format_summary(table, spec.model.offline_reader))
    log(f"{progress.summary()}; {sink.written} rows written to {run_dir / RECORDS_FILE} "
        f"in {result.wall_s:.1f} s")
    return result


__all__ = [
    "OCR_NOTE",
    "BudgetExceeded",
    "MissingCredentials",
    "Plan",
    "Planned",
    "RunResult",
    "Versions",
    "build_plan",
    "format_summary",
    "make_record",
    "run",
    "summarize",
    "versions",
]
