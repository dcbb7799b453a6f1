"""Blank old tool output in place before deciding whether to compact.

Why: tool results (file reads, command output) are most of a coding session's context and go
stale fastest. Replacing an old result's body with a short placeholder often buys enough room to
skip a compaction altogether, and it keeps the call/result pair (the result message stays, only
its text changes), so provider history replay stays valid.

Three kinds of candidates, newest output protected first:

* **age**: once more than ``protectTokens`` of newer tool output exists, older results become
  ``[Output truncated - N tokens]``; never a result under ``MIN_PRUNE_TOKENS`` (the placeholder
  itself costs ~8 tokens), and nothing at all unless the total saving reaches ``minimumSavings``;
* **superseded reads**: an older read of the same file (same selector, or any selector when the
  newer read has none) becomes ``[Superseded by a newer read of this file]``, regardless of size
  or age (the stale copy would mislead);
* **useless results** (a search with no hits ...): ``[Uneventful result elided]`` when that saves
  anything, ignoring the protect window.

Protected: ``skill`` results, reads of ``skill://`` paths, and caller-given paths (the active
plan file). Entries before the compaction boundary (what the LLM no longer sees) are never
touched. :func:`prune_superseded_tool_results` is the cheaper per-turn pass: only superseded and
useless results, and only where rewriting them will not throw away a warm prompt cache.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.compaction.context import estimate_entry_tokens
from snapcompact.compaction.cut_point import compaction_window_start
from snapcompact.compaction.entries import CompactionEntry, Entry, MessageEntry
from snapcompact.compaction.settings import PruneSettings

__all__ = [
    "MIN_PRUNE_TOKENS",
    "SUPERSEDED_NOTICE",
    "USELESS_NOTICE",
    "PruneResult",
    "is_pruned",
    "prune_superseded_tool_results",
    "prune_tool_outputs",
    "truncated_notice",
]

MIN_PRUNE_TOKENS = 50
SUPERSEDED_NOTICE = "[Superseded by a newer read of this file]"
USELESS_NOTICE = "[Uneventful result elided]"
_DEFAULT_PRUNE = PruneSettings()


def truncated_notice(tokens: int) -> str:
    return f"[Output truncated - {tokens} tokens]"


def is_pruned(message: Mapping[str, Any]) -> bool:
    text = _result_text(message)
    return text in (SUPERSEDED_NOTICE, USELESS_NOTICE) or (
        text.startswith("[Output truncated - ") and text.endswith(" tokens]"))


def _result_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or () if isinstance(b, Mapping) and b.get("type") == "text")


def _notice_tokens(notice: str) -> int:
    return math.ceil(len(notice) / 4)


@dataclass(frozen=True)
class PruneResult:
    """Replacement messages by entry id, and what they save."""

    replacements: Mapping[str, Mapping[str, Any]]
    tokens_saved: int
    reasons: Mapping[str, str]

    @property
    def changed(self) -> bool:
        return bool(self.replacements)


@dataclass(frozen=True)
class _Result:
    index: int
    entry: MessageEntry
    tokens: int
    call: Mapping[str, Any] | None


def _calls_by_id(path: Sequence[Entry]) -> dict[str, Mapping[str, Any]]:
    calls: dict[str, Mapping[str, Any]] = {}
    for entry in path:
        if isinstance(entry, MessageEntry) and entry.role == "assistant":
            for block in entry.message.get("content") or ():
                if isinstance(block, Mapping) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                    calls[block["id"]] = block
    return calls


def _split_selector(path: str) -> tuple[str, str | None]:
    from snapcompact.file_ops import strip_read_selector

    bare = strip_read_selector(path)
    return (bare, path[len(bare):] or None) if bare != path else (path, None)


def _read_path(call: Mapping[str, Any] | None) -> str | None:
    if call is None or call.get("name") != "read":
        return None
    args = call.get("arguments")
    path = args.get("path") if isinstance(args, Mapping) else None
    return path if isinstance(path, str) else None


def _is_protected(result: _Result, settings: PruneSettings, protected_paths: Collection[str]) -> bool:
    tool = result.entry.message.get("toolName") or (result.call or {}).get("name")
    if tool in settings.protected_tools:
        return True
    path = _read_path(result.call)
    if path is None:
        return False
    return path.startswith("skill://") or path in protected_paths or _split_selector(path)[0] in protected_paths


def _boundary(path: Sequence[Entry]) -> int:
    """Index of the first entry the LLM still sees (after the latest compaction's boundary)."""
    start, _prev = compaction_window_start(path)
    return start


def _results(path: Sequence[Entry], start: int) -> list[_Result]:
    calls = _calls_by_id(path)
    out = []
    for i in range(start, len(path)):
        entry = path[i]
        if isinstance(entry, MessageEntry) and entry.role == "toolResult" and not is_pruned(entry.message):
            call = calls.get(str(entry.message.get("toolCallId")))
            out.append(_Result(i, entry, estimate_entry_tokens(entry), call))
    return out


def _superseded(results: Sequence[_Result]) -> set[int]:
    """Indices of reads a newer read of the same file makes stale."""
    stale: set[int] = set()
    newest_full: set[str] = set()          # files read whole at a later point
    newest_keyed: set[tuple[str, str | None]] = set()
    for r in reversed(results):
        path = _read_path(r.call)
        if path is None or r.entry.message.get("isError"):
            continue
        bare, selector = _split_selector(path)
        key = (bare, selector)
        if key in newest_keyed or bare in newest_full:
            stale.add(r.index)
        newest_keyed.add(key)
        if selector is None:
            newest_full.add(bare)
    return stale


def _blank(message: Mapping[str, Any], notice: str) -> dict[str, Any]:
    return {**message, "content": [{"type": "text", "text": notice}]}


def _is_useless(message: Mapping[str, Any]) -> bool:
    return bool(message.get("useless")) and not message.get("isError")


def prune_tool_outputs(path: Sequence[Entry], settings: PruneSettings = _DEFAULT_PRUNE, *,
                       protected_paths: Collection[str] = ()) -> PruneResult:
    """The threshold prune (see the module docstring); returns replacements, does not apply them."""
    if not settings.enabled:
        return PruneResult({}, 0, {})
    results = _results(path, _boundary(path))
    stale = _superseded(results)
    replacements: dict[str, Mapping[str, Any]] = {}
    reasons: dict[str, str] = {}
    saved = 0
    aged: list[tuple[_Result, int]] = []
    newer_output = 0
    for r in reversed(results):
        newer_output += r.tokens
        if _is_protected(r, settings, protected_paths):
            continue
        if r.index in stale:
            replacements[r.entry.id] = _blank(r.entry.message, SUPERSEDED_NOTICE)
            reasons[r.entry.id] = "superseded"
            saved += max(0, r.tokens - _notice_tokens(SUPERSEDED_NOTICE))
            continue
        if settings.prune_useless and _is_useless(r.entry.message):
            gain = r.tokens - _notice_tokens(USELESS_NOTICE)
            if gain > 0:
                replacements[r.entry.id] = _blank(r.entry.message, USELESS_NOTICE)
                reasons[r.entry.id] = "useless"
                saved += gain
            continue
        if newer_output <= settings.protect_tokens or r.tokens < settings.min_prune_tokens:
            continue
        gain = r.tokens - _notice_tokens(truncated_notice(r.tokens))
        if gain > 0:
            aged.append((r, gain))
    aged_total = sum(g for _, g in aged)
    if aged and saved + aged_total >= settings.minimum_savings:
        for r, gain in aged:
            replacements[r.entry.id] = _blank(r.entry.message, truncated_notice(r.tokens))
            reasons[r.entry.id] = "age"
            saved += gain
    return PruneResult(replacements, saved, reasons)


def prune_superseded_tool_results(path: Sequence[Entry], settings: PruneSettings = _DEFAULT_PRUNE, *,
                                  idle_seconds: float = 0.0, drop_useless: bool = True,
                                  protected_paths: Collection[str] = ()) -> PruneResult:
    """Per-turn pass: superseded reads and useless results, cache-aware.

    A candidate is blanked only when the context after it is at most ``cacheSuffixTokens`` (the
    cache prefix it invalidates is short), or for every candidate once the session has idled for
    ``cacheIdleSeconds`` (the provider cache has expired anyway).
    """
    if not settings.enabled:
        return PruneResult({}, 0, {})
    start = _boundary(path)
    results = _results(path, start)
    stale = _superseded(results)
    suffix_after: dict[int, int] = {}
    running = 0
    for i in range(len(path) - 1, start - 1, -1):
        suffix_after[i] = running
        entry = path[i]
        if not isinstance(entry, CompactionEntry):
            running += estimate_entry_tokens(entry)
    expired = idle_seconds >= settings.cache_idle_seconds
    replacements: dict[str, Mapping[str, Any]] = {}
    reasons: dict[str, str] = {}
    saved = 0
    for r in results:
        if _is_protected(r, settings, protected_paths):
            continue
        if not expired and suffix_after[r.index] > settings.cache_suffix_tokens:
            continue
        if r.index in stale:
            replacements[r.entry.id] = _blank(r.entry.message, SUPERSEDED_NOTICE)
            reasons[r.entry.id] = "superseded"
            saved += max(0, r.tokens - _notice_tokens(SUPERSEDED_NOTICE))
        elif drop_useless and _is_useless(r.entry.message) and r.tokens > _notice_tokens(USELESS_NOTICE):
            replacements[r.entry.id] = _blank(r.entry.message, USELESS_NOTICE)
            reasons[r.entry.id] = "useless"
            saved += r.tokens - _notice_tokens(USELESS_NOTICE)
    return PruneResult(replacements, saved, reasons)
