"""The production compaction pipeline snapcompact plugs into.

A session is an append-only JSONL tree of entries (:mod:`.session`, :mod:`.entries`; its file
:mod:`.session_file`); the LLM context is rebuilt from the active branch (:mod:`.context`).
When the context grows too large, old tool output is pruned (:mod:`.pruning`), a cut point is
chosen (:mod:`.cut_point`) and a strategy (:mod:`.strategies`: context-full LLM summary,
snapcompact frames, handoff) replaces the old history with a compaction entry (:mod:`.shake`
finds what a shake elides, :mod:`.shake_write` writes it). :mod:`.triggers` decides when (and
holds the one compaction threshold, :func:`~.triggers.compaction_threshold`); :mod:`.pipeline`
ties it together at its check points, handing itself to rooms of one job each (functions of
the pipeline's state): :mod:`.pipeline_state` (what the pipeline holds and counts),
:mod:`.compaction_run` (one run: strategy, cut, hooks, entry), :mod:`.pipeline_shake` (shake
in place; its recovery artifacts numbered as the agent numbers them: :mod:`.artifacts`),
:mod:`.pipeline_handoff` (handoff to a new session), :mod:`.promotion` (a
larger-window model instead), :mod:`.next_request` (the next request, inline imaging
included), :mod:`.tree_navigation` (moving the leaf; :mod:`.branch` summarizes the abandoned
branch), :mod:`.outcome` (what a run did). :mod:`.hooks` lets a harness cancel or
replace a compaction or a summary. No provider is called directly: LLM work
goes through an injected ``complete(system_prompt, prompt, *, max_tokens)`` function
(:mod:`.litellm_adapter` builds one for litellm; :mod:`.remote` one for a remote endpoint;
:mod:`.control` retries several and lets a caller abort). Every token count goes through one
injectable :class:`~.tokens.TokenEstimator`, identical to the agent core's by default.

Around them: :mod:`.settings` (the settings file and its defaults), :mod:`.prompts` (the
summary prompts), :mod:`.summarize` (LLM summaries), :mod:`.openai_compact` and
:mod:`.provider_history` (provider-native compaction and the history it stores),
:mod:`.chat` (wire messages as a chat request), :mod:`.cache_breakpoints` (where a prompt-cache
breakpoint goes), :mod:`.path_index` (facts about the active branch, kept in step),
:mod:`.session_formats` and :mod:`.session_check` (real session files read and checked),
:mod:`.text_counters` and :mod:`.ctok_pieces` (text tokens as production counts them),
:mod:`.replay` (a recorded session turn by turn through the pipeline alone),
:mod:`.settings_shape` (the shape the settings ask for, resolved for the model: one home).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.compaction.cache_breakpoints import (
        CacheBreakpoint,
        cache_breakpoint,
        with_cache_breakpoint,
    )
    from snapcompact.compaction.chat import (
        to_chat_messages,
        tool_definitions,
        user_question,
    )
    from snapcompact.compaction.compaction_run import openai_remote, run_compaction
    from snapcompact.compaction.context import (
        DIVIDER,
        SessionContext,
        build_session_context,
        convert_to_llm,
        entry_to_message,
        to_wire_json,
    )
    from snapcompact.compaction.control import TransientError, with_candidates
    from snapcompact.compaction.cut_point import (
        CompactionPreparation,
        adapted_keep_tokens,
        entry_tokens,
        find_cut_point,
        prepare_compaction,
        usage_context_tokens,
        usage_prompt_tokens,
    )
    from snapcompact.compaction.entries import (
        BranchSummaryEntry,
        CompactionEntry,
        CustomMessageEntry,
        Entry,
        MessageEntry,
        MetadataEntry,
        entry_from_json,
    )
    from snapcompact.compaction.hooks import (
        CANCEL,
        BeforeCompactEvent,
        Cancel,
        HookCompaction,
        Hooks,
        HookSummary,
    )
    from snapcompact.compaction.litellm_adapter import (
        litellm_chat,
        litellm_complete,
        summarizer_chat_messages,
    )
    from snapcompact.compaction.model import ModelInfo
    from snapcompact.compaction.next_request import inline_request, llm_system_prompt
    from snapcompact.compaction.openai_compact import uses_openai_remote_compaction
    from snapcompact.compaction.outcome import CompactionOutcome
    from snapcompact.compaction.pipeline import CompactionPipeline
    from snapcompact.compaction.pipeline_handoff import generate_handoff_document, handoff
    from snapcompact.compaction.pipeline_shake import shake_in_place
    from snapcompact.compaction.pipeline_state import (
        latest_compaction_ms,
        summary_complete,
        transcript,
    )
    from snapcompact.compaction.promotion import promote, promotion_target
    from snapcompact.compaction.prompts import prompt
    from snapcompact.compaction.pruning import (
        SUPERSEDED_NOTICE,
        USELESS_NOTICE,
        prune_superseded_tool_results,
        prune_tool_outputs,
    )
    from snapcompact.compaction.replay import (
        REPLAY_STRATEGIES,
        Replay,
        ReplayRound,
        load_session_messages,
        replay_session,
        replay_settings,
        replay_store,
        tallied,
        truncating_hooks,
    )
    from snapcompact.compaction.session import Session
    from snapcompact.compaction.session_formats import LoadedSession, read_session_file
    from snapcompact.compaction.settings import (
        DEFAULT_SETTINGS,
        FRAME_CAP_BYTES,
        FRAME_CHARGES,
        MIDDLE_SHAPES,
        TEXT_TOKENIZERS,
        CompactionSettings,
        PruneSettings,
        Settings,
        discover_settings,
        effective_reserve_tokens,
        legacy_method_order,
        load_settings,
        merge_settings,
        resolve_threshold_tokens,
        settings_paths,
    )
    from snapcompact.compaction.settings_shape import asked_shape
    from snapcompact.compaction.shake import DEFAULT_SHAKE_CONFIG, RESCUE_SHAKE_CONFIG
    from snapcompact.compaction.strategies import (
        CompactionPayload,
        StrategyFallback,
        archived_message_json,
        archived_messages_json,
        compact_context_full,
        compact_snapcompact,
        cumulative_file_ops,
        payload_from_hook,
        text_edge_chars,
    )
    from snapcompact.compaction.summarize import (
        SPLIT_TURN_SEPARATOR,
        serialize_for_summary,
    )
    from snapcompact.compaction.text_counters import (
        CTOK_FIX,
        claude_stand_in,
        estimator_for,
        text_counter_for,
        tokenizer_family,
    )
    from snapcompact.compaction.tokens import (
        DEFAULT_ESTIMATOR,
        FRAME_TOKEN_ESTIMATE,
        TokenEstimator,
        byte_estimate,
    )
    from snapcompact.compaction.tree_navigation import NavigationOutcome, navigate_tree
    from snapcompact.compaction.triggers import (
        compaction_threshold,
        decide_after_turn,
        is_context_overflow,
        recovery_trigger,
        should_run_idle,
    )

#: Public name -> the module that defines it (imported on first use, so importing one stage
#: does not load the others).
_WHERE: dict[str, str] = {
    "truncating_hooks": "replay",
    "tallied": "replay",
    "replay_store": "replay",
    "legacy_method_order": "settings",
    "BeforeCompactEvent": "hooks",
    "Cancel": "hooks",
    "uses_openai_remote_compaction": "openai_compact",
    "Replay": "replay",
    "ReplayRound": "replay",
    "effective_reserve_tokens": "settings",
    "DEFAULT_SHAKE_CONFIG": "shake",
    "RESCUE_SHAKE_CONFIG": "shake",
    "CompactionPayload": "strategies",
    "StrategyFallback": "strategies",
    "archived_message_json": "strategies",
    "archived_messages_json": "strategies",
    "compact_context_full": "strategies",
    "compact_snapcompact": "strategies",
    "text_edge_chars": "strategies",
    "FRAME_TOKEN_ESTIMATE": "tokens",
    "adapted_keep_tokens": "cut_point",
    "BranchSummaryEntry": "entries",
    "build_session_context": "context",
    "CANCEL": "hooks",
    "CompactionEntry": "entries",
    "CompactionOutcome": "outcome",
    "CompactionPipeline": "pipeline",
    "CompactionPreparation": "cut_point",
    "CompactionSettings": "settings",
    "convert_to_llm": "context",
    "cumulative_file_ops": "strategies",
    "payload_from_hook": "strategies",
    "CustomMessageEntry": "entries",
    "compaction_threshold": "triggers",
    "decide_after_turn": "triggers",
    "recovery_trigger": "triggers",
    "DEFAULT_ESTIMATOR": "tokens",
    "byte_estimate": "tokens",
    "DEFAULT_SETTINGS": "settings",
    "discover_settings": "settings",
    "DIVIDER": "context",
    "Entry": "entries",
    "entry_from_json": "entries",
    "entry_to_message": "context",
    "entry_tokens": "cut_point",
    "find_cut_point": "cut_point",
    "HookCompaction": "hooks",
    "Hooks": "hooks",
    "HookSummary": "hooks",
    "is_context_overflow": "triggers",
    "litellm_chat": "litellm_adapter",
    "litellm_complete": "litellm_adapter",
    "load_session_messages": "replay",
    "LoadedSession": "session_formats",
    "read_session_file": "session_formats",
    "load_settings": "settings",
    "merge_settings": "settings",
    "MessageEntry": "entries",
    "MetadataEntry": "entries",
    "ModelInfo": "model",
    "asked_shape": "settings_shape",
    "NavigationOutcome": "tree_navigation",
    "prepare_compaction": "cut_point",
    "usage_context_tokens": "cut_point",
    "usage_prompt_tokens": "cut_point",
    "prompt": "prompts",
    "prune_superseded_tool_results": "pruning",
    "prune_tool_outputs": "pruning",
    "PruneSettings": "settings",
    "replay_session": "replay",
    "replay_settings": "replay",
    "REPLAY_STRATEGIES": "replay",
    "resolve_threshold_tokens": "settings",
    "serialize_for_summary": "summarize",
    "Session": "session",
    "SessionContext": "context",
    "Settings": "settings",
    "settings_paths": "settings",
    "should_run_idle": "triggers",
    "SPLIT_TURN_SEPARATOR": "summarize",
    "summarizer_chat_messages": "litellm_adapter",
    "SUPERSEDED_NOTICE": "pruning",
    "to_chat_messages": "chat",
    "CacheBreakpoint": "cache_breakpoints",
    "cache_breakpoint": "cache_breakpoints",
    "with_cache_breakpoint": "cache_breakpoints",
    "to_wire_json": "context",
    "TokenEstimator": "tokens",
    "TEXT_TOKENIZERS": "settings",
    "FRAME_CAP_BYTES": "settings",
    "FRAME_CHARGES": "settings",
    "MIDDLE_SHAPES": "settings",
    "estimator_for": "text_counters",
    "CTOK_FIX": "text_counters",
    "claude_stand_in": "text_counters",
    "text_counter_for": "text_counters",
    "tokenizer_family": "text_counters",
    "tool_definitions": "chat",
    "TransientError": "control",
    "USELESS_NOTICE": "pruning",
    "user_question": "chat",
    "with_candidates": "control",
    "openai_remote": "compaction_run",
    "run_compaction": "compaction_run",
    "inline_request": "next_request",
    "llm_system_prompt": "next_request",
    "generate_handoff_document": "pipeline_handoff",
    "handoff": "pipeline_handoff",
    "shake_in_place": "pipeline_shake",
    "latest_compaction_ms": "pipeline_state",
    "summary_complete": "pipeline_state",
    "transcript": "pipeline_state",
    "promote": "promotion",
    "promotion_target": "promotion",
    "navigate_tree": "tree_navigation",
}

__all__ = [
    "usage_context_tokens",
    "usage_prompt_tokens",
    "truncating_hooks",
    "tallied",
    "replay_store",
    "legacy_method_order",
    "BeforeCompactEvent",
    "Cancel",
    "uses_openai_remote_compaction",
    "Replay",
    "ReplayRound",
    "effective_reserve_tokens",
    "DEFAULT_SHAKE_CONFIG",
    "RESCUE_SHAKE_CONFIG",
    "CompactionPayload",
    "StrategyFallback",
    "archived_message_json",
    "archived_messages_json",
    "compact_context_full",
    "compact_snapcompact",
    "text_edge_chars",
    "FRAME_TOKEN_ESTIMATE",
    "BranchSummaryEntry",
    "CANCEL",
    "CompactionEntry",
    "CompactionOutcome",
    "CompactionPipeline",
    "CompactionPreparation",
    "CompactionSettings",
    "CustomMessageEntry",
    "DEFAULT_ESTIMATOR",
    "byte_estimate",
    "DEFAULT_SETTINGS",
    "DIVIDER",
    "Entry",
    "HookCompaction",
    "HookSummary",
    "Hooks",
    "MessageEntry",
    "MetadataEntry",
    "ModelInfo",
    "asked_shape",
    "NavigationOutcome",
    "PruneSettings",
    "REPLAY_STRATEGIES",
    "SPLIT_TURN_SEPARATOR",
    "SUPERSEDED_NOTICE",
    "Session",
    "SessionContext",
    "Settings",
    "TokenEstimator",
    "TEXT_TOKENIZERS",
    "FRAME_CAP_BYTES",
    "FRAME_CHARGES",
    "MIDDLE_SHAPES",
    "TransientError",
    "USELESS_NOTICE",
    "adapted_keep_tokens",
    "build_session_context",
    "convert_to_llm",
    "cumulative_file_ops",
    "payload_from_hook",
    "compaction_threshold",
    "decide_after_turn",
    "discover_settings",
    "entry_from_json",
    "entry_to_message",
    "entry_tokens",
    "find_cut_point",
    "is_context_overflow",
    "litellm_chat",
    "litellm_complete",
    "load_session_messages",
    "LoadedSession",
    "read_session_file",
    "load_settings",
    "merge_settings",
    "prepare_compaction",
    "prompt",
    "prune_superseded_tool_results",
    "prune_tool_outputs",
    "recovery_trigger",
    "replay_session",
    "replay_settings",
    "resolve_threshold_tokens",
    "estimator_for",
    "CTOK_FIX",
    "claude_stand_in",
    "text_counter_for",
    "tokenizer_family",
    "serialize_for_summary",
    "settings_paths",
    "should_run_idle",
    "summarizer_chat_messages",
    "to_chat_messages",
    "with_cache_breakpoint",
    "CacheBreakpoint",
    "cache_breakpoint",
    "to_wire_json",
    "tool_definitions",
    "user_question",
    "with_candidates",
    "openai_remote",
    "run_compaction",
    "inline_request",
    "llm_system_prompt",
    "generate_handoff_document",
    "handoff",
    "shake_in_place",
    "latest_compaction_ms",
    "summary_complete",
    "transcript",
    "promote",
    "promotion_target",
    "navigate_tree",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
