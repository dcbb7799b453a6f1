"""A completion function for the compaction pipeline backed by litellm.

Why a separate module with a lazy import: the library must not depend on litellm (it never calls
a provider by itself). Harness code that does have litellm builds the ``complete`` callable here.
The local cost map is forced (``LITELLM_LOCAL_MODEL_COST_MAP=True``) so importing litellm never
reaches the network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["litellm_chat", "litellm_complete", "litellm_responses_compact",
           "summarizer_chat_messages"]


def _usage(response: Any) -> dict[str, Any] | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    out = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = getattr(usage, key, None)
        if isinstance(value, (int, float)):
            out[key] = value
    return out or None


def litellm_complete(model: str, *, temperature: float | None = None, asynchronous: bool = False,
                     **litellm_kwargs: Any) -> Callable[..., Any]:
    """``complete(system_prompt, prompt, *, max_tokens)`` calling ``litellm.(a)completion``.

    Returns ``{"text": ..., "usage": {...}}``. Extra keyword arguments (``api_base``, ``api_key``,
    ``num_retries`` ...) are passed through to litellm.
    """
    def build(system_prompt: str, prompt: str, max_tokens: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model, "max_tokens": max_tokens,
                                  "messages": [{"role": "system", "content": system_prompt},
                                               {"role": "user", "content": prompt}],
                                  **litellm_kwargs}
        if temperature is not None:
            kwargs["temperature"] = temperature
        return kwargs

    def parse(response: Any) -> dict[str, Any]:
        choice = response.choices[0]
        text = getattr(choice.message, "content", None) or ""
        return {"text": text, "usage": _usage(response)}

    def load():
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        return litellm

    if asynchronous:
        async def acomplete(system_prompt: str, prompt: str, *,
                            max_tokens: int) -> Mapping[str, Any]:
            return parse(await load().acompletion(**build(system_prompt, prompt, max_tokens)))

        return acomplete

    def complete(system_prompt: str, prompt: str, *, max_tokens: int) -> Mapping[str, Any]:
        return parse(load().completion(**build(system_prompt, prompt, max_tokens)))

    return complete


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for block in content or ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            out.append({"type": "text", "text": str(block.get("text", ""))})
        elif block.get("type") == "image" and isinstance(block.get("data"), str):
            url = f"data:{block.get('mimeType', 'image/png')};base64,{block['data']}"
            out.append({"type": "image_url", "image_url": {"url": url}})
    return out


def summarizer_chat_messages(system_prompt: str | Sequence[str],
                             messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Agent wire JSON (user/developer/assistant/toolResult) as OpenAI-style chat messages."""
    system = system_prompt if isinstance(system_prompt, str) else "\n\n".join(system_prompt)
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in messages:
        role = message.get("role")
        if role in ("user", "developer"):
            out.append({"role": "user" if role == "user" else "system",
                        "content": _parts(message.get("content"))})
        elif role == "assistant":
            blocks = [b for b in message.get("content") or () if isinstance(b, Mapping)]
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            calls = [{"id": str(b.get("id")), "type": "function",
                      "function": {"name": str(b.get("name")),
                                   "arguments": json.dumps(b.get("arguments") or {})}}
                     for b in blocks if b.get("type") == "toolCall"]
            out.append({"role": "assistant", "content": text or None,
                        **({"tool_calls": calls} if calls else {})})
        elif role == "toolResult":
            text = "".join(p["text"] for p in _parts(message.get("content")) if p["type"] == "text")
            out.append({"role": "tool", "tool_call_id": str(message.get("toolCallId")),
                        "content": text})
    return out


def litellm_chat(model: str, **litellm_kwargs: Any) -> Callable[..., Any]:
    """``chat(system_prompt, messages, *, tools, tool_choice, max_tokens)`` for the live handoff.

    ``tools`` are the agent's tool definitions in OpenAI function format; they are sent (so the
    request prefix matches the agent's own) with ``tool_choice`` (``"none"`` for a handoff).
    """
    def chat(system_prompt: str | Sequence[str], messages: Sequence[Mapping[str, Any]], *,
             tools: Sequence[Mapping[str, Any]] | None, tool_choice: str,
             max_tokens: int) -> Mapping[str, Any]:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        kwargs: dict[str, Any] = {"model": model, "max_tokens": max_tokens,
                                  "messages": summarizer_chat_messages(system_prompt, messages),
                                  **litellm_kwargs}
        if tools:
            kwargs["tools"], kwargs["tool_choice"] = list(tools), tool_choice
        response = litellm.completion(**kwargs)
        return {"text": getattr(response.choices[0].message, "content", None) or "",
                "usage": _usage(response)}

    return chat


def litellm_responses_compact(
        model: str, **litellm_kwargs: Any) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """``responses_compact(request) -> response`` on litellm's ``compact_responses``
    (``POST /v1/responses/compact``) for :mod:`.openai_compact`.

    ``model`` is litellm's model name (``openai/gpt-5``); the request's ``input`` and
    ``instructions`` are sent, extra keyword arguments (``api_base``, ``api_key`` ...) passed
    through.
    """
    def responses_compact(request: Mapping[str, Any]) -> dict[str, Any]:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        response = litellm.compact_responses(input=list(request["input"]), model=model,
                                             instructions=request.get("instructions"),
                                             **litellm_kwargs)
        data = response.model_dump() if hasattr(response, "model_dump") else dict(response)
        return {**data, "output": [dict(item) for item in data.get("output") or ()]}

    return responses_compact
