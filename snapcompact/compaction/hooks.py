"""Extension hooks around compaction and tree navigation.

Why hooks: a harness may want to veto a compaction (a benchmark freezing the context), supply
its own summary (a different model, a remote service), add context lines to the summarizer
prompt, or observe the result. Handlers are plain callables registered on :class:`Hooks`; the
first handler that cancels or supplies a result wins, in registration order.

* ``before_compact(event)`` -> None, ``CANCEL`` / ``{"cancel": True}``, or a
  :class:`HookCompaction` / ``{"compaction": {...}}`` used instead of the built-in strategy;
* ``compacting(event)`` -> None or :class:`CompactingOverrides` / ``{"prompt", "context",
  "preserveData"}`` customizing the built-in LLM summary;
* ``on_compact(entry, from_extension)`` after the entry is saved;
* ``before_tree(event)`` -> None, ``CANCEL``, or :class:`HookSummary` / ``{"summary": {...}}``
  used when the user asked for a branch summary;
* ``on_tree(event)`` after navigation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CANCEL",
    "BeforeCompactEvent",
    "BeforeTreeEvent",
    "Cancel",
    "CompactingEvent",
    "CompactingOverrides",
    "HookCompaction",
    "HookSummary",
    "Hooks",
    "TreeEvent",
]


@dataclass(frozen=True)
class Cancel:
    """A hook's answer that stops the compaction or navigation, with the reason shown."""

    reason: str = "cancelled by hook"


CANCEL = Cancel()


@dataclass(frozen=True)
class HookCompaction:
    """A compaction supplied by a ``before_compact`` hook instead of running a strategy."""

    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int | None = None
    short_summary: str | None = None
    details: Mapping[str, Any] | None = None
    preserve_data: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class HookSummary:
    """A branch summary supplied by a ``before_tree`` hook instead of asking the LLM."""

    summary: str
    details: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class CompactingOverrides:
    """What ``compacting`` hooks change: the prompt, extra context lines, data to preserve."""

    prompt: str | None = None
    context: tuple[str, ...] = ()
    preserve_data: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class BeforeCompactEvent:
    """Passed to ``before_compact`` hooks: the prepared cut and why compaction runs."""

    preparation: Any
    branch_entries: Sequence[Any]
    custom_instructions: str | None
    reason: str
    will_retry: bool


@dataclass(frozen=True)
class CompactingEvent:
    """Passed to ``compacting`` hooks once a strategy is chosen."""

    preparation: Any
    reason: str


@dataclass(frozen=True)
class BeforeTreeEvent:
    """Passed to ``before_tree`` hooks when navigation leaves a branch that may be summarized."""

    target_id: str | None
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries_to_summarize: Sequence[Any]
    user_wants_summary: bool


@dataclass(frozen=True)
class TreeEvent:
    """Passed to ``on_tree`` hooks after navigation, with the summary entry if one was written."""

    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry: Any | None


def _camel_get(raw: Mapping[str, Any], snake: str, camel: str) -> Any:
    return raw.get(camel, raw.get(snake))


def _as_compaction(value: Any) -> HookCompaction | Cancel | None:
    if value is None or isinstance(value, (HookCompaction, Cancel)):
        return value
    if isinstance(value, Mapping):
        if value.get("cancel"):
            return CANCEL
        raw = value.get("compaction")
        if isinstance(raw, Mapping):
            if not isinstance(raw.get("summary"), str):
                raise ValueError("hook compaction needs a string 'summary'")
            return HookCompaction(raw["summary"],
                                  _camel_get(raw, "first_kept_entry_id", "firstKeptEntryId"),
                                  _camel_get(raw, "tokens_before", "tokensBefore"),
                                  _camel_get(raw, "short_summary", "shortSummary"),
                                  raw.get("details"),
                                  _camel_get(raw, "preserve_data", "preserveData"),
                                  raw.get("usage"))
        if not value:
            return None
    raise ValueError(f"before_compact hook returned an unsupported value: {value!r:.80}")


def _as_overrides(value: Any) -> CompactingOverrides | None:
    if value is None or isinstance(value, CompactingOverrides):
        return value
    if isinstance(value, Mapping):
        context = value.get("context") or ()
        if isinstance(context, str):
            context = (context,)
        return CompactingOverrides(value.get("prompt"), tuple(context),
                                   _camel_get(value, "preserve_data", "preserveData"))
    raise ValueError(f"compacting hook returned an unsupported value: {value!r:.80}")


def _as_tree(value: Any) -> HookSummary | Cancel | None:
    if value is None or isinstance(value, (HookSummary, Cancel)):
        return value
    if isinstance(value, Mapping):
        if value.get("cancel"):
            return CANCEL
        raw = value.get("summary")
        if isinstance(raw, Mapping) and isinstance(raw.get("summary"), str):
            return HookSummary(raw["summary"], raw.get("details"), raw.get("usage"))
        if not value:
            return None
    raise ValueError(f"before_tree hook returned an unsupported value: {value!r:.80}")


@dataclass
class Hooks:
    """Extension hooks by event, each list run in registration order."""

    before_compact: list[Callable[[BeforeCompactEvent], Any]] = field(default_factory=list)
    compacting: list[Callable[[CompactingEvent], Any]] = field(default_factory=list)
    on_compact: list[Callable[[Any, bool], None]] = field(default_factory=list)
    before_tree: list[Callable[[BeforeTreeEvent], Any]] = field(default_factory=list)
    on_tree: list[Callable[[TreeEvent], None]] = field(default_factory=list)

    def run_before_compact(self, event: BeforeCompactEvent) -> HookCompaction | Cancel | None:
        """First compaction or cancel a ``before_compact`` hook returns, else None."""
        for handler in self.before_compact:
            result = _as_compaction(handler(event))
            if result is not None:
                return result
        return None

    def run_compacting(self, event: CompactingEvent) -> CompactingOverrides:
        """All ``compacting`` hooks' overrides merged: last prompt wins, context lines add up."""
        prompt: str | None = None
        context: list[str] = []
        preserve: dict[str, Any] = {}
        for handler in self.compacting:
            result = _as_overrides(handler(event))
            if result is None:
                continue
            prompt = result.prompt if result.prompt is not None else prompt
            context.extend(result.context)
            preserve.update(result.preserve_data or {})
        return CompactingOverrides(prompt, tuple(context), preserve or None)

    def run_before_tree(self, event: BeforeTreeEvent) -> HookSummary | Cancel | None:
        """First summary or cancel a ``before_tree`` hook returns, else None."""
        for handler in self.before_tree:
            result = _as_tree(handler(event))
            if result is not None:
                return result
        return None

    def emit_compact(self, entry: Any, from_extension: bool) -> None:
        """Tell every ``on_compact`` hook about the new compaction entry."""
        for handler in self.on_compact:
            handler(entry, from_extension)

    def emit_tree(self, event: TreeEvent) -> None:
        """Tell every ``on_tree`` hook that navigation finished."""
        for handler in self.on_tree:
            handler(event)
