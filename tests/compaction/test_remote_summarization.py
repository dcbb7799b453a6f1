"""A remote summarization endpoint makes the summary calls (a loopback server stands in).
"""

from __future__ import annotations

import json

from compaction_synth import FakeLLM
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.compaction import (
    CompactionPipeline,
    Session,
    merge_settings,
)


class _Loopback:
    """A local HTTP server standing in for compaction.remoteEndpoint (records every request)."""

    def __init__(self, reply):
        import http.server
        import threading

        self.requests: list[tuple[str, dict]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append((self.path, body))
                status, payload = reply(self.path, body)
                data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_remote_endpoint_does_the_summary_calls():
    def reply(path, body):
        if "twelve words" in body.get("prompt", "") or "twelve words" in json.dumps(body.get("messages")):
            return 200, {"summary": "remote short line"} if path == "/compact" else {
                "choices": [{"message": {"content": [{"type": "text", "text": "chat short"}]}}]}
        if path == "/compact":
            return 200, {"summary": "## Goal\nremote summary", "extra": 1}
        if path == "/v1/chat/completions":
            return 200, {"choices": [{"message": {"content": "## Goal\nchat summary"}}]}
        return 503, {"error": "down"}

    server = _Loopback(reply)
    try:
        local = FakeLLM()
        remote = merge_settings(_settings(), {"compaction": {"remoteEndpoint": f"{server.url}/compact"}})
        p = CompactionPipeline(Session(), CLAUDE, settings=remote, complete=local)
        _fill(p, 16, 12)
        outcome = p.compact()
        assert local.calls == []  # nothing went to the local model
        assert outcome.entry.summary.startswith("## Goal\nremote summary")
        assert outcome.entry.short_summary == "remote short line"
        path, body = server.requests[0]
        assert path == "/compact" and set(body) == {"systemPrompt", "prompt", "maxTokens"}
        assert body["prompt"].startswith("<conversation>\n") and body["maxTokens"] == 3200
        # remoteEnabled false: the local model again.
        sent = len(server.requests)
        p.settings = merge_settings(remote, {"compaction": {"remoteEnabled": False}})
        _fill(p, 17, 12)
        p.compact()
        assert local.calls and len(server.requests) == sent
        # A chat-completions endpoint gets a chat body.
        chat = merge_settings(_settings(), {"compaction": {"remoteEndpoint": f"{server.url}/v1/chat/completions"}})
        p = CompactionPipeline(Session(), CLAUDE, settings=chat, complete=FakeLLM())
        _fill(p, 16, 12)
        out = p.compact()
        assert out.entry.summary.startswith("## Goal\nchat summary") and out.entry.short_summary == "chat short"
        _, body = server.requests[sent]
        assert body["model"] == CLAUDE.id and body["stream"] is False and body["messages"][0]["role"] == "system"
        # A failing endpoint fails the compaction with one line that does not leak the query string.
        down = merge_settings(_settings(), {"compaction": {"remoteEndpoint": f"{server.url}/down?key=SECRETVALUE"}})
        p = CompactionPipeline(Session(), CLAUDE, settings=down, complete=FakeLLM())
        _fill(p, 16, 12)
        try:
            p.compact()
        except ValueError as exc:
            assert "remote compaction failed (503" in str(exc) and "SECRETVALUE" not in str(exc)
        else:
            raise AssertionError("a failing endpoint must fail the compaction")
    finally:
        server.close()
