"""Shared machinery of the wire twins: one loopback aiohttp server, a request log, faults.

Why one server for several twins: the tests run every model config against its provider's twin,
and litellm's import alone takes seconds; starting one background thread with one port for all
twins keeps that cheap. Each twin is mounted under its own prefix, so its ``api_base`` is
``http://127.0.0.1:<port>/<prefix>`` and litellm appends the provider's own path to it, exactly
as it does for the real endpoint.

A twin (``WireTwin`` subclass) declares its routes, turns a ``Refusal`` into the provider's error
body and status, and turns a scripted ``Fault`` (rate limit, overload) into the provider's
reply with the provider's headers. Every request, accepted or refused, is appended to
``twin.log`` as an ``Exchange``: what the twin saw (images decoded, their sizes) and what it
billed (text and image tokens), so a test can check what litellm recorded against what the
twin computed.

Limits come from ``snapcompact/pricing/pricing.toml`` (``[[request_limits]]``), read here with
tomllib, not through ``snapcompact.pricing.billing``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import tomllib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, ClassVar

from evals.twins.loopback import LoopbackServer
from evals.twins.prompt_cache import PromptCacheStore

__all__ = ["Exchange", "Fault", "Refusal", "TwinServer", "WireTwin", "compact_json",
           "request_limits"]


def request_limits() -> dict[str, dict[str, Any]]:
    """``[[request_limits]]`` rows of pricing.toml by provider (plain dicts)."""
    raw = resources.files("snapcompact.pricing").joinpath("pricing.toml").read_bytes()
    return {row["provider"]: row for row in tomllib.loads(raw.decode())["request_limits"]}


@dataclass(frozen=True)
class Fault:
    """A scripted failure for the next request: the provider's rate-limit or overload reply.

    ``retry_after_s`` is sent as the provider's explicit wait (``retry-after``; OpenAI also
    ``retry-after-ms``; Gemini's ``RetryInfo.retryDelay`` in the body) or left out when None.
    ``reset_s`` is when the used-up limit resets, sent in the provider's rate-limit headers
    (``anthropic-ratelimit-*-reset``, ``x-ratelimit-reset-*``).
    """

    kind: str  # "rate_limit" | "overloaded"
    retry_after_s: float | None = None
    reset_s: float = 1.0
    delay_s: float = 0.0

    @classmethod
    def rate_limited(cls, retry_after_s: float | None = 0.2, reset_s: float | None = None
                     ) -> Fault:
        reset = reset_s if reset_s is not None else (retry_after_s or 1.0)
        return cls("rate_limit", retry_after_s, reset)

    @classmethod
    def overloaded(cls) -> Fault:
        return cls("overloaded")


class Refusal(Exception):
    """A request the provider would refuse: HTTP status, the provider's error kind, message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Exchange:
    """One request a twin received and what it made of it."""

    twin: str
    path: str
    model: str | None
    status: int
    error_kind: str | None = None
    message: str | None = None
    image_sizes: tuple[tuple[int, int], ...] = ()
    image_tokens: tuple[int, ...] = ()
    text_tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    request_bytes: int = 0
    tool_calls: int = 0  # tool calls in the conversation (each answered by a result)
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0  # of completion_tokens (OpenAI's reasoning models)

    @property
    def accepted(self) -> bool:
        return self.status == 200


@dataclass(frozen=True)
class Billed:
    """What a twin bills for one accepted request (``prompt_tokens`` is text + images)."""

    text_tokens: int
    image_tokens: tuple[int, ...]
    image_sizes: tuple[tuple[int, int], ...]
    completion_tokens: int
    tool_calls: int = 0
    cache_read_tokens: int = 0  # of prompt_tokens, read from the twin's prompt cache
    cache_write_tokens: int = 0  # of prompt_tokens, written to it (breakpoint providers)
    reasoning_tokens: int = 0  # of completion_tokens: a reasoning model's hidden tokens

    @property
    def prompt_tokens(self) -> int:
        return self.text_tokens + sum(self.image_tokens)


Handler = Callable[[Any, dict[str, Any], Mapping[str, str]], tuple[dict[str, Any], Billed, str]]


def no_reasoning(texts: Sequence[str]) -> int:
    """A twin's reasoning tokens by default: none (a test scripts ``reasoning_fn``)."""
    return 0


def default_answer(texts: Sequence[str]) -> str:
    """``echo: <last text part>`` (at most 200 characters): deterministic, visibly fake."""
    return "echo: " + (texts[-1][:200] if texts else "")


@dataclass
class WireTwin:
    """Base of one provider's twin; subclasses set ``name``/``prefix`` and implement the hooks."""

    name: str = "twin"
    prefix: str = "/twin"
    answer_fn: Callable[[Sequence[str]], str] = default_answer
    #: reasoning tokens a reasoning model spends on a request (its text parts), billed as output
    #: and reported apart where the wire has the field (OpenAI's ``reasoning_tokens``)
    reasoning_fn: Callable[[Sequence[str]], int] = no_reasoning
    latency_s: float = 0.0
    log: list[Exchange] = field(default_factory=list)
    prompt_cache: PromptCacheStore = field(default_factory=lambda: PromptCacheStore())
    faults: list[Fault] = field(default_factory=list)
    limits: Mapping[str, Any] = field(default_factory=dict)
    #: The ``[[request_limits]]`` provider of pricing.toml whose limits apply when none are given.
    limits_provider: ClassVar[str | None] = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        if not self.limits and self.limits_provider is not None:
            self.limits = dict(request_limits().get(self.limits_provider, {}))

    # -- what subclasses provide -------------------------------------------------------------
    def routes(self) -> list[tuple[str, str, Handler]]:
        """(method, path under the prefix, endpoint) for each endpoint of the wire API."""
        raise NotImplementedError

    def check_auth(self, headers: Mapping[str, str], query: Mapping[str, str]) -> None:
        """Raise a 401 ``Refusal`` when the request carries no credential where the API wants it."""

    def error_body(self, refusal: Refusal) -> tuple[int, dict[str, Any], dict[str, str]]:
        raise NotImplementedError

    def fault_reply(self, fault: Fault) -> tuple[int, dict[str, Any], dict[str, str]]:
        raise NotImplementedError

    # -- scripting -------------------------------------------------------------------------
    def push(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def reset(self) -> None:
        with self._lock:
            self.faults.clear()
            self.log.clear()
            self.prompt_cache.clear()

    def accepted(self) -> list[Exchange]:
        return [e for e in self.log if e.accepted]

    def refused(self) -> list[Exchange]:
        return [e for e in self.log if not e.accepted]

    # -- the request cycle -----------------------------------------------------------------
    async def _serve(self, request: Any, endpoint: Handler) -> Any:
        from aiohttp import web

        raw = await request.read()
        path = request.path
        model = request.match_info.get("model")
        with self._lock:
            fault = self.faults.pop(0) if self.faults else None
        await asyncio.sleep(self.latency_s + (fault.delay_s if fault else 0.0))
        try:
            self.check_auth(request.headers, request.query)
            if fault is not None:
                status, body, headers = self.fault_reply(fault)
                self._record(Exchange(self.name, path, model, status, fault.kind,
                                      request_bytes=len(raw)))
                return web.json_response(body, status=status, headers=headers)
            max_bytes = self.limits.get("max_request_bytes")
            if max_bytes and len(raw) > max_bytes:
                raise Refusal(413, "request_too_large",
                              f"Request exceeds the maximum allowed number of bytes ({len(raw):,}"
                              f" > {max_bytes:,}; max_request_bytes)")
            try:
                body = json.loads(raw)
            except ValueError:
                raise Refusal(400, "invalid_request_error", "request body is not valid JSON") \
                    from None
            if not isinstance(body, dict):
                raise Refusal(400, "invalid_request_error", "request body must be a JSON object")
            reply, billed, model = endpoint(request, body, request.match_info)
        except Refusal as refusal:
            status, body, headers = self.error_body(refusal)
            self._record(Exchange(self.name, path, model, status, refusal.kind, refusal.message,
                                  request_bytes=len(raw)))
            return web.json_response(body, status=status, headers=headers)
        self._record(Exchange(self.name, path, model, 200, image_sizes=billed.image_sizes,
                              image_tokens=billed.image_tokens, text_tokens=billed.text_tokens,
                              prompt_tokens=billed.prompt_tokens,
                              completion_tokens=billed.completion_tokens, request_bytes=len(raw),
                              tool_calls=billed.tool_calls,
                              cache_read_tokens=billed.cache_read_tokens,
                              cache_write_tokens=billed.cache_write_tokens,
                              reasoning_tokens=billed.reasoning_tokens))
        return web.json_response(reply, headers=self.ok_headers())

    def ok_headers(self) -> dict[str, str]:
        return {}

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.log.append(exchange)

    # -- shared checks ---------------------------------------------------------------------
    def check_image_count(self, count: int) -> None:
        most = self.limits.get("max_images")
        if most and count > most:
            raise Refusal(400, "invalid_request_error",
                          f"too many images: {count} > {most} per request (max_images)")

    def check_image_bytes(self, index: int, base64_chars: int) -> None:
        most = self.limits.get("max_image_bytes")
        if most and base64_chars > most:
            raise Refusal(400, "invalid_request_error",
                          f"image {index}: {base64_chars:,} bytes exceeds {most:,} bytes "
                          "(max_image_bytes)")


class TwinServer(LoopbackServer):
    _thread_name = "wire-twins"

    """Hosts twins on 127.0.0.1 (ephemeral port) from a background thread with its own loop.

    ``with TwinServer(AnthropicTwin(), OpenAITwin()) as server: server.api_base("anthropic")``.
    """

    def __init__(self, *twins: WireTwin) -> None:
        if not twins:
            raise ValueError("TwinServer needs at least one twin")
        names = [t.name for t in twins]
        if len(set(names)) != len(names):
            raise ValueError(f"twin names must be unique, got {names}")
        super().__init__()
        self.twins = {t.name: t for t in twins}

    def __getitem__(self, name: str) -> WireTwin:
        return self.twins[name]

    def api_base(self, name: str) -> str:
        if self.port is None:
            raise RuntimeError("TwinServer is not started")
        return f"http://127.0.0.1:{self.port}{self.twins[name].prefix}"

    def reset(self) -> None:
        for twin in self.twins.values():
            twin.reset()

    def exchanges(self) -> list[Exchange]:
        return [e for twin in self.twins.values() for e in twin.log]

    def _app(self) -> Any:
        from aiohttp import web

        # no aiohttp size cap: each twin enforces its provider's request size itself
        app = web.Application(client_max_size=1024 ** 3)
        for twin in self.twins.values():
            for method, path, endpoint in twin.routes():
                app.router.add_route(method, twin.prefix + path, _bind(twin, endpoint))
        return app


def _bind(twin: WireTwin, endpoint: Handler) -> Callable[[Any], Awaitable[Any]]:
    async def handle(request: Any) -> Any:
        return await twin._serve(request, endpoint)

    return handle


def compact_json(value: Any) -> str:
    """A structured value (tool input, tool declarations, a structured tool result) as the text
    a twin counts tokens on: compact JSON with its strings left unescaped, so a tool result that
    a wire can only carry inside an object (Gemini's ``functionResponse.response``) costs what
    the same text costs where the wire carries it as text, plus its few structural characters."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Mapping):
        return "{" + ",".join(f'"{k}":{compact_json(v)}' for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    return json.dumps(value)


def texts_of(parts: Iterable[str]) -> list[str]:
    return [p for p in parts if p]


def unix_now() -> int:
    return int(time.time())
