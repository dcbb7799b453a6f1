"""Branch summaries: what an abandoned branch did, carried to where the user navigates.

Why: moving the leaf to another branch drops the old branch from the LLM context. Its findings
(files read, approaches that failed) are often still useful, so on request the abandoned entries
(old leaf back to the common ancestor) are summarized and the summary is attached as a child of
the navigation target. The summarizer input is budgeted (context window minus the branch reserve)
and filled newest first: recent work matters most. Summary entries (earlier branch summaries and
compactions) are only squeezed in while the total stays under 90 % of the budget. File
operations are collected from *all* abandoned entries, including earlier branch summaries'
details, so the file list stays cumulative even when messages do not fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.archive import (
    FileOperations,
    compute_file_lists,
    file_ops_from_messages,
    upsert_file_operations,
)
from snapcompact.compaction.context import (
    compaction_summary_message,
    entry_to_message,
    estimate_message_tokens,
)
from snapcompact.compaction.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    MessageEntry,
)
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.prompts import prompt
from snapcompact.compaction.settings import Settings
from snapcompact.compaction.summarize import (
    CompleteFn,
    build_summary_prompt,
    call_complete,
    serialize_for_summary,
    summary_max_tokens,
)
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator

__all__ = [
    "DEFAULT_BRANCH_WINDOW",
    "BranchPreparation",
    "collect_entries_for_branch_summary",
    "generate_branch_summary",
    "prepare_branch_entries",
]

#: Context window assumed when the model does not say.
DEFAULT_BRANCH_WINDOW = 128_000


def collect_entries_for_branch_summary(session: Any, old_leaf_id: str | None,
                                       target_id: str | None) -> tuple[
        str | None, list[Entry]]:
    """(common ancestor id, abandoned entries oldest first): the old branch below the ancestor."""
    if old_leaf_id is None:
        return None, []
    common = session.common_ancestor(old_leaf_id, target_id)
    path = session.get_branch(old_leaf_id)
    ids = [e.id for e in path]
    start = ids.index(common) + 1 if common is not None else 0
    return common, path[start:]


@dataclass(frozen=True)
class BranchPreparation:
    """What a branch summary is built from: the messages, their entry ids, files touched, tokens."""

    messages: tuple[Mapping[str, Any], ...]
    entry_ids: tuple[str, ...]
    file_ops: Any
    total_tokens: int


def _message(entry: Entry) -> Mapping[str, Any] | None:
    if isinstance(entry, CompactionEntry):
        return compaction_summary_message(entry)
    return entry_to_message(entry)


def prepare_branch_entries(entries: Sequence[Entry], token_budget: int,
                           estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> BranchPreparation:
    """The newest entries of an abandoned branch that fit ``token_budget``, to summarize."""
    if token_budget < 1:
        raise ValueError(f"branch summary token budget must be positive, got {token_budget}")
    ops = FileOperations()
    for entry in entries:
        if (isinstance(entry, (BranchSummaryEntry, CompactionEntry)) and not entry.from_extension
            and entry.details):
            ops = ops.merged(FileOperations.from_details(entry.details))
        elif isinstance(entry, MessageEntry) and entry.role == "assistant":
            ops = ops.merged(file_ops_from_messages([entry.message]))
    picked: list[tuple[Mapping[str, Any], str]] = []
    total = 0
    for entry in reversed(entries):
        message = _message(entry)
        if message is None:
            continue
        tokens = estimate_message_tokens(message, estimator)
        is_summary = isinstance(entry, (BranchSummaryEntry, CompactionEntry))
        if total + tokens > token_budget:
            if is_summary and total < 0.9 * token_budget:
                picked.append((message, entry.id))
                total += tokens
            break
        picked.append((message, entry.id))
        total += tokens
    picked.reverse()
    return BranchPreparation(tuple(m for m, _ in picked), tuple(i for _, i in picked), ops, total)


def generate_branch_summary(entries: Sequence[Entry], complete: CompleteFn | None,
                            model: ModelInfo | None,
                            settings: Settings, *, custom_instructions: str | None = None,
                            estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> tuple[
        str, dict[str, Any], Mapping[str, Any] | None]:
    """(summary with preamble and ``<files>``, details, usage) for the abandoned entries."""

    if complete is None:
        raise ValueError("branch summaries need a completion function (complete=...)")
    window = model.context_window if model is not None else DEFAULT_BRANCH_WINDOW
    budget = max(1, window - settings.branch_summary.reserve_tokens)
    prep = prepare_branch_entries(entries, budget, estimator)
    include_thinking = model.include_thinking if model is not None else True
    conversation = serialize_for_summary(prep.messages, include_thinking)
    instructions = custom_instructions or prompt("branch-summary")
    user = build_summary_prompt(conversation, instructions)
    reply = call_complete(complete, prompt("summarization-system"), user,
                          summary_max_tokens(settings.branch_summary.reserve_tokens))
    if not reply.text.strip():
        raise ValueError("the summarizer returned an empty branch summary")
    summary = f"{prompt('branch-summary-preamble')}\n\n{reply.text.strip()}"
    lists = compute_file_lists(prep.file_ops)
    summary = upsert_file_operations(summary, lists, prep.file_ops.read)
    return summary, lists.to_json(), reply.usage
