"""The compaction strategies: what replaces the summarized history.

* ``context-full``: a structured LLM summary (Goal, Constraints & Preferences, Progress, Key
  Decisions, Next Steps, Critical Context) updated iteratively over the previous one; a split
  turn gets a second, turn-prefix summary merged under "Turn Context (split turn)". The
  cumulative file list is upserted as a ``<files>`` tag.
* ``snapcompact``: no LLM; the history is printed onto frames by
  :func:`snapcompact.archive.compactor.compact`,
  which carries the previous archive forward. Needs a model with image input; otherwise, when the
  user gave custom instructions (they ask for a directed summary), or when the archive would not
  shrink the context, it falls back to context-full with a warning.
* ``handoff``: an LLM-written handoff document that starts a new session (no compaction entry).
* ``off``: no automatic maintenance (a manual compaction still summarizes with context-full).

Every strategy returns a :class:`CompactionPayload`; the pipeline persists it.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snapcompact.archive import (
    PRESERVE_KEY,
    CompactionRejected,
    FileOperations,
    archive_source_text,
    compact,
    compute_file_lists,
    file_ops_from_messages,
    get_preserved_archive,
    upsert_file_operations,
)
from snapcompact.compaction.context import to_wire_json
from snapcompact.compaction.cut_point import CompactionPreparation
from snapcompact.compaction.hooks import CompactingOverrides, HookCompaction
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.prompts import prompt
from snapcompact.compaction.settings import Settings, SnapcompactSettings
from snapcompact.compaction.summarize import (
    CompleteFn,
    _run_coroutine,
    build_summary_prompt,
    call_complete,
    escape_boundary_tags,
    generate_summary,
    merge_split_turn,
    serialize_for_summary,
    summary_max_tokens,
)
from snapcompact.core import CHARS_PER_TOKEN

__all__ = [
    "ARCHIVE_SOURCE_HEADING",
    "NO_PRIOR_HISTORY",
    "CompactionPayload",
    "StrategyFallback",
    "archived_message_json",
    "archived_messages_json",
    "compact_context_full",
    "compact_snapcompact",
    "cumulative_file_ops",
    "generate_handoff",
    "generate_handoff_live",
    "handoff_prompt",
    "payload_from_hook",
    "text_edge_chars",
]

NO_PRIOR_HISTORY = "No prior history."
ARCHIVE_SOURCE_HEADING = "Previous snapcompact archive source text:"
_PROVIDER_KEYS = ("openaiRemoteCompaction", "anthropicCompaction")
_NO_OVERRIDES = CompactingOverrides()


@dataclass(frozen=True)
class CompactionPayload:
    """What a compaction entry will hold."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    strategy: str
    short_summary: str | None = None
    details: Mapping[str, Any] | None = None
    preserve_data: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] | None = None
    from_extension: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)


def payload_from_hook(hook: HookCompaction, prep: CompactionPreparation) -> CompactionPayload:
    """A ``session_before_compact`` hook's own compaction as the payload to commit (strategy
    ``extension``): what the hook did not say is the preparation's."""
    return CompactionPayload(
        summary=hook.summary,
        first_kept_entry_id=hook.first_kept_entry_id or prep.first_kept_entry_id,
        tokens_before=hook.tokens_before if hook.tokens_before is not None
        else prep.tokens_before,
        strategy="extension", short_summary=hook.short_summary, details=hook.details,
        preserve_data=hook.preserve_data, usage=hook.usage, from_extension=True)


class StrategyFallback(Exception):
    """A strategy cannot run here; the pipeline falls back to context-full with this warning."""


def _assistant_only(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [m for m in messages if m.get("role") == "assistant"]


def cumulative_file_ops(prep: CompactionPreparation):
    """File operations of the summarized messages, the split-turn prefix and the previous entry."""

    ops = file_ops_from_messages(_assistant_only([*prep.messages_to_summarize,
                                                  *prep.turn_prefix_messages]))
    prev = prep.previous_compaction
    if prev is not None and not prev.from_extension and prev.details:
        ops = FileOperations.from_details(prev.details).merged(ops)
    return ops


def _carried_preserve(prev_preserve: Mapping[str, Any] | None, extra: Mapping[str, Any] | None,
                      keep_archive: bool) -> dict[str, Any] | None:

    out = {k: v for k, v in (prev_preserve or {}).items()
           if k not in _PROVIDER_KEYS and (keep_archive or k != PRESERVE_KEY)}
    out.update(extra or {})
    return out or None


def _previous_summary_for_llm(prep: CompactionPreparation) -> str | None:
    """The previous summary, with a previous archive's source text appended (it is being
    replaced)."""

    prev = prep.previous_compaction
    if prev is None:
        return None
    archive = get_preserved_archive(prev.preserve_data)
    source = archive_source_text(archive) if archive is not None else None
    if source:
        return f"{prev.summary}\n\n{ARCHIVE_SOURCE_HEADING}\n{source}"
    return prev.summary or None


def compact_context_full(prep: CompactionPreparation, complete: CompleteFn | None, model: ModelInfo,
                         settings: Settings, *, custom_instructions: str | None = None,
                         overrides: CompactingOverrides = _NO_OVERRIDES) -> CompactionPayload:
    """Structured LLM summary (split turns summarized in two parts and merged)."""

    if complete is None:
        raise ValueError("context-full compaction needs a completion function (complete=...)")
    max_tokens = summary_max_tokens(settings.compaction.reserve_tokens)
    previous = _previous_summary_for_llm(prep)
    usages: list[Mapping[str, Any]] = []
    common: dict[str, Any] = dict(context_window=model.context_window,
                                  custom_instructions=custom_instructions,
                  additional_context=overrides.context, include_thinking=model.include_thinking)
    split = prep.is_split_turn and bool(prep.turn_prefix_messages)
    # A split turn re-summarizes a previous summary even with no new message before the turn
    # (an LLM call over an empty window); otherwise the previous summary is carried verbatim
    # (pi-agent-core 18.2.11 compaction.ts:1955-1991, omp 18.3.4's bundled compact).
    if prep.messages_to_summarize or (split and previous):
        run = generate_summary(prep.messages_to_summarize, complete, max_tokens=max_tokens,
                               previous_summary=previous, base_prompt=overrides.prompt, **common)
        history, usages = run.text, [*usages, *run.usage]
    else:
        history = previous or NO_PRIOR_HISTORY
    if split:
        run = generate_summary(prep.turn_prefix_messages, complete,
                               max_tokens=max(256, max_tokens // 2), turn_prefix=True, **common)
        summary = merge_split_turn(history, run.text)
        usages.extend(run.usage)
    else:
        summary = history
    short, short_usage, notes = generate_short_summary(prep.recent_messages, summary, complete,
                                                       model, settings)
    usages.extend(short_usage)
    ops = cumulative_file_ops(prep)
    lists = compute_file_lists(ops)
    summary = upsert_file_operations(summary, lists, ops.read)
    prev_preserve = prep.previous_compaction.preserve_data if prep.previous_compaction else None
    return CompactionPayload(
        summary=summary, first_kept_entry_id=prep.first_kept_entry_id,
        tokens_before=prep.tokens_before,
        strategy="context-full", short_summary=short, warnings=notes, details=lists.to_json(),
        preserve_data=_carried_preserve(prev_preserve, overrides.preserve_data, keep_archive=False),
        usage=_sum_usage(usages))


def generate_short_summary(recent: Sequence[Mapping[str, Any]], summary: str, complete: CompleteFn,
                           model: ModelInfo, settings: Settings) -> tuple[str | None,
                                                                          list[Mapping[str, Any]],
                                                                          tuple[str, ...]]:
    """One line for the UI (``shortSummary``): the kept messages, with the new summary as context.

    Output is capped at min(512, 20 % of the reserve) tokens, as the agent does. A failure only
    costs the line (the agent fails the whole compaction; the summary itself is already made).
    """
    conversation = serialize_for_summary(recent, model.include_thinking)
    user = build_summary_prompt(conversation, prompt("compaction-short-summary"),
                                previous_summary=escape_boundary_tags(summary) if summary else None)
    max_tokens = max(1, min(512, math.floor(0.2 * settings.compaction.reserve_tokens)))
    try:
        reply = call_complete(complete, prompt("summarization-system"), user, max_tokens)
    except Exception as exc:  # noqa: BLE001 - a UI nicety: the compaction stands without it
        return None, [], (f"short summary failed: {exc}",)
    line = " ".join(reply.text.split())
    return (line or None), ([reply.usage] if reply.usage else []), ()


def _sum_usage(usages: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    if not usages:
        return None
    total: dict[str, Any] = {}
    for usage in usages:
        for key, value in usage.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def compact_snapcompact(prep: CompactionPreparation, model: ModelInfo, settings: Settings, *,
                        kept_tokens: int, custom_instructions: str | None = None,
                        overrides: CompactingOverrides = _NO_OVERRIDES,
                        max_frames: int | None = None,
                        check_reduction: bool = True) -> CompactionPayload:
    """Archive the summarized history as frames; raises :class:`StrategyFallback` when it cannot.

    ``max_frames`` (default ``snapcompact.maxFrames``) is the frame cap the caller sized;
    ``check_reduction=False`` leaves the reduction test to the caller (the coding agent's
    maintenance projects the result with its own tokenizer and rejects it there).
    """

    if not model.supports_images:
        raise StrategyFallback(f"snapcompact needs a model with image input; {model.id} has none: "
                               "falling back to context-full")
    if custom_instructions:
        raise StrategyFallback("custom instructions ask for a directed summary: using context-full")
    sc = settings.snapcompact
    prev = prep.previous_compaction
    prev_archive = get_preserved_archive(prev.preserve_data) if prev is not None else None
    frames_only = prev_archive is not None and prev_archive.frames and not (
        prev_archive.text or prev_archive.text_head or prev_archive.text_tail)
    notes: tuple[str, ...] = ()
    if frames_only:
        assert prev_archive is not None  # frames_only implies an archive
        # A legacy archive kept frames but no source text: nothing can be re-rendered from it, so
        # the previous summary is folded in as text (the reference's rule), and this is said.
        notes = ((f"the previous snapcompact archive holds {len(prev_archive.frames)} frame(s) "
                  "without source "
                  "text (a legacy archive): its summary is carried over as text instead"),)
    try:
        result = compact(
            archived_messages_json(prep),
            model_id=model.id, api=model.api, provider=model.provider,
            shape=None if sc.shape == "auto" else sc.shape,
            policy=sc.policy,  # type: ignore[arg-type]
            previous=prev.preserve_data if prev is not None and prev_archive is not None else None,
            previous_summary=prev.summary if prev is not None
            and (prev_archive is None or frames_only) and prev.summary else None,
            max_frames=max_frames if max_frames is not None else sc.max_frames,
            frame_size=sc.frame_size,
            serialize_options={"include_thinking": model.include_thinking},
            file_ops=cumulative_file_ops(prep),
            tokens_before=prep.tokens_before if check_reduction else None,
            kept_tokens=kept_tokens if check_reduction else None,
            first_kept_entry_id=prep.first_kept_entry_id,
            text_edge_chars=text_edge_chars(sc), middle_shape=sc.middle_shape)
    except CompactionRejected as exc:
        raise StrategyFallback(f"{exc.reason}: falling back to context-full") from exc
    prev_preserve = prev.preserve_data if prev is not None else None
    preserve = _carried_preserve(prev_preserve, overrides.preserve_data, keep_archive=False) or {}
    preserve.update(result.preserve_data)
    return CompactionPayload(
        summary=result.summary, first_kept_entry_id=prep.first_kept_entry_id,
        tokens_before=prep.tokens_before,
        strategy="snapcompact", short_summary=result.short_summary,
        details=result.details.to_json(), preserve_data=preserve, warnings=notes)


def text_edge_chars(sc: SnapcompactSettings) -> int | None:
    """Characters of each foveated text edge under ``snapcompact.textEdgeTokens`` (None: one
    frame capacity, production's)."""
    if sc.text_edge_tokens is None:
        return None
    return sc.text_edge_tokens * CHARS_PER_TOKEN


def archived_messages_json(prep: CompactionPreparation) -> list[dict[str, Any]]:
    """The summarized messages as wire JSON (custom roles converted like the LLM would see them):
    what snapcompact archives."""
    out = []
    for message in [*prep.messages_to_summarize, *prep.turn_prefix_messages]:
        wire = archived_message_json(message)
        if wire is not None:
            out.append(wire)
    return out


def archived_message_json(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """One summarized message as snapcompact archives it (None: it is not archived)."""
    wire = to_wire_json(message)
    if wire is None:
        return None
    if message.get("role") == "compactionSummary":
        # An older summary's frames are not re-archived; its text is.
        wire = {"role": "user",
                "content": [b for b in wire["content"] if b.get("type") == "text"]}
    return wire


def generate_handoff(messages: Sequence[Mapping[str, Any]], complete: CompleteFn | None,
                     model: ModelInfo,
                     settings: Settings, *, custom_instructions: str | None = None) -> str:
    """A handoff document for a fresh session ('' when the model returned nothing)."""
    if complete is None:
        raise ValueError("handoff needs a completion function (complete=...)")
    conversation = serialize_for_summary(messages, model.include_thinking)
    user = (f"<conversation>\n{conversation}\n</conversation>\n\n"
            f"{handoff_prompt(custom_instructions)}")
    reply = call_complete(complete, prompt("summarization-system"), user,
                          summary_max_tokens(settings.compaction.reserve_tokens))
    return reply.text.strip()


def handoff_prompt(custom_instructions: str | None = None) -> str:
    """The handoff request (with the user's extra focus, if any)."""
    text = prompt("handoff-document")
    if custom_instructions:
        text += f"\n\nAdditional focus requested by the user: {custom_instructions}"
    return text


def generate_handoff_live(messages: Sequence[Mapping[str, Any]], chat: Callable[..., Any],
                          model: ModelInfo,
                          settings: Settings, *, system_prompt: str | Sequence[str],
                          tools: Sequence[Mapping[str, Any]] | None = None,
                          custom_instructions: str | None = None) -> str:
    """A handoff document asked of the live conversation, as the agent does it.

    The request is the agent's own: its system prompt, its tools and the real history (wire
    JSON, custom roles converted), plus one agent-attributed user message with the handoff
    prompt, with ``tool_choice="none"``, so the provider's prompt cache for that prefix is
    reused. ``chat(system_prompt, messages, *, tools, tool_choice, max_tokens)`` returns the
    reply text (or ``{"text": ...}``); the text is returned stripped.
    """

    wire = [w for w in (to_wire_json(m) for m in messages) if w is not None]
    wire.append({"role": "user", "attribution": "agent",
                 "content": [{"type": "text", "text": handoff_prompt(custom_instructions)}]})
    reply = chat(system_prompt, wire, tools=list(tools) if tools else None, tool_choice="none",
                 max_tokens=summary_max_tokens(settings.compaction.reserve_tokens))
    if inspect.isawaitable(reply):

        reply = _run_coroutine(reply)
    text = reply.get("text") if isinstance(reply, Mapping) else reply
    if not isinstance(text, str):
        raise ValueError(f"chat function must return a string or {{'text': ...}}, got "
                         f"{type(reply).__name__}")
    return text.strip()


def warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)
