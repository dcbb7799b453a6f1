"""A scriptable OpenAI-compatible chat-completions server on loopback, for tests and benchmarks.

The client's retries, timeouts, ``Retry-After`` handling and concurrency have to be exercised
through litellm's real HTTP stack, offline and without keys. This server answers
``POST /v1/chat/completions`` on 127.0.0.1 (ephemeral port) from a background thread running its
own asyncio loop (aiohttp, which litellm already depends on), so concurrent requests overlap: 32
requests with ``latency_s=1`` finish in about one second.

The first calls can be scripted to fail (``FakeReply.rate_limited(retry_after=0.5)``,
``.server_error()``, ``.bad_request()``, ``.slow(2.0)``, ``.reset()`` (the connection is
dropped), ``.truncated()`` (half of a 200 body, then the connection is dropped)); later calls
answer normally, or fail at random with ``fault_rate`` (one of ``faults``, drawn with a seeded
generator) -- the flaky network of the soak benchmark. ``answered`` counts, per request body,
the complete 200 answers delivered to a client still listening (an answer finished after the
client timed out counts as "abandoned"): an entry above 1 is a request billed twice. Answers
and usage are deterministic functions of the request (echo of the last user text; prompt tokens
= whitespace words of the text parts + 85 per image; completion tokens = words of the answer), so
tests can check what the client records against what the server computed.

``python -m evals.twins.fake_server --latency 1`` runs it in a process of its own (prints the port
on its first line, serves ``GET /stats``, stops on stdin EOF): a benchmark then measures the client
without the server sharing its interpreter.

Reach it from litellm with ``model="openai/fake-model", api_base=server.api_base,
api_key="sk-test-not-a-real-key"`` (a dummy key; the server never checks or stores it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evals.twins.loopback import LoopbackServer

__all__ = ["DUMMY_API_KEY", "FakeChatServer", "FakeReply", "default_answer", "count_usage"]

#: The key tests pass to litellm for the fake server; it must never appear in caches or errors.
DUMMY_API_KEY = "sk-test-not-a-real-key"


@dataclass(frozen=True)
class FakeReply:
    """How the server treats one scripted call: an HTTP status, an extra delay, a Retry-After."""

    status: int = 200
    delay_s: float = 0.0
    retry_after: str | None = None
    message: str = "scripted failure"
    transport: str = "normal"  # "reset": drop the connection; "truncated": half a body, drop

    @classmethod
    def reset(cls) -> FakeReply:
        """The connection is dropped before any response (a reset by a proxy, say)."""
        return cls(transport="reset")

    @classmethod
    def truncated(cls) -> FakeReply:
        """A 200 whose body stops halfway (the provider did the work: this one is billed)."""
        return cls(transport="truncated")

    @classmethod
    def rate_limited(cls, retry_after: float | None = None) -> FakeReply:
        value = None if retry_after is None else f"{retry_after:g}"
        return cls(status=429, retry_after=value, message="rate limited, slow down")

    @classmethod
    def server_error(cls, status: int = 500) -> FakeReply:
        return cls(status=status, message="internal server error")

    @classmethod
    def bad_request(cls, message: str = "invalid request") -> FakeReply:
        return cls(status=400, message=message)

    @classmethod
    def slow(cls, delay_s: float) -> FakeReply:
        """Answers normally, but only after ``delay_s`` more seconds (trips client timeouts)."""
        return cls(status=200, delay_s=delay_s)


def _text_parts(messages: Iterable[Mapping[str, Any]]) -> tuple[list[str], int]:
    texts: list[str] = []
    images = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    texts.append(str(part.get("text", "")))
                elif part.get("type") == "image_url":
                    images += 1
    return texts, images


def default_answer(body: Mapping[str, Any]) -> str:
    """``echo: <last text part>`` (at most 200 characters)."""
    texts, _ = _text_parts(body.get("messages", []))
    return "echo: " + (texts[-1][:200] if texts else "")


def count_usage(body: Mapping[str, Any], answer: str) -> tuple[int, int]:
    """(prompt, completion) tokens the fake server reports: words, plus 85 per image."""
    texts, images = _text_parts(body.get("messages", []))
    prompt = sum(len(t.split()) for t in texts) + 85 * images
    return prompt, len(answer.split())


class FakeChatServer(LoopbackServer):
    _thread_name = "fake-chat-server"
    _runner_options = {**LoopbackServer._runner_options, "handler_cancellation": True}

    """Background-thread aiohttp server; ``with FakeChatServer(latency_s=1) as server: ...``."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        script: Iterable[FakeReply] = (),
        answer_fn: Callable[[Mapping[str, Any]], str] = default_answer,
        model_name: str = "fake-model",
        fault_rate: float = 0.0,
        faults: Iterable[FakeReply] = (),
        seed: int = 0,
    ) -> None:
        if latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s!r}")
        if not 0 <= fault_rate <= 1:
            raise ValueError(f"fault_rate must be within [0, 1], got {fault_rate!r}")
        self.fault_rate = fault_rate
        self.faults = tuple(faults) or (FakeReply.server_error(),)
        self._rng = random.Random(seed)
        self.outcomes: Counter[str] = Counter()  # "200", "429", "reset", "truncated", ...
        self.answered: Counter[str] = Counter()  # body digest -> complete 200 answers
        self.latency_s = latency_s
        self.answer_fn = answer_fn
        self.model_name = model_name
        self._script = list(script)
        self._lock = threading.Lock()
        self.requests = 0  # every POST received, scripted failures included
        self.bodies: list[dict[str, Any]] = []  # JSON bodies in arrival order
        self.arrivals: list[float] = []  # time.monotonic() of each arrival
        self.max_in_flight = 0
        self._in_flight = 0
        super().__init__()

    # -- scripting ----------------------------------------------------------------------
    def push(self, *replies: FakeReply) -> None:
        """Queue scripted replies for the next calls."""
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        """Forget counters and remaining script (the server keeps running)."""
        with self._lock:
            self._script.clear()
            self.outcomes.clear()
            self.answered.clear()
            self.requests = 0
            self.bodies.clear()
            self.arrivals.clear()
            self.max_in_flight = 0

    @property
    def api_base(self) -> str:
        if self.port is None:
            raise RuntimeError("FakeChatServer is not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def _app(self) -> Any:
        from aiohttp import web

        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_get("/stats", self._stats)
        return app

    # -- the endpoints --------------------------------------------------------------------
    async def _stats(self, request: Any) -> Any:
        """Counters, for a server running in another process (``-m evals.twins.fake_server``)."""
        from aiohttp import web

        with self._lock:
            return web.json_response({"requests": self.requests,
                                      "max_in_flight": self.max_in_flight})

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.outcomes[outcome] += 1

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        with self._lock:
            self.requests += 1
            self.bodies.append(body)
            self.arrivals.append(time.monotonic())
            if self._script:
                reply = self._script.pop(0)
            elif self.fault_rate and self._rng.random() < self.fault_rate:
                reply = self._rng.choice(self.faults)
            else:
                reply = FakeReply()
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            await asyncio.sleep(self.latency_s + reply.delay_s)
            if reply.transport == "reset":
                self._count("reset")
                request.transport.abort()
                return web.Response(status=200)  # never reaches the client
            if reply.status != 200:
                self._count(str(reply.status))
                headers = {"Retry-After": reply.retry_after} if reply.retry_after else None
                error = {"error": {"message": reply.message, "type": "fake_error",
                                   "code": str(reply.status)}}
                return web.json_response(error, status=reply.status, headers=headers)
            answer = self.answer_fn(body)
            prompt, completion = count_usage(body, answer)
            payload = {
                    "id": f"chatcmpl-fake-{self.requests}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": self.model_name,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    },
                }
            if reply.transport == "truncated":
                self._count("truncated")
                data = json.dumps(payload).encode()
                response = web.StreamResponse(status=200,
                                              headers={"Content-Type": "application/json"})
                response.content_length = len(data)
                await response.prepare(request)
                await response.write(data[: len(data) // 2])
                request.transport.abort()
                return response
            transport = request.transport
            if transport is None or transport.is_closing():  # the client gave up (timeout)
                self._count("abandoned")
                return web.json_response(payload)
            self._count("200")
            with self._lock:
                self.answered[body_digest(body)] += 1
            return web.json_response(payload)
        finally:
            with self._lock:
                self._in_flight -= 1


def body_digest(body: Mapping[str, Any]) -> str:
    """Identity of a request for the double-billing count: its messages and model."""
    material = json.dumps({"model": body.get("model"), "messages": body.get("messages")},
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="Run the fake chat server until stdin closes.")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per answer")
    args = parser.parse_args(argv)
    with FakeChatServer(latency_s=args.latency) as server:
        print(server.port, flush=True)
        sys.stdin.read()  # the parent closes our stdin to stop us
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
