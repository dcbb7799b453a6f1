"""Replay a recorded session turn by turn through the compaction pipeline.

Why a library entry point: "what would production send after this session?" has one answer,
and the eval harness, the ``python -m snapcompact compact`` command and an agent replaying an old
log must all get it from the same code. Replay appends user and tool messages to a fresh
in-memory session and hands every assistant message to :meth:`CompactionPipeline.after_turn`,
so pruning and compaction fire exactly where production's threshold puts them, round after
round (frames carried forward and evicted, the text tail refolded). The context of the next turn
is then ``pipeline.llm_messages()``.

Replay strategies are production strategies plus two baselines an evaluation needs:

* ``full``: no compaction at all (``compaction.enabled = false``): the whole history as text;
* ``truncate``: production's cut points, with the discarded part dropped instead of summarized.
  It runs through the pipeline's own extension hook (``before_compact`` returning an empty
  summary), so cut points, pruning and the kept tail are production's;
* ``snapcompact``, ``context-full``, ``handoff``, ``shake``: the pipeline's strategies as
  configured. A shake round elides tool results and large blocks in place; the messages it
  rewrote count as discarded in that round (their content is now a placeholder). Shake falls back
  to a context-full summary when eliding is not enough, so it needs the summarizer too.

Every source message gets the round that discarded it (0 = still in the context), so a question
about it can be scored by where its evidence ended up. Ids and timestamps come from a counter
and a fixed clock: the same session and settings give byte-identical contexts, which is what
lets a response cache recognize a question it has already paid for.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from snapcompact.archive import get_preserved_archive
from snapcompact.compaction.entries import (
    CompactionEntry,
    CustomMessageEntry,
    MessageEntry,
)
from snapcompact.compaction.hooks import BeforeCompactEvent, HookCompaction, Hooks
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.outcome import CompactionOutcome
from snapcompact.compaction.pipeline import CompactionPipeline
from snapcompact.compaction.session import Session
from snapcompact.compaction.session_check import check_message
from snapcompact.compaction.session_formats import read_session_file
from snapcompact.compaction.settings import Settings
from snapcompact.compaction.summarize import CompleteFn

__all__ = [
    "REPLAY_STRATEGIES",
    "Replay",
    "ReplayRound",
    "load_session_messages",
    "replay_session",
    "replay_settings",
    "replay_store",
    "tallied",
    "truncating_hooks",
]

#: What a replay can do with the history that no longer fits.
REPLAY_STRATEGIES: tuple[str, ...] = ("full", "truncate", "snapcompact", "context-full", "handoff",
                                      "shake")
#: Strategies that call an LLM (the injected ``complete`` function) when they compact.
LLM_STRATEGIES: tuple[str, ...] = ("context-full", "handoff", "shake")
#: The replay clock's start (2026-01-01T00:00:00Z) and step: fixed, so contexts are reproducible.
_EPOCH_S = 1_767_225_600.0
_STEP_S = 1.0


@dataclass(frozen=True)
class ReplayRound:
    """One compaction (or handoff) that fired during the replay."""

    index: int  # 1-based
    reason: str
    strategy: str
    after_message: int  # index of the source message whose turn triggered it
    tokens_before: int | None
    tokens_after: int | None
    frames: int  # frames in the archive after this round (snapcompact), else 0
    usage: Mapping[str, Any] | None  # the summarizer's usage (LLM strategies)


@dataclass
class Replay:
    """The pipeline after the whole session, and where each source message ended up."""

    pipeline: CompactionPipeline
    strategy: str
    rounds: tuple[ReplayRound, ...]
    discarded_round: tuple[int, ...]  # per source message: 0 = in the context, k = round k
    warnings: tuple[str, ...] = ()
    llm_calls: int = 0  # calls of the completion function (summaries, handoff documents)
    llm_usage: Mapping[str, int] = field(default_factory=dict)  # their usage, summed by key

    @property
    def compactions(self) -> int:
        """How many compactions ran during the replay."""
        return len(self.rounds)

    def llm_messages(self) -> list[Any]:
        """The final context as wire messages for the LLM."""
        return self.pipeline.llm_messages()

    def archives(self) -> list[Any]:
        """The frame archive of every compaction on the live branch, oldest first (a
        compaction without one, e.g. an LLM summary, contributes nothing)."""

        out = []
        for entry in self.pipeline.session.get_branch():
            if isinstance(entry, CompactionEntry):
                archive = get_preserved_archive(entry.preserve_data)
                if archive is not None:
                    out.append(archive)
        return out

    def final_archive(self) -> Any | None:
        """The archive the next turn's summary carries (the latest compaction's), if any."""

        for entry in reversed(self.pipeline.session.get_branch()):
            if isinstance(entry, CompactionEntry):
                return get_preserved_archive(entry.preserve_data)
        return None

    def frames_seen(self) -> int:
        """Distinct frames that existed in any round's archive."""
        return len({f.data for archive in self.archives() for f in archive.frames})

    def frames_in_archive(self) -> int:
        """Distinct frames in the last archive (0 when none was made)."""
        archive = self.final_archive()
        return len({f.data for f in archive.frames}) if archive is not None else 0


def replay_settings(strategy: str, base: Settings, *, shape: str | None = None,
                    policy: str | None = None, frame_size: int | None = None) -> Settings:
    """``base`` adjusted for a replay strategy (and, for snapcompact, a shape/policy/size)."""
    if strategy not in REPLAY_STRATEGIES:
        raise ValueError(f"unknown replay strategy {strategy!r}; "
                         f"known: {', '.join(REPLAY_STRATEGIES)}")
    compaction = base.compaction
    if strategy == "full":
        compaction = replace(compaction, enabled=False)
    elif strategy == "truncate":
        compaction = replace(compaction, enabled=True, strategy="context-full")
    else:
        compaction = replace(compaction, enabled=True, strategy=strategy)
    sc = base.snapcompact
    if strategy == "snapcompact":
        sc = replace(sc, shape=shape if shape is not None else sc.shape,
                     policy=policy if policy is not None else sc.policy,
                     frame_size=frame_size if frame_size is not None else sc.frame_size)
    elif shape not in (None, "auto") or policy is not None or frame_size is not None:
        raise ValueError("shape, policy and frame size apply to snapcompact only, "
                         f"not {strategy!r}")
    return replace(base, compaction=compaction, snapcompact=sc)


def _truncate_hook(event: BeforeCompactEvent) -> HookCompaction:
    return HookCompaction(summary="", first_kept_entry_id=event.preparation.first_kept_entry_id,
                          tokens_before=event.preparation.tokens_before)


def truncating_hooks(hooks: Hooks | None) -> Hooks:
    """``hooks`` with the ``truncate`` baseline first: every compaction keeps production's cut
    and writes an empty summary (the discarded part is dropped)."""
    hooks = hooks or Hooks()
    return Hooks(before_compact=[_truncate_hook, *hooks.before_compact],
                 compacting=list(hooks.compacting), on_compact=list(hooks.on_compact),
                 before_tree=list(hooks.before_tree), on_tree=list(hooks.on_tree))


@dataclass
class CallTally:
    """Calls of a completion function and their usage, summed by key."""

    calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)


def tallied(complete: CompleteFn | None, tally: CallTally | None = None
            ) -> tuple[CompleteFn | None, CallTally]:
    """``complete`` wrapped to count its calls and sum the usage its replies report (into
    ``tally`` when given: a live handoff's ``chat(system_prompt, messages, **kwargs)`` is
    wrapped the same way and counted with the completion function's calls)."""
    tally = tally if tally is not None else CallTally()
    if complete is None:
        return None, tally
    inner = complete

    def counted(system_prompt: str, user_prompt: str, **kwargs: Any) -> Any:
        tally.calls += 1
        reply = inner(system_prompt, user_prompt, **kwargs)
        usage = (reply.get("usage") if isinstance(reply, Mapping)
                 else getattr(reply, "usage", None))
        for key, value in (usage or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                tally.usage[key] = tally.usage.get(key, 0) + int(value)
        return reply

    return counted, tally


def replay_store() -> Session:
    """A fresh in-memory session with counter ids and a fixed clock: the same session and
    settings give byte-identical contexts (what a response cache recognizes)."""
    counter = itertools.count(1)
    ticks = itertools.count()
    return Session(None, id_factory=lambda: f"e{next(counter):06d}",
                   clock=lambda: _EPOCH_S + _STEP_S * next(ticks), fsync=False)


def _usage_of(outcome: CompactionOutcome) -> Mapping[str, Any] | None:
    entry = outcome.entry
    return getattr(entry, "usage", None) if entry is not None else None


def _round_of(outcome: CompactionOutcome, number: int, after_message: int,
              strategy: str) -> ReplayRound:
    """The replay's round for a run that wrote an entry, handed off or shook."""
    frames = 0
    if outcome.entry is not None:
        archive = get_preserved_archive(outcome.entry.preserve_data)
        frames = len(archive.frames) if archive is not None else 0
    return ReplayRound(
        index=number, reason=outcome.reason,
        strategy="truncate" if strategy == "truncate" else (outcome.strategy or strategy),
        after_message=after_message, tokens_before=outcome.tokens_before,
        tokens_after=outcome.tokens_after, frames=frames, usage=_usage_of(outcome))


def replay_session(messages: Sequence[Mapping[str, Any]], model: ModelInfo, settings: Settings, *,
                   strategy: str, complete: CompleteFn | None = None,
                   hooks: Hooks | None = None) -> Replay:
    """Feed ``messages`` (agent JSON, oldest first) through a fresh pipeline.

    ``settings`` should come from :func:`replay_settings`. LLM strategies need ``complete``;
    without it they are refused here (not silently replaced by another strategy).
    """
    if strategy not in REPLAY_STRATEGIES:
        raise ValueError(f"unknown replay strategy {strategy!r}; "
                         f"known: {', '.join(REPLAY_STRATEGIES)}")
    if strategy in LLM_STRATEGIES and complete is None:
        raise ValueError(f"strategy {strategy!r} summarizes with an LLM: give a completion "
                         "function (a summarizer model)")
    complete, tally = tallied(complete)
    session = replay_store()
    hooks = truncating_hooks(hooks) if strategy == "truncate" else (hooks or Hooks())
    pipeline = CompactionPipeline(session, model, settings=settings, complete=complete, hooks=hooks,
                                  clock=lambda: _EPOCH_S)
    entry_of: list[tuple[int, str] | None] = []  # per source message: (session number, entry id)
    sessions = [session]
    session_number = {id(session): 0}
    # Source messages with an entry and no round yet: only these can be discarded by a round, so
    # a round costs what is still in the context, not the whole session.
    pending: list[int] = []
    rounds: list[ReplayRound] = []
    discarded = [0] * len(messages)
    notes: list[str] = []

    def settle(round_index: int, shaken: frozenset[str] = frozenset()) -> None:
        live = pipeline.session
        in_context = set(live.branch_index.context_entry_ids()) - shaken
        current = session_number[id(live)]
        still: list[int] = []
        for i in pending:
            where = entry_of[i]
            assert where is not None
            number, entry_id = where
            if number != current or entry_id not in in_context:
                discarded[i] = round_index
            else:
                still.append(i)
        pending[:] = still

    for index, raw in enumerate(messages):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
            raise ValueError(f"message {index}: must be an object with a string 'role'")
        message = dict(raw)
        live = pipeline.session
        before = len(live.entries)
        if message["role"] == "assistant":
            outcome = pipeline.after_turn(message)
        else:
            live.append_message(message)
            outcome = None
        added = [e for e in live.entries[before:]
                 if isinstance(e, (MessageEntry, CustomMessageEntry))]
        entry_of.append((session_number[id(live)], added[0].id) if added else None)
        if added:
            pending.append(index)
        if outcome is None:
            continue
        notes.extend(outcome.warnings)
        if outcome.error:
            notes.append(f"message {index}: {outcome.error}")
        if outcome.handoff_session is not None:
            session_number[id(outcome.handoff_session)] = len(sessions)
            sessions.append(outcome.handoff_session)
        shaken = (frozenset(outcome.shaken.replacements) if outcome.shaken is not None
                  else frozenset())
        if outcome.entry is None and outcome.handoff_session is None and not shaken:
            continue
        rounds.append(_round_of(outcome, len(rounds) + 1, index, strategy))
        settle(len(rounds), shaken)
    return Replay(pipeline=pipeline, strategy=strategy, rounds=tuple(rounds),
                  discarded_round=tuple(discarded), warnings=tuple(dict.fromkeys(notes)),
                  llm_calls=tally.calls, llm_usage=dict(tally.usage))


def load_session_messages(path: str | Path) -> list[dict[str, Any]]:
    """The messages of a session file, oldest first.

    Accepts a JSONL session in any format the agent reads (pi v1-v3, oh-my-pi/GJC, Claude Code:
    :func:`~snapcompact.compaction.session_formats.read_session_file`, whose repairs of bad lines
    are issued as warnings naming the line; the active branch's message and custom-message
    entries; earlier compactions are not replayed, the replay decides its own) or a JSON list of
    agent messages (what ``snapcompact serialize`` reads). Every message is checked before it is
    returned (:func:`~snapcompact.compaction.session_check.check_message`): a bad one is a
    ``ValueError`` naming the file and its line (tree) or entry (list).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"session file {p} does not exist")
    raw = p.read_bytes().removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
    if raw.lstrip().startswith(b"["):
        try:
            data = json.loads(raw)
        except RecursionError:
            raise ValueError(f"session file {p} is nested too deeply to read") from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, huge integers
            raise ValueError(f"session file {p} is not valid JSON: {exc}") from None
        if not isinstance(data, list) or not data:
            raise ValueError(f"session file {p} holds no messages (an empty list)")
        for i, message in enumerate(data):
            check_message(message, f"{p}: entry {i}")
        return [dict(m) for m in data]
    loaded = read_session_file(p)
    for note in loaded.warnings:
        warnings.warn(f"{p}: {note}", stacklevel=2)
    session = loaded.session
    out: list[dict[str, Any]] = []
    for entry in session.get_branch():
        if isinstance(entry, MessageEntry):
            check_message(entry.message, f"{p}: line {session.source_lines.get(entry.id, '?')}")
            out.append(dict(entry.message))
        elif isinstance(entry, CustomMessageEntry):
            out.append({"role": "custom", "customType": entry.custom_type, "content": entry.content,
                        "display": entry.display})
    if not out:
        raise ValueError(f"session file {p} has no messages on its active branch")
    return out
