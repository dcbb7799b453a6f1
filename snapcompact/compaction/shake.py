"""Shake: drop heavy content out of the live context in place, without an LLM call.

Why: a coding session's context is mostly tool output and pasted blocks (code fences, XML
documents). Shake replaces whole tool-result texts and large fenced/XML blocks older than a
protected recent tail with a one-line placeholder, keeps every tool call and its result message
(so provider history replay stays valid) and every non-text block (images stay), and keeps the
originals in a recovery artifact. It is the ``shake`` compaction strategy: cheap and local, tried
before a summary; when it frees nothing, or not enough to get back under the threshold, the
pipeline falls back to context-full.

The seeds name the strategy and leave its behaviour open, so this follows the agent core
(pi-agent-core 18.2.11 ``compaction/shake.ts``: region detection and in-place mutation) and the
coding agent (18.3.4 ``session-maintenance.ts``: placeholders, artifact, recovery band)
one-for-one; ``tests/compaction/test_compaction_shake.py`` checks the regions and the rewritten
entries against the agent core's recorded answers. Offsets here are Python string indices (code
points); the agent core's are UTF-16 units (the tests convert).

This module is pure and finds what is shaken (the regions); :mod:`.shake_write` builds the
replacement entries and the recovery artifact; the pipeline persists them (:mod:`.pipeline_shake`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Literal

from snapcompact.archive import strip_read_selector
from snapcompact.compaction.context import estimate_entry_tokens
from snapcompact.compaction.entries import (
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
)
from snapcompact.compaction.path_index import BranchIndex, index_of
from snapcompact.compaction.pruning import _calls_by_id, _read_path
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator
from snapcompact.core import JS_WHITESPACE, JS_WS

__all__ = [
    "AGGRESSIVE_SHAKE_CONFIG",
    "DEFAULT_SHAKE_CONFIG",
    "PLACEHOLDER_TOKEN_ESTIMATE",
    "RESCUE_SHAKE_CONFIG",
    "ShakeConfig",
    "ShakeRegion",
    "collect_shake_regions",
    "latest_compaction_boundary",
    "scan_block_ranges",
]

#: Rough token cost of one placeholder line; used only for the savings gate.
PLACEHOLDER_TOKEN_ESTIMATE = 16


@dataclass(frozen=True)
class ShakeConfig:
    """What may be shaken.

    ``protect_tokens``: the newest context tokens (all entries) stay intact; ``min_savings``: do
    nothing unless the regions together save this much; ``fence_min_tokens``: the smallest
    fenced/XML block worth dropping. Protected results: tools named in ``protected_tools``, reads of
    ``skill://`` paths (``protect_skill_reads``), reads of ``artifact://`` paths and results whose
    ``details.meta.source`` is an internal artifact (``protect_artifact_reads``: eliding a recovery
    read would only mint another artifact), and reads of ``protected_paths`` (the active plan).
    ``keep_boundary_id``: the latest compaction's first kept entry; entries before it are never
    sent, so they are not shaken.
    """

    protect_tokens: int = 16_000
    min_savings: int = 4_000
    fence_min_tokens: int = 400
    protected_tools: tuple[str, ...] = ("skill",)
    protect_skill_reads: bool = True
    protect_artifact_reads: bool = True
    protected_paths: tuple[str, ...] = ()
    keep_boundary_id: str | None = None

    def __post_init__(self) -> None:
        for name in ("protect_tokens", "min_savings", "fence_min_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"shake {name} must be a non-negative integer, got {value!r}")
        object.__setattr__(self, "protected_tools", tuple(self.protected_tools))
        object.__setattr__(self, "protected_paths", tuple(self.protected_paths))


#: Automatic shake (the ``shake`` strategy): protects the live tail, conservative thresholds.
DEFAULT_SHAKE_CONFIG = ShakeConfig()
#: Manual shake: no savings threshold, a small recent tail, artifact recovery reads included.
AGGRESSIVE_SHAKE_CONFIG = ShakeConfig(protect_tokens=4_000, min_savings=0,
                                      protect_artifact_reads=False)
#: Dead-end rescue: aggressive reach with no tail at all, artifact recovery reads protected.
RESCUE_SHAKE_CONFIG = ShakeConfig(protect_tokens=0, min_savings=0)


@dataclass(frozen=True)
class ShakeRegion:
    """One droppable region: a whole tool-result text, or ``[start, end)`` of one text slot.

    ``block_index`` is the content block holding the text, -1 for string content; ``tokens`` the
    estimate of the removable text only (retained images excluded); ``label`` the tool name, role
    or custom type (for the artifact).
    """

    kind: Literal["toolResult", "block"]
    entry_id: str
    tokens: int
    original_text: str
    label: str
    block_index: int = -1
    start: int = 0
    end: int = 0


# JavaScript's whitespace (String.prototype.trimStart and the regex class \s), not Python's.
_JS_SPACE = JS_WHITESPACE
_S = JS_WS
# Top-level XML element lines: lowercase tag names only, as the agent's prompt renderer detects
# them.
_OPENING_XML = re.compile(rf"<([a-z_-]+)(?:{_S}+[^>]*)?>")
_CLOSING_XML = re.compile(r"</([a-z_-]+)>")


def scan_block_ranges(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of every fenced code block and top-level XML element in ``text``.

    A range covers the opening and closing fence/tag lines, not the newline after them. An
    unterminated fence or tag yields nothing; XML is not looked for inside a fence; an opening tag
    counts only unindented, a closing one may be indented. Nested ranges keep the outermost.
    """
    if "```" not in text and "~~~" not in text and "</" not in text:
        return []  # no fence line and no closing tag: nothing can close
    ranges: list[tuple[int, int]] = []
    in_fence = False
    fence_start = -1
    tags: list[str] = []
    xml_start = -1
    line_start = 0
    n = len(text)
    while line_start <= n:
        newline = text.find("\n", line_start)
        line_end = n if newline < 0 else newline
        line = text[line_start:line_end]
        trimmed = line.lstrip(_JS_SPACE)
        if trimmed.startswith(("```", "~~~")):
            if not in_fence:
                in_fence, fence_start = True, line_start
            else:
                in_fence = False
                ranges.append((fence_start, line_end))
        elif not in_fence:
            opening = _OPENING_XML.fullmatch(trimmed) if len(line) == len(trimmed) else None
            if opening is not None:
                if not tags:
                    xml_start = line_start
                tags.append(opening.group(1))
            else:
                closing = _CLOSING_XML.fullmatch(trimmed)
                if closing is not None and tags and tags[-1] == closing.group(1):
                    tags.pop()
                    if not tags and xml_start >= 0:
                        ranges.append((xml_start, line_end))
                        xml_start = -1
        if newline < 0:
            break
        line_start = newline + 1
    ranges.sort(key=lambda r: r[0])
    kept: list[tuple[int, int]] = []
    last_end = -1
    for start, end in ranges:
        if start >= last_end:
            kept.append((start, end))
            last_end = end
    return kept


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    return ([b for b in content if isinstance(b, Mapping)] if isinstance(content, (list, tuple))
            else [])


def _custom_tokens(entry: CustomMessageEntry, estimator: TokenEstimator) -> int:
    if isinstance(entry.content, str):
        return estimator.count_text([entry.content]) if entry.content else 0
    fragments = [str(b.get("text", "")) for b in _blocks(entry.content) if b.get("type") == "text"]
    return estimator.count_text(fragments) if fragments else 0


def _entry_tokens(entry: Entry, estimator: TokenEstimator) -> int:
    """The protect window counts message and custom-message entries only (summaries count 0)."""
    if isinstance(entry, MessageEntry):
        return estimate_entry_tokens(entry, estimator)
    if isinstance(entry, CustomMessageEntry):
        return _custom_tokens(entry, estimator)
    return 0


def _result_fragments(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):  # not an agent-core shape; shaken as one text block
        return [content] if content else []
    return [str(b["text"]) for b in _blocks(content) if b.get("type") == "text" and b.get("text")]


def _internal_artifact_source(message: Mapping[str, Any]) -> bool:
    details = message.get("details")
    meta = details.get("meta") if isinstance(details, Mapping) else None
    source = meta.get("source") if isinstance(meta, Mapping) else None
    if not isinstance(source, Mapping) or source.get("type") != "internal":
        return False
    value = source.get("value")
    return isinstance(value, str) and value.startswith("artifact://")


def _protected(message: Mapping[str, Any], call: Mapping[str, Any] | None,
               config: ShakeConfig) -> bool:
    if message.get("toolName") in config.protected_tools:
        return True
    path = _read_path(message, call)
    if config.protect_skill_reads and path is not None and path.startswith("skill://"):
        return True
    if config.protect_artifact_reads and ((path is not None and path.startswith("artifact://"))
                                          or _internal_artifact_source(message)):
        return True
    return path is not None and bool(config.protected_paths) and (
        path in config.protected_paths or strip_read_selector(path) in config.protected_paths)


def _text_slots(entry: Entry) -> tuple[str, list[tuple[int, str]]]:
    """(label, [(block index or -1, text)]) of the texts fenced/XML blocks are looked for in."""
    if isinstance(entry, CustomMessageEntry):
        content: Any = entry.content
        label = entry.custom_type
    elif isinstance(entry, MessageEntry) and entry.role in ("user", "developer", "assistant"):
        content = entry.message.get("content")
        label = entry.role
        if entry.role == "assistant" and isinstance(content, str):
            return label, []
    else:
        return "", []
    if isinstance(content, str):
        return label, [(-1, content)]
    slots = []
    for index, block in enumerate(content if isinstance(content, (list, tuple)) else ()):
        if (isinstance(block, Mapping) and block.get("type") == "text"
                and isinstance(block.get("text"), str)):
            slots.append((index, block["text"]))
    return label, slots


#: Block regions per entry object (entries are immutable; a rewritten entry is a new object), so
#: a shake every turn scans each old message's text once, not once per turn.
_BLOCK_REGIONS: dict[int, tuple[Entry, TokenEstimator, int, tuple[ShakeRegion, ...]]] = {}


def _block_regions(entry: Entry, estimator: TokenEstimator,
                   fence_min_tokens: int) -> tuple[ShakeRegion, ...]:
    """The fenced/XML block regions of an entry's text slots of at least ``fence_min_tokens``."""
    hit = _BLOCK_REGIONS.get(id(entry))
    if (hit is not None and hit[0] is entry and hit[1] is estimator
            and hit[2] == fence_min_tokens):
        return hit[3]
    label, slots = _text_slots(entry)
    found: list[ShakeRegion] = []
    for block_index, text in slots:
        for start, end in scan_block_ranges(text):
            if end <= start:
                continue
            piece = text[start:end]
            tokens = estimator.count_text([piece])
            if tokens >= fence_min_tokens:
                found.append(ShakeRegion("block", entry.id, tokens, piece, label, block_index,
                                         start, end))
    if len(_BLOCK_REGIONS) > 200_000:
        _BLOCK_REGIONS.clear()
    _BLOCK_REGIONS[id(entry)] = (entry, estimator, fence_min_tokens, tuple(found))
    return tuple(found)


def _boundary_index(path: Sequence[Entry], boundary_id: str | None) -> int:
    if boundary_id is None:
        return 0
    return next((i for i, e in enumerate(path) if e.id == boundary_id), 0)


def latest_compaction_boundary(path: Sequence[Entry]) -> str | None:
    """The latest compaction's ``firstKeptEntryId`` (what the caller passes as the boundary)."""
    for entry in reversed(path):
        if isinstance(entry, CompactionEntry):
            return entry.first_kept_entry_id
    return None


class _ShakeScan:
    """What :func:`collect_shake_regions` reads of each branch position (its protect-window
    tokens, its regions, whether it is a useless result), kept on the branch index for one
    configuration and estimator, so a shake costs what changed since the last one.

    A position is read again when its entry was swapped (``BranchIndex.swapped``) or, for a
    result, when a call with its id was added (``BranchIndex.call_log``): a result's
    protection reads its call. The eligible regions are then those of positions with regions
    (kept sorted) before the protect window, and useless ones inside it.
    """

    def __init__(self, index: BranchIndex, config: ShakeConfig, estimator: TokenEstimator) -> None:
        self.config = config
        self.estimator = estimator
        self.version = index.calls_version
        self.swaps_seen = len(index.swapped)
        self.calls_seen = len(index.call_log)
        self.tokens: list[int] = []
        self.running = [0]  # running[k] = tokens of positions before k
        self.regions: list[tuple[ShakeRegion, ...]] = []
        self.call_ids: list[str | None] = []  # a result's call id
        self.useless: list[bool] = []
        self.with_regions: list[int] = []  # sorted positions with regions
        self.results_of_call: dict[str, list[int]] = {}  # call id -> positions of its results
        self.useless_with_regions: list[int] = []
        #: What eliding the regions would save, per position, summed over ``with_regions`` and
        #: ``useless_with_regions``: a pass below ``min_savings`` learns it without listing them.
        self.savings = _PositionSums()
        self.useless_savings = _PositionSums()

    def _read(self, entry: Entry, calls: Mapping[str, Mapping[str, Any]]
              ) -> tuple[int, tuple[ShakeRegion, ...], str | None, bool]:
        config, estimator = self.config, self.estimator
        tokens = _entry_tokens(entry, estimator)
        result = (entry.message if isinstance(entry, MessageEntry) and entry.role == "toolResult"
                  else None)
        if result is None:
            return tokens, _block_regions(entry, estimator, config.fence_min_tokens), None, False
        call_id = str(result.get("toolCallId"))
        useless = result.get("useless") is True and result.get("isError") is not True
        if "prunedAt" in result or _protected(result, calls.get(call_id), config):
            return tokens, (), call_id, useless
        fragments = _result_fragments(result)
        if not fragments:
            return tokens, (), call_id, useless
        return tokens, (ShakeRegion("toolResult", entry.id, estimator.count_text(fragments),
                                    "\n".join(fragments), str(result.get("toolName"))),), \
            call_id, useless

    def _set(self, p: int, read: tuple[int, tuple[ShakeRegion, ...], str | None, bool]) -> None:
        tokens, regions, call_id, useless = read
        had = bool(self.regions[p]) if p < len(self.regions) else False
        had_useless = had and self.useless[p]
        if call_id is not None:
            at = self.results_of_call.setdefault(call_id, [])
            if p not in at:
                at.append(p)
        if p < len(self.tokens):
            self.tokens[p], self.regions[p] = tokens, regions
            self.call_ids[p], self.useless[p] = call_id, useless
        else:
            self.tokens.append(tokens)
            self.regions.append(regions)
            self.call_ids.append(call_id)
            self.useless.append(useless)
        saving = _savings(regions)
        for sorted_list, sums, was, now in (
                (self.with_regions, self.savings, had, bool(regions)),
                (self.useless_with_regions, self.useless_savings, had_useless,
                 bool(regions) and useless)):
            if was and not now:
                del sorted_list[bisect_left(sorted_list, p)]
            elif now and not was:
                insort(sorted_list, p)
            sums.set(p, saving if now else 0)

    def update(self, index: BranchIndex, path: Sequence[Entry]) -> None:
        calls = index.calls()
        dirty = len(self.tokens)
        for p in sorted(set(index.swapped[self.swaps_seen:])):
            if p < len(self.tokens):
                self._set(p, self._read(path[p], calls))
                dirty = min(dirty, p)
        self.swaps_seen = len(index.swapped)
        new_ids = set(index.call_log[self.calls_seen:])
        self.calls_seen = len(index.call_log)
        for call_id in new_ids:
            for p in self.results_of_call.get(call_id, ()):
                self._set(p, self._read(path[p], calls))
                dirty = min(dirty, p)
        for p in range(len(self.tokens), len(path)):
            self._set(p, self._read(path[p], calls))
        del self.running[dirty + 1:]
        running = accumulate(self.tokens[dirty:], initial=self.running[dirty])
        next(running)  # running[dirty] itself, kept
        self.running.extend(running)

    def _aged(self, protect_tokens: int) -> int:
        total = self.running[-1]
        # after(i) = total - running[i + 1] >= protect  <=>  running[i + 1] <= total - protect
        return max(0, bisect_right(self.running, total - protect_tokens) - 1)

    def saved(self, start: int, protect_tokens: int) -> int:
        """What eliding :meth:`collect`'s regions saves (without listing them)."""
        aged = self._aged(protect_tokens)
        return (self.savings.between(start, aged)
                + self.useless_savings.between(max(start, aged), len(self.tokens)))

    def collect(self, start: int, protect_tokens: int) -> list[ShakeRegion]:
        aged = self._aged(protect_tokens)
        regions: list[ShakeRegion] = []
        with_regions = self.with_regions
        for p in with_regions[bisect_left(with_regions, start):bisect_left(with_regions, aged)]:
            regions.extend(self.regions[p])
        useless = self.useless_with_regions
        for p in useless[bisect_left(useless, max(start, aged)):]:
            regions.extend(self.regions[p])
        return regions


def _savings(regions: Sequence[ShakeRegion]) -> int:
    return sum(max(0, r.tokens - PLACEHOLDER_TOKEN_ESTIMATE) for r in regions)


class _PositionSums:
    """Values by branch position with sums over position ranges, both in O(log n) (a Fenwick
    tree over the positions, grown as the branch grows)."""

    __slots__ = ("_tree", "_values")

    def __init__(self) -> None:
        self._values: list[int] = []
        self._tree: list[int] = [0]  # 1-based

    def set(self, p: int, value: int) -> None:
        values, tree = self._values, self._tree
        while len(values) <= p:  # grow by one position: its node sums its own range
            values.append(0)
            k = len(values)
            low = k - (k & -k)
            tree.append(self._prefix(k - 1) - self._prefix(low))
        delta = value - values[p]
        if not delta:
            return
        values[p] = value
        k = p + 1
        while k < len(tree):
            tree[k] += delta
            k += k & -k

    def _prefix(self, n: int) -> int:
        """Sum of the values at positions below ``n``."""
        tree, total = self._tree, 0
        n = min(n, len(tree) - 1)
        while n > 0:
            total += tree[n]
            n -= n & -n
        return total

    def between(self, lo: int, hi: int) -> int:
        """Sum of the values at positions ``lo <= p < hi``."""
        return self._prefix(hi) - self._prefix(lo) if hi > lo else 0


def _indexed_regions(index: BranchIndex, path: Sequence[Entry], config: ShakeConfig,
                     estimator: TokenEstimator) -> list[ShakeRegion]:
    """The eligible regions from the index's scan; [] when they save less than
    ``config.min_savings`` (found from the scan's sums, without listing them)."""
    key = ("shake", config.protected_tools, config.protect_skill_reads,
           config.protect_artifact_reads, config.protected_paths, config.fence_min_tokens,
           id(estimator))
    scan = index.memo.get(key)
    if (not isinstance(scan, _ShakeScan) or scan.estimator is not estimator
            or scan.version != index.calls_version):
        scan = index.memo[key] = _ShakeScan(index, config, estimator)
    scan.update(index, path)
    start = 0
    if config.keep_boundary_id is not None:
        start = index.position.get(config.keep_boundary_id, 0)
    if scan.saved(start, config.protect_tokens) < config.min_savings:
        return []
    return scan.collect(start, config.protect_tokens)


def collect_shake_regions(path: Sequence[Entry], config: ShakeConfig = DEFAULT_SHAKE_CONFIG, *,
                          estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> list[ShakeRegion]:
    """Every eligible region of the branch ``path``, in document order; [] below ``min_savings``.

    An entry is eligible once the entries after it hold ``protect_tokens``; a tool result flagged
    ``useless`` (and not an error) is eligible at any age. Already pruned results (``prunedAt``)
    and protected ones are skipped; tool calls are never touched and regions never span messages.
    """
    index = index_of(path)
    if index is not None:
        # The branch index's copy: what each position holds is kept across shakes.
        found = _indexed_regions(index, path, config, estimator)
        saved = sum(max(0, r.tokens - PLACEHOLDER_TOKEN_ESTIMATE) for r in found)
        return found if saved >= config.min_savings else []
    n = len(path)
    if n == 0:
        return []
    after = [0] * n
    running = 0
    for i in range(n - 1, -1, -1):
        after[i] = running
        running += _entry_tokens(path[i], estimator)
    calls: Mapping[str, Mapping[str, Any]] | None = None
    regions: list[ShakeRegion] = []
    for i in range(_boundary_index(path, config.keep_boundary_id), n):
        entry = path[i]
        result = (entry.message if isinstance(entry, MessageEntry) and entry.role == "toolResult"
                  else None)
        useless = (result is not None and result.get("useless") is True
                   and result.get("isError") is not True)
        if not useless and after[i] < config.protect_tokens:
            continue
        if result is not None:
            if "prunedAt" in result:
                continue
            if calls is None:
                # The branch index keeps this map as the session grows (no walk per shake).
                index = index_of(path)
                calls = index.calls() if index is not None else _calls_by_id(path)
            if _protected(result, calls.get(str(result.get("toolCallId"))), config):
                continue
            fragments = _result_fragments(result)
            if fragments:
                regions.append(ShakeRegion("toolResult", entry.id, estimator.count_text(fragments),
                                           "\n".join(fragments), str(result.get("toolName"))))
            continue
        regions.extend(_block_regions(entry, estimator, config.fence_min_tokens))
    savings = sum(max(0, r.tokens - PLACEHOLDER_TOKEN_ESTIMATE) for r in regions)
    return regions if savings >= config.min_savings else []
