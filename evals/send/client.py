"""Async model client for the eval harness: litellm behind a cache, limits, retries and a budget.

A sweep sends thousands of image questions to rate-limited, billed APIs. The harness must be a
trustworthy instrument, so this client guarantees, in order of importance:

1. **Never bill the same request twice.** Each request is looked up in the content-addressed
   cache first (``evals.send.response_cache``; a hit sends nothing); identical requests that are in
   flight at the same time share one call; across processes sharing the cache, a per-key claim
   (``ResponseCache.claim``) lets one send while the others wait for its answer; each answer is
   written to the cache as soon as it arrives, so a sweep that is interrupted and rerun resumes
   from where it stopped. **Never lose a paid answer**: a cache that cannot be read or written
   (disk full, permissions) is a warning and a counter (``Progress.cache_write_errors``), and
   the answer is still returned (and recorded by the caller).
2. **Never spend past the budget** (``evals.send.dollar_budget``): each request reserves its
   predicted cost before it is sent, and a refused request comes back as an error instead of
   being sent.
3. **Never leak a key.** Keys come only from the environment (litellm reads them) or from the
   caller's params; they are stripped from cache keys and entries, and every error message is
   passed through ``redact()`` (``evals.support.redaction``) before it is recorded.
4. **One bad request does not kill a sweep.** Client errors (4xx) are recorded in the
   ``Response`` instead of being raised; 429, 5xx, timeouts and connection errors are retried
   with exponential backoff and jitter, honouring ``Retry-After``. The OpenAI SDK's own retries
   are switched off (``max_retries=0``) so that ``attempts`` counts real HTTP requests.

Concurrency is limited per provider (the prefix of the model id: ``anthropic``, ``openai``,
``snapocr``...) with one ``asyncio.Semaphore`` each, optionally with a requests-per-second
limit per provider and an input-tokens-per-minute limit per model (``evals.send.token_rate``:
requests wait for their predicted prompt tokens, in a state file that every job of a sweep shares).
A ``Progress`` object counts requests sent, cache hits, tokens and dollars, and ``ProgressBar``
renders it with tqdm.

``import litellm`` takes about 5 s, so it happens on first use (:mod:`evals.send.completion`).
This module holds the request, the response and the client that sends one; the retry rule
(:mod:`evals.send.retry`), the counters (:mod:`evals.send.progress`) and the per-provider
requests-per-second bucket (:mod:`evals.send.request_rate`) are rooms of their own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.send.completion import (
    cache_tokens,
    import_litellm,
    provider_of,
    read_completion,
    reasoning_tokens,
)
from evals.send.dollar_budget import Budget, BudgetExceeded, DryRunSummary
from evals.send.progress import Progress, ProgressBar
from evals.send.request_rate import RequestRateLimiter
from evals.send.response_cache import CacheClaim, CachedResponse, ResponseCache, request_key
from evals.send.retry import RetryPolicy, is_retryable, retry_after_seconds
from evals.send.token_rate import TokenRateLimiter, state_file_for
from evals.support.redaction import REDACTED, redact, secret_values

__all__ = [
    "REDACTED",
    "EvalClient",
    "Progress",
    "ProgressBar",
    "Request",
    "Response",
    "RetryPolicy",
    "cache_tokens",
    "import_litellm",
    "is_retryable",
    "provider_of",
    "redact",
    "retry_after_seconds",
]

# Key redaction lives in evals.support.redaction (one pass for every file, folder name and log
# line); litellm's import and its answers' reading in evals.send.completion; when to retry in
# evals.send.retry; the counters in evals.send.progress. The names above are re-exported: they
# are the client's public surface.


# ---------------------------------------------------------------------------------------------
# requests and responses


@dataclass(frozen=True)
class Request:
    """One chat completion to send: OpenAI-format messages, image parts as data URLs.

    ``frame_hashes`` holds, in order, the digest of each image part's decoded pixels
    (:func:`evals.store.pixel_keys.pixel_digest`; the cache keys on them instead of the base64).
    ``params`` are litellm kwargs (temperature, max_tokens...); ``metadata`` goes to litellm's
    callbacks and never to the provider. The predictions are the caller's (library billing
    formulas × prices) and feed the budget.
    """

    model: str
    messages: Sequence[Mapping[str, Any]]
    params: Mapping[str, Any] = field(default_factory=dict)
    frame_hashes: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    predicted_prompt_tokens: int = 0
    predicted_cost_usd: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("Request.model must be a model id such as "
                             "'anthropic/claude-sonnet-4-5'")
        if isinstance(self.messages, (str, bytes)) or not isinstance(self.messages, Sequence):
            raise ValueError("Request.messages must be a list of OpenAI-format chat messages")
        if not self.messages:
            raise ValueError("Request.messages is empty")
        if not isinstance(self.params, Mapping):
            raise ValueError("Request.params must be a mapping of litellm keyword arguments")
        if not isinstance(self.metadata, Mapping):
            raise ValueError("Request.metadata must be a mapping")
        for reserved in ("model", "messages"):
            if reserved in self.params:
                raise ValueError(f"Request.params must not contain {reserved!r}")
        if isinstance(self.frame_hashes, str):
            raise ValueError("Request.frame_hashes must be a tuple of SHA-256 hex strings")
        object.__setattr__(self, "frame_hashes", tuple(self.frame_hashes))
        tokens = self.predicted_prompt_tokens
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f"Request.predicted_prompt_tokens must be an int >= 0, got {tokens!r}")
        cost = self.predicted_cost_usd
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) \
                or cost < 0:
            raise ValueError("Request.predicted_cost_usd must be a finite number >= 0, got "
                             f"{cost!r}")

    @property
    def provider(self) -> str:
        return provider_of(self.model)


@dataclass(frozen=True)
class Response:
    """What came back for one request.

    ``cached`` is True when this call sent nothing: the answer came from the cache or from an
    identical request in flight at the same time. Tokens, cost and latency are then those the
    provider reported for the original call (what the answer costs, not what this run spent;
    ``Progress.cost_usd`` counts what this run spent). ``error`` is a redacted message, or None.
    ``attempts`` counts the HTTP requests this call sent (0 when cached or refused).
    """

    key: str
    model: str
    answer: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_s: float
    cached: bool
    error: str | None
    attempts: int
    cache_read_tokens: int | None = None  # prompt tokens the provider read from its cache
    cache_write_tokens: int | None = None  # prompt tokens it wrote to its cache
    #: of ``completion_tokens``, the reasoning (thinking) tokens the provider reported
    reasoning_tokens: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


# ---------------------------------------------------------------------------------------------
# the client


CompletionFn = Callable[..., Awaitable[Any]]
_log = logging.getLogger("snapcompact-eval.client")


class _Reservation:
    """One request's claim on the budget, settled or released exactly once."""

    def __init__(self, budget: Budget, predicted_usd: float) -> None:
        self.budget = budget
        self.amount = budget.reserve(predicted_usd)
        self.open = True

    def settle(self, actual_usd: float | None) -> None:
        if self.open:
            self.open = False
            self.budget.settle(self.amount, actual_usd)

    def release(self) -> None:
        if self.open:
            self.open = False
            self.budget.release(self.amount)


class _LoopState:
    """Per-event-loop objects (semaphores bind to the loop that first waits on them)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.semaphores: dict[str, asyncio.Semaphore] = {}
        self.limiters: dict[str, RequestRateLimiter] = {}
        self.inflight: dict[str, asyncio.Future[Response]] = {}


class EvalClient:
    """Sends ``Request``s through litellm; see the module docstring for the guarantees.

    ``concurrency``: simultaneous requests per provider (an int for all, or a mapping with
    provider names and an optional ``"default"``). ``rate_limits``: requests per second per
    provider (same forms; ``None`` = unlimited). ``tokens_per_minute``: input tokens per minute
    per model id, spent by each request's ``predicted_prompt_tokens`` (``None`` = unlimited);
    with ``limits_dir`` the limit's state is a file there, shared by every client and process
    pointed at the same folder (``evals.send.token_rate``). ``renderer_version`` is part of every
    cache key. ``completion_fn`` replaces ``litellm.acompletion`` (tests inject a counting wrapper).
    """

    def __init__(
        self,
        *,
        cache: ResponseCache | None,
        renderer_version: str,
        budget: Budget | None = None,
        concurrency: int | Mapping[str, int] = 8,
        rate_limits: float | Mapping[str, float] | None = None,
        tokens_per_minute: float | None = None,
        limits_dir: str | os.PathLike[str] | None = None,
        retry: RetryPolicy = RetryPolicy(),
        timeout_s: float = 120.0,
        progress: Progress | None = None,
        completion_fn: CompletionFn | None = None,
        seed: int | None = None,
    ) -> None:
        if not isinstance(renderer_version, str) or not renderer_version:
            raise ValueError("renderer_version must be a non-empty string")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self.cache = cache
        self.renderer_version = renderer_version
        self.budget = budget if budget is not None else Budget(None)
        self.concurrency = _per_provider(concurrency, "concurrency", default=8)
        self.rate_limits = _per_provider(rate_limits, "rate_limits", default=None)
        for name, limit in self.concurrency.items():
            if not isinstance(limit, int) or limit < 1:
                raise ValueError(f"concurrency[{name!r}] must be an int >= 1, got {limit!r}")
        if tokens_per_minute is not None:
            TokenRateLimiter(tokens_per_minute).close()  # a bad value fails here, not mid-run
        self.tokens_per_minute = tokens_per_minute
        self.limits_dir = limits_dir
        self._token_limiters: dict[str, TokenRateLimiter] = {}
        self.retry = retry
        self.timeout_s = float(timeout_s)
        self.progress = progress if progress is not None else Progress()
        self._completion_fn = completion_fn
        self._rng = random.Random(seed)
        self._state: _LoopState | None = None
        self._sleep = asyncio.sleep
        self._cache_warned: set[str] = set()

    # -- keys and plans -------------------------------------------------------------------
    def key_for(self, request: Request) -> str:
        return request_key(
            model=request.model,
            messages=request.messages,
            params=request.params,
            frame_hashes=request.frame_hashes,
            renderer_version=self.renderer_version,
            reader_inputs=request.metadata.get("snapocr"),
        )

    def plan(self, requests: Iterable[Request]) -> DryRunSummary:
        """Predicted requests, cache hits, tokens and dollars of a run, sending nothing."""
        seen: set[str] = set()
        count = hits = tokens = tokens_to_send = 0
        cost = cost_to_send = 0.0
        for request in requests:
            key = self.key_for(request)
            count += 1
            tokens += request.predicted_prompt_tokens
            cost += request.predicted_cost_usd
            if key in seen or (self.cache is not None and self.cache.get(key) is not None):
                hits += 1
            else:
                tokens_to_send += request.predicted_prompt_tokens
                cost_to_send += request.predicted_cost_usd
            seen.add(key)
        return DryRunSummary(
            requests=count,
            predicted_cache_hits=hits,
            predicted_prompt_tokens=tokens,
            predicted_prompt_tokens_to_send=tokens_to_send,
            predicted_cost_usd=cost,
            predicted_cost_to_send_usd=cost_to_send,
        )

    # -- sending --------------------------------------------------------------------------
    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            self._state = _LoopState(loop)
        return self._state

    def _semaphore(self, state: _LoopState, provider: str) -> asyncio.Semaphore:
        semaphore = state.semaphores.get(provider)
        if semaphore is None:
            limit = self.concurrency.get(provider, self.concurrency["default"])
            semaphore = state.semaphores[provider] = asyncio.Semaphore(limit)
        return semaphore

    def _limiter(self, state: _LoopState, provider: str) -> RequestRateLimiter | None:
        if provider in state.limiters:
            return state.limiters[provider]
        rate = self.rate_limits.get(provider, self.rate_limits["default"])
        limiter = None if rate is None else RequestRateLimiter(rate)
        state.limiters[provider] = limiter  # type: ignore[assignment]
        return limiter

    def token_limiter(self, model: str) -> TokenRateLimiter | None:
        """The input-tokens-per-minute limiter of ``model`` (None when unlimited)."""
        if self.tokens_per_minute is None:
            return None
        limiter = self._token_limiters.get(model)
        if limiter is None:
            state = (state_file_for(self.limits_dir, model) if self.limits_dir is not None
                     else None)
            limiter = self._token_limiters[model] = TokenRateLimiter(
                self.tokens_per_minute, state_file=state)
        return limiter

    async def complete(self, request: Request) -> Response:
        """The answer to ``request``: from the cache, a shared in-flight call, or the provider."""
        key = self.key_for(request)
        state = self._loop_state()
        progress = self.progress
        shared = state.inflight.get(key)
        if shared is not None:
            leader = await asyncio.shield(shared)
            progress.completed += 1
            if leader.ok:
                progress.dedup_hits += 1
            else:
                progress.errors += 1
            progress.notify()
            return dataclasses.replace(leader, cached=leader.ok, attempts=0)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                progress.cache_hits += 1
                progress.completed += 1
                progress.notify()
                return _hit_response(key, request, hit)
        task = asyncio.ensure_future(self._fetch(key, request, state))
        state.inflight[key] = task
        task.add_done_callback(lambda _: state.inflight.pop(key, None))
        response = await asyncio.shield(task)
        progress.completed += 1
        progress.errors += 0 if response.ok else 1
        progress.notify()
        return response

    async def complete_all(
        self, requests: Sequence[Request], *, show_progress: bool = False, desc: str = "eval"
    ) -> list[Response]:
        """Answers to ``requests`` in order (concurrency is bounded by the per-provider limits)."""
        if not show_progress:
            return list(await asyncio.gather(*(self.complete(r) for r in requests)))
        with ProgressBar(self.progress, total=len(requests), desc=desc):
            return list(await asyncio.gather(*(self.complete(r) for r in requests)))

    def _cache_failed(self, action: str, exc: BaseException) -> None:
        """A cache that cannot be used costs reuse, never an answer: warn and go on."""
        if action == "write":
            self.progress.cache_write_errors += 1
        first = action not in self._cache_warned
        self._cache_warned.add(action)
        if first:
            root = self.cache.root if self.cache is not None else "?"
            _log.warning("response cache %s: cannot %s (%s); answers are kept in the records, "
                         "but a rerun in another folder will ask again",
                         root, action, redact(f"{type(exc).__name__}: {exc}"))

    async def _claim(self, key: str) -> tuple[CacheClaim | None, CachedResponse | None]:
        """Claim ``key`` across processes: (claim, None) to send, or (None, answer) when
        another process answered it while we waited. No cache, or one that cannot hold
        claims: (None, None), send without a claim."""
        if self.cache is None:
            return None, None
        wait = 0.02
        waited = False
        try:
            claim = self.cache.claim(key)
            while True:
                if claim.try_acquire():  # non-blocking: never leaves a lock behind a cancel
                    hit = self.cache.get(key)  # the previous holder may have answered it
                    if hit is not None:
                        claim.release()
                        return None, hit
                    return claim, None
                hit = self.cache.get(key)
                if hit is not None:
                    return None, hit
                if not waited:
                    waited = True
                    self.progress.claim_waits += 1
                await asyncio.sleep(wait)
                wait = min(0.5, wait * 1.5)
        except OSError as exc:
            self._cache_failed("claim", exc)
            return None, None

    async def _fetch(self, key: str, request: Request, state: _LoopState) -> Response:
        progress = self.progress
        claim, hit = await self._claim(key)
        if hit is not None:
            progress.cache_hits += 1
            return _hit_response(key, request, hit)
        try:
            return await self._fetch_claimed(key, request, state)
        finally:
            if claim is not None:
                claim.release()

    async def _fetch_claimed(self, key: str, request: Request, state: _LoopState) -> Response:
        progress = self.progress
        try:
            reservation = _Reservation(self.budget, request.predicted_cost_usd)
        except BudgetExceeded as exc:
            progress.budget_refusals += 1
            return _error_response(key, request, f"BudgetExceeded: {exc}", 0, 0.0)

        provider = request.provider
        semaphore = self._semaphore(state, provider)
        limiter = self._limiter(state, provider)
        kwargs: dict[str, Any] = dict(request.params)
        kwargs["max_retries"] = 0  # our loop retries; attempts == HTTP requests
        kwargs.setdefault("timeout", self.timeout_s)
        timeout = kwargs["timeout"]
        # In case a provider (a custom one, say) ignores `timeout`; httpx.Timeout objects pass.
        hard_timeout = ((float(timeout) if isinstance(timeout, (int, float)) else self.timeout_s)
                        + 30)
        completion = self._completion_fn or import_litellm().acompletion

        try:
            return await self._send(key, request, kwargs, reservation, semaphore, limiter,
                                    hard_timeout, completion)
        finally:
            reservation.release()  # no-op once settled; frees it after errors and cancellation

    async def _send(self, key: str, request: Request, kwargs: dict[str, Any],
                    reservation: _Reservation,
                    semaphore: asyncio.Semaphore, limiter: RequestRateLimiter | None,
                    hard_timeout: float, completion: CompletionFn) -> Response:
        """Attempts until an answer or a final error: each waits its turn under the provider's
        limits, a retryable failure sleeps the retry policy's delay, a final one is recorded."""
        tokens = self.token_limiter(request.model)
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            async with semaphore:
                await self._wait_turn(request, limiter, tokens)
                raw, error, latency = await self._attempt(request, kwargs, hard_timeout,
                                                          completion, tokens)
            if error is None:
                break
            message = redact(f"{type(error).__name__}: {error}",
                             secret_values(dict(request.params)))
            if not is_retryable(error) or attempt >= self.retry.max_attempts:
                suffix = f" (after {attempt} attempts)" if attempt > 1 else ""
                return _error_response(key, request, message[:2000] + suffix, attempt,
                                       time.perf_counter() - started)
            self.progress.retries += 1
            asked = retry_after_seconds(error)
            wait = self.retry.delay(attempt, asked, self._rng)
            # every retry in the job log with its cause; the console counts them (``retries``)
            cause = (message[:300] if str(error) else  # a bare timeout says nothing itself
                     f"{type(error).__name__}, no answer within {hard_timeout:,.0f} s")
            _log.warning("retry %d of %s (attempt %d of %d failed: %s); sending again in "
                         "%.1f s%s", attempt, request.model, attempt, self.retry.max_attempts,
                         cause, wait,
                         " (the wait the provider asked for)" if asked is not None else "")
            await self._sleep(wait)
        return await self._answered(key, request, raw, latency, attempt, reservation, tokens)

    async def _wait_turn(self, request: Request, limiter: RequestRateLimiter | None,
                         tokens: TokenRateLimiter | None) -> None:
        """Wait for the provider's requests-per-second and the model's tokens-per-minute
        limits; every attempt sends its input, so each one waits its turn."""
        progress = self.progress
        if limiter is not None:
            await limiter.acquire()
        if tokens is not None:
            waited = await tokens.acquire(request.predicted_prompt_tokens)
            if waited > 0:
                progress.token_waits += 1
                progress.token_wait_s += waited
        progress.requests_sent += 1
        progress.notify()

    async def _attempt(self, request: Request, kwargs: dict[str, Any], hard_timeout: float,
                       completion: CompletionFn, tokens: TokenRateLimiter | None,
                       ) -> tuple[Any, BaseException | None, float]:
        """One HTTP request: (raw answer, None, latency) or (None, the error, latency). A
        failed attempt gives its predicted input tokens back (no answer, no input counted)."""
        sent = time.perf_counter()
        try:
            call = dict(kwargs)  # litellm mutates metadata in place: fresh per attempt
            if request.metadata:
                call["metadata"] = dict(request.metadata)
            raw = await asyncio.wait_for(
                completion(model=request.model, messages=list(request.messages), **call),
                hard_timeout,
            )
        except Exception as exc:  # noqa: BLE001 - recorded, never raised
            if tokens is not None:
                tokens.settle(request.predicted_prompt_tokens, 0)
            return None, exc, time.perf_counter() - sent
        return raw, None, time.perf_counter() - sent

    async def _answered(self, key: str, request: Request, raw: Any, latency: float, attempt: int,
                        reservation: _Reservation, tokens: TokenRateLimiter | None) -> Response:
        """Settle the answer's bill (budget, tokens per minute, counters), write it to the
        cache at once (a paid answer is never lost to a later failure) and return it."""
        progress = self.progress
        answer, prompt_tokens, completion_tokens, cost = read_completion(raw, request.model)
        cache_read, cache_write = cache_tokens(getattr(raw, "usage", None))
        reasoning = reasoning_tokens(getattr(raw, "usage", None))
        reservation.settle(cost)
        if tokens is not None:
            tokens.settle(request.predicted_prompt_tokens, prompt_tokens)
        progress.prompt_tokens += prompt_tokens or 0
        progress.completion_tokens += completion_tokens or 0
        progress.cost_usd += cost if cost is not None else 0.0
        entry = CachedResponse(
            answer=answer,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            model=str(getattr(raw, "model", None) or request.model),
            latency_s=latency,
            created_unix=time.time(),
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
        )
        if self.cache is not None:
            try:
                await asyncio.to_thread(self.cache.put, key, entry)
            except (OSError, ValueError) as exc:
                self._cache_failed("write", exc)
        return Response(
            key=key,
            model=request.model,
            answer=answer,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            latency_s=latency,
            cached=False,
            error=None,
            attempts=attempt,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
        )


def _error_response(key: str, request: Request, error: str, attempts: int,
                    latency_s: float) -> Response:
    return Response(key=key, model=request.model, answer=None, prompt_tokens=None,
                    completion_tokens=None, cost_usd=None, latency_s=latency_s, cached=False,
                    error=error, attempts=attempts)


def _hit_response(key: str, request: Request, hit: CachedResponse) -> Response:
    return Response(key=key, model=request.model, answer=hit.answer,
                    prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                    cost_usd=hit.cost_usd, latency_s=hit.latency_s, cached=True, error=None,
                    attempts=0, cache_read_tokens=hit.cache_read_tokens,
                    cache_write_tokens=hit.cache_write_tokens,
                    reasoning_tokens=hit.reasoning_tokens)


def _per_provider(value: Any, name: str, default: Any) -> dict[str, Any]:
    """A per-provider setting from a number (every provider) or a mapping (with "default")."""
    if value is None or isinstance(value, (int, float)):
        return {"default": value if value is not None else default}
    if isinstance(value, Mapping):
        return {"default": default, **dict(value)}
    raise ValueError(f"{name} must be a number or a mapping of provider -> number")
