"""The context size the coding agent reads before a prompt: the provider's own count, anchored.

Why a module of its own: before sending a prompt the agent does not only count the stored
messages; it asks its session stats for the context breakdown (18.3.4
``session-stats.ts:207-318``, ``getContextBreakdown``), which starts from what the provider
billed for the newest settled assistant message after the latest compaction (its "usage
anchor") and adds a local estimate of what came after it. The pre-prompt check then takes the
larger of that and the purely local estimate (``session-maintenance.ts:2455-2462``,
``compactionContextTokens = max``). On a real session the provider's count is usually larger
than the local bytes/4 estimate, so the agent compacts where a local count alone would not.

The rules, from the agent's source:

* anchor (pi-agent-core ``isTranscriptUsageAnchor``): an assistant message, not aborted or
  errored, whose ``usage`` reports prompt tokens (``contextTokens > 0``, or input + cache reads
  + cache writes > 0, or context tokens above the output);
* searched newest first among the entries after the latest compaction; one before it is not in
  the live context (nor one before a reset boundary, which the live context also drops);
* its base is ``contextSnapshot.promptTokens`` when the agent recorded one, else
  ``calculatePromptTokens(usage)`` (``contextTokens``, else input + cache reads + cache writes,
  else the context tokens), less ``contextSnapshot.historyRewriteTokensRemoved``;
* plus the growth of the non-message part since the snapshot (none without a snapshot), the
  local estimate of the context messages after the anchor, and the pending prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snapcompact.agent.counting import usage_number
from snapcompact.compaction import (
    MessageEntry,
    TokenEstimator,
    usage_context_tokens,
    usage_prompt_tokens,
)

__all__ = ["anchored_context_tokens", "is_usage_anchor", "prompt_tokens_of_usage"]


def _clean(usage: Mapping[str, Any]) -> dict[str, int]:
    """The usage's numeric fields (a malformed record counts as zeros, never an error)."""
    keys = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
    out = {k: usage_number(usage.get(k)) for k in keys}
    if usage.get("contextTokens") is not None:
        out["contextTokens"] = usage_number(usage.get("contextTokens"))
    return out


def prompt_tokens_of_usage(usage: Mapping[str, Any]) -> int:
    """pi-agent-core ``calculatePromptTokens``: ``contextTokens`` when reported, else input +
    cache reads + cache writes when positive, else ``calculateContextTokens``."""
    return usage_prompt_tokens(_clean(usage))


def is_usage_anchor(message: Mapping[str, Any]) -> bool:
    """pi-agent-core ``isTranscriptUsageAnchor``: a settled assistant message whose usage says
    how large the prompt was."""
    if message.get("role") != "assistant" or message.get("stopReason") in ("aborted", "error"):
        return False
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return False
    clean = _clean(usage)
    return (clean.get("contextTokens", 0) > 0
            or clean["input"] + clean["cacheRead"] + clean["cacheWrite"] > 0
            or usage_context_tokens(clean) > clean["output"])


def anchored_context_tokens(branch: Any, estimator: TokenEstimator, *,
                            non_message_tokens: int, pending_tokens: int) -> int | None:
    """``getContextBreakdown().usedTokens`` when the live context has a usage anchor, else None
    (the agent then counts locally, as
    :meth:`~.maintenance_view.MaintenanceView.stored_tokens` does).

    ``branch`` is the session's :class:`~snapcompact.compaction.path_index.BranchIndex`.
    """
    path = branch.sync()
    latest = branch.latest_compaction_index()
    floor = max(-1 if latest is None else latest, branch.latest_reset_index())
    for at in range(len(path) - 1, floor, -1):
        entry = path[at]
        if not isinstance(entry, MessageEntry) or not is_usage_anchor(entry.message):
            continue
        message = entry.message
        snapshot = message.get("contextSnapshot")
        snapshot = snapshot if isinstance(snapshot, Mapping) else {}
        if snapshot.get("promptTokens") is not None:
            base = usage_number(snapshot.get("promptTokens"))
        else:
            base = prompt_tokens_of_usage(message["usage"])
        base = max(0, base - usage_number(snapshot.get("historyRewriteTokensRemoved")))
        growth = (max(0, non_message_tokens - usage_number(snapshot["nonMessageTokens"]))
                  if snapshot.get("nonMessageTokens") is not None else 0)
        context = branch.totals(estimator).context
        after = context[-1] - context[at + 1]
        return base + growth + after + pending_tokens
    return None
