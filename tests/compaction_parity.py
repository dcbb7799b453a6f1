"""This library's answers on the parity corpus, next to the agent core's recorded ones.

Shared by ``tests/compaction/test_compaction_parity.py`` (asserts) and ``scripts/compaction_parity.py``
(prints the counts). Each check yields ``(name, seed, ours, reference)``; the test then sorts the
mismatches into the documented seed differences (see the test) and fails on anything else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from compaction_corpus import session_entries

from snapcompact.archive import compute_file_lists, upsert_file_operations
from snapcompact.compaction import (
    DEFAULT_ESTIMATOR,
    Entry,
    MessageEntry,
    PruneSettings,
    cumulative_file_ops,
    entry_from_json,
    find_cut_point,
    prepare_compaction,
    prune_tool_outputs,
    serialize_for_summary,
)

GOLDEN = Path(__file__).parent / "golden" / "compaction"


@cache
def golden() -> dict[str, Any]:
    return json.loads((GOLDEN / "parity.json").read_text())


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def prune_settings(config: Mapping[str, Any]) -> PruneSettings:
    return PruneSettings(protect_tokens=config.get("protectTokens", 40_000),
                         minimum_savings=config.get("minimumSavings", 20_000),
                         supersede_reads=bool(config.get("supersede")),
                         cache_warm_suffix_tokens=config.get("cacheWarmSuffixTokens"))


@cache
def branch(seed: int) -> tuple[Entry, ...]:
    """The parsed session of ``seed`` (entries are immutable, so one parse serves every check)."""
    return tuple(entry_from_json(raw, f"seed {seed}") for raw in session_entries(seed))


def _message_id(path: Sequence[Entry], entry_id: str) -> str | None:
    """The reference names a message by its entry id only for ``message`` entries."""
    entry = next(e for e in path if e.id == entry_id)
    return entry_id if isinstance(entry, MessageEntry) else None


def session_checks(seed: int) -> Iterator[tuple[str, Any, Any]]:
    """(check name, ours, reference) for every check of one session."""
    ref = golden()["sessions"][str(seed)]
    meta = golden()["meta"]
    path = branch(seed)
    tokens = [DEFAULT_ESTIMATOR.message(e.message) if isinstance(e, MessageEntry) else None for e in path]
    yield "tokens", tokens, ref["tokens"]
    for keep in meta["keeps"]:
        cut = find_cut_point(path, 0, len(path), keep)
        ours = {"firstKeptEntryIndex": 0, "turnStartIndex": -1, "isSplitTurn": False} if cut is None else {
            "firstKeptEntryIndex": cut.first_kept_index,
            "turnStartIndex": -1 if cut.turn_start_index is None else cut.turn_start_index,
            "isSplitTurn": cut.is_split_turn}
        yield f"cut point keep {keep}", ours, ref["cut"][str(keep)]
        rp = ref["prepare"][str(keep)]
        prep = prepare_compaction(path, keep)
        if prep is None:
            yield f"prepare keep {keep}", None, rp
            yield f"file lists keep {keep}", None, None if rp is None else rp["filesBlock"]
            continue
        kept_index = next(i for i, e in enumerate(path) if e.id == prep.first_kept_entry_id)
        recent = [_message_id(path, e.id) for e in path[kept_index:]
                  if e.type in ("message", "custom_message", "branch_summary")]
        ours_prep = {"firstKeptEntryId": prep.first_kept_entry_id, "isSplitTurn": prep.is_split_turn,
                     "summarize": [_message_id(path, i) for i in prep.summarize_entry_ids],
                     "prefix": [_message_id(path, i) for i in prep.turn_prefix_entry_ids], "recent": recent}
        yield f"prepare keep {keep}", ours_prep, None if rp is None else {k: rp[k] for k in ours_prep}
        ops = cumulative_file_ops(prep)
        lists = compute_file_lists(ops)
        ours_files = {"readFiles": list(lists.read_files), "modifiedFiles": list(lists.modified_files),
                      "filesBlock": upsert_file_operations("", lists, ops.read)}
        yield f"file lists keep {keep}", ours_files, None if rp is None else {k: rp[k] for k in ours_files}
    for name, config in meta["prune_configs"].items():
        result = prune_tool_outputs(path, prune_settings(config), now_ms=0)
        ours_prune = {"prunedCount": len(result.replacements), "tokensSaved": result.tokens_saved,
                      "pruned": sorted([i, m["content"][0]["text"]] for i, m in result.replacements.items())}
        rprune = ref["prune"][name]
        yield f"prune {name}", ours_prune, {**rprune, "pruned": sorted(rprune["pruned"])}
    messages = [e.message for e in path if isinstance(e, MessageEntry)]
    text = serialize_for_summary(messages)
    yield "serialize for summary", {"sha256": text_digest(text), "chars": len(text)}, \
        ref["serialized"]
