"""Grow a recorded session step by step the way ``upstream-agent run --steps K`` grows it.

Why: parity with the real coding agent can only be checked on the protocol the oracle runs.
The oracle (the shared ``upstream-agent`` tool driving ``omp`` 18.3.4) does not replay a
session message by message; it resumes the agent once per step: step 1 writes the messages
before the (K+1)-th user message into omp's session file and resumes with that message's text
as the prompt; each later step appends the original messages after the previous prompt up to
the next K-th user message and resumes with that one; a last step appends the rest and asks
the final question. Each resume runs the pre-prompt check (the only place a compaction can
happen: the context plus the prompt over the threshold), sends the prompt, records the
provider's canned reply ``"ok"`` as an extra assistant turn, and runs the post-turn check.

:func:`replay_like_upstream_steps` mirrors that protocol over
:class:`~.maintenance.SessionMaintenance` and reports, per step, what the oracle's summary
reports: compactions so far, the last compaction's method, the frames the request carries,
the request's text characters and the archive's totals. ``tests/agent/test_agent_parity.py``
compares the two on recorded goldens. Canned replies fall back the way the oracle does:
an LLM-summary method (``soft``) summarizes to ``"ok"``.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snapcompact.agent.maintenance import SessionMaintenance
from snapcompact.agent.rounds import MaintenanceRound
from snapcompact.agent.system_prompt import AGENT_PROMPT, AgentPrompt
from snapcompact.archive import get_preserved_archive
from snapcompact.compaction import (
    CompactionEntry,
    MessageEntry,
    ModelInfo,
    Session,
    Settings,
    TokenEstimator,
    claude_stand_in,
    inline_request,
)

__all__ = [
    "CANNED_REPLY",
    "StepPlan",
    "StepReport",
    "StepwiseReplay",
    "plan_upstream_steps",
    "replay_like_upstream_steps",
    "request_text_chars",
]

#: What the oracle's capture server answers to every request (prompts and summaries alike).
CANNED_REPLY = "ok"
#: Input tokens the capture server reports for every reply (its usage is otherwise zero).
CANNED_USAGE_INPUT = 100
#: Where the oracle's converted messages start: 2025-11-01T12:00:00Z, one second apart.
_SESSION_T0_MS = 1_761_998_400_000
#: The replay's wall clock for the agent's own entries (prompt, reply, compactions): later
#: than any converted message, as the oracle's wall clock is.
_WALL_T0_S = 1_780_000_000.0


@dataclass(frozen=True)
class StepPlan:
    """One resume: the source messages appended before it, the prompt, user turns so far."""

    start: int  # first source message appended (inclusive)
    end: int  # last source message appended (exclusive)
    prompt: str
    turns: int


@dataclass(frozen=True)
class StepReport:
    """What one resume did and what its request carried (the oracle's summary row)."""

    step: int
    turns: int
    prompt: str
    compactions: int  # compaction entries on the branch after the step
    new_compactions: int
    method: str | None  # method of the latest compaction (None: none yet)
    rounds: tuple[MaintenanceRound, ...]  # the maintenance passes this step ran
    frames: tuple[tuple[int, int, int], ...]  # (width, height, PNG bytes) of the request
    pngs: tuple[bytes, ...]  # the request's frames, oldest first
    text_chars: int  # text characters of the request's messages (the oracle's count)
    messages: int  # wire messages in the request
    adjacent_assistants: int  # places where an assistant message follows an assistant message
    archive: Mapping[str, Any] | None  # totals of the latest compaction's snapcompact archive
    first_kept_source_index: int | None  # source message the latest compaction keeps from
    tokens_after: int | None = None  # the maintenance's estimate after the step
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, the keys of a golden step."""
        return {
            "step": self.step, "turns": self.turns, "compactions": self.compactions,
            "new_compactions": self.new_compactions, "method": self.method,
            "frames": [list(f) for f in self.frames], "text_chars": self.text_chars,
            "messages": self.messages, "adjacent_assistants": self.adjacent_assistants,
            "archive": dict(self.archive) if self.archive else None,
            "first_kept_source_index": self.first_kept_source_index,
            "tokens_after": self.tokens_after,
            "rounds": [r.to_json() for r in self.rounds],
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class StepwiseReplay:
    """Every step's report and the maintenance object (its session, rounds and notices)."""

    steps: tuple[StepReport, ...]
    maintenance: SessionMaintenance


def _prompt_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or ()
                     if isinstance(b, Mapping) and b.get("type") == "text")


def plan_upstream_steps(messages: Sequence[Mapping[str, Any]], steps: int,
                        question: str = "Continue.") -> list[StepPlan]:
    """The oracle's plan (its ``session_io.plan``): a resume at every ``steps``-th user message
    after the first ``steps`` (that message is the prompt and is not appended), then one with
    ``question`` after the rest."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    cuts = [users[j] for j in range(steps, len(users), steps)]
    plan: list[StepPlan] = []
    start = 0
    for j, cut in enumerate(cuts, 1):
        plan.append(StepPlan(start, cut, _prompt_text(messages[cut]), j * steps + 1))
        start = cut + 1
    plan.append(StepPlan(start, len(messages), question, len(users)))
    return plan


def _as_converted(message: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A source message as the oracle writes it into omp's session (``session_io.to_omp``):
    a timestamp when it has none, string content of assistant/tool messages as a text block,
    a stop reason on assistant messages."""
    out = dict(message)
    out.setdefault("timestamp", _SESSION_T0_MS + (index + 1) * 1000)
    role = out.get("role")
    if role in ("assistant", "toolResult") and isinstance(out.get("content"), str):
        out["content"] = [{"type": "text", "text": out["content"]}]
    if role == "assistant":
        has_call = any(isinstance(b, Mapping) and b.get("type") == "toolCall"
                       for b in out.get("content") or ())
        out.setdefault("stopReason", "toolUse" if has_call else "stop")
    elif role == "toolResult":
        out.setdefault("toolName", "read")
        out["isError"] = bool(out.get("isError", False))
    return out


def _png_size(raw: bytes) -> tuple[int, int]:
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return int(width), int(height)
    return 0, 0


def _walk(content: Any, frames: list[bytes]) -> int:
    """Text characters of one message's content, as the oracle counts a request: text, tool
    call arguments as JSON, thinking; images collected into ``frames`` (an image still held as a
    ``blob:sha256:`` reference has no bytes to collect and is skipped)."""
    if isinstance(content, str):
        return len(content)
    chars = 0
    for block in content or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            chars += len(str(block.get("text", "")))
        elif kind == "toolCall":
            chars += len(json.dumps(block.get("arguments"), ensure_ascii=False))
        elif kind == "thinking":
            chars += len(str(block.get("thinking", "")))
        elif kind == "image":
            data = block.get("data")
            if not isinstance(data, str):
                data = (block.get("source") or {}).get("data", "")
            if isinstance(data, str) and data.startswith("blob:sha256:"):
                continue  # a blob reference with no store: no image bytes (the agent drops it)
            frames.append(base64.b64decode(data))
    return chars


def request_text_chars(wire: Sequence[Mapping[str, Any]]) -> tuple[int, list[bytes]]:
    """(text characters, PNG frames) of wire messages, counted like the oracle's summary."""
    frames: list[bytes] = []
    chars = sum(_walk(m.get("content"), frames) for m in wire)
    return chars, frames


def _archive_totals(entry: CompactionEntry | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    archive = get_preserved_archive(entry.preserve_data)
    if archive is None:
        return None
    return {"totalChars": archive.total_chars, "truncatedChars": archive.truncated_chars,
            "textHead": len(archive.text_head or ""), "textTail": len(archive.text_tail or ""),
            "frames": len(archive.frames)}


def _oracle_maintenance(model: ModelInfo, settings: Settings, system_prompt: str | None,
                        estimator: TokenEstimator | None,
                        ) -> tuple[SessionMaintenance, Session, Callable[[], float]]:
    """The maintenance the oracle's omp runs, over a fresh in-memory session: a wall clock that
    ticks a second per reading, sequential entry ids, and a summarizer that answers the canned
    reply (as the oracle's capture server does)."""
    ticks = [0]

    def clock() -> float:
        ticks[0] += 1
        return _WALL_T0_S + ticks[0]

    counter = [0]

    def new_id() -> str:
        counter[0] += 1
        return f"e{counter[0]:06d}"

    def canned(system_prompt: str, user_prompt: str, **_: Any) -> str:
        return CANNED_REPLY

    session = Session(None, id_factory=new_id, clock=clock, fsync=False)
    maint = SessionMaintenance(session, model, settings=settings, complete=canned,
                               estimator=estimator, system_prompt=system_prompt, clock=clock,
                               use_recorded_usage=True)
    return maint, session, clock


@dataclass(frozen=True)
class _Request:
    """The request a resume's prompt went out in, counted like the oracle's summary."""

    wire: Sequence[Mapping[str, Any]]
    text_chars: int
    frames: list[bytes]


def _resume(maint: SessionMaintenance, step: StepPlan, model: ModelInfo,
            clock: Callable[[], float]) -> _Request:
    """One resume of the agent: the pre-prompt check, the prompt, the provider's canned reply
    (an extra assistant turn) and the post-turn check."""
    prompt_message = {"role": "user", "content": [{"type": "text", "text": step.prompt}],
                      "timestamp": int(clock() * 1000)}
    maint.view.message_index = step.end
    maint.before_prompt([prompt_message])
    maint.append(prompt_message)
    reply = {"role": "assistant", "content": [{"type": "text", "text": CANNED_REPLY}],
             "api": "anthropic-messages", "provider": model.provider, "model": model.id,
             "stopReason": "stop", "timestamp": int(clock() * 1000),
             "usage": {"input": CANNED_USAGE_INPUT, "output": 1, "cacheRead": 0,
                       "cacheWrite": 0, "totalTokens": CANNED_USAGE_INPUT + 1}}
    # The request is the one the prompt went out in: before the reply is appended, after
    # inline imaging when it is on (the agent transforms every request: sdk.ts:3932-3953).
    wire = inline_request(maint.pipeline).messages
    chars, frames = request_text_chars(wire)
    maint.end_turn(reply)
    return _Request(wire, chars, frames)


def _step_report(number: int, step: StepPlan, maint: SessionMaintenance, session: Session,
                 request: _Request, rounds: Sequence[MaintenanceRound],
                 source_of: Mapping[str, int], compactions_before: int) -> StepReport:
    """What the oracle's summary reports after one step (``rounds``: the step's passes)."""
    entries = [e for e in session.get_branch() if isinstance(e, CompactionEntry)]
    latest = entries[-1] if entries else None
    methods = [r.method for r in maint.rounds if r.entry_id is not None]
    kept = None
    if latest is not None:
        kept_entry = session.get(latest.first_kept_entry_id)
        if isinstance(kept_entry, MessageEntry):
            kept = source_of.get(kept_entry.id)
    wire, frames = request.wire, request.frames
    return StepReport(
        step=number, turns=step.turns, prompt=step.prompt, compactions=len(entries),
        new_compactions=len(entries) - compactions_before,
        method=methods[-1] if methods else None, rounds=tuple(rounds),
        frames=tuple((*_png_size(p), len(p)) for p in frames), pngs=tuple(frames),
        text_chars=request.text_chars, messages=len(wire),
        adjacent_assistants=sum(1 for a, b in zip(wire, wire[1:])
                                if a.get("role") == b.get("role") == "assistant"),
        archive=_archive_totals(latest), first_kept_source_index=kept,
        tokens_after=maint.view.stored_tokens(),
        warnings=tuple(w for r in rounds for w in r.warnings))


def replay_like_upstream_steps(
        messages: Sequence[Mapping[str, Any]], model: ModelInfo, settings: Settings, *,
        steps: int, question: str = "Continue.",
        system_prompt: str | None | AgentPrompt = AGENT_PROMPT, allow_stand_in: bool = False,
        estimator: TokenEstimator | None = None,
        on_step: Callable[[StepReport], None] | None = None) -> StepwiseReplay:
    """Run the oracle's step protocol through :class:`SessionMaintenance`.

    ``system_prompt`` is the request's system prompt (default: the agent 18.3.4's own for
    ``model``, as the oracle's omp sends it with ``--no-tools``; None: none). Soft
    (LLM-summary) compaction summarizes to the canned ``"ok"``, like the oracle's capture
    server. Returns one report per step and the maintenance object.

    A parity check is only meaningful with the agent's own counter: with the default counter
    (``estimator=None``) for a Claude model and no ``ctok`` installed, this refuses (a
    ``ValueError`` naming the fix) unless ``allow_stand_in``.
    """
    if estimator is None and not allow_stand_in:
        stand_in = claude_stand_in(model.id, settings.compaction.text_tokenizer)
        if stand_in is not None:
            raise ValueError(f"the step replay is a parity check and refuses a stand-in "
                             f"counter: {stand_in}; or allow the estimate (allow_stand_in, "
                             f"--allow-estimate)")
    source = [dict(m) for m in messages]
    for i, m in enumerate(source):
        if not isinstance(m.get("role"), str):
            raise ValueError(f"message {i}: must be an object with a string 'role'")
    plan = plan_upstream_steps(source, steps, question)
    system = system_prompt.text(model) if isinstance(system_prompt, AgentPrompt) else system_prompt
    maint, session, clock = _oracle_maintenance(model, settings, system, estimator)
    source_of: dict[str, int] = {}
    reports: list[StepReport] = []
    compactions_before = 0
    for number, step in enumerate(plan, 1):
        for index in range(step.start, step.end):
            entry = session.append_message(_as_converted(source[index], index))
            source_of[entry.id] = index
        seen = len(maint.rounds)
        request = _resume(maint, step, model, clock)
        report = _step_report(number, step, maint, session, request, maint.rounds[seen:],
                              source_of, compactions_before)
        compactions_before = report.compactions
        reports.append(report)
        if on_step is not None:
            on_step(report)
    return StepwiseReplay(tuple(reports), maint)
