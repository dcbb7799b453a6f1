"""Shake's writing: how a shaken region is replaced, and where its original text goes.

Why a room: :mod:`.shake` decides what is shaken (the regions); writing them is a separate
job with its own rules, taken from the agent core (pi-agent-core 18.2.11 ``compaction/shake.ts``,
the in-place mutation) and the coding agent (18.3.4 ``session-maintenance.ts``, the placeholder
line and the recovery artifact): a tool result keeps its non-text blocks and its first text
becomes the placeholder, a block region is spliced out of its text, the result is stamped
``prunedAt``, and every original goes into one artifact under a numbered heading. Pure: new
entries are returned, the pipeline persists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from snapcompact.compaction.entries import CustomMessageEntry, Entry, MessageEntry
from snapcompact.compaction.path_index import index_of
from snapcompact.compaction.shake import ShakeRegion
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator

__all__ = [
    "ShakeApplied",
    "apply_shake_regions",
    "format_shake_summary",
    "shake_artifact_text",
    "shake_placeholder",
]


def shake_placeholder(region: ShakeRegion, index: int, artifact_id: str | None = None) -> str:
    """The line that replaces a region (``index`` from 0; the artifact names regions from 1)."""
    if artifact_id:
        return (f"[shaken ~{region.tokens} tokens \u2014 recover: artifact://{artifact_id} "
                f"(region {index + 1})]")
    return f"[shaken ~{region.tokens} tokens]"


def shake_artifact_text(regions: Sequence[ShakeRegion]) -> str:
    """The recovery artifact: every original region under a numbered heading."""
    parts: list[str] = []
    for i, region in enumerate(regions):
        parts += [f"### region {i + 1} ({region.label}, ~{region.tokens} tok)", "",
                  region.original_text, ""]
    return "\n".join(parts)


@dataclass(frozen=True)
class ShakeApplied:
    """Replacement entries by id, and what the shake did."""

    replacements: Mapping[str, Entry]
    tool_results_dropped: int
    blocks_dropped: int
    tokens_freed: int


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, replacement in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _shaken_content(content: Any, edits: Mapping[int, list[tuple[int, int, str]]]) -> Any:
    if isinstance(content, str):
        return _splice(content, edits.get(-1, [])) if -1 in edits else content
    out = []
    for index, block in enumerate(content):
        if index in edits and isinstance(block, Mapping) and block.get("type") == "text":
            block = {**block, "text": _splice(str(block["text"]), edits[index])}
        out.append(dict(block) if isinstance(block, Mapping) else block)
    return out


def _shaken_result(message: Mapping[str, Any], placeholder: str, now_ms: int) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        kept: list[Any] = [{"type": "text", "text": placeholder}]
    else:
        blocks = list(content or ())
        first = next((i for i,
                      b in enumerate(blocks) if isinstance(b, Mapping) and b.get("type") == "text"
                      and b.get("text")), None)
        kept = [dict(b) if i != first else {"type": "text", "text": placeholder} for i,
                b in enumerate(blocks)
                if not (isinstance(b, Mapping) and b.get("type") == "text") or i == first]
    return {**message, "content": kept, "prunedAt": now_ms}


def apply_shake_regions(path: Sequence[Entry], regions: Sequence[ShakeRegion],
                        replacements: Sequence[str], *,
                        now_ms: int, estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> ShakeApplied:
    """New entries with every region replaced (``replacements[i]`` for ``regions[i]``).

    A tool result keeps its non-text blocks, its first non-empty text becomes the placeholder,
    its other texts go, and it is stamped ``prunedAt``; a block region is spliced out of its text
    (several in one text are applied highest offset first, so offsets stay valid).
    """
    if len(regions) != len(replacements):
        raise ValueError(f"{len(regions)} shake regions but {len(replacements)} replacements")
    index = index_of(path)
    if index is not None:  # the regions' entries by position, not a walk of the branch
        by_id = {r.entry_id: path[index.position[r.entry_id]] for r in regions
                 if r.entry_id in index.position}
    else:
        by_id = {e.id: e for e in path}
    results: dict[str, str] = {}
    edits: dict[str, dict[int, list[tuple[int, int, str]]]] = {}
    freed = 0
    for region, text in zip(regions, replacements, strict=True):
        if region.entry_id not in by_id:
            raise ValueError(f"shake region names entry {region.entry_id!r}, which is not on the "
                             "branch")
        freed += region.tokens - (estimator.count_text([text]) if text else 0)
        if region.kind == "toolResult":
            results[region.entry_id] = text
        else:
            edits.setdefault(region.entry_id, {}).setdefault(region.block_index, []).append(
                (region.start, region.end, text))
    out: dict[str, Entry] = {}
    for entry_id, text in results.items():
        entry = by_id[entry_id]
        assert isinstance(entry, MessageEntry)
        out[entry_id] = replace(entry, message=_shaken_result(entry.message, text, now_ms))
    for entry_id, slots in edits.items():
        entry = by_id[entry_id]
        if isinstance(entry, CustomMessageEntry):
            content = _shaken_content(entry.content, slots)
            out[entry_id] = replace(entry,
                                    content=content if isinstance(content, str) else tuple(content))
        elif isinstance(entry, MessageEntry):
            out[entry_id] = replace(entry, message={**entry.message,
                                                    "content": _shaken_content(
                                                        entry.message.get("content"), slots)})
    blocks = sum(1 for r in regions if r.kind == "block")
    return ShakeApplied(out, len(regions) - blocks, blocks, max(0, freed))


def format_shake_summary(applied: ShakeApplied) -> str:
    """One line for the operator: what was shaken and roughly how much it freed."""
    parts = []
    if applied.tool_results_dropped:
        parts.append(f"{applied.tool_results_dropped} tool "
                     f"result{'' if applied.tool_results_dropped == 1 else 's'}")
    if applied.blocks_dropped:
        parts.append(f"{applied.blocks_dropped} block{'' if applied.blocks_dropped == 1 else 's'}")
    if not parts:
        return "Nothing to shake."
    return f"Shook {' + '.join(parts)} (~{applied.tokens_freed} tokens freed)."
