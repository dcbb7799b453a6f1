"""One run: sessions -> replay through the compaction pipeline -> next-turn context -> questions
-> answers -> scores -> records.

Why this order, and why through the library: the harness is a validation of production. Each
item is a session (a generated agent session, a user's session file, or a text item packed as
a conversation) replayed turn by turn through ``CompactionPipeline`` at ``context_window``
(:mod:`evals.replay.contexts`), once per arm: a strategy (``full``, ``truncate``, ``snapcompact`` x
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
:data:`evals.support.console.console` (stdout, mirrored into Hydra's job log).
"""


from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.blind.provider import MODEL_ID as BLIND_MODEL_ID
from evals.blind.provider import blind_reading
from evals.blind.provider import register as register_blind
from evals.pipeline.finished import FINISHED_FILE, finished_run, mark_finished
from evals.pipeline.plan import QA_READER, Plan, Planned, build_plan, check_prices
from evals.pipeline.rows import OCR_NOTE, RecordSink, make_record
from evals.pipeline.run_report import format_plan, format_summary, summarize
from evals.readers.provider import parse_request, reading_of, register
from evals.send.client import (
    EvalClient,
    Progress,
    ProgressBar,
    Request,
    RetryPolicy,
    import_litellm,
    provider_of,
)
from evals.send.dollar_budget import Budget, BudgetExceeded, DryRunSummary
from evals.send.preflight import check_planned, check_routes, data_urls
from evals.send.response_cache import ResponseCache
from evals.spec.provenance import Versions, versions
from evals.spec.run_spec import RunSpec
from evals.store.records import (
    RECORDS_FILE,
    FrameStore,
    Record,
    completed_keys,
    iter_records,
)
from evals.store.transcripts import TRANSCRIPTS_DIR, TranscriptStore
from evals.support.console import console
from snapcompact.billing import summary_request
from snapcompact.render import RENDERER_VERSION

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
    model = model if model is not None else spec.model
    providers = {provider_of(model.model_for(QA_READER)), provider_of(model.litellm_id)}
    concurrency = {p: model.concurrency for p in providers}
    rates = ({p: model.rate_limit_rps for p in providers}
             if model.rate_limit_rps is not None else None)
    return EvalClient(
        cache=ResponseCache(spec.cache_dir),
        renderer_version=RENDERER_VERSION,
        budget=Budget(spec.budget_usd, ledger_dir=spec.limits_dir),
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

    It goes through an :class:`~evals.send.client.EvalClient` of its own (same response cache, same
    budget rules, retries), so a rerun replays every summary from the cache and pays nothing.
    Returns the summary text and its usage (``input``/``output`` tokens) for the rows.
    """
    if spec.summarizer is None:
        return None

    model = spec.summarizer
    if model.oracle is not None:  # bound per session by the replay (evals.replay.perfect_summary)
        return _oracle_unbound(model.name)
    if spec.dry_run and not model.stand_in:
        return _DryRunSummarizer(model.name)
    client = make_client(spec, completion_fn=completion_fn, model=model)

    def complete(system_prompt: str, user_prompt: str, *, max_tokens: int) -> dict[str, Any]:
        request = Request(
            model=model.litellm_id,
            # the request the compaction bill counts (evals.replay.compaction_bill)
            messages=summary_request(system_prompt, user_prompt),
            params={**model.params, "max_tokens": max_tokens + model.reasoning_headroom_tokens})
        response = asyncio.run(client.complete(request))
        if response.error is not None:
            raise RuntimeError(f"summarizer {model.name}: {response.error}")
        return {"text": response.answer or "",
                "usage": {"input": response.prompt_tokens or 0,
                          "output": response.completion_tokens or 0}}

    return complete


def _oracle_unbound(name: str) -> Callable[..., Any]:
    """The oracle summarizer needs a session's evidence lines: the replay binds it per session
    (evals.replay.contexts.build_context); called anywhere else, it says so."""

    def complete(system_prompt: str, user_prompt: str, *, max_tokens: int) -> dict[str, Any]:
        raise RuntimeError(f"summarizer {name}: an oracle is bound to a session's evidence by "
                           "build_context; it cannot summarize outside a session replay")

    return complete


#: What a dry run puts where an LLM summary would go: the replay needs a text to continue.
DRY_RUN_SUMMARY = ("## Goal\nDry-run placeholder: the summarizer was not asked (a dry run sends "
                   "nothing), so this context is the replay's shape, not its summary.")


class _DryRunSummarizer:
    """A dry run's stand-in for a real summarizer: the replay of an LLM method (handoff, soft,
    context-full) asks for a summary mid-replay, and a dry run must send nothing, so it gets a
    fixed placeholder and the asks are counted for the printed plan (the contexts after them,
    and their predicted tokens, hold the placeholder instead of the real summary)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked = 0

    def __call__(self, system_prompt: str, user_prompt: str, *, max_tokens: int
                 ) -> dict[str, Any]:
        self.asked += 1
        return {"text": DRY_RUN_SUMMARY, "usage": {"input": 0, "output": 0}}

    def note(self) -> str | None:
        if not self.asked:
            return None
        return (f"  summarizer           {self.name}: {self.asked} summaries the replay asks for "
                "were not sent (dry run); the contexts after them hold a placeholder, so their "
                "predicted tokens leave the real summaries out")


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
        request = p.request(data_url)
        if request.model == BLIND_MODEL_ID:
            reading = blind_reading(request.messages, request.metadata)
        else:
            reading = reading_of(parse_request(request.model, request.messages,
                                               request.metadata))
        return readings.put(reading) if reading is not None and readings is not None else None

    async def one(p: Planned) -> None:
        async with gate:
            response = await client.complete(p.request(data_url))
            reading = None
            if readings is not None and response.error is None:
                # the reader's transcript and spans, for the viewer (OCR caches: no re-read)
                reading = await asyncio.to_thread(store_reading, p)
            sink.add(make_record(p, response, spec, run_id, v, reading=reading))

    if spec.model.offline_reader or not spec.prompt_cache:
        await asyncio.gather(*(one(p) for p in plan.planned))
        return

    async def group(ps: list[Planned]) -> None:
        # the first question writes the provider's prompt cache; the others, sent once it has
        # answered, read it (sent together, each would find the cache cold and write it)
        await one(ps[0])
        await asyncio.gather(*(one(p) for p in ps[1:]))

    groups: dict[int, list[Planned]] = {}
    for p in plan.planned:
        groups.setdefault(p.cache_group, []).append(p)
    await asyncio.gather(*(group(ps) for ps in groups.values()))


#: What Ctrl-C prints at once while requests are in flight, before anything is waited for.
INTERRUPTED = "stopping now: requests in flight are dropped, the rows already recorded are kept"


def run_interruptibly(coro: Any, log: Callable[[str], None] = console) -> Any:
    """``asyncio.run(coro)``, except that Ctrl-C stops at once.

    Why not ``asyncio.run``: on Ctrl-C it cancels the tasks and then waits for its default
    executor's threads, where the offline reader OCRs frames for seconds each (about 13 s of
    silence with eight in flight). Here the interrupt is reported first, the tasks are cancelled
    (a thread's future is abandoned, not awaited) and the executor is shut down without waiting;
    ``KeyboardInterrupt`` is then re-raised for the caller to flush what it recorded.
    """
    loop = asyncio.new_event_loop()
    pool = ThreadPoolExecutor(thread_name_prefix="snapcompact-send")
    loop.set_default_executor(pool)
    try:
        return loop.run_until_complete(coro)
    except KeyboardInterrupt:
        log(INTERRUPTED)
        raise
    finally:
        # as asyncio.run: what is still pending (requests in flight, litellm's logging worker)
        # is cancelled and awaited; unlike it, threads still busy are not waited for
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        pool.shutdown(wait=False, cancel_futures=True)
        loop.close()


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
        register()
        register_blind()

    import_litellm()
    _quiet_litellm()
    check_prices(spec, log)
    if not spec.dry_run:
        check_environment(spec)
    v = versions()
    run_id = spec.run_id()
    done = None if spec.dry_run else finished_run(run_dir, run_id, v)
    if done is not None:  # evals.pipeline.finished: nothing to replay, nothing to send
        return _already_finished(spec, run_dir, run_id, done.rows, started, completion_fn,
                                 log)
    summarizer = make_summarizer(spec, completion_fn=completion_fn)
    plan = build_plan(spec, run_dir, log=log, summarizer=summarizer)
    client = make_client(spec, completion_fn=completion_fn)
    summary = client.plan(p.request() for p in plan.planned)
    log(format_plan(plan, summary, spec))
    if isinstance(summarizer, _DryRunSummarizer) and summarizer.note():
        log(summarizer.note())
    if spec.dry_run:
        return RunResult(run_dir, len(plan.planned), plan.skipped_done, True, summary,
                         wall_s=time.perf_counter() - started)
    client.budget.check(summary)
    sink = RecordSink(run_dir / RECORDS_FILE)
    for row in _skipped_rows(plan, spec, run_id, v, run_dir):
        sink.add(row)
    store = FrameStore(run_dir / "frames")
    # -- preflight (evals.send.preflight): every request within the provider's limits, or stop --
    if plan.planned and not spec.model.offline_reader:
        check_routes(spec.model.model_for(r) for r in spec.reader.readers)
        check_planned(plan.planned, spec.model, data_urls(store))
    # -- end preflight --------------------------------------------------------------------------
    window = max(8, 4 * spec.model.concurrency)
    bar = None
    if spec.progress and plan.planned:
        bar = ProgressBar(client.progress, total=len(plan.planned), desc=spec.experiment,
                          file=sys.stderr)
    try:
        if plan.planned:
            run_interruptibly(_send(plan, client, store, sink, spec, run_id, v, window), log)
    finally:
        sink.flush()
        if bar is not None:
            bar.close()
    return _finish(spec, run_dir, run_id, v, plan, client, sink, summary, started, log)


def _already_finished(spec: RunSpec, run_dir: Path, run_id: str, rows: int, started: float,
                      completion_fn: Any, log: Callable[[str], None]) -> RunResult:
    """A run that finished at this code: its table again, nothing replayed or sent."""
    table = summarize(iter_records(run_dir / RECORDS_FILE))
    log(format_summary(table, spec.model.offline_reader))
    log(f"nothing to do: this run finished at this code ({rows} rows in "
        f"{run_dir / RECORDS_FILE}; delete {run_dir / FINISHED_FILE} to plan it again)")
    # this rerun's own traffic (nothing sent), not the first run's left in summary.json
    _write_summary(spec, run_dir, run_id, {
        "planned": 0, "skipped_done": rows, "sent": 0, "cache_hits": 0, "shared": 0,
        "claim_waits": 0, "errors": 0, "rows_written": 0}, table)
    client = make_client(spec, completion_fn=completion_fn)
    return RunResult(run_dir, 0, rows, False, client.plan(()),
                     wall_s=time.perf_counter() - started, table=tuple(table))


def _write_summary(spec: RunSpec, run_dir: Path, run_id: str, traffic: dict[str, int],
                   table: Any) -> None:
    """``summary.json``: this run's traffic (every run overwrites it, a finished rerun too:
    a sweep's checks add it up across jobs) and its table."""
    (run_dir / "summary.json").write_text(json.dumps(
        {"note": OCR_NOTE if spec.model.offline_reader else None, "run_id": run_id,
         "requests": traffic, "rows": table}, indent=2) + "\n")


def _finish(spec: RunSpec, run_dir: Path, run_id: str, v: Versions, plan: Plan,
            client: EvalClient, sink: RecordSink, summary: DryRunSummary, started: float,
            log: Callable[[str], None]) -> RunResult:
    """After the sends: the run's table, the finished mark when every planned row was
    recorded, this run's traffic in ``summary.json``, and the console summary."""
    table = summarize(iter_records(run_dir / RECORDS_FILE))
    progress = client.progress
    if progress.errors == 0:  # every planned row recorded (an interrupt never gets here)
        mark_finished(run_dir, run_id, v)
    traffic = {"planned": len(plan.planned), "skipped_done": plan.skipped_done,
               "sent": progress.requests_sent, "cache_hits": progress.cache_hits,
               "shared": progress.dedup_hits, "claim_waits": progress.claim_waits,
               "errors": progress.errors, "rows_written": sink.written}
    _write_summary(spec, run_dir, run_id, traffic, table)
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
