"""A completion function for the compaction pipeline backed by litellm.

Why a separate module with a lazy import: the library must not depend on litellm (it never calls
a provider by itself). Harness code that does have litellm builds the ``complete`` callable here.
The local cost map is forced (``LITELLM_LOCAL_MODEL_COST_MAP=True``) so importing litellm never
reaches the network.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["litellm_complete"]


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
                                               {"role": "user", "content": prompt}], **litellm_kwargs}
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
        async def acomplete(system_prompt: str, prompt: str, *, max_tokens: int) -> Mapping[str, Any]:
            return parse(await load().acompletion(**build(system_prompt, prompt, max_tokens)))

        return acomplete

    def complete(system_prompt: str, prompt: str, *, max_tokens: int) -> Mapping[str, Any]:
        return parse(load().completion(**build(system_prompt, prompt, max_tokens)))

    return complete
