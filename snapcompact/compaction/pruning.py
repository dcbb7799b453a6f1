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

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapcompact.archive import split_read_selector, strip_read_selector
from snapcompact.compaction.context import estimate_entry_tokens
from snapcompact.compaction.entries import CompactionEntry, Entry, MessageEntry
from snapcompact.compaction.path_index import BranchIndex, index_of
from snapcompact.compaction.settings import PruneSettings
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator
from snapcompact.core import estimate_text_tokens

__all__ = [
    "MIN_PRUNE_TOKENS",
    "SUPERSEDED_NOTICE",
    "USELESS_NOTICE",
    "PruneResult",
    "is_pruned",
    "prune_superseded_tool_results",
    "prune_tool_outputs",
    "read_supersede_key",
    "truncated_notice",
]

MIN_PRUNE_TOKENS = 50
SUPERSEDED_NOTICE = "[Superseded by a newer read of this file]"
USELESS_NOTICE = "[Uneventful result elided]"
_DEFAULT_PRUNE = PruneSettings()


def truncated_notice(tokens: int) -> str:
    """The text a tool output is replaced with when cut for size."""
    return f"[Output truncated - {tokens} tokens]"


def is_pruned(message: Mapping[str, Any]) -> bool:
    """Whether a tool result already holds one of the pruning notices."""
    text = _result_text(message)
    return text in (SUPERSEDED_NOTICE, USELESS_NOTICE) or (
        text.startswith("[Output truncated - ") and text.endswith(" tokens]"))


def _result_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or () if isinstance(b, Mapping)
                   and b.get("type") == "text")


def _notice_tokens(notice: str) -> int:
    return estimate_text_tokens(len(notice))


def _savings(tokens: int, notice: str) -> int:
    return max(0, tokens - _notice_tokens(notice))


@dataclass(frozen=True)
class PruneResult:
    """Replacement messages by entry id, and what they save."""

    replacements: Mapping[str, Mapping[str, Any]]
    tokens_saved: int
    reasons: Mapping[str, str]

    @property
    def changed(self) -> bool:
        """True when at least one message would be replaced."""
        return bool(self.replacements)


def _calls_by_id(path: Sequence[Entry]) -> dict[str, Mapping[str, Any]]:
    calls: dict[str, Mapping[str, Any]] = {}
    for entry in path:
        if isinstance(entry, MessageEntry) and entry.role == "assistant":
            for block in entry.message.get("content") or ():
                if isinstance(block, Mapping) and block.get("type") == "toolCall":
                    calls[str(block.get("id"))] = block
    return calls


def _read_path(message: Mapping[str, Any], call: Mapping[str, Any] | None) -> str | None:
    if message.get("toolName") != "read" or call is None or call.get("name") != "read":
        return None
    args = call.get("arguments")
    path = args.get("path") if isinstance(args, Mapping) else None
    return path if isinstance(path, str) else None


def _is_protected(message: Mapping[str, Any], call: Mapping[str, Any] | None,
                  settings: PruneSettings, protected_paths: Collection[str]) -> bool:
    if message.get("toolName") in settings.protected_tools:
        return True
    path = _read_path(message, call)
    if path is None:
        return False
    return (path.startswith("skill://") or path in protected_paths
            or strip_read_selector(path) in protected_paths)


#: Per (protected tools, protected paths as given): message id -> (message, its call, protected?).
_PROTECTED: dict[tuple[tuple[str, ...], type, tuple[str, ...]],
                 dict[int, tuple[Mapping[str, Any], Mapping[str, Any] | None, bool]]] = {}
#: Per (protected tools, protected paths as given): entry id -> (entry, ``_Scan._row`` of it,
#: the call id, the call it named).
_ROWS: dict[tuple[tuple[str, ...], type, tuple[str, ...]],
            dict[int, tuple[Entry, tuple[Any, ...], str | None, Any]]] = {}
#: ``read_supersede_key`` per call block object (kept alive with its answer): the per-turn
#: passes ask it of the same tail calls turn after turn, and blocks are never changed in place.
_SUPERSEDE_KEYS: dict[int, tuple[Mapping[str, Any], str | None]] = {}


def _supersede_key(call: Mapping[str, Any]) -> str | None:
    hit = _SUPERSEDE_KEYS.get(id(call))
    if hit is not None and hit[0] is call:
        return hit[1]
    key = read_supersede_key(call)
    if len(_SUPERSEDE_KEYS) > 100_000:
        _SUPERSEDE_KEYS.clear()
    _SUPERSEDE_KEYS[id(call)] = (call, key)
    return key


def read_supersede_key(call: Mapping[str, Any]) -> str | None:
    """The key a read is superseded by: the bare path, or ``path\0selector``; None when exempt."""
    if call.get("name") != "read":
        return None
    args = call.get("arguments")
    path = args.get("path") if isinstance(args, Mapping) else None
    if not isinstance(path, str) or not path or "://" in path:
        return None
    base, selector = split_read_selector(path)
    return base if selector is None else f"{base}\0{selector}"


def _tool_result(entry: Entry) -> MessageEntry | None:
    return entry if isinstance(entry, MessageEntry) and entry.role == "toolResult" else None


#: Per entry object: (the tool-result entry, already pruned?, flagged useless?), or None for
#: any other entry; the per-turn passes read the same tail entries turn after turn, and
#: entries never change in place.
_RESULT_FACTS: dict[int, tuple[Entry, tuple[MessageEntry, bool, bool] | None]] = {}


def _result_facts(entry: Entry) -> tuple[MessageEntry, bool, bool] | None:
    hit = _RESULT_FACTS.get(id(entry))
    if hit is not None and hit[0] is entry:
        return hit[1]
    result = _tool_result(entry)
    facts = None if result is None else (
        result, _already_pruned(result.message), result.message.get("useless") is True)
    if len(_RESULT_FACTS) > 100_000:
        _RESULT_FACTS.clear()
    _RESULT_FACTS[id(entry)] = (entry, facts)
    return facts


#: Whether a result message is already pruned, per message object: the per-turn passes ask it
#: of the same tail results turn after turn (messages in entries are never changed in place;
#: pruning swaps in a new message).
_PRUNED: dict[int, tuple[Mapping[str, Any], bool]] = {}


def _already_pruned(message: Mapping[str, Any]) -> bool:
    hit = _PRUNED.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    pruned = message.get("prunedAt") is not None or is_pruned(message)
    if len(_PRUNED) > 100_000:
        _PRUNED.clear()
    _PRUNED[id(message)] = (message, pruned)
    return pruned


def _boundary(path: Sequence[Entry], index: BranchIndex | None = None) -> int:
    """Index of the latest compaction's first kept entry: nothing before it reaches the LLM."""
    if index is not None:
        return index.boundary()
    for i in range(len(path) - 1, -1, -1):
        entry = path[i]
        if isinstance(entry, CompactionEntry):
            for j, candidate in enumerate(path):
                if candidate.id == entry.first_kept_entry_id:
                    return j
            return i + 1
    return 0


class _Scan:
    """Per-branch facts both passes share: calls by id, token counts, supersede and useless sets."""

    def __init__(self, path: Sequence[Entry], settings: PruneSettings,
                 protected_paths: Collection[str],
                 estimator: TokenEstimator, supersede: bool, useless: bool, start: int = 0,
                 index: BranchIndex | None = None) -> None:
        # Only entries from ``start`` (the compaction boundary, or later when only the tail can
        # be rewritten) on are candidates, and whether one is superseded depends only on later
        # entries, so the scans begin there: the per-turn cost follows the live context, not the
        # whole session. A call is looked up by id, the newest with that id on the branch (from
        # the branch index when there is one).
        self.path = path
        self._start = start
        self._index = index
        self._suffix: list[int] | None = None
        self._messages: list[int] | None = None
        if index is not None:
            self.calls: Mapping[str, Mapping[str, Any]] = index.calls()
            self._start = 0
            #: Positions of the tool results from ``start`` on, oldest first.
            self.results: Sequence[int] = index.tool_results(start)
        else:
            self.calls = _calls_by_id(path[start:])
            self.results = [i for i in range(start, len(path)) if _tool_result(path[i]) is not None]
        self.estimator = estimator
        self._settings = settings
        self._protected_paths = protected_paths
        # Whether a result is protected depends on its message, its call and these two settings
        # only: remembered across the per-turn passes (per message object, its call checked).
        if len(_PROTECTED) > 64:
            _PROTECTED.clear()
        self._protected_memo = _PROTECTED.setdefault(
            (settings.protected_tools, type(protected_paths), tuple(protected_paths)), {})
        if len(_ROWS) > 64:
            _ROWS.clear()
        self._rows_memo = _ROWS.setdefault(
            (settings.protected_tools, type(protected_paths), tuple(protected_paths)), {})
        self.superseded: set[int] = set()
        self.useless: set[int] = set()
        #: ``_row`` of each result in ``results`` (None when neither scan ran).
        self.rows: list[tuple[Any, ...]] | None = None
        if supersede or useless:
            # One memoized row per result (see ``_row``): these scans run twice a turn over the
            # warm tail, and a 60,000-message replay spent ~10 % of its time in the per-result
            # helper calls they replace (2.2M ``call`` lookups). The memo's hit is checked
            # here, without a call per result.
            # (Only a scan that looks up calls on the whole branch, ``_start`` 0, reads the memo:
            # its call map never changes during the scan.)
            memo = self._rows_memo if self._start == 0 else {}
            calls = self.calls
            rows = self.rows = []
            for i in self.results:
                entry = path[i]
                hit = memo.get(id(entry))
                if hit is not None and hit[0] is entry and (
                        hit[2] is None or calls.get(hit[2]) is hit[3]):
                    rows.append(hit[1])
                else:
                    rows.append(self._row(entry))
        if supersede:
            seen: set[str] = set()
            for at in range(len(rows) - 1, -1, -1):
                row = rows[at]
                key = row[3]
                if key is None:
                    continue
                if key in seen or (row[4] is not None and row[4] in seen):
                    self.superseded.add(self.results[at])
                seen.add(key)
        if useless:
            for i, row in zip(self.results, rows):
                if not row[5] or i in self.superseded:
                    continue
                if _savings(self.tokens(row[0]), USELESS_NOTICE) > 0:
                    self.useless.add(i)

    def _row(self, entry: Entry) -> tuple[Any, ...]:
        """What the supersede and useless scans read of the tool result ``entry``:
        ``(result entry, call id, call, supersede key, its bare path when the key has a
        selector, useless candidate, already pruned)``, the call id None for an entry that is no
        tool result; the key is None when the result takes no part in the
        supersede scan (pruned already, no call, protected, or a call that is no plain read),
        and the useless flag is set only for a flagged result neither pruned, nor an error, nor
        protected. Remembered per entry object (entries never change in place) and checked
        against the call the id names now; looked up afresh when the scan may still widen its
        call lookup (``_start`` > 0: see :meth:`call`)."""
        memo = self._rows_memo
        hit = memo.get(id(entry))
        if hit is not None and hit[0] is entry and self._start == 0 and (
                hit[2] is None or self.calls.get(hit[2]) is hit[3]):
            return hit[1]  # (no call id: not a tool result, its row reads no call)
        facts = _result_facts(entry)
        if facts is None:
            row: tuple[Any, ...] = (entry, None, None, None, None, False, False)
            call = None
            call_id = None
        else:
            result, pruned, flagged = facts
            key = None
            call = self.call(result) if not pruned or flagged else None
            call_id = str(result.message.get("toolCallId"))
            if not pruned and call is not None and not self.protected(result):
                key = _supersede_key(call)
            useless = (flagged and not pruned and result.message.get("isError") is not True
                       and not self.protected(result))
            base = key.split("\0", 1)[0] if key is not None and "\0" in key else None
            row = (result, call_id, call, key, base, useless, pruned)
            call = self.calls.get(call_id)
        if len(memo) > 100_000:
            memo.clear()
        memo[id(entry)] = (entry, row, call_id, call)
        return row

    def call(self, entry: MessageEntry) -> Mapping[str, Any] | None:
        call_id = str(entry.message.get("toolCallId"))
        if call_id not in self.calls and self._start > 0:
            self.calls, self._start = (_calls_by_id(self.path),
                                       0)  # a call before the boundary: look everywhere
        return self.calls.get(call_id)

    def protected(self, entry: MessageEntry) -> bool:
        message, call = entry.message, self.call(entry)
        memo = self._protected_memo
        hit = memo.get(id(message))
        if hit is not None and hit[0] is message and hit[1] is call:
            return hit[2]
        protected = _is_protected(message, call, self._settings, self._protected_paths)
        if len(memo) > 100_000:
            memo.clear()
        memo[id(message)] = (message, call, protected)
        return protected

    def tokens(self, entry: Entry) -> int:
        return estimate_entry_tokens(entry, self.estimator)

    def message_totals(self) -> list[int] | None:
        """The branch's running message totals from the index (None without one): message
        tokens before position ``i`` at ``[i]``, each entry's as :meth:`tokens` counts it. The
        index's own list: a scan reads an unchanged branch, so it is looked up once, not once
        per result."""
        if self._messages is None and self._index is not None:
            self._messages = self._index.totals(self.estimator).messages
        return self._messages

    def suffix(self, i: int) -> int:
        """Tokens of the message entries strictly after index ``i`` (what a rewrite re-caches);
        ``i`` at or after the scan's start."""
        messages = self.message_totals()
        if messages is not None:
            return messages[-1] - messages[i + 1]
        if self._suffix is None:
            suffix = [0] * len(self.path)
            running = 0
            for j in range(len(self.path) - 1, self._start - 1, -1):
                suffix[j] = running
                if isinstance(self.path[j], MessageEntry):
                    running += self.tokens(self.path[j])
            self._suffix = suffix
        return self._suffix[i]


def _blank(message: Mapping[str, Any], notice: str, now_ms: int) -> dict[str, Any]:
    return {**message, "content": [{"type": "text", "text": notice}], "prunedAt": now_ms}


def _now_ms(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else now_ms


def prune_tool_outputs(path: Sequence[Entry], settings: PruneSettings = _DEFAULT_PRUNE, *,
                       protected_paths: Collection[str] = (),
                       estimator: TokenEstimator = DEFAULT_ESTIMATOR,
                       now_ms: int | None = None) -> PruneResult:
    """The threshold prune (see the module docstring); returns replacements, does not apply them.

    Newest first: a result is an age candidate once the tool output *after* it reaches
    ``protectTokens``; superseded and useless results are candidates at any age. Results before
    the compaction boundary, already pruned, or (with ``cacheWarmSuffixTokens``) followed by more
    than that many message tokens are left alone. Nothing is applied unless all candidates
    together save ``minimumSavings``.
    """
    if not settings.enabled:
        return PruneResult({}, 0, {})
    index = index_of(path)
    boundary = _boundary(path, index)
    warm = settings.cache_warm_suffix_tokens
    start = boundary
    if index is not None and warm is not None:
        # Results followed by more than ``warm`` message tokens are skipped, and they are the
        # oldest (the suffix only grows going back), so the newest-first walk meets them last:
        # none of them changes a candidate. Whether a result is superseded depends on later
        # results only, so the scan starts at the warm tail too.
        start = max(boundary, index.first_within_message_suffix(estimator, warm))
    scan = _Scan(path, settings, protected_paths, estimator, settings.supersede_reads,
                 settings.prune_useless, start, index)
    newer_output = 0
    chosen: list[tuple[MessageEntry, str, str]] = []
    saved = 0
    # Newest first, down to the boundary: results before it are never candidates. The scan's
    # rows and the index's totals answer what each result is and costs, without a call per
    # result (this loop ran 700,000 times in a 60,000-message replay).
    results, rows, messages = scan.results, scan.rows, scan.message_totals()
    for at in range(len(results) - 1, -1, -1):
        i = results[at]
        if rows is not None:
            row = rows[at]
            if row[1] is None:
                continue
            entry, pruned = row[0], row[6]
        else:
            facts = _result_facts(path[i])
            if facts is None:
                continue
            entry, pruned = facts[0], facts[1]
        if messages is not None:
            tokens = messages[i + 1] - messages[i]
            warm_suffix = warm is not None and messages[-1] - messages[i + 1] > warm
        else:
            tokens = scan.tokens(entry)
            warm_suffix = warm is not None and scan.suffix(i) > warm
        skip = pruned or warm_suffix
        if not skip:
            if i in scan.superseded:
                chosen.append((entry, SUPERSEDED_NOTICE, "superseded"))
                saved += _savings(tokens, SUPERSEDED_NOTICE)
            elif i in scan.useless:
                chosen.append((entry, USELESS_NOTICE, "useless"))
                saved += _savings(tokens, USELESS_NOTICE)
            elif newer_output >= settings.protect_tokens and not scan.protected(entry) \
                    and tokens >= settings.min_prune_tokens:
                notice = truncated_notice(tokens)
                chosen.append((entry, notice, "age"))
                saved += _savings(tokens, notice)
        newer_output += tokens
    if not chosen or saved < settings.minimum_savings:
        return PruneResult({}, 0, {})
    stamp = _now_ms(now_ms)
    replacements = {e.id: _blank(e.message, notice, stamp) for e, notice, _ in chosen}
    return PruneResult(replacements, saved, {e.id: reason for e, _, reason in chosen})


def prune_superseded_tool_results(path: Sequence[Entry], settings: PruneSettings = _DEFAULT_PRUNE,
                                  *, idle_seconds: float = 0.0, drop_useless: bool = True,
                                  protected_paths: Collection[str] = (),
                                  estimator: TokenEstimator = DEFAULT_ESTIMATOR,
                                  now_ms: int | None = None) -> PruneResult:
    """Per-turn pass: superseded reads and useless results, cache-aware.

    A candidate at or after the compaction boundary is blanked only when the message tokens after
    it are at most ``cacheSuffixTokens`` (the cache prefix it invalidates is short), or, once the
    session has idled for ``cacheIdleSeconds`` (the provider cache has expired anyway), always.
    No minimum saving applies.
    """
    if not settings.enabled:
        return PruneResult({}, 0, {})
    index = index_of(path)
    boundary = _boundary(path, index)
    expired = idle_seconds >= settings.cache_idle_seconds
    start = boundary
    if index is not None and not expired:
        # Only the tail whose rewrite re-caches at most cacheSuffixTokens can change, and whether
        # an entry there is superseded depends on later entries only: scan just that tail.
        start = max(boundary, index.first_within_message_suffix(estimator,
                                                                settings.cache_suffix_tokens))
    scan = _Scan(path, settings, protected_paths, estimator, settings.supersede_reads, drop_useless,
                 start, index)
    candidates = sorted(scan.superseded | scan.useless)
    if not candidates:
        return PruneResult({}, 0, {})
    stamp = _now_ms(now_ms)
    replacements: dict[str, Mapping[str, Any]] = {}
    reasons: dict[str, str] = {}
    saved = 0
    for i in candidates:
        if i < boundary or (not expired and scan.suffix(i) > settings.cache_suffix_tokens):
            continue
        entry = path[i]
        assert isinstance(entry, MessageEntry)
        notice, reason = ((SUPERSEDED_NOTICE, "superseded") if i in scan.superseded
                          else (USELESS_NOTICE, "useless"))
        replacements[entry.id] = _blank(entry.message, notice, stamp)
        reasons[entry.id] = reason
        saved += _savings(scan.tokens(entry), notice)
    return PruneResult(replacements, saved, reasons)
