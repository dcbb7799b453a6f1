"""The twins' prompt cache: what a provider reports when consecutive requests share a prefix.

Why: the harness asks every question of an arm after the same context and predicts what the
provider's cache bills for it (``snapcompact.billing.cache_uses``). A twin that never caches
would report 0 cache tokens and the drift table could not tell a misplaced breakpoint from a
working one. The twins cache as the providers document it, with the rules of ``pricing.toml``
``[[prompt_cache]]`` (minimum length, lifetime, OpenAI's 128-token steps):

* ``breakpoint`` (Anthropic Messages, Vertex Claude, Bedrock Converse): the prefix up to the
  last block marked ``cache_control`` (Bedrock: a ``cachePoint`` block). A request whose prefix
  up to that block equals a live entry reads it (the entry's lifetime restarts); otherwise it is
  written. Unmarked requests, and prefixes under the minimum, cache nothing.
* ``longest_prefix`` (OpenAI, Gemini implicit): every request caches its prefixes at message
  boundaries; a later request reads the longest one it shares, counted by the rule.

Keys are hashes of the canonical JSON of what precedes the boundary, ``cache_control`` removed.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from snapcompact.pricing import prompt_cache_rule

__all__ = ["PromptCacheStore", "prefix_digest", "strip_cache_marks"]


def strip_cache_marks(value: Any) -> Any:
    """``value`` without ``cache_control`` keys and ``cachePoint`` blocks (they mark, not say)."""
    if isinstance(value, dict):
        return {k: strip_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_marks(v) for v in value
                if not (isinstance(v, dict) and set(v) == {"cachePoint"})]
    return value


def prefix_digest(*material: Any) -> str:
    text = json.dumps(strip_cache_marks(list(material)), sort_keys=True, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class PromptCacheStore:
    """Live cache entries of one twin: digest -> (expiry, tokens)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    @staticmethod
    def _rule(model: str) -> Any:
        return prompt_cache_rule(model)

    def breakpoint(self, model: str, digest: str | None, prefix_tokens: int) -> tuple[int, int]:
        """(read, written) tokens of a request whose last breakpoint closes ``prefix_tokens``
        tokens hashed to ``digest`` (None: the request marks nothing)."""
        rule = self._rule(model)
        if digest is None or rule is None or rule.cached_tokens(prefix_tokens) == 0:
            return 0, 0
        now = time.monotonic()
        with self._lock:
            live = self._entries.get(digest)
            self._entries[digest] = (now + rule.ttl_s, prefix_tokens)
            if live is not None and live[0] > now:
                return prefix_tokens, 0
        return 0, prefix_tokens

    def longest_prefix(self, model: str, boundaries: Sequence[tuple[str, int]]) -> int:
        """Tokens read for a request whose prefixes at message boundaries are ``boundaries``
        (digest, tokens up to there), shortest first; every one of them is cached afterwards."""
        rule = self._rule(model)
        if rule is None:
            return 0
        now = time.monotonic()
        common = 0
        with self._lock:
            for digest, tokens in boundaries:
                live = self._entries.get(digest)
                if live is not None and live[0] > now:
                    common = max(common, tokens)
                if rule.cached_tokens(tokens):
                    self._entries[digest] = (now + rule.ttl_s, tokens)
        return rule.cached_tokens(common)


def digest_chain(start: Any, items: Sequence[Any]) -> list[str]:
    """Digests of ``start`` followed by the first 1, 2, ... of ``items`` (a running hash: one
    pass, however long the prompt)."""
    running = hashlib.sha256(json.dumps(strip_cache_marks(start), sort_keys=True,
                                        default=str).encode())
    out = []
    for item in items:
        running.update(b"\0" + json.dumps(strip_cache_marks(item), sort_keys=True,
                                          default=str).encode())
        out.append(running.copy().hexdigest())
    return out
