"""A loopback stand-in for OpenAI's ``POST /v1/responses/compact`` (test-only, no network).

It records every request (path, headers, JSON body) and answers like the endpoint: an ``output``
list holding the retained user messages, one opaque ``compaction`` item (``encrypted_content``)
and, when asked, items a client must drop (reasoning, function calls). ``fail`` makes it answer
500 (the pipeline then summarizes locally); ``no_item`` leaves the compaction item out.
"""

from __future__ import annotations

from typing import Any

from evals.twins.loopback import LoopbackServer

__all__ = ["ResponsesCompactServer"]


class ResponsesCompactServer(LoopbackServer):
    _thread_name = "responses-compact-server"

    def __init__(self, *, fail: bool = False, no_item: bool = False) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        self.fail = fail
        self.no_item = no_item

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _app(self) -> Any:
        from aiohttp import web

        app = web.Application()

        async def compact(request: Any) -> Any:
            body = await request.json()
            self.requests.append({"path": request.path, "headers": dict(request.headers), "body": body})
            if self.fail:
                return web.json_response({"error": {"message": "upstream overloaded", "type": "server_error"}},
                                         status=500)
            users = [item for item in body.get("input", []) if item.get("type") == "message"
                     and item.get("role") == "user"]
            output: list[dict[str, Any]] = [*users[-1:], {"type": "reasoning", "id": "rs_1", "summary": []},
                                            {"type": "function_call", "call_id": "x", "name": "n", "arguments": "{}"}]
            if not self.no_item:
                output.append({"type": "compaction", "id": "cmp_1",
                               "encrypted_content": f"opaque-{len(self.requests)}"})
            return web.json_response({"id": f"resp_{len(self.requests)}", "object": "response.compaction",
                                      "created_at": 1_767_225_600, "output": output,
                                      "usage": {"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050}})

        app.router.add_post("/v1/responses/compact", compact)
        return app
