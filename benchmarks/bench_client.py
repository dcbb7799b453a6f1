"""Throughput of the eval client against the loopback fake server, and its cached-path overhead.

Why: a sweep is thousands of slow (≈1 s) model calls. The client must keep ``concurrency``
requests in flight (so throughput ≈ concurrency / latency; target ≥ 25 requests/s at 32 × 1 s),
and a rerun answered from the cache must cost next to nothing (target < 10 ms per request of the
harness's own time: key hashing, file read, bookkeeping).

The requests look like a real sweep: items with rendered 1-bit frames (shared by the item's
questions, as the runner asks every question of an item against the same frames), sent through
litellm's real HTTP client to ``openai/fake-model`` on 127.0.0.1 with a dummy key.

    .venv/bin/python benchmarks/bench_client.py            # 500 requests, concurrency 32, 1 s
    .venv/bin/python benchmarks/bench_client.py --requests 100 --latency 0.2
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from evals.send.client import EvalClient, Request, import_litellm  # noqa: E402
from evals.send.response_cache import ResponseCache  # noqa: E402
from evals.twins.fake_server import DUMMY_API_KEY, FakeChatServer  # noqa: E402


def fake_frame(seed: int, px: int) -> bytes:
    """A 1-bit PNG with text-like ink density (rows of short dark runs)."""
    rng = np.random.default_rng(seed)
    ink = np.zeros((px, px), dtype=bool)
    for top in range(2, px - 10, 16):  # one "line of text" every 16 px, 10 px tall
        ink[top:top + 10] = rng.random((10, px)) < 0.25
    buffer = io.BytesIO()
    Image.fromarray(~ink).convert("1").save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def build_requests(count: int, per_item: int, frame_px: int, api_base: str) -> list[Request]:
    requests = []
    frames: dict[int, tuple[str, str]] = {}
    for i in range(count):
        item = i // per_item
        if frame_px and item not in frames:
            png = fake_frame(item, frame_px)
            frames[item] = ("data:image/png;base64," + base64.b64encode(png).decode(),
                            hashlib.sha256(png).hexdigest())
        content: list = [{"type": "text", "text": f"Item {item}, question {i}: who wrote it?"}]
        hashes: tuple[str, ...] = ()
        if frame_px:
            url, digest = frames[item]
            content.insert(0, {"type": "image_url", "image_url": {"url": url, "detail": "high"}})
            hashes = (digest,)
        requests.append(Request(
            model="openai/fake-model",
            messages=[{"role": "user", "content": content}],
            params={"api_base": api_base, "api_key": DUMMY_API_KEY, "temperature": 0,
                    "max_tokens": 32},
            frame_hashes=hashes,
            metadata={"item": item, "question": i},
            predicted_prompt_tokens=1600,
            predicted_cost_usd=0.0,
        ))
    return requests


@dataclass
class ServerHandle:
    api_base: str
    stats: Callable[[], dict]


@contextlib.contextmanager
def fake_server(mode: str, latency: float) -> Iterator[ServerHandle]:
    """The fake server in a thread of this process, or in a process of its own.

    A real provider does not share our interpreter: ``process`` (the default) measures the client
    alone; ``thread`` measures client and server competing for one GIL (a lower bound).
    """
    if mode == "thread":
        with FakeChatServer(latency_s=latency) as server:
            yield ServerHandle(server.api_base, lambda: {"requests": server.requests,
                                                         "max_in_flight": server.max_in_flight})
        return
    child = subprocess.Popen([sys.executable, "-m", "evals.twins.fake_server", "--latency", str(latency)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        base = f"http://127.0.0.1:{port}"

        def stats() -> dict:
            with urllib.request.urlopen(f"{base}/stats", timeout=10) as reply:
                return json.loads(reply.read())

        yield ServerHandle(f"{base}/v1", stats)
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=1.0, help="server latency, seconds")
    parser.add_argument("--per-item", type=int, default=5, help="questions sharing one frame")
    parser.add_argument("--frame-px", type=int, default=1568, help="frame side; 0 = text only")
    parser.add_argument("--cache-dir", default=None, help="default: a fresh temporary dir")
    parser.add_argument("--server", choices=("process", "thread"), default="process",
                        help="run the fake server in its own process (default) or a thread")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    import_litellm()
    print(f"litellm import: {time.perf_counter() - started:.1f} s (not counted below)")

    with tempfile.TemporaryDirectory() as scratch, fake_server(args.server, args.latency) as server:
        cache = ResponseCache(args.cache_dir or os.path.join(scratch, "cache"))
        requests = build_requests(args.requests, args.per_item, args.frame_px, server.api_base)
        payload = sum(len(p["image_url"]["url"]) for r in requests[:: args.per_item]
                      for p in r.messages[0]["content"] if p["type"] == "image_url")
        print(f"{len(requests)} requests, {len(requests) // args.per_item} frames of "
              f"{args.frame_px}px (~{payload / max(1, len(requests) // args.per_item) / 1024:.0f} "
              f"KiB base64 each), server latency {args.latency:g} s, concurrency "
              f"{args.concurrency}, server in a {args.server}")

        def client() -> EvalClient:
            return EvalClient(cache=cache, renderer_version="bench-renderer",
                              concurrency={"openai": args.concurrency}, seed=0)

        # 1. cold: every request goes to the server.
        cold = client()
        t0, c0 = time.perf_counter(), time.process_time()
        responses = asyncio.run(cold.complete_all(requests))
        cold_s, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
        errors = [r.error for r in responses if not r.ok]
        stats = server.stats()
        ideal = len(requests) / args.concurrency * args.latency
        print(f"cold : {cold_s:6.2f} s  {len(requests) / cold_s:6.1f} requests/s  "
              f"(ideal {len(requests) / ideal:.1f}/s; server saw {stats['requests']} requests, "
              f"max {stats['max_in_flight']} in flight; {len(errors)} errors)")
        print(f"cold : client CPU {cold_cpu / len(requests) * 1e3:.1f} ms per request "
              f"(litellm + HTTP + cache write; load average now {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores)")
        if errors:
            print("  first error:", errors[0])

        # 2. warm: a rerun (new client, same cache) answered entirely from the cache.
        sent_before = stats["requests"]
        warm = client()
        t0 = time.perf_counter()
        cached = asyncio.run(warm.complete_all(requests))
        warm_s = time.perf_counter() - t0
        assert server.stats()["requests"] == sent_before, "a cached rerun sent requests"
        assert all(r.cached for r in cached)

        # 3. warm, one await at a time: per-request latency of the cached path.
        serial = client()

        async def one_by_one() -> list[float]:
            times = []
            for request in requests:
                t = time.perf_counter()
                await serial.complete(request)
                times.append(time.perf_counter() - t)
            return times

        times = asyncio.run(one_by_one())
        times.sort()
        print(f"warm : {warm_s:6.3f} s for {len(requests)} cached requests, "
              f"{warm_s / len(requests) * 1e3:.3f} ms per request (gathered), "
              f"{warm.progress.requests_sent} sent, {warm.progress.cache_hits} hits")
        print(f"warm : one at a time median {times[len(times) // 2] * 1e3:.3f} ms, "
              f"p99 {times[int(len(times) * 0.99)] * 1e3:.3f} ms")
        ok_rate = len(requests) / cold_s >= 25
        ok_overhead = warm_s / len(requests) * 1e3 < 10
        print(f"targets: >= 25 requests/s {'met' if ok_rate else 'MISSED'}; "
              f"< 10 ms per cached request {'met' if ok_overhead else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
