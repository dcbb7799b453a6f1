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

``import litellm`` takes about 5 s, so it happens on first use, after
``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set (no network fetch of the price map).
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import logging
import math
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evals.send.dollar_budget import Budget, BudgetExceeded, DryRunSummary
from evals.send.response_cache import CacheClaim, CachedResponse, ResponseCache, request_key
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

# ---------------------------------------------------------------------------------------------
# litellm, imported once and quietly


def import_litellm() -> Any:
    """Import litellm offline-safe: local price map, no debug banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


# ---------------------------------------------------------------------------------------------
# key redaction lives in evals.support.redaction (one pass for every file, folder name and log line)


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

    @property
    def ok(self) -> bool:
        return self.error is None


_PROVIDER_CACHE: dict[str, str] = {}


def provider_of(model: str) -> str:
    """The provider a model id is billed and rate-limited by (``anthropic/x`` -> ``anthropic``).

    Bare ids (``gpt-4o``) are resolved through litellm's own table, falling back to the id.
    """
    if "/" in model:
        return model.split("/", 1)[0]
    provider = _PROVIDER_CACHE.get(model)
    if provider is None:
        try:
            provider = import_litellm().get_llm_provider(model)[1]
        except Exception:
            provider = model
        _PROVIDER_CACHE[model] = provider
    return provider


# ---------------------------------------------------------------------------------------------
# retries


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; ``Retry-After`` wins when the provider sends one."""

    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be >= 1")
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("RetryPolicy delays must be >= 0")

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after_s is not None:
            wait = min(retry_after_s, self.max_retry_after_s)
            return wait + rng.uniform(0, 0.1 * wait)  # at least what the server asked for
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return rng.uniform(ceiling / 2, ceiling)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a provider asked for, if any, read from the error's response headers.

    In order: ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date), then the providers'
    rate-limit reset headers of the limits that are used up: Anthropic's
    ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset`` (RFC 3339 time)
    and OpenAI's ``x-ratelimit-reset-{requests,tokens}`` (a duration such as ``1s``, ``6m0s``,
    ``20ms``); the longest wait wins. Gemini states its wait in the error body instead
    (``google.rpc.RetryInfo`` ``"retryDelay": "2s"``), which is read last.
    """
    headers = getattr(exc, "litellm_response_headers", None)
    if not headers:
        try:
            headers = getattr(getattr(exc, "response", None), "headers", None)
        except Exception:
            headers = None
    try:
        lowered = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    except Exception:
        lowered = {}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
        except (TypeError, ValueError):
            pass
    reset = _rate_limit_reset_seconds(lowered)
    if reset is not None:
        return reset
    match = _RETRY_DELAY.search(str(exc))
    return float(match.group(1)) if match else None


_RETRY_DELAY = re.compile(r"\"retryDelay\"\s*:\s*\"(\d+(?:\.\d+)?)s\"")
_RESET_HEADER = re.compile(r"^(anthropic-ratelimit-(?P<a>[a-z-]+)-reset"
                           r"|x-ratelimit-reset-(?P<o>[a-z-]+))$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def _duration_seconds(text: str) -> float | None:
    """``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s`` -> seconds (None if not a duration)."""
    text = text.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def _rate_limit_reset_seconds(headers: Mapping[str, str]) -> float | None:
    """Longest reset wait among the rate limits whose ``remaining`` is 0 (or not stated)."""
    waits: list[float] = []
    for name, value in headers.items():
        match = _RESET_HEADER.match(name)
        if match is None:
            continue
        if match.group("a"):
            remaining = headers.get(f"anthropic-ratelimit-{match.group('a')}-remaining")
            try:
                when = datetime.fromisoformat(value)
            except ValueError:
                continue
            wait = when.timestamp() - time.time()
        else:
            remaining = headers.get(f"x-ratelimit-remaining-{match.group('o')}")
            wait = _duration_seconds(value)
            if wait is None:
                continue
        if remaining is not None and remaining.strip() not in ("0", "0.0"):
            continue  # this limit is not the one that was hit
        waits.append(max(0.0, wait))
    return max(waits) if waits else None


_RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


def is_retryable(exc: BaseException) -> bool:
    """429, 5xx, timeouts and connection errors are worth another try; 4xx are not."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return True
    litellm = import_litellm()
    retryable = (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.Timeout,
        litellm.APIConnectionError,
    )
    if isinstance(exc, retryable):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in _RETRYABLE_STATUS or status >= 500
    return False


# ---------------------------------------------------------------------------------------------
# progress


@dataclass
class Progress:
    """Running counters of one client; listeners are called after every change."""

    completed: int = 0
    requests_sent: int = 0
    cache_hits: int = 0
    dedup_hits: int = 0
    claim_waits: int = 0  # requests answered by another process holding the claim
    cache_write_errors: int = 0
    retries: int = 0
    errors: int = 0
    budget_refusals: int = 0
    token_waits: int = 0  # sends that waited for the input-tokens-per-minute limit
    token_wait_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    listeners: list[Callable[[Progress], None]] = field(default_factory=list, repr=False)

    def notify(self) -> None:
        for listener in self.listeners:
            listener(self)

    def summary(self) -> str:
        text = (
            f"{self.completed} done, {self.requests_sent} sent, {self.cache_hits} cache hits, "
            f"{self.dedup_hits} shared, {self.errors} errors, "
            f"{self.prompt_tokens + self.completion_tokens:,} tok, ${self.cost_usd:.4f}"
        )
        if self.token_waits:
            text += (f", {self.token_waits} waited {self.token_wait_s:,.1f} s for the "
                     "tokens-per-minute limit")
        if self.cache_write_errors:
            text += (f" (WARNING: {self.cache_write_errors} answers could not be cached; they "
                     "are kept in the records only)")
        return text


class ProgressBar:
    """tqdm bar over a ``Progress``: completed/total, with requests, hits, tokens and dollars."""

    def __init__(self, progress: Progress, total: int, desc: str = "eval", **tqdm_kwargs: Any):
        from tqdm.auto import tqdm

        self.progress = progress
        self._start = progress.completed
        self._bar = tqdm(total=total, desc=desc, unit="q", **tqdm_kwargs)
        progress.listeners.append(self._update)

    def _update(self, progress: Progress) -> None:
        done = progress.completed - self._start
        self._bar.set_postfix(
            sent=progress.requests_sent,
            hits=progress.cache_hits + progress.dedup_hits,
            err=progress.errors,
            tok=f"{progress.prompt_tokens + progress.completion_tokens:,}",
            usd=f"{progress.cost_usd:.4f}",
            refresh=False,
        )
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._update in self.progress.listeners:
            self.progress.listeners.remove(self._update)
        self._update(self.progress)
        self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# rate limit


class _RateLimiter:
    """Requests-per-second limit (GCRA token bucket): bursts up to ``burst``, then ``rate``/s.

    No lock: the bookkeeping between awaits runs atomically on the event loop.
    """

    def __init__(self, rate_per_s: float, burst: int = 1) -> None:
        if not rate_per_s > 0:
            raise ValueError(f"rate limit must be > 0 requests/s, got {rate_per_s!r}")
        self.interval = 1.0 / rate_per_s
        self.tolerance = (max(1, burst) - 1) * self.interval
        self._next = time.monotonic()

    async def acquire(self) -> None:
        now = time.monotonic()
        start = max(self._next, now - self.tolerance)
        self._next = start + self.interval
        wait = start - now
        if wait > 0:
            await asyncio.sleep(wait)


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
        self.limiters: dict[str, _RateLimiter] = {}
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
        self.concurrency = self._per_provider(concurrency, "concurrency", default=8)
        self.rate_limits = self._per_provider(rate_limits, "rate_limits", default=None)
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

    @staticmethod
    def _per_provider(value: Any, name: str, default: Any) -> dict[str, Any]:
        if value is None or isinstance(value, (int, float)):
            return {"default": value if value is not None else default}
        if isinstance(value, Mapping):
            return {"default": default, **dict(value)}
        raise ValueError(f"{name} must be a number or a mapping of provider -> number")

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

    def _limiter(self, state: _LoopState, provider: str) -> _RateLimiter | None:
        if provider in state.limiters:
            return state.limiters[provider]
        rate = self.rate_limits.get(provider, self.rate_limits["default"])
        limiter = None if rate is None else _RateLimiter(rate)
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
                return self._hit(key, request, hit)
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

    def _error_response(self, key: str, request: Request, error: str, attempts: int,
                        latency_s: float) -> Response:
        return Response(key=key, model=request.model, answer=None, prompt_tokens=None,
                        completion_tokens=None, cost_usd=None, latency_s=latency_s, cached=False,
                        error=error, attempts=attempts)

    def _secrets_of(self, request: Request) -> list[str]:
        return secret_values(dict(request.params))

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

    def _hit(self, key: str, request: Request, hit: CachedResponse) -> Response:
        return Response(key=key, model=request.model, answer=hit.answer,
                        prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                        cost_usd=hit.cost_usd, latency_s=hit.latency_s, cached=True, error=None,
                        attempts=0, cache_read_tokens=hit.cache_read_tokens,
                        cache_write_tokens=hit.cache_write_tokens)

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
            return self._hit(key, request, hit)
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
            return self._error_response(key, request, f"BudgetExceeded: {exc}", 0, 0.0)

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
                    semaphore: asyncio.Semaphore, limiter: _RateLimiter | None,
                    hard_timeout: float, completion: CompletionFn) -> Response:
        progress = self.progress
        tokens = self.token_limiter(request.model)
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            async with semaphore:
                if limiter is not None:
                    await limiter.acquire()
                if tokens is not None:  # every attempt sends its input: each one waits its turn
                    waited = await tokens.acquire(request.predicted_prompt_tokens)
                    if waited > 0:
                        progress.token_waits += 1
                        progress.token_wait_s += waited
                progress.requests_sent += 1
                progress.notify()
                sent = time.perf_counter()
                try:
                    call = dict(kwargs)  # litellm mutates metadata in place: fresh per attempt
                    if request.metadata:
                        call["metadata"] = dict(request.metadata)
                    raw = await asyncio.wait_for(
                        completion(model=request.model, messages=list(request.messages), **call),
                        hard_timeout,
                    )
                    error: BaseException | None = None
                except Exception as exc:  # noqa: BLE001 - recorded, never raised
                    error = exc
                    if tokens is not None:  # no answer, no input counted: give the tokens back
                        tokens.settle(request.predicted_prompt_tokens, 0)
                latency = time.perf_counter() - sent
            if error is None:
                break
            message = redact(f"{type(error).__name__}: {error}", self._secrets_of(request))
            if not is_retryable(error) or attempt >= self.retry.max_attempts:
                suffix = f" (after {attempt} attempts)" if attempt > 1 else ""
                return self._error_response(key, request, message[:2000] + suffix, attempt,
                                            time.perf_counter() - started)
            progress.retries += 1
            await self._sleep(self.retry.delay(attempt, retry_after_seconds(error), self._rng))

        answer, prompt_tokens, completion_tokens, cost = _read_completion(raw, request.model)
        cache_read, cache_write = cache_tokens(getattr(raw, "usage", None))
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
        )


def _count_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def cache_tokens(usage: Any) -> tuple[int | None, int | None]:
    """(read, written) prompt-cache tokens of a litellm usage, as the provider reported them.

    Reads: ``cache_read_input_tokens`` (Anthropic, Bedrock) or ``prompt_tokens_details.
    cached_tokens`` (OpenAI; Gemini's ``cachedContentTokenCount`` as litellm maps it). Writes:
    ``cache_creation_input_tokens`` (Anthropic, Bedrock; OpenAI and Gemini bill none). None when
    the usage carries no such field.
    """
    if usage is None:
        return None, None
    read = _count_of(getattr(usage, "cache_read_input_tokens", None))
    if not read:
        details = getattr(usage, "prompt_tokens_details", None)
        cached = _count_of(getattr(details, "cached_tokens", None)) if details is not None \
            else None
        read = cached if cached is not None else read
    write = _count_of(getattr(usage, "cache_creation_input_tokens", None))
    return read, write


def _read_completion(raw: Any, model: str) -> tuple[str, int | None, int | None, float | None]:
    """Answer text, provider-reported prompt/completion tokens and cost of a litellm response."""
    try:
        answer = raw.choices[0].message.content or ""
    except (AttributeError, IndexError, TypeError):
        answer = ""
    usage = getattr(raw, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", None)
    completion_tokens = getattr(usage, "completion_tokens", None)
    cost: float | None = None
    reported = getattr(usage, "cost", None)  # OpenRouter reports its own charge
    hidden = getattr(raw, "_hidden_params", None) or {}
    if isinstance(reported, (int, float)) and not isinstance(reported, bool):
        cost = float(reported)
    elif isinstance(hidden.get("response_cost"), (int, float)):
        cost = float(hidden["response_cost"])
    else:
        try:
            # Custom providers answer with a bare model name; price them by the requested id.
            cost = float(import_litellm().completion_cost(completion_response=raw, model=model))
        except Exception:
            cost = None  # the model has no price in litellm's table
    return str(answer), prompt_tokens, completion_tokens, cost
