"""Remote summarization: ``compaction.remoteEndpoint`` does the summary calls instead of the model.

Why a completion function: every summary call of the pipeline (history, split-turn prefix,
update, short summary, branch summary) already goes through ``complete(system_prompt, prompt, *,
max_tokens)``, so a remote endpoint is just another such function. The wire format is the agent's:
``POST {"systemPrompt", "prompt", "maxTokens"}`` answered by JSON with at least ``{"summary"}``;
an endpoint ending in ``/chat/completions`` gets a chat-completions body (system and user
messages, ``max_tokens``, ``stream: false``) and its ``choices[0].message.content`` is the summary.
Standard library HTTP only (no provider SDK); the endpoint's query string and credentials never
appear in an error message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["REMOTE_TIMEOUT_SECONDS", "remote_complete"]

#: The agent's remote compaction timeout (300 s).
REMOTE_TIMEOUT_SECONDS = 300.0


def _redacted(endpoint: str) -> str:
    """The endpoint without user info, query or fragment (they may hold credentials)."""
    parts = urllib.parse.urlsplit(endpoint)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _chat_summary(data: Any) -> str:
    choices = data.get("choices") if isinstance(data, Mapping) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list):
        content = "".join(p["text"] for p in content if isinstance(p, Mapping)
                          and isinstance(p.get("text"), str))
    if not isinstance(content, str) or not content:
        raise ValueError("remote compaction response missing choices[0].message.content")
    return content


def remote_complete(endpoint: str, *, timeout: float = REMOTE_TIMEOUT_SECONDS,
                    headers: Mapping[str, str] | None = None,
                    model: str | None = None) -> Callable[..., str]:
    """A completion function that sends every summary call to ``endpoint``."""
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("compaction.remoteEndpoint must be an http(s) URL, got "
                         f"{_redacted(endpoint)!r}")
    chat = parts.path.rstrip("/").endswith("/chat/completions")
    shown = _redacted(endpoint)

    def complete(system_prompt: str, prompt: str, *, max_tokens: int) -> str:
        if chat:
            body: dict[str, Any] = {"model": model,
                                    "messages": [{"role": "system", "content": system_prompt},
                                                 {"role": "user", "content": prompt}],
                                    "stream": False, "max_tokens": max_tokens}
        else:
            body = {"systemPrompt": system_prompt, "prompt": prompt, "maxTokens": max_tokens}
        request = urllib.request.Request(endpoint, data=json.dumps(body).encode("utf-8"),
                                         method="POST",
                                         headers={"content-type": "application/json",
                                                  **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise ValueError(f"remote compaction failed ({exc.code} {exc.reason}) at "
                             f"{shown}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ValueError(f"remote compaction endpoint {shown} unreachable: {reason}") from None
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ValueError(f"remote compaction endpoint {shown} answered with invalid "
                             "JSON") from None
        if chat:
            return _chat_summary(data)
        summary = data.get("summary") if isinstance(data, Mapping) else None
        if not isinstance(summary, str):
            raise ValueError("remote compaction response missing summary")
        return summary

    return complete
