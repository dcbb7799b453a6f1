"""Prompt caches: the ``[[prompt_cache]]`` rows that say when a provider caches a shared prefix.

Why in the library: after a compaction every later turn starts with the same compacted context,
which providers bill at a fraction of the input price once it is cached. The rules are data
(``[[prompt_cache]]`` rows of ``pricing.toml``, each with its source and date); this module
reads them, finds a model's row and says what a row means (how much of a prefix a hit reads,
whether writes are billed). What a run of requests is then billed is
:mod:`snapcompact.billing.cache_use` (per request) and :mod:`snapcompact.billing.next_turns`
(the turns after a compaction).

Three documented modes:

* ``breakpoints`` (Anthropic, also through Bedrock and Vertex): the request marks where the
  shared prefix ends; the first request *writes* it (billed above the base price), later ones
  within the lifetime *read* it.
* ``automatic`` (OpenAI): every prefix is cached by the provider, writes are free, a hit reads
  the longest cached prefix in steps of ``increment`` tokens from ``min_tokens`` up.
* ``implicit`` (Gemini): as automatic, without a published step.

A prefix shorter than ``min_tokens`` is never cached, silently.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache

from snapcompact.pricing.billing import CONFIDENCES, pricing_toml_text
from snapcompact.pricing.model_table import api_family

__all__ = ["CACHE_MODES", "PromptCacheRule", "parse_prompt_cache_rules", "prompt_cache_rule",
           "prompt_cache_rules"]

CACHE_MODES: tuple[str, ...] = ("breakpoints", "automatic", "implicit")


@dataclass(frozen=True)
class PromptCacheRule:
    """One ``[[prompt_cache]]`` row: when a provider caches a prefix and what it charges."""

    id: str
    vendor: str
    mode: str
    patterns: tuple[re.Pattern[str], ...]
    family_default: str | None
    min_tokens: int
    max_breakpoints: int  # 0 unless mode is "breakpoints"
    increment: int  # a hit reads a multiple of this many tokens past min_tokens (1: any length)
    ttl_s: int
    write_multiplier: float  # of the base input price, per written token
    read_multiplier: float  # of the base input price, per token read from the cache
    source: str
    checked: str
    confidence: str
    notes: str = ""

    def matches(self, model_id: str) -> bool:
        """Whether the row applies to ``model_id``."""
        return any(p.search(model_id) for p in self.patterns)

    def cached_tokens(self, prefix_tokens: int) -> int:
        """Tokens of a ``prefix_tokens`` shared prefix that a hit reads (0 below the minimum)."""
        if prefix_tokens < self.min_tokens:
            return 0
        return self.min_tokens + (prefix_tokens - self.min_tokens) // self.increment \
            * self.increment

    @property
    def writes_billed(self) -> bool:
        """Whether the provider reports (and bills) cache writes apart from plain input."""
        return self.mode == "breakpoints"


_ROW_KEYS = {"id", "vendor", "models", "mode", "family_default", "min_tokens", "max_breakpoints",
             "increment", "ttl_s", "write_multiplier", "read_multiplier", "source", "checked",
             "confidence", "notes"}


def parse_prompt_cache_rules(data: dict) -> tuple[PromptCacheRule, ...]:
    """The ``[[prompt_cache]]`` rows of a parsed ``pricing.toml``; a ValueError names a bad row."""
    rules: list[PromptCacheRule] = []
    seen: set[str] = set()
    for i, row in enumerate(data.get("prompt_cache", [])):
        rid = row.get("id", f"#{i}")
        where = f"pricing table: prompt_cache row {rid!r}"
        if rid in seen:
            raise ValueError(f"{where}: duplicate id")
        seen.add(rid)
        unknown = sorted(set(row) - _ROW_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown keys {', '.join(unknown)}")
        if row.get("mode") not in CACHE_MODES:
            raise ValueError(f"{where}: mode must be one of {', '.join(CACHE_MODES)}, "
                             f"got {row.get('mode')!r}")
        for key in ("min_tokens", "ttl_s"):
            if isinstance(row.get(key), bool) or not isinstance(row.get(key), int) \
                    or row[key] < 0:
                raise ValueError(f"{where}: {key} must be a non-negative integer")
        increment = row.get("increment", 1)
        if isinstance(increment, bool) or not isinstance(increment, int) or increment < 1:
            raise ValueError(f"{where}: increment must be an integer >= 1")
        breakpoints = row.get("max_breakpoints", 0)
        if row["mode"] == "breakpoints" and (not isinstance(breakpoints, int) or breakpoints < 1):
            raise ValueError(f"{where}: mode breakpoints needs max_breakpoints >= 1")
        for key in ("write_multiplier", "read_multiplier"):
            value = row.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{where}: {key} must be a non-negative number")
        if row.get("confidence") not in CONFIDENCES:
            raise ValueError(f"{where}: confidence must be one of {', '.join(CONFIDENCES)}")
        for key in ("source", "checked"):
            if not row.get(key):
                raise ValueError(f"{where}: missing {key}")
        if not row.get("models"):
            raise ValueError(f"{where}: needs models")
        try:
            patterns = tuple(re.compile(p, re.IGNORECASE) for p in row["models"])
        except re.error as exc:
            raise ValueError(f"{where}: bad model pattern: {exc}") from exc
        rules.append(PromptCacheRule(
            id=rid, vendor=str(row.get("vendor", "")), mode=row["mode"], patterns=patterns,
            family_default=row.get("family_default"), min_tokens=row["min_tokens"],
            max_breakpoints=int(breakpoints), increment=increment, ttl_s=row["ttl_s"],
            write_multiplier=float(row["write_multiplier"]),
            read_multiplier=float(row["read_multiplier"]), source=row["source"],
            checked=str(row["checked"]), confidence=row["confidence"],
            notes=row.get("notes", "")))
    return tuple(rules)


@lru_cache(maxsize=1)
def prompt_cache_rules() -> tuple[PromptCacheRule, ...]:
    """The shipped ``[[prompt_cache]]`` rows."""
    return parse_prompt_cache_rules(tomllib.loads(pricing_toml_text()))


def prompt_cache_rule(model_id: str, *, api: str | None = None) -> PromptCacheRule | None:
    """The cache rule of ``model_id`` (first matching row; else the family default of ``api``;
    None when the provider's cache is not modelled)."""
    if not isinstance(model_id, str) or not model_id:
        raise ValueError(f"model_id must be a non-empty string, got {model_id!r}")
    rules = prompt_cache_rules()
    for rule in rules:
        if rule.matches(model_id):
            return rule
    if api is not None:
        family = api_family(api)
        return next((r for r in rules if r.family_default == family), None)
    return None
