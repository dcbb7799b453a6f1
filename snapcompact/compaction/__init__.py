"""The production compaction pipeline snapcompact plugs into.

A session is an append-only JSONL tree of entries (:mod:`.session`, :mod:`.entries`); the LLM
context is rebuilt from the active branch (:mod:`.context`). When the context grows too large,
old tool output is pruned (:mod:`.pruning`), a cut point is chosen (:mod:`.cut_point`) and a
strategy (:mod:`.strategies`: context-full LLM summary, snapcompact frames, handoff) replaces the
old history with a compaction entry. :mod:`.triggers` decides when; :mod:`.pipeline` ties it
together; :mod:`.branch` summarizes abandoned branches on tree navigation; :mod:`.hooks` lets a
harness cancel or replace a compaction or a summary. No provider is called directly: LLM work
goes through an injected ``complete(system_prompt, prompt, *, max_tokens)`` function
(:mod:`.litellm_adapter` builds one for litellm; :mod:`.remote` one for a remote endpoint;
:mod:`.control` retries several and lets a caller abort). Every token count goes through one
injectable :class:`~.tokens.TokenEstimator`, identical to the agent core's by default.
"""

from snapcompact.compaction.context import (
    DIVIDER,
    SessionContext,
    build_session_context,
    convert_to_llm,
)
from snapcompact.compaction.cut_point import (
    CompactionPreparation,
    find_cut_point,
    prepare_compaction,
)
from snapcompact.compaction.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    MessageEntry,
    MetadataEntry,
)
from snapcompact.compaction.hooks import CANCEL, HookCompaction, Hooks, HookSummary
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.pipeline import CompactionOutcome, CompactionPipeline, NavigationOutcome
from snapcompact.compaction.pruning import prune_superseded_tool_results, prune_tool_outputs
from snapcompact.compaction.session import Session
from snapcompact.compaction.settings import (
    DEFAULT_SETTINGS,
    Settings,
    discover_settings,
    load_settings,
    resolve_threshold_tokens,
)
from snapcompact.compaction.tokens import TokenEstimator

__all__ = [
    "CANCEL",
    "DEFAULT_SETTINGS",
    "DIVIDER",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CompactionOutcome",
    "CompactionPipeline",
    "CompactionPreparation",
    "CustomMessageEntry",
    "HookCompaction",
    "HookSummary",
    "Hooks",
    "MessageEntry",
    "MetadataEntry",
    "ModelInfo",
    "NavigationOutcome",
    "Session",
    "SessionContext",
    "Settings",
    "TokenEstimator",
    "build_session_context",
    "convert_to_llm",
    "discover_settings",
    "find_cut_point",
    "load_settings",
    "prepare_compaction",
    "prune_superseded_tool_results",
    "prune_tool_outputs",
    "resolve_threshold_tokens",
]
