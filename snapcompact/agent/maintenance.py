"""The coding agent's session maintenance: when it compacts, with which method, what it accepts.

Why this layer exists: users run ``@oh-my-pi/pi-coding-agent`` 18.3.4, and its session
maintenance (``src/session/session-maintenance.ts``, SM below) decides which compaction runs,
how many frames snapcompact may draw and whether a result is accepted. The compaction package
ports pi-agent-core's functions (cut points, pruning, summaries, the archive); this class drives
them the way the agent does, so the context a harness measures is one production would send.

What it reproduces, with where it lives upstream:

* three check points: before a new user prompt, counting the prompt and, for a live session,
  the provider's recorded count since the newest usage anchor (SM:2455-2556,
  :mod:`.usage_anchor`); between tool turns of one agent run (SM:2568-2720, no
  auto-continue); after the agent's turn ends, with the stale-result and threshold prunes
  first (SM:2746-3254);
* the ordered method list with the agent's usability rules (``compaction-methods.ts:44``,
  SM:187-203), each rejected method handing over to the next (SM:4142-4780);
* snapcompact's own path: renderability scan, a frame cap sized from the window, and three
  guards on the result: base64 payload, reduction, window fit (SM:4640-4760; caps in
  :mod:`.frame_cap`). Frames are charged 5,024 tokens each, the tokenizer's flat estimate;
* after a commit, the recovery band: the residual context must be at most 0.8 x threshold,
  else the dead-end rescues run in order: rebuild the latest archive at a band-sized frame
  budget, elide tool results, drop images; a pass that still has no headroom is a dead end
  and blocks auto-continue (SM:5064-5246, 3865-4125);
* the auto-continue prompt only under the agent's conditions: headroom, ``autoContinue``, not
  mid-turn, not after a terminal text answer (agent-session.ts:4311-4331);
* handoff as a compaction entry that keeps the tail (SM:4583-4624, 375-386) and shake's
  recovery band (SM:5254-5320).

What it does not: speculative background compaction and its grace band (only for LLM-first
orders; a snapcompact-first order never speculates), context promotion beyond what
:class:`~snapcompact.compaction.CompactionPipeline` already does, payload-413 classification.
A method that needs a language model this object was not given is recorded as ``offline`` and
the next method runs: the context then differs from production's, and the rounds say so.
"""

from __future__ import annotations

import json
import math
import operator
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from snapcompact.agent.frame_cap import (
    FrameCap,
    frames_within_payload,
    rescue_max_frames,
    snapcompact_max_frames,
)
from snapcompact.agent.frame_charge import billed_frame_charge, frame_tokens_for
from snapcompact.agent.frame_shapes import frames_by_shape
from snapcompact.agent.guards import snapcompact_rejection
from snapcompact.agent.methods import (
    DEFAULT_METHOD_ORDER,
    LLM_METHODS,
    is_method_usable,
    resolve_method_order,
)
from snapcompact.agent.probe import ParsedArchiveCache, ProbeScan
from snapcompact.agent.rounds import MaintenanceRound, MethodAttempt
from snapcompact.agent.usage_anchor import anchored_context_tokens
from snapcompact.archive import (
    FileOperations,
    SerializeOptions,
    archive_blocks,
    archive_source_text,
    compact,
    compute_file_lists,
    get_preserved_archive,
    serialize_conversation,
    upsert_file_operations,
)
from snapcompact.compaction import (
    DEFAULT_SHAKE_CONFIG,
    FRAME_TOKEN_ESTIMATE,
    RESCUE_SHAKE_CONFIG,
    BeforeCompactEvent,
    Cancel,
    CompactionEntry,
    CompactionPayload,
    CompactionPipeline,
    CompactionPreparation,
    CustomMessageEntry,
    HookCompaction,
    Hooks,
    MessageEntry,
    ModelInfo,
    Session,
    Settings,
    StrategyFallback,
    TokenEstimator,
    compact_context_full,
    compact_snapcompact,
    cumulative_file_ops,
    effective_reserve_tokens,
    prepare_compaction,
    prompt,
    prune_superseded_tool_results,
    prune_tool_outputs,
    compaction_threshold,
    recovery_trigger,
    text_counter_for,
    text_edge_chars,
    uses_openai_remote_compaction,
)
from snapcompact.pricing import (
    FRAME_DATA_BYTES_BUDGET,
    resolve_shape,
    resolve_shape_for_scan,
    resolve_shape_for_text,
)
from snapcompact.text import ScanCounts, scan_renderability

__all__ = [
    "COMPACTION_RECOVERY_BAND",
    "PRUNE_CACHE_WARM_SUFFIX_TOKENS",
    "PRUNE_IDLE_FLUSH_SECONDS",
    "SessionMaintenance",
    "context_tokens_of_usage",
    "is_terminal_text_answer",
    "production_estimator",
]

#: Residual context after a commit must land at or below this share of the threshold (SM:329).
COMPACTION_RECOVERY_BAND = 0.8
#: The threshold prune leaves results followed by more message tokens than this (SM:308).
PRUNE_CACHE_WARM_SUFFIX_TOKENS = 8000
#: Idle gap after which the stale-result pass may rewrite the whole sent region (SM:316: 90 min).
PRUNE_IDLE_FLUSH_SECONDS = 90 * 60


def production_estimator(*, frame_tokens: int = FRAME_TOKEN_ESTIMATE,
                         count_text: Callable[[Sequence[str]], int] | None = None,
                         max_frame_data_bytes: int = FRAME_DATA_BYTES_BUDGET,
                         frame_charge: Callable[[Mapping[str, Any]], int] | None = None
                         ) -> TokenEstimator:
    """The token counter the agent's maintenance uses: 5,024 per archive frame, the frames a
    rebuilt request would carry (3 MB of base64 at most), text by ``count_text`` (default the
    agent core's bytes/4 per fragment). ``frame_charge`` (research knob ``frameCharge``)
    counts each frame block itself instead of ``frame_tokens``."""
    kwargs: dict[str, Any] = {"frame_charge": frame_charge}
    if count_text is not None:
        kwargs["count_text"] = count_text
    return TokenEstimator(frame_tokens=frame_tokens,
                          archive_blocks=lambda m: archive_blocks(m, max_frame_data_bytes),
                          **kwargs)


def _frame_charge_kwargs(model: ModelInfo, settings: Settings) -> dict[str, Any]:
    """The estimator's frame charge under ``snapcompact.frameCharge``: nothing for production;
    for ``billed``, a full frame's bill (the cap) and each frame's own bill (the guards)."""
    sc = settings.snapcompact
    if sc.frame_charge == "production":
        return {}
    size = resolve_shape(model.id, api=model.api, provider=model.provider, shape=sc.shape,
                         frame_size=sc.frame_size).shape.frame_size
    return {"frame_tokens": frame_tokens_for(sc.frame_charge, model, size),
            "frame_charge": billed_frame_charge(model)}


def context_tokens_of_usage(usage: Mapping[str, Any] | None) -> int:
    """pi-agent-core ``calculateContextTokens``: ``contextTokens`` when reported, else
    ``totalTokens`` (or input + output + cache reads + cache writes)."""
    if not isinstance(usage, Mapping):
        return 0

    def num(key: str) -> int:
        value = usage.get(key)
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    if "contextTokens" in usage:
        return max(0, num("contextTokens"))
    raw = num("totalTokens") or (num("input") + num("output") + num("cacheRead")
                                 + num("cacheWrite"))
    return max(0, raw)


def is_terminal_text_answer(message: Mapping[str, Any] | None) -> bool:
    """The agent's ``isTerminalTextAssistantAnswer``: a finished (``stop``) assistant turn with
    visible text and no tool call; after one, no auto-continue prompt is scheduled."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return False
    if message.get("stopReason") != "stop":
        return False
    has_text = False
    for part in message.get("content") or ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "toolCall":
            return False
        if kind == "text":
            if str(part.get("text", "")).strip():
                has_text = True
            continue
        if kind in ("thinking", "redactedThinking", "fallback", "anthropicServerTool"):
            continue
        return False
    return has_text


def _has_tool_calls(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "toolCall" for b in content)


def _strip_images(content: Any) -> tuple[Any, int]:
    if not isinstance(content, list):
        return content, 0
    kept = [b for b in content if not (isinstance(b, Mapping) and b.get("type") == "image")]
    removed = len(content) - len(kept)
    if removed and not kept:
        kept = [{"type": "text", "text": "[image removed]"}]
    return kept, removed


class SessionMaintenance:
    """The agent's maintenance over one session (wraps a :class:`CompactionPipeline`).

    ``complete`` is the summarizer (soft compaction, handoff documents); ``responses_compact``
    OpenAI's native compact endpoint (remote). Without them those methods are recorded as
    ``offline`` and skipped. ``system_prompt`` and ``tools`` are the request's non-message part,
    counted in every threshold, cap and projection as the agent does. ``use_recorded_usage``
    trusts the ``usage`` an assistant message carries (a live session); a replay of a recorded
    session must not (those figures are of the uncompacted original). ``models`` are the
    models context promotion may switch to (``ModelInfo.promotion_target`` names one by id).
    """

    def __init__(self, session: Session, model: ModelInfo, *, settings: Settings,
                 complete: Any = None, hooks: Hooks | None = None,
                 estimator: TokenEstimator | None = None,
                 system_prompt: str | Sequence[str] | None = None,
                 tools: Sequence[Mapping[str, Any]] | None = None,
                 responses_compact: Any = None, chat: Any = None,
                 protected_paths: Collection[str] = (), clock: Callable[[], float] = time.time,
                 use_recorded_usage: bool = True,
                 handoff_path: Callable[[Session], str | Path | None] | None = None,
                 models: Collection[ModelInfo] = ()) -> None:
        if estimator is None:
            # Text as production counts it for this model line (its native tokenizer family,
            # else bytes/4: ``compaction.textTokenizer``, default ``auto``).
            count_text, self.text_token_method = text_counter_for(
                model.id, settings.compaction.text_tokenizer)
            estimator = production_estimator(
                count_text=count_text,
                max_frame_data_bytes=settings.snapcompact.max_frame_data_bytes,
                **_frame_charge_kwargs(model, settings))
        else:
            self.text_token_method = "caller's estimator"
        self.estimator = estimator
        self.pipeline = CompactionPipeline(
            session, model, settings=settings, complete=complete, hooks=hooks,
            protected_paths=protected_paths, clock=clock, estimator=self.estimator, chat=chat,
            system_prompt=system_prompt, tools=tools, responses_compact=responses_compact,
            handoff_path=handoff_path, models=models)
        self.use_recorded_usage = use_recorded_usage
        self.non_message_tokens = self._count_non_message(system_prompt, tools)
        self.rounds: list[MaintenanceRound] = []
        self.notices: list[str] = []
        #: The source message index the next check is attributed to (set by a replay driver).
        self.message_index = -1
        self._parsed = ParsedArchiveCache()  # the probe's parsed history, per message
        self._probe_scan = ProbeScan()  # the probe's counts, kept across passes
        #: The preparation :meth:`_prepare` made last and the session version it was made at.
        self._prepared: tuple[CompactionPreparation | None, tuple[int, str | None]] | None = None
        #: :meth:`_derived` values: name -> (the objects they were made from, value).
        self._made: dict[str, tuple[tuple[Any, ...], Any]] = {}

    # ------------------------------------------------------------------ views

    @property
    def session(self) -> Session:
        """The session being maintained."""
        return self.pipeline.session

    @property
    def model(self) -> ModelInfo:
        """The model whose window the maintenance works in."""
        return self.pipeline.model

    @property
    def settings(self) -> Settings:
        """The compaction settings (``compaction.methodOrder`` included)."""
        return self.pipeline.settings

    def _derived(self, name: str, sources: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """``make()``, remembered while ``sources`` (frozen settings and model objects, which
        every such value is a function of) are the same objects. A session above its threshold
        runs a maintenance pass at every check point (39,555 in a 60,000-message replay), and
        each pass re-derived the same method order, threshold, shapes and prune settings."""
        hit = self._made.get(name)
        if hit is not None and len(hit[0]) == len(sources) and all(
                map(operator.is_, hit[0], sources)):
            return hit[1]
        value = make()
        self._made[name] = (sources, value)
        return value

    def method_order(self) -> tuple[str, ...]:
        """The configured preference list (the agent's default when none is set)."""
        cs = self.settings.compaction
        order: tuple[str, ...] = self._derived(
            "method_order", (cs,), lambda: DEFAULT_METHOD_ORDER if cs.method_order is None
            else resolve_method_order(cs.method_order))
        return order

    def threshold(self) -> int:
        """Context tokens above which maintenance runs."""
        model, cs = self.model, self.settings.compaction
        threshold: int = self._derived(
            "threshold", (model, cs),
            lambda: compaction_threshold(model, cs))
        return threshold

    def window_budget(self) -> int:
        """``window - effective reserve``: what a compacted context must fit in."""
        window = self.model.context_window
        return window - effective_reserve_tokens(window, self.settings.compaction)

    def stored_tokens(self, pending: Sequence[Mapping[str, Any]] = ()) -> int:
        """The agent's local estimate: non-message tokens + the context's messages + pending."""
        return (self.non_message_tokens + self.pipeline.estimate_tokens()
                + self.estimator.messages(list(pending)))

    def llm_messages(self) -> list[Any]:
        """The context as wire messages for the LLM."""
        return self.pipeline.llm_messages()

    def _count_non_message(self, system_prompt: str | Sequence[str] | None,
                           tools: Sequence[Mapping[str, Any]] | None) -> int:
        parts: list[str] = []
        if isinstance(system_prompt, str):
            parts.append(system_prompt)
        elif system_prompt:
            parts.extend(str(p) for p in system_prompt)
        if tools:
            parts.extend(json.dumps(t, separators=(",", ":"), ensure_ascii=False) for t in tools)
        return self.estimator.count_text(parts) if parts else 0

    def _branch(self) -> Sequence[Any]:
        """The session's branch for a function that only reads it: the branch index's own list
        (the functions use the index behind it), not a copy of the whole history per call."""
        return self.session.branch_index.sync()

    def _notice(self, text: str) -> str:
        self.notices.append(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)
        return text

    def _enabled(self) -> bool:
        return self.settings.compaction.enabled and bool(self.method_order())

    # ------------------------------------------------------------------ session input

    def append(self, message: Mapping[str, Any]) -> None:
        """Append a message without any check (user prompts go through :meth:`before_prompt`
        first; tool results between turns through :meth:`mid_turn` before the next call)."""
        self.session.append_message(message)

    # ------------------------------------------------------------------ check points

    def before_prompt(self, pending: Sequence[Mapping[str, Any]]) -> MaintenanceRound | None:
        """Pre-prompt check (SM:2498-2556): the context plus the pending prompt over the
        threshold compacts before the prompt is sent. No auto-continue (the prompt is the next
        turn). The prompt is not appended here. The context is the larger of the local count
        and, with ``use_recorded_usage``, the provider-anchored one (SM:2455-2462,
        :mod:`.usage_anchor`)."""
        if not self._enabled():
            return None
        pending_tokens = self.estimator.messages(list(pending))
        prepared = self.stored_tokens()
        context = prepared + pending_tokens
        if self.use_recorded_usage:
            anchored = anchored_context_tokens(
                self.session.branch_index, self.estimator,
                non_message_tokens=self.non_message_tokens, pending_tokens=pending_tokens)
            if anchored is not None:
                context = max(context, anchored)
        if context <= self.threshold():
            return None
        if self._promote():
            return None
        return self._run("pre_prompt", "threshold", trigger=context, pending=pending_tokens,
                         prepared=prepared, auto_continue=False)

    def mid_turn(self, last_assistant: Mapping[str, Any] | None) -> MaintenanceRound | None:
        """Between tool turns of one run (SM:2568-2720): the tool results are in, the next
        provider call is about to go out. Compacts over the threshold, never auto-continues."""
        if not self._enabled() or last_assistant is None:
            return None
        if last_assistant.get("stopReason") in ("aborted", "error"):
            return None
        billed = (context_tokens_of_usage(last_assistant.get("usage"))
                  if self.use_recorded_usage else 0)
        context = max(billed, self.stored_tokens())
        if context <= self.threshold():
            return None
        if self._promote():
            return None
        return self._run("mid_turn", "threshold", trigger=context, auto_continue=False,
                         suppress_continuation=True)

    def end_turn(self, message: Mapping[str, Any], *,
                 idle_seconds: float = 0.0) -> MaintenanceRound | None:
        """The agent's turn ended with ``message`` (SM:2746-3254): overflow or cut-off output
        recover (the message is dropped and the turn retried); otherwise the message is
        appended, the stale-result and threshold prunes run, and maintenance runs over the
        threshold."""
        cs = self.settings.compaction
        first = recovery_trigger(message, model_id=self.model.id,
                                 latest_compaction_time=self.pipeline._latest_compaction_ms())
        if first is not None:
            # Promotion comes before the test whether compaction may run (SM:2870-2886,
            # 3050-3068), so it recovers with compaction off too.
            if self._promote():
                return None
            if self._enabled():
                return self._run(first.reason, first.reason, trigger=self.stored_tokens(),
                                 auto_continue=False, will_retry=True)
        self.session.append_message(message)
        if message.get("stopReason") == "aborted":
            return None
        stale = self._prune_stale(idle_seconds)
        if not self._enabled() or message.get("stopReason") == "error":
            return None
        pruned = self._prune_threshold()
        freed = stale + pruned
        billed = context_tokens_of_usage(message.get("usage")) if self.use_recorded_usage else 0
        stored = self.stored_tokens()
        context = max(billed, stored)
        post_maintenance = max(max(0, billed - freed), stored)
        if context <= self.threshold():
            return None
        if self._promote():
            return None
        return self._run("post_turn", "threshold", trigger=post_maintenance,
                         auto_continue=cs.auto_continue,
                         terminal_text_answer=is_terminal_text_answer(message))

    # ------------------------------------------------------------------ pruning

    def _prune_stale(self, idle_seconds: float) -> int:
        """The per-turn stale-result pass (SM:702-745), gated on supersedeReads or dropUseless."""
        pruning = self.settings.pruning
        drop_useless = self.settings.compaction.drop_useless
        if not pruning.supersede_reads and not drop_useless:
            return 0
        config = self._derived("stale_prune", (pruning,), lambda: replace(
            pruning, cache_idle_seconds=PRUNE_IDLE_FLUSH_SECONDS))
        result = prune_superseded_tool_results(
            self._branch(), config, idle_seconds=idle_seconds,
            drop_useless=drop_useless, protected_paths=self.pipeline.protected_paths,
            estimator=self.estimator, now_ms=int(self.pipeline.clock() * 1000))
        if result.changed:
            self.session.replace_messages(result.replacements)
        return result.tokens_saved

    def _prune_threshold(self) -> int:
        """The threshold prune (SM:659-700): every turn, outside the 8,000-token warm suffix."""
        pruning, cs = self.settings.pruning, self.settings.compaction
        config = self._derived("threshold_prune", (pruning, cs), lambda: replace(
            pruning, prune_useless=cs.drop_useless,
            cache_warm_suffix_tokens=PRUNE_CACHE_WARM_SUFFIX_TOKENS))
        result = prune_tool_outputs(self._branch(), config,
                                    protected_paths=self.pipeline.protected_paths,
                                    estimator=self.estimator,
                                    now_ms=int(self.pipeline.clock() * 1000))
        if result.changed:
            self.session.replace_messages(result.replacements)
        return result.tokens_saved

    def _promote(self) -> bool:
        target = self.pipeline.promote()
        if target is not None:
            self._notice(f"context promoted to {target.id}")
            return True
        return False

    # ------------------------------------------------------------------ the method loop

    def _run(self, check: str, reason: str, *, trigger: int, pending: int = 0,
             prepared: int | None = None, auto_continue: bool,
             suppress_continuation: bool = False, terminal_text_answer: bool = False,
             will_retry: bool = False, exclude_media: bool = False) -> MaintenanceRound:
        """``runAutoCompaction``: try each usable method in order until one is accepted."""
        threshold = self.threshold()
        attempts: list[MethodAttempt] = []
        notes: list[str] = []
        rescues: list[str] = []
        fallback_from_shake = False
        remote_available = bool(self.settings.compaction.remote_endpoint) or \
            uses_openai_remote_compaction(self.model)

        def finish(method: str | None, **extra: Any) -> MaintenanceRound:
            archive = self._latest_archive()
            shape = self.settings.snapcompact.shape
            round_ = MaintenanceRound(
                index=len(self.rounds) + 1, check=check, reason=reason,
                after_message=self.message_index, trigger_tokens=trigger,
                threshold_tokens=threshold, attempts=tuple(attempts), method=method,
                tokens_before=trigger, rescues=tuple(rescues),
                frames=len(archive.frames) if archive is not None else 0,
                frames_by_shape=frames_by_shape(archive.frames, None if shape == "auto"
                                                else shape) if archive is not None else {},
                warnings=tuple(notes), **extra)
            self.rounds.append(round_)
            return round_

        for method in self.method_order():
            if not is_method_usable(method, reason, supports_images=self.model.supports_images,
                                    remote_available=remote_available,
                                    exclude_media=exclude_media):
                attempts.append(MethodAttempt(method, "unusable", self._unusable_why(method,
                                                                                     reason)))
                continue
            if method == "shake":
                handled, why, freed = self._auto_shake(reason, trigger, threshold)
                if handled:
                    attempts.append(MethodAttempt("shake", "accepted", why))
                    headroom = max(0, trigger - freed) <= math.floor(
                        threshold * COMPACTION_RECOVERY_BAND)
                    return finish("shake", tokens_after=self.stored_tokens(),
                                  headroom=headroom,
                                  auto_continue=self._continue(auto_continue, True,
                                                               suppress_continuation,
                                                               terminal_text_answer))
                attempts.append(MethodAttempt("shake", "rejected", why))
                notes.append(self._notice(why))
                fallback_from_shake = True
                continue
            prep = self._prepare()
            if prep is None:
                prep = self._rescue_unpreparable(reason, fallback_from_shake, rescues)
                if prep is None:
                    attempts.append(MethodAttempt(method, "rejected",
                                                  "nothing to compact: the kept tail alone is "
                                                  "over the budget"))
                    headroom = self.stored_tokens() <= math.floor(
                        threshold * COMPACTION_RECOVERY_BAND)
                    return finish("snapcompact-rescue" if "frame-rebuild" in rescues else None,
                                  tokens_after=self.stored_tokens(), headroom=headroom,
                                  dead_end=not headroom)
            # The event copies the branch: made only when a hook will read it.
            hook = self.pipeline.hooks.run_before_compact(BeforeCompactEvent(
                prep, tuple(self.session.get_branch()), None, reason, will_retry)
            ) if self.pipeline.hooks.before_compact else None
            if isinstance(hook, Cancel):
                attempts.append(MethodAttempt(method, "rejected", "cancelled by a hook"))
                return finish(None)
            payload: CompactionPayload | None
            if isinstance(hook, HookCompaction):
                payload = CompactionPayload(
                    summary=hook.summary,
                    first_kept_entry_id=hook.first_kept_entry_id or prep.first_kept_entry_id,
                    tokens_before=hook.tokens_before if hook.tokens_before is not None
                    else prep.tokens_before, strategy="extension",
                    short_summary=hook.short_summary, details=hook.details,
                    preserve_data=hook.preserve_data, usage=hook.usage, from_extension=True)
                attempt = MethodAttempt(method, "accepted", "a before-compact hook answered")
            elif method in LLM_METHODS and not self._can_run_offline(method):
                why = (f"{method} needs a language model this run was not given; production "
                       "would run it here")
                attempts.append(MethodAttempt(method, "offline", why))
                notes.append(why)
                continue
            else:
                attempt, payload = self._attempt(method, prep, trigger=trigger, pending=pending,
                                                 prepared=prepared)
            if payload is None:
                attempts.append(attempt)
                if attempt.reason:
                    notes.append(self._notice(attempt.reason))
                continue
            attempts.append(attempt)
            notes.extend(self._notice(w) for w in payload.warnings)
            entry = self.session.append_compaction(
                payload.summary, payload.first_kept_entry_id, payload.tokens_before,
                short_summary=payload.short_summary, details=payload.details,
                preserve_data=payload.preserve_data, from_extension=payload.from_extension,
                usage=payload.usage)
            self.pipeline.hooks.emit_compact(entry, payload.from_extension)
            headroom = self._post_commit(reason, will_retry, fallback_from_shake, rescues)
            if not headroom:
                notes.append(self._notice(
                    "compaction made no progress: the context is still above the recovery band "
                    "(clear large tool output)"))
            cont = self._continue(auto_continue, headroom, suppress_continuation,
                                  terminal_text_answer)
            if cont:
                self.session.append_message({
                    "role": "developer", "attribution": "agent",
                    "content": [{"type": "text", "text": prompt("auto-continue")}],
                    "timestamp": int(self.pipeline.clock() * 1000)})
            return finish(method, entry_id=entry.id, tokens_after=self.stored_tokens(),
                          headroom=headroom, dead_end=not headroom, auto_continue=cont)
        return finish(None, tokens_after=self.stored_tokens())

    @staticmethod
    def _continue(auto_continue: bool, headroom: bool, suppress: bool, terminal: bool) -> bool:
        """``scheduleCompactionContinuation`` without queued messages (agent-session.ts:4311)."""
        return not suppress and auto_continue and headroom and not terminal

    def _unusable_why(self, method: str, reason: str) -> str:
        if method == "remote":
            return f"no server compaction for {self.model.id} (no endpoint, no native route)"
        if method == "snapcompact":
            return f"{self.model.id} takes no image input"
        if method == "handoff":
            return f"handoff is never used for {reason}"
        return "not usable"

    def _can_run_offline(self, method: str) -> bool:
        if method == "remote":
            return bool(self.settings.compaction.remote_endpoint) or (
                self.pipeline.responses_compact is not None)
        if method == "handoff":
            return self.pipeline.complete is not None or (
                self.pipeline.chat is not None and self.pipeline.system_prompt is not None)
        return self.pipeline.summary_complete() is not None

    def _prepare(self) -> CompactionPreparation | None:
        """The partition of the current branch. A pass asks once per method it tries; the
        answer depends only on the branch (the session version and leaf name it), so an unchanged
        session gets the same preparation back instead of a new walk of the history."""
        version = (self.session.version, self.session.leaf_id)
        made = self._prepared
        if made is not None and made[1] == version:
            return made[0]
        prep = prepare_compaction(self._branch(),
                                  self.settings.compaction.keep_recent_tokens,
                                  estimator=self.estimator)
        self._prepared = (prep, version)
        return prep

    # ------------------------------------------------------------------ methods

    def _attempt(self, method: str, prep: CompactionPreparation, *, trigger: int, pending: int,
                 prepared: int | None) -> tuple[MethodAttempt, CompactionPayload | None]:
        if method == "snapcompact":
            return self._snapcompact(prep, trigger=trigger, pending=pending, prepared=prepared)
        if method == "handoff":
            document = self.pipeline.generate_handoff_document()
            if not document:
                return MethodAttempt("handoff", "rejected", "handoff returned no document"), None
            ops = cumulative_file_ops(prep)
            lists = compute_file_lists(ops)
            summary = upsert_file_operations(document, lists, ops.read)
            payload = CompactionPayload(summary=summary,
                                        first_kept_entry_id=prep.first_kept_entry_id,
                                        tokens_before=prep.tokens_before, strategy="handoff",
                                        details=lists.to_json())
            return MethodAttempt("handoff", "accepted"), payload
        if method == "remote":
            notes: list[str] = []
            remote = self.pipeline._openai_remote(prep, notes)
            if remote is None:
                return MethodAttempt("remote", "rejected",
                                     "; ".join(notes) or "server compaction unavailable"), None
            return MethodAttempt("remote", "accepted"), remote
        try:
            payload = compact_context_full(prep, self.pipeline.summary_complete(), self.model,
                                           self.settings)
        except Exception as exc:  # noqa: BLE001 - a failed summary hands over to the next method
            text = " ".join(str(exc).split()) or type(exc).__name__
            return MethodAttempt("soft", "rejected", f"summary failed: {text[:300]}"), None
        return MethodAttempt("soft", "accepted"), payload

    def _probe_text(self, prep: CompactionPreparation) -> str:
        """What the renderability scan reads: the previous archive's text and the history about
        to be archived (``renderabilityProbeText``)."""
        serialized = serialize_conversation(
            self._parsed.parsed_archive(prep),
            SerializeOptions(include_thinking=self.model.include_thinking))
        head = self._probe_head(prep)
        return f"{head}\n{serialized}" if head else serialized

    def _probe_head(self, prep: CompactionPreparation) -> str:
        prev = prep.previous_compaction
        archive = get_preserved_archive(prev.preserve_data) if prev is not None else None
        head = archive_source_text(archive) if archive is not None else (
            prev.summary if prev is not None else "")
        return head or ""

    def _probe_counts(self, prep: CompactionPreparation) -> ScanCounts | None:
        """The probe text's counts from :class:`~.probe.ProbeScan` (a pass costs what changed
        since the last), when ``prep`` is the preparation of the session as it is now; else
        None (the caller scans :meth:`_probe_text`)."""
        made = self._prepared
        if made is None or made[0] is not prep or made[1] != (self.session.version,
                                                              self.session.leaf_id):
            return None
        sc, model = self.settings.snapcompact, self.model
        fonts = self._derived("probe_fonts", (model, sc), lambda: tuple(dict.fromkeys(
            resolve_shape(model.id, api=model.api, provider=model.provider,
                          shape=shape).shape.font for shape in (sc.shape, "silver16-bw"))))
        return self._probe_scan.counts(
            self.session.branch_index, prep.window_start, prep.first_kept_index,
            self._probe_head(prep), SerializeOptions(include_thinking=self.model.include_thinking),
            fonts)

    def frame_cap(self, prep: CompactionPreparation) -> FrameCap:
        """The cap this pass gives snapcompact (``#computeSnapcompactMaxFrames``)."""
        sc, model = self.settings.snapcompact, self.model
        shape = self._derived("cap_shape", (model, sc), lambda: resolve_shape(
            model.id, api=model.api, provider=model.provider, shape=sc.shape,
            frame_size=sc.frame_size).shape)
        window = self.model.context_window
        cap = snapcompact_max_frames(
            context_window=window,
            reserve_tokens=effective_reserve_tokens(window, self.settings.compaction),
            base_tokens=self.non_message_tokens + self._recent_tokens(prep),
            shape=shape, provider=self.model.provider, frame_tokens=self.estimator.frame_tokens,
            edge_chars=text_edge_chars(sc), data_budget=sc.frame_cap_bytes == "estimate")
        if sc.max_frames is not None and cap.max_frames > sc.max_frames:
            cap = replace(cap, max_frames=sc.max_frames)
        return cap

    def _recent_tokens(self, prep: CompactionPreparation) -> int:
        """``estimator.messages(prep.recent_messages)``; from the per-entry memo when ``prep``
        is the one :meth:`_prepare` just made and the session has not changed since (the same
        entries, each estimated once), else counted afresh."""
        made = self._prepared
        if made is not None and made[0] is prep and made[1] == (self.session.version,
                                                                self.session.leaf_id):
            # entry_tokens of the entries from the cut on, from the branch's running totals.
            context = self.session.branch_index.totals(self.estimator).context
            return context[-1] - context[prep.first_kept_index]
        return self.estimator.messages(list(prep.recent_messages))

    def _snapcompact(self, prep: CompactionPreparation, *, trigger: int, pending: int,
                     prepared: int | None) -> tuple[MethodAttempt, CompactionPayload | None]:
        """Snapcompact's path (SM:4640-4760): scan, cap, render, then the three guards."""
        sc = self.settings.snapcompact
        counts = self._probe_counts(prep)
        if counts is not None:
            resolved = resolve_shape_for_scan(counts, self.model.id, api=self.model.api,
                                              provider=self.model.provider, shape=sc.shape)
            scan = counts.renderability(resolved.shape.font)
        else:
            probe = self._probe_text(prep)
            resolved = resolve_shape_for_text(probe, self.model.id, api=self.model.api,
                                              provider=self.model.provider, shape=sc.shape)
            scan = scan_renderability(probe, resolved.shape.font)
        if not scan.safe:
            return MethodAttempt("snapcompact", "rejected",
                                 "unsupported characters for the snapcompact font "
                                 f"({scan.ratio * 100:.1f}%)"), None
        cap = self.frame_cap(prep)
        if cap.max_frames < 1:
            return MethodAttempt("snapcompact", "rejected",
                                 "kept history alone exceeds the context budget",
                                 frame_cap=cap), None
        drawn_cap = cap.max_frames
        while True:
            try:
                payload = compact_snapcompact(prep, self.model, self.settings,
                                              kept_tokens=0, max_frames=drawn_cap,
                                              check_reduction=False)
            except StrategyFallback as exc:
                return MethodAttempt("snapcompact", "rejected", str(exc), frame_cap=cap), None
            archive = get_preserved_archive(payload.preserve_data)
            frames = archive.frames if archive is not None else ()
            payload_bytes = sum(len(f.data) for f in frames)
            # frameCapBytes = "actual": the cap left the 170 KB estimate out; redraw with fewer
            # frames until the frames drawn fit the byte budget (production: never loops).
            fewer = frames_within_payload(len(frames), payload_bytes, sc.max_frame_data_bytes)
            if sc.frame_cap_bytes == "estimate" or fewer >= len(frames):
                break
            drawn_cap = fewer
        if drawn_cap != cap.max_frames:
            cap = replace(cap, max_frames=drawn_cap)
        by_shape = frames_by_shape(frames, [n for n in (sc.shape, sc.middle_shape)
                                            if n not in ("auto", "production", "same")])
        summary_message = {"role": "compactionSummary", "summary": payload.summary,
                           "tokensBefore": payload.tokens_before,
                           "preserveData": payload.preserve_data}
        recent = list(prep.recent_messages)
        projected = (self.non_message_tokens + self.estimator.message(summary_message)
                     + self.estimator.messages(recent))
        pre = (self.non_message_tokens
               + self.estimator.messages([*prep.messages_to_summarize,
                                          *prep.turn_prefix_messages, *recent]))
        baseline = max(0, trigger - pending)
        if prepared is not None:
            baseline = max(0, baseline - prepared) + pre
        budget = self.window_budget()
        rejection = snapcompact_rejection(
            payload_bytes=payload_bytes, projected_tokens=projected, reduction_baseline=baseline,
            window_budget=budget, max_payload_bytes=self.settings.snapcompact.max_frame_data_bytes)
        attempt = MethodAttempt("snapcompact", "rejected" if rejection else "accepted", rejection,
                                frame_cap=cap, frames=len(frames), frames_by_shape=by_shape,
                                payload_bytes=payload_bytes, projected_tokens=projected,
                                reduction_baseline=baseline, window_budget=budget)
        return attempt, (None if rejection else payload)

    def _auto_shake(self, reason: str, trigger: int, threshold: int) -> tuple[bool, str, int]:
        """``#runAutoShake``: elide in place; handled unless still above the recovery band."""
        applied = self.pipeline.shake(DEFAULT_SHAKE_CONFIG)
        reclaimed = applied.tool_results_dropped + applied.blocks_dropped > 0
        still_over = max(0, trigger - applied.tokens_freed) > math.floor(
            threshold * COMPACTION_RECOVERY_BAND)
        if reason != "idle" and ((reason == "overflow" and not reclaimed) or still_over):
            if reclaimed:
                return False, (f"shake reclaimed ~{applied.tokens_freed} tokens but the context "
                               "is still above the recovery band"), applied.tokens_freed
            return False, "shake found nothing eligible to drop", 0
        return True, f"shake freed ~{applied.tokens_freed} tokens", applied.tokens_freed

    # ------------------------------------------------------------------ after the commit

    def _headroom(self) -> bool:
        band = math.floor(self.threshold() * COMPACTION_RECOVERY_BAND)
        return self.stored_tokens() <= band

    def _fits(self) -> bool:
        return self.stored_tokens() <= self.window_budget()

    def _post_commit(self, reason: str, will_retry: bool, fallback_from_shake: bool,
                     rescues: list[str]) -> bool:
        """The progress guard (SM:5120-5200): a retry must fit the window, a threshold pass
        must land in the recovery band; otherwise the rescues run."""
        if reason == "idle":
            return True
        progress = self._fits if will_retry else self._headroom
        if progress():
            return True
        return self._rescue_dead_end(fallback_from_shake, progress, rescues)

    def _rescue_dead_end(self, skip_elide: bool, progress: Callable[[], bool],
                         rescues: list[str]) -> bool:
        """``#rescueCompactionDeadEnd``: frame rebuild, then elide, then drop images."""
        if self._rescue_frames():
            rescues.append("frame-rebuild")
            if progress():
                return True
        if not skip_elide:
            applied = self.pipeline.shake(RESCUE_SHAKE_CONFIG)
            if applied.tool_results_dropped + applied.blocks_dropped > 0:
                rescues.append("elide")
                if progress():
                    return True
        if self._drop_images():
            rescues.append("drop-images")
            if progress():
                return True
        return False

    def _rescue_unpreparable(self, reason: str, fallback_from_shake: bool,
                             rescues: list[str]) -> CompactionPreparation | None:
        """Nothing to summarize (SM:4410-4540): rebuild the archive smaller, else elide or drop
        images until a cut point appears."""
        if reason == "idle":
            return None
        if self._rescue_frames():
            rescues.append("frame-rebuild")
            if self._headroom():
                return None
        found: list[CompactionPreparation] = []

        def progress() -> bool:
            prep = self._prepare()
            if prep is not None:
                found.append(prep)
            return prep is not None

        if not fallback_from_shake:
            applied = self.pipeline.shake(RESCUE_SHAKE_CONFIG)
            if applied.tool_results_dropped + applied.blocks_dropped > 0:
                rescues.append("elide")
                if progress():
                    return found[-1]
        if self._drop_images():
            rescues.append("drop-images")
            if progress():
                return found[-1]
        return None

    def _latest_compaction(self) -> CompactionEntry | None:
        return self.session.latest_compaction()

    def _latest_archive(self) -> Any | None:
        entry = self._latest_compaction()
        return get_preserved_archive(entry.preserve_data) if entry is not None else None

    def _rescue_frames(self) -> bool:
        """``#rescueSnapcompactFrameOverflow``: re-render the latest archive's own text at a
        frame budget sized to the recovery band; appended only when it has fewer frames."""
        if not self.model.supports_images:
            return False
        branch = self.session.get_branch()
        stale = self._latest_compaction()
        if stale is None:
            return False
        kept_tail = 0
        in_kept = False
        for entry in branch:
            if entry.id == stale.first_kept_entry_id:
                in_kept = True
            if entry.id == stale.id:
                in_kept = True
                continue
            if in_kept and isinstance(entry, MessageEntry):
                kept_tail += self.estimator.message(entry.message)
        archive = get_preserved_archive(stale.preserve_data)
        if archive is None or len(archive.frames) <= 1 or not archive_source_text(archive):
            return False
        sc = self.settings.snapcompact
        shape = resolve_shape(self.model.id, api=self.model.api, provider=self.model.provider,
                              shape=sc.shape, frame_size=sc.frame_size).shape
        max_frames = rescue_max_frames(
            threshold_tokens=self.threshold(), non_message_tokens=self.non_message_tokens,
            kept_tail_tokens=kept_tail, shape=shape, provider=self.model.provider,
            recovery_band=COMPACTION_RECOVERY_BAND, frame_tokens=self.estimator.frame_tokens,
            edge_chars=text_edge_chars(sc), data_budget=sc.frame_cap_bytes == "estimate")
        if max_frames < 1 or max_frames >= len(archive.frames):
            return False
        ops = FileOperations.from_details(stale.details) if stale.details else FileOperations()
        try:
            result = compact([], model_id=self.model.id, api=self.model.api,
                             provider=self.model.provider,
                             shape=None if sc.shape == "auto" else sc.shape,
                             policy=sc.policy,  # type: ignore[arg-type]
                             previous=stale.preserve_data, max_frames=max_frames,
                             frame_size=sc.frame_size,
                             serialize_options={"include_thinking": self.model.include_thinking},
                             file_ops=ops, first_kept_entry_id=stale.first_kept_entry_id,
                             text_edge_chars=text_edge_chars(sc),
                             middle_shape=sc.middle_shape)
        except (ValueError, RuntimeError) as exc:
            self._notice(f"snapcompact frame rescue failed: {exc}")
            return False
        if len(result.archive.frames) >= len(archive.frames):
            return False
        self.session.append_compaction(result.summary, stale.first_kept_entry_id,
                                       stale.tokens_before, short_summary=result.short_summary,
                                       details=result.details.to_json(),
                                       preserve_data=result.preserve_data)
        self._notice("compaction dead-end recovery: rebuilt the snapcompact archive at a smaller "
                     f"frame budget ({len(archive.frames)} -> {len(result.archive.frames)} frames)")
        return True

    def _drop_images(self) -> int:
        """``dropImages``: strip image blocks from every message on the branch."""
        replacements: dict[str, Mapping[str, Any]] = {}
        entries: dict[str, Any] = {}
        removed = 0
        for entry in self.session.get_branch():
            if isinstance(entry, MessageEntry):
                content, n = _strip_images(entry.message.get("content"))
                if n:
                    replacements[entry.id] = {**entry.message, "content": content}
                    removed += n
            elif isinstance(entry, CustomMessageEntry) and not isinstance(entry.content, str):
                content, n = _strip_images(list(entry.content))
                if n:
                    entries[entry.id] = replace(entry, content=tuple(content))
                    removed += n
        if replacements:
            self.session.replace_messages(replacements)
        if entries:
            self.session.replace_entries(entries)
        return removed
