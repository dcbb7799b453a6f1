"""One run: item -> archive text -> frames -> requests -> answers -> scores -> records.

Why this order, and why through the library: the harness is a validation of production, so
every step that production takes is taken here with production's own functions --
``snapcompact.serialize`` turns the item's history into archive text, ``render_many``
normalizes, paginates and draws it, ``resolve_shape`` picks the shape and its ``detail``,
``bill_image`` prices every real frame for the *target* model and says what size that model
sees, ``count_text_tokens`` counts the text. A frame scored here is byte for byte a frame
production would send, and its predicted bill is the bill production would predict.

Frames are rendered once per (item, shape) and every question of the item is asked against
them. They are stored by content hash (``FrameStore``) while the run is planned, and read back
when a request is built, so a long sweep holds hashes and sizes in memory, not megabytes of PNG.

Planning comes before sending: every request is built (with a placeholder in place of each
image's data, which the cache key does not read), rows already in ``records.jsonl`` are dropped
(resume), the client prices the rest and looks them up in the response cache (dry run), and the
budget refuses the run before anything is sent if the predicted spend is past ``budget_usd``.

The offline OCR reader (``model=ocr``) stands in for a target model: it is told the size each
frame is seen at (from ``bill_image`` for the target), the evidence and the gold answers, in
litellm ``metadata``. That metadata is not part of the cache key, so what changes the reader's
answer but not the prompt (target, seen sizes) travels again as a ``reader_view`` request param,
which is. Its numbers are a legibility floor, never a model ranking, and are printed with
``OCR_NOTE`` wherever they appear.
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
from evals.items import QAItem, Question
from evals.records import (
    RECORDS_FILE,
    FrameStore,
    Record,
    append_records,
    completed_keys,
    record_key,
)
from evals.scoring import score
from evals.spec import TEXT_ARM, RunSpec, ShapeSpec

OCR_NOTE = "offline OCR reader: legibility floor, not a model ranking"
TRANSCRIPT_QUESTION_ID = "transcript"
_PLACEHOLDER_URL = "data:image/png;base64,"
_FLUSH_ROWS = 64
_FLUSH_SECONDS = 2.0


# --------------------------------------------------------------------------------------------
# versions


@dataclass(frozen=True)
class Versions:
    """What produced a row: code, tables and renderer (design §5)."""

    package_version: str
    git_sha: str
    shape_table_sha256: str
    pricing_table_sha256: str
    model_shapes_sha256: str
    renderer_version: str


@functools.lru_cache(maxsize=1)
def versions() -> Versions:
    from importlib.metadata import PackageNotFoundError, version

    from snapcompact.billing import pricing_table_sha256
    from snapcompact.render import RENDERER_VERSION
    from snapcompact.resolve import model_shapes_sha256
    from snapcompact.shapes import shape_table_sha256

    try:
        package = version("snapcompact-evals")
    except PackageNotFoundError:
        package = "unknown"
    return Versions(package, _git_sha(), shape_table_sha256(), pricing_table_sha256(),
                    model_shapes_sha256(), RENDERER_VERSION)


def _git_sha() -> str:
    """HEAD of the checkout the code runs from, with ``-dirty`` for uncommitted changes."""
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=20, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


# --------------------------------------------------------------------------------------------
# archive text and arms


def archive_text(item: QAItem, mode: str) -> str:
    """The text production would archive for this item's history."""
    if mode == "raw":
        return item.history
    if mode == "user_message":
        from snapcompact.serialize import serialize_conversation

        return serialize_conversation([{"role": "user", "content": item.history}])
    raise ValueError(f"unknown serialize mode {mode!r}")


@dataclass(frozen=True)
class Arm:
    """What one item looks like under one shape (or as plain text): rendered once, reused.

    ``label`` is the shape variant actually drawn ("text" for the text arm); ``choice`` is what
    was asked for (a variant, "auto" or "text").
    """

    label: str
    choice: str
    frame_size: int
    frame_hashes: tuple[str, ...] = ()
    frame_px: tuple[tuple[int, int], ...] = ()
    seen_px: tuple[tuple[int, int], ...] = ()
    image_tokens: tuple[int, ...] = ()
    detail: str | None = None
    resolve_rule: str = ""
    bill_rules: tuple[str, ...] = ()
    printed_text: str = ""  # what the frames print (normalized pages), for transcription CER

    @property
    def is_text(self) -> bool:
        return self.label == TEXT_ARM

    @property
    def predicted_image_tokens(self) -> int:
        return sum(self.image_tokens)


def prepare_image_arm(text: str, shape: ShapeSpec, spec: RunSpec,
                      store: FrameStore | None) -> Arm:
    """Resolve, render, hash, store and bill one (item, shape)."""
    from snapcompact.billing import bill_image
    from snapcompact.render import pages, render_many
    from snapcompact.resolve import resolve_shape

    model = spec.model
    resolved = resolve_shape(model.target_model, api=model.api, provider=model.provider,
                             variant=shape.variant, frame_size=shape.frame_size)
    detail = model.image_detail if model.image_detail is not None else resolved.image_detail
    from snapcompact.frame_cap import check_frame_count  # refuse before drawing (max_frames)

    check_frame_count(text, resolved.shape, spec.max_frames)
    frames = render_many(text, resolved.shape)
    if not frames:
        raise ValueError(f"shape {resolved.variant}: the archive text renders to no frames")
    hashes = []
    bills = []
    for frame in frames:
        hashes.append(store.put(frame.png) if store is not None else FrameStore.digest(frame.png))
        bills.append(bill_image(model.target_model, frame.width, frame.height, detail,
                                api=model.api, provider=model.provider))
    printed = ""
    if "transcribe" in spec.reader.readers:
        printed = "".join(pages(text, resolved.shape))
    return Arm(
        label=resolved.variant,
        choice=shape.variant,
        frame_size=resolved.frame_size,
        frame_hashes=tuple(hashes),
        frame_px=tuple((f.width, f.height) for f in frames),
        seen_px=tuple((b.seen_width, b.seen_height) for b in bills),
        image_tokens=tuple(b.tokens for b in bills),
        detail=detail,
        resolve_rule=resolved.rule,
        bill_rules=tuple(sorted({b.rule_id for b in bills})),
        printed_text=printed,
    )


def text_arm() -> Arm:
    return Arm(label=TEXT_ARM, choice=TEXT_ARM, frame_size=0, resolve_rule="text-only baseline")


# --------------------------------------------------------------------------------------------
# planned questions


@dataclass(frozen=True)
class Planned:
    """One request to make and the row it becomes. Images are referenced by hash only."""

    item: QAItem
    question: Question | None  # None for a transcription request
    arm: Arm
    reader: str
    model_id: str
    texts_before: tuple[str, ...]  # text parts before the images (instruction, history)
    text_after: str | None  # the question part (after the images), if any
    params: Mapping[str, Any]
    metadata: Mapping[str, Any]
    text_tokens: int
    text_token_method: str
    predicted_completion_tokens: int
    predicted_cost_usd: float | None  # the target model's dollars (input + output bound)
    spend_predicted_usd: float  # what the budget reserves: what calling model_id costs
    archive_chars: int

    @property
    def question_id(self) -> str:
        return self.question.question_id if self.question is not None else TRANSCRIPT_QUESTION_ID

    @property
    def predicted_prompt_tokens(self) -> int:
        return self.arm.predicted_image_tokens + self.text_tokens

    def key(self, spec: RunSpec) -> tuple:
        return record_key(self.item.dataset, self.item.item_id, self.question_id, self.model_id,
                          spec.model.target_model, self.arm.label, self.arm.frame_size,
                          self.reader, self.item.seed)

    def messages(self, image_url: Callable[[str], str]) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = [{"type": "text", "text": t} for t in self.texts_before]
        for digest in self.arm.frame_hashes:
            ref: dict[str, Any] = {"url": image_url(digest)}
            if self.arm.detail is not None:
                ref["detail"] = self.arm.detail
            parts.append({"type": "image_url", "image_url": ref})
        if self.text_after is not None:
            parts.append({"type": "text", "text": self.text_after})
        return [{"role": "user", "content": parts}]

    def request(self, image_url: Callable[[str], str] = lambda _: _PLACEHOLDER_URL):
        from evals.client import Request

        return Request(
            model=self.model_id,
            messages=self.messages(image_url),
            params=dict(self.params),
            frame_hashes=self.arm.frame_hashes,
            metadata=dict(self.metadata),
            predicted_prompt_tokens=self.predicted_prompt_tokens,
            predicted_cost_usd=self.spend_predicted_usd,
        )


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


def plan_item(item: QAItem, arms: Sequence[Arm], spec: RunSpec,
              ocr_cache_dir: str | None) -> list[Planned]:
    """Every request of one item: each question on each arm, and transcripts if asked for."""
    from snapcompact.text_tokens import count_text_tokens

    model = spec.model
    reader_cfg = spec.reader
    questions = item.questions[: spec.max_questions_per_item]
    archive = archive_text(item, spec.serialize)
    out: list[Planned] = []
    for arm in arms:
        jobs: list[tuple[str, Question | None]] = []
        if arm.is_text:
            if "text_qa" in reader_cfg.readers:
                jobs += [("text_qa", q) for q in questions]
        else:
            if "image_qa" in reader_cfg.readers:
                jobs += [("image_qa", q) for q in questions]
            if "transcribe" in reader_cfg.readers:
                jobs.append(("transcribe", None))
        for reader, question in jobs:
            if reader == "transcribe":
                before: tuple[str, ...] = (prompts.TRANSCRIBE_INSTRUCTION,)
                after = None
                printed_tokens = count_text_tokens(arm.printed_text, model.target_model).tokens
                completion = min(reader_cfg.transcribe_max_tokens, printed_tokens + 64)
                max_tokens = reader_cfg.transcribe_max_tokens
            else:
                assert question is not None
                if reader == "text_qa":
                    before = (prompts.TEXT_QA_INSTRUCTION, archive)
                else:
                    before = (prompts.IMAGE_QA_INSTRUCTION,)
                after = prompts.question_text(question.question)
                completion = reader_cfg.answer_max_tokens
                max_tokens = reader_cfg.answer_max_tokens
            counted = count_text_tokens("\n".join([*before, *([after] if after else [])]),
                                        model.target_model)
            prompt_tokens = counted.tokens + arm.predicted_image_tokens  # 0 for the text arm
            target_cost = _dollars(model.price_model, prompt_tokens, completion)
            params: dict[str, Any] = {**model.params,
                                      "max_tokens": max_tokens + model.reasoning_headroom_tokens}
            metadata: dict[str, Any] = {}
            if model.offline_reader:
                from evals.readers.provider import reader_metadata

                seen = list(arm.seen_px) if not arm.is_text else None
                metadata = reader_metadata(
                    evidence=question.evidence if question is not None else None,
                    answers=question.answers if question is not None else (),
                    seen_sizes=seen,
                    billed_prompt_tokens=prompt_tokens,
                    ocr_cache_dir=ocr_cache_dir,
                )
                # the target's resize and the reader's own code change the answer but not the
                # prompt: make them part of the cache key
                params["reader_view"] = {"target_model": model.target_model, "api": model.api,
                                         "provider": model.provider,
                                         "seen_px": [list(s) for s in seen or ()],
                                         "reader": offline_reader_version()}
                spend = 0.0
            else:
                spend = target_cost if target_cost is not None else 0.0
            out.append(Planned(
                item=item, question=question, arm=arm, reader=reader,
                model_id=model.model_for(reader), texts_before=before, text_after=after,
                params=params, metadata=metadata,
                text_tokens=counted.tokens,
                text_token_method=counted.method, predicted_completion_tokens=completion,
                predicted_cost_usd=target_cost, spend_predicted_usd=spend,
                archive_chars=len(archive)))
    return out


def _interleave(per_arm: Sequence[Sequence[Planned]]) -> list[Planned]:
    """Round-robin over (item, arm) groups, so questions about one frame set are spread out.

    The offline reader transcribes a frame once and reuses the transcript; asking two questions
    about the same frames at the same moment would transcribe them twice.
    """
    out: list[Planned] = []
    depth = max((len(g) for g in per_arm), default=0)
    for i in range(depth):
        out.extend(g[i] for g in per_arm if i < len(g))
    return out


@dataclass
class Plan:
    """Everything a run would send, before anything is sent."""

    planned: list[Planned]
    skipped_done: int
    items: int
    arms: dict[str, list[Arm]] = field(default_factory=dict)  # label -> arms (one per item)


def load_items(spec: RunSpec) -> list[QAItem]:
    from evals.datasets import load_dataset

    items = load_dataset(spec.dataset.name, **dict(spec.dataset.params))
    if spec.max_items is not None:
        items = items[: spec.max_items]
    if not items:
        raise ValueError(f"dataset {spec.dataset.name!r} gave no items")
    return items


def build_plan(spec: RunSpec, run_dir: Path, *, log: Callable[[str], None] = print) -> Plan:
    """Render every (item, shape) once and plan every request; drop rows already recorded."""
    store = None if spec.dry_run else FrameStore(run_dir / "frames")
    ocr_dir = str(spec.ocr_cache_dir) if spec.ocr_cache_dir is not None else None
    items = load_items(spec)
    groups: list[list[Planned]] = []
    arms_by_label: dict[str, list[Arm]] = defaultdict(list)
    started = time.perf_counter()
    for item in items:
        text = archive_text(item, spec.serialize)
        arms: list[Arm] = []
        for shape in spec.shapes:
            if shape.is_text:
                if spec.has_text_arm:
                    arms.append(text_arm())
                continue
            arms.append(prepare_image_arm(text, shape, spec, store))
        for arm in arms:
            arms_by_label[arm.label].append(arm)
            groups.append(plan_item(item, [arm], spec, ocr_dir))
    planned = _interleave(groups)
    labels = [(p.arm.label, p.arm.frame_size) for p in planned]
    log(f"planned {len(planned)} requests over {len(items)} items and "
        f"{len(set(labels))} arms (rendering took {time.perf_counter() - started:.1f} s)")
    done = completed_keys(run_dir / RECORDS_FILE)
    todo = [p for p in planned if p.key(spec) not in done]
    return Plan(planned=todo, skipped_done=len(planned) - len(todo), items=len(items),
                arms=dict(arms_by_label))


# --------------------------------------------------------------------------------------------
# rows


def make_record(p: Planned, response: Any, spec: RunSpec, run_id: str, v: Versions) -> Record:
    """The row for one answered (or failed) request."""
    from evals.readers.answer import character_error_rate

    answer = response.answer if response.answer is not None else ""
    cer = None
    if response.error is not None:
        em = f1 = 0.0
        correct = abstained = False
    elif p.reader == "transcribe":
        cer = character_error_rate(p.arm.printed_text, answer)
        # a transcript has no gold answer: EM = exact transcript, F1 = 1 - CER (floored at 0)
        em = float(cer == 0.0)
        f1 = max(0.0, 1.0 - cer)
        correct = cer <= 0.02
        abstained = not answer.strip()
    else:
        assert p.question is not None
        s = score(answer, p.question.answers)
        em, f1, correct, abstained = s.em, s.f1, s.correct, s.abstained
    model = spec.model
    q = p.question
    extra: dict[str, Any] = {
        "model_config": model.name,
        "api": model.api,
        "provider": model.provider,
        "price_model": model.price_model,
        "shape_choice": p.arm.choice,
        "resolve_rule": p.arm.resolve_rule,
        "image_detail": p.arm.detail,
        "bill_rules": list(p.arm.bill_rules),
        "seen_px": [list(s) for s in p.arm.seen_px],
        "image_tokens_per_frame": list(p.arm.image_tokens),
        "archive_chars": p.archive_chars,
        "serialize": spec.serialize,
        "prompt_version": prompts.PROMPT_VERSION,
        "model_shapes_sha256": v.model_shapes_sha256,
        "predicted_completion_tokens": p.predicted_completion_tokens,
        "spend_predicted_usd": p.spend_predicted_usd,
        "cache_key": response.key,
    }
    if q is not None:
        extra.update({k: q.meta[k] for k in ("kind", "depth", "template") if k in q.meta})
    if model.offline_reader:
        extra["note"] = OCR_NOTE
        extra["reader_version"] = offline_reader_version()
    return Record(
        run_id=run_id,
        experiment=spec.experiment,
        dataset=p.item.dataset,
        item_id=p.item.item_id,
        question_id=p.question_id,
        model=p.model_id,
        target_model=model.target_model,
        arm="text" if p.arm.is_text else "image",
        shape=p.arm.label,
        frame_size=p.arm.frame_size,
        reader=p.reader,
        seed=p.item.seed,
        package_version=v.package_version,
        git_sha=v.git_sha,
        shape_table_sha256=v.shape_table_sha256,
        pricing_table_sha256=v.pricing_table_sha256,
        renderer_version=v.renderer_version,
        frames=len(p.arm.frame_hashes),
        frame_px=p.arm.frame_px,
        frame_hashes=p.arm.frame_hashes,
        history_chars=len(p.item.history),
        text_tokens=p.text_tokens,
        text_token_method=p.text_token_method,
        predicted_image_tokens=p.arm.predicted_image_tokens,
        predicted_prompt_tokens=p.predicted_prompt_tokens,
        predicted_cost_usd=p.predicted_cost_usd,
        answer=answer,
        reported_prompt_tokens=response.prompt_tokens,
        reported_completion_tokens=response.completion_tokens,
        reported_cost_usd=response.cost_usd,
        latency_s=response.latency_s,
        cached=response.cached,
        error=response.error,
        attempts=response.attempts,
        em=em,
        f1=f1,
        correct=correct,
        abstained=abstained,
        cer=cer,
        question=q.question if q is not None else prompts.TRANSCRIBE_INSTRUCTION,
        gold_answers=q.answers if q is not None else (),
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
    """Per (reader, shape, frame size): questions, EM, F1, recall, abstentions, tokens, dollars.

    When a key was recorded more than once (an error row and its later success), the last
    row wins.
    """
    latest: dict[tuple, Record] = {}
    for r in records:
        latest[r.key()] = r
    groups: dict[tuple, list[Record]] = defaultdict(list)
    for r in latest.values():
        groups[(r.reader, r.shape, r.frame_size, r.model, r.target_model)].append(r)
    rows = []
    for (reader, shape, size, model, target), rs in sorted(groups.items()):
        ok = [r for r in rs if r.error is None]
        n = len(ok) or 1
        row: dict[str, Any] = {
            "reader": reader, "shape": shape, "frame_size": size, "model": model,
            "target_model": target, "n": len(rs), "errors": len(rs) - len(ok),
            "em": sum(r.em for r in ok) / n, "f1": sum(r.f1 for r in ok) / n,
            "recall": sum(r.correct for r in ok) / n,
            "abstained": sum(r.abstained for r in ok) / n,
            "prompt_tokens_mean": sum(r.predicted_prompt_tokens for r in rs) / len(rs),
            "frames_mean": sum(r.frames for r in rs) / len(rs),
            "predicted_usd": sum(r.predicted_cost_usd or 0.0 for r in rs),
        }
        cers = [r.cer for r in ok if r.cer is not None]
        if cers:
            row["cer_mean"] = sum(cers) / len(cers)
        rows.append(row)
    return rows


def format_summary(rows: Sequence[Mapping[str, Any]], offline_reader: bool) -> str:
    lines = []
    if offline_reader:
        lines.append(f"[{OCR_NOTE}]")
    header = (f"{'reader':<11} {'shape':<19} {'px':>5} {'n':>4} {'err':>3} {'recall':>6} "
              f"{'EM':>5} {'F1':>5} {'abst':>5} {'CER':>6} {'frames':>6} {'tok/q':>7} "
              f"{'pred $':>8}")
    lines += [header, "-" * len(header)]
    for r in rows:
        cer = f"{r['cer_mean']:.3f}" if "cer_mean" in r else "-"
        lines.append(
            f"{r['reader']:<11} {r['shape']:<19} {r['frame_size']:>5} {r['n']:>4} "
            f"{r['errors']:>3} {r['recall']:>6.2f} {r['em']:>5.2f} {r['f1']:>5.2f} "
            f"{r['abstained']:>5.2f} {cer:>6} {r['frames_mean']:>6.1f} "
            f"{r['prompt_tokens_mean']:>7.0f} {r['predicted_usd']:>8.4f}")
    return "\n".join(lines)


def format_plan(plan: Plan, summary: DryRunSummary, spec: RunSpec) -> str:
    """The dry-run report: the client's numbers plus the target model's tokens and dollars."""
    target_tokens = sum(p.predicted_prompt_tokens for p in plan.planned)
    target_usd = sum(p.predicted_cost_usd or 0.0 for p in plan.planned)
    per_arm: dict[tuple[str, str], list[Planned]] = defaultdict(list)
    for p in plan.planned:
        per_arm[(p.reader, p.arm.label)].append(p)
    head, _, rest = format_dry_run(summary, spec.budget_usd).partition("\n")
    if not spec.dry_run:
        head = "plan (predicted before anything is sent)"
    lines = [head + "\n" + rest,
             f"  rows already recorded {plan.skipped_done:>11,}   (skipped: resume)",
             (f"  target model         {spec.model.target_model}"
              f" via {spec.model.api or spec.model.provider}: {target_tokens:,} prompt tokens, "
              f"${target_usd:,.4f} if sent to it (input + output bound)")]
    if spec.model.offline_reader:
        lines.append(f"  reader               {spec.model.name}: requests cost nothing ({OCR_NOTE})")
    if per_arm:
        lines.append("  per arm:  reader      shape               requests  frames/q  tokens/q    "
                     "target $")
        for (reader, label), ps in sorted(per_arm.items()):
            frames = sum(len(p.arm.frame_hashes) for p in ps) / len(ps)
            tokens = sum(p.predicted_prompt_tokens for p in ps) / len(ps)
            usd = sum(p.predicted_cost_usd or 0.0 for p in ps)
            lines.append(f"            {reader:<11} {label:<19} {len(ps):>8} {frames:>9.1f} "
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


def make_client(spec: RunSpec, *, completion_fn: Any = None):
    from evals.cache import ResponseCache
    from evals.client import EvalClient, Progress, RetryPolicy, provider_of
    from snapcompact.render import RENDERER_VERSION

    model = spec.model
    providers = {provider_of(model.model_for(r)) for r in spec.reader.readers}
    concurrency = {p: model.concurrency for p in providers}
    rates = ({p: model.rate_limit_rps for p in providers}
             if model.rate_limit_rps is not None else None)
    return EvalClient(
        cache=ResponseCache(spec.cache_dir),
        renderer_version=RENDERER_VERSION,
        budget=Budget(spec.budget_usd),
        concurrency=concurrency,
        rate_limits=rates,
        retry=RetryPolicy(max_attempts=spec.max_attempts),
        timeout_s=spec.timeout_s,
        progress=Progress(),
        completion_fn=completion_fn,
    )


async def _send(plan: Plan, client: Any, store: FrameStore, sink: RecordSink, spec: RunSpec,
                run_id: str, v: Versions, window: int) -> None:
    import base64

    @functools.lru_cache(maxsize=256)
    def image_url(digest: str) -> str:
        return "data:image/png;base64," + base64.b64encode(store.get(digest)).decode("ascii")

    gate = asyncio.Semaphore(window)

    async def one(p: Planned) -> None:
        async with gate:
            response = await client.complete(p.request(image_url))
            sink.add(make_record(p, response, spec, run_id, v))

    await asyncio.gather(*(one(p) for p in plan.planned))


def run(spec: RunSpec, run_dir: str | os.PathLike[str], *, completion_fn: Any = None,
        log: Callable[[str], None] = print) -> RunResult:
    """Plan, check the budget, send, score and record. Raises ``BudgetExceeded`` before sending
    if the predicted spend is past ``budget_usd``, ``MissingCredentials`` if keys are unset."""
    started = time.perf_counter()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if spec.model.offline_reader:
        from evals.readers.provider import register

        register()
    else:
        from evals.client import import_litellm

        import_litellm()
    _quiet_litellm()
    if not spec.dry_run:
        check_environment(spec)
    v = versions()
    run_id = spec.run_id()
    plan = build_plan(spec, run_dir, log=log)
    client = make_client(spec, completion_fn=completion_fn)
    summary = client.plan(p.request() for p in plan.planned)
    log(format_plan(plan, summary, spec))
    if spec.dry_run:
        return RunResult(run_dir, len(plan.planned), plan.skipped_done, True, summary,
                         wall_s=time.perf_counter() - started)
    client.budget.check(summary)
    sink = RecordSink(run_dir / RECORDS_FILE)
    store = FrameStore(run_dir / "frames")
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
    "Arm",
    "BudgetExceeded",
    "MissingCredentials",
    "Plan",
    "Planned",
    "RunResult",
    "Versions",
    "archive_text",
    "build_plan",
    "format_summary",
    "make_record",
    "run",
    "summarize",
    "versions",
]
