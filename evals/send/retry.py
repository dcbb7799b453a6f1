"""When a failed request is worth another try, and how long to wait before it.

Why a module: a sweep against rate-limited APIs lives or dies by its backoff. 429, 5xx,
timeouts and connection errors are retried with exponential backoff and jitter; a wait the
provider asked for (``Retry-After``, the rate-limit reset headers, Gemini's ``retryDelay``)
wins over the backoff. Client errors (4xx) are not retried: they are recorded.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from evals.send.completion import import_litellm


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
