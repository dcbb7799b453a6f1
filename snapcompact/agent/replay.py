"""Replay a recorded session through the coding agent's maintenance, check point by check point.

Why: "what would production send after this session?" must be answered by the same code the
harness, the ``compact`` command and a user replaying an old log run. A recorded session is a
list of agent messages; a live agent meets them as prompts, tool loops and finished turns, and
maintenance runs at three places (:class:`~.maintenance.SessionMaintenance`):

* a user message is a new prompt: the pre-prompt check runs first, counting the prompt;
* an assistant message that follows tool results continues a run: the mid-turn check runs
  before it (the provider call it answers is about to go out);
* an assistant message without tool calls ends the run: it is appended and the post-turn check
  runs (stale and threshold prunes, then maintenance over the threshold).

Every other message is appended as it comes. ``final_prompt`` is the next user message after
the session (the harness's question): the pre-prompt check runs for it too, and it is not
appended. Recorded ``usage`` figures are ignored (they belong to the uncompacted original).

Strategies: ``full`` (maintenance off: the whole history), ``truncate`` (production's cut
points with the discarded part dropped, through the before-compact hook), ``snapcompact``
(the agent's default method order, where snapcompact is the first usable method for a vision
model without server compaction), ``context-full``/``handoff``/``shake`` (the method list the
agent migrates that legacy strategy to). ``settings.compaction.methodOrder``, when set, wins
over the strategy's list for the snapcompact arm.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from snapcompact.agent.maintenance import SessionMaintenance
from snapcompact.agent.methods import DEFAULT_METHOD_ORDER
from snapcompact.agent.rounds import MaintenanceRound
from snapcompact.agent.turn_requests import TurnLedger
from snapcompact.archive import get_preserved_archive
from snapcompact.billing import TurnRequest
from snapcompact.compaction import (
    REPLAY_STRATEGIES,
    CompactionEntry,
    CustomMessageEntry,
    Hooks,
    MessageEntry,
    ModelInfo,
    Replay,
    ReplayRound,
    Settings,
    asked_shape,
    legacy_method_order,
    replay_settings,
    replay_store,
    tallied,
    truncating_hooks,
)

__all__ = ["AGENT_STRATEGIES", "AgentReplay", "agent_settings", "replay_agent_session"]

#: What a replay can do with the history that no longer fits.
AGENT_STRATEGIES: tuple[str, ...] = REPLAY_STRATEGIES
#: The replay clock's start (2026-01-01T00:00:00Z): contexts are reproducible.
_EPOCH_S = 1_767_225_600.0


@dataclass
class AgentReplay(Replay):
    """A :class:`~snapcompact.compaction.Replay` with what the maintenance did, pass by pass."""

    maintenance: SessionMaintenance | None = None
    passes: tuple[MaintenanceRound, ...] = field(default_factory=tuple)
    #: the requests the agent sent for its replies after its first compaction (only when the
    #: replay was asked to count them: ``turns_for``), for ``snapcompact.billing.bill_turns``
    turn_requests: tuple[TurnRequest, ...] = ()

    @property
    def offline_divergence(self) -> bool:
        """True when some pass skipped a method production would have run (no LLM given)."""
        return any(p.offline_divergence for p in self.passes)

    @property
    def dead_ends(self) -> int:
        """Passes that committed but left the context above the recovery band."""
        return sum(1 for p in self.passes if p.dead_end)

    @property
    def shape_asked(self) -> str:
        """The shape the snapcompact passes ask for, resolved as they resolve it (``auto``: the
        shape production picks for the model); "" when no maintenance ran."""
        if self.maintenance is None:
            return ""
        view = self.maintenance.view
        model, sc = view.model, view.settings.snapcompact
        return asked_shape(model, sc).name

    def methods_used(self) -> dict[str, int]:
        """Accepted method -> passes (``none`` for passes where every method failed)."""
        out: dict[str, int] = {}
        for p in self.passes:
            key = p.method or "none"
            out[key] = out.get(key, 0) + 1
        return out


def agent_settings(strategy: str, base: Settings, *, shape: str | None = None,
                   policy: str | None = None, frame_size: int | None = None) -> Settings:
    """``base`` set up for a replay strategy (and, for snapcompact, a shape/policy/size): the
    seed replay's settings (:func:`snapcompact.compaction.replay_settings`) with the method
    list the agent runs for that strategy."""
    settings = replay_settings(strategy, base, shape=shape, policy=policy,
                               frame_size=frame_size)
    cs = settings.compaction
    if strategy == "truncate":
        order: tuple[str, ...] | None = ("soft",)  # the hook answers; the method is nominal
    elif strategy == "snapcompact":
        order = cs.method_order if cs.method_order is not None else DEFAULT_METHOD_ORDER
    elif strategy == "full":
        order = cs.method_order
    else:
        order = legacy_method_order(strategy, cs.remote_enabled)
    return replace(settings, compaction=replace(cs, method_order=order))


def _has_tool_calls(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "toolCall" for b in content)


class _RoundLedger:
    """The replay's account of its rounds: each maintenance pass that ran a method becomes a
    :class:`ReplayRound`, and each source message is marked with the round that discarded it.

    Only messages not yet discarded (``pending``) are looked at after a round: a round's work
    follows the live context, not the whole session.
    """

    def __init__(self, maint: SessionMaintenance, strategy: str, count: int) -> None:
        self.maint = maint
        self.strategy = strategy
        self.entry_of: list[str | None] = []  # source message -> its entry (None: not stored)
        self.discarded = [0] * count  # source message -> the round that discarded it (0: none)
        self.rounds: list[ReplayRound] = []
        self.pending: list[int] = []  # source messages still in the context
        self._settled_at = maint.session.branch_index.rebuilds
        self._seen_passes = 0

    def stored(self, index: int, role: str, first_new: int) -> None:
        """Remember the entry source message ``index`` became (entries from ``first_new`` on
        were added for it)."""
        added = [e for e in self.maint.session.entries[first_new:]
                 if isinstance(e, (MessageEntry, CustomMessageEntry))
                 and (not isinstance(e, MessageEntry) or e.message.get("role") == role)]
        self.entry_of.append(added[0].id if added else None)
        if added:
            self.pending.append(index)

    def record(self, index: int) -> None:
        """The passes run since the last call, as rounds after source message ``index``."""
        for p in self.maint.rounds[self._seen_passes:]:
            if p.method is None:
                continue
            archive = None
            if p.entry_id is not None:
                entry = self.maint.session.get(p.entry_id)
                if isinstance(entry, CompactionEntry):
                    archive = get_preserved_archive(entry.preserve_data)
            self.rounds.append(ReplayRound(
                index=len(self.rounds) + 1, reason=p.reason,
                strategy="truncate" if self.strategy == "truncate" else p.method,
                after_message=index, tokens_before=p.tokens_before, tokens_after=p.tokens_after,
                frames=len(archive.frames) if archive is not None else 0, usage=None))
            self._settle()
        self._seen_passes = len(self.maint.rounds)

    def _settle(self) -> None:
        """Mark the pending messages the latest round took out of the context."""
        index = self.maint.session.branch_index
        index.sync()
        if index.rebuilds == self._settled_at:
            self._settle_grown(index.context_start(), index.position)
            return
        self._settled_at = index.rebuilds
        in_context = set(index.context_entry_ids())
        still: list[int] = []
        for i in self.pending:
            if self.entry_of[i] not in in_context:
                self.discarded[i] = len(self.rounds)
            else:
                still.append(i)
        self.pending[:] = still

    def _settle_grown(self, start: int, position: Mapping[str, int]) -> None:
        """The branch only grew since the last look: pending messages sit on it in append
        order, and the context holds exactly the message entries from ``start`` on, so the
        discarded ones are a prefix of ``pending``."""
        drop = 0
        for i in self.pending:
            at = position.get(self.entry_of[i])  # type: ignore[arg-type]
            if at is not None and at >= start:
                break
            self.discarded[i] = len(self.rounds)
            drop += 1
        del self.pending[:drop]


@dataclass
class _AgentLoop:
    """Where the replayed agent is in its loop: inside a tool loop (and the assistant message
    that opened it) or between runs."""

    in_tool_loop: bool = False
    last_assistant: Mapping[str, Any] | None = None
    #: told when the agent sends its request for an assistant message (after the check)
    on_request: Callable[[Mapping[str, Any]], None] | None = None

    def feed(self, maint: SessionMaintenance, message: dict[str, Any],
             record: Callable[[], None]) -> None:
        """Hand one message to the check point it meets (``record`` after a check that may
        have run maintenance before the message is stored)."""
        role = message["role"]
        if role == "user":
            maint.before_prompt([message])
            record()
            maint.append(message)
            self.in_tool_loop = False
        elif role == "assistant":
            if self.in_tool_loop:
                maint.mid_turn(self.last_assistant)
                record()
            if self.on_request is not None:
                self.on_request(message)
            if _has_tool_calls(message):
                maint.append(message)
                self.in_tool_loop = True
                self.last_assistant = message
            else:
                maint.end_turn(message)
                self.in_tool_loop = False
                self.last_assistant = None
        else:
            maint.append(message)


def replay_agent_session(messages: Sequence[Mapping[str, Any]], model: ModelInfo,
                         settings: Settings, *, strategy: str, complete: Any = None,
                         hooks: Hooks | None = None,
                         system_prompt: str | Sequence[str] | None = None,
                         tools: Sequence[Mapping[str, Any]] | None = None,
                         final_prompt: Mapping[str, Any] | None = None,
                         chat: Any = None, turns_for: str | None = None,
                         image_detail: str | None = None) -> AgentReplay:
    """Feed ``messages`` (agent JSON, oldest first) through a fresh agent maintenance.

    ``settings`` should come from :func:`agent_settings`. Methods that need an LLM run only
    with ``complete`` (a summarizer); without it they are recorded as ``offline`` and the next
    method runs (the rounds and :attr:`AgentReplay.offline_divergence` say so). With ``chat``
    and ``system_prompt`` a handoff is asked of the live conversation, as the agent asks it
    (:func:`snapcompact.compaction.generate_handoff_live`); without them, of a transcript.
    ``turns_for`` (a model id): count the request of every reply after the first compaction
    with that model line's counter (:class:`~.turn_requests.TurnLedger`; ``image_detail``
    replaces the frames' detail there, as the caller's request does).
    """
    if strategy not in AGENT_STRATEGIES:
        raise ValueError(f"unknown replay strategy {strategy!r}; known: "
                         f"{', '.join(AGENT_STRATEGIES)}")
    complete, tally = tallied(complete)
    chat, _ = tallied(chat, tally)  # a live handoff is a summary call too: count its usage
    hooks = truncating_hooks(hooks) if strategy == "truncate" else (hooks or Hooks())
    maint = SessionMaintenance(replay_store(), model, settings=settings, complete=complete,
                               hooks=hooks, system_prompt=system_prompt, tools=tools,
                               chat=chat, clock=lambda: _EPOCH_S, use_recorded_usage=False)
    ledger = _RoundLedger(maint, strategy, len(messages))
    loop = _AgentLoop()
    turns = (TurnLedger(maint, turns_for, api=model.api, provider=model.provider,
                        system_prompt=system_prompt, tools=tools, image_detail=image_detail)
             if turns_for is not None else None)
    if turns is not None:
        loop.on_request = turns.request
    for index, raw in enumerate(messages):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
            raise ValueError(f"message {index}: must be an object with a string 'role'")
        message = dict(raw)
        maint.view.message_index = index
        first_new = len(maint.session.entries)
        loop.feed(maint, message, partial(ledger.record, index))
        if turns is not None:
            turns.stored(message)
        ledger.stored(index, message["role"], first_new)
        ledger.record(index)
    if final_prompt is not None:
        maint.view.message_index = len(messages)
        maint.before_prompt([dict(final_prompt)])
        ledger.record(len(messages))
    notes = list(dict.fromkeys(maint.notices))
    return AgentReplay(pipeline=maint.pipeline, strategy=strategy, rounds=tuple(ledger.rounds),
                       discarded_round=tuple(ledger.discarded), warnings=tuple(notes),
                       llm_calls=tally.calls, llm_usage=dict(tally.usage), maintenance=maint,
                       passes=tuple(maint.rounds),
                       turn_requests=tuple(turns.turns) if turns is not None else ())
