"""One aiohttp server on 127.0.0.1, run from a background thread with its own event loop.

Why a shared base: the harness's test servers (the OpenAI-compatible fake server and the
provider wire twins) differ in their routes, not in how they start, report a startup failure,
and stop. A subclass supplies ``_app()`` (an ``aiohttp.web.Application``); the port is picked by
the OS and published as ``port`` once the server listens.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, ClassVar, Self

__all__ = ["LoopbackServer"]


class LoopbackServer:
    """Start with ``start()`` or ``with``; ``port`` is set while the server runs."""

    _thread_name: ClassVar[str] = "loopback-server"
    _runner_options: ClassVar[dict[str, Any]] = {"access_log": None, "shutdown_timeout": 1.0}

    def __init__(self) -> None:
        self.port: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: Any = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    def _app(self) -> Any:  # pragma: no cover - every subclass has its routes
        raise NotImplementedError

    def start(self) -> Self:
        name = type(self).__name__
        if self._thread is not None:
            raise RuntimeError(f"{name} already started")
        self._ready.clear()
        self._startup_error = None
        self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError(f"{name} did not start within 30 s")
        if self._startup_error is not None:
            raise RuntimeError(f"{name} failed to start: {self._startup_error}")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        self._thread = self._loop = None
        self.port = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        from aiohttp import web

        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._runner = web.AppRunner(self._app(), **self._runner_options)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
            loop.run_until_complete(site.start())
            self.port = self._runner.addresses[0][1]
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()
