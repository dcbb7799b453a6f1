"""The agent-side loop around compaction: triggers, pruning, strategy choice, persistence.

Why one object: every trigger ends the same way (prepare the cut, ask the hooks, run a
strategy, append the entry, rebuild the context), but each enters differently. Overflow and
incomplete output drop the failing message and retry; threshold maintenance prunes tool output
first and compacts only if that was not enough; idle maintenance runs between turns; manual
compaction takes instructions. :class:`CompactionPipeline` owns a :class:`~.session.Session`, the
model facts, the settings, the injected completion function and the hooks.

Strategy choice per reason: ``off`` disables automatic maintenance (manual still summarizes);
``handoff`` is never used for overflow (the handoff request would overflow too) nor for manual
compaction; snapcompact falls back to context-full with a warning when it cannot run; ``shake``
elides heavy content in place (no entry written) and falls back to context-full when it frees
nothing on overflow or leaves the context above 80 % of the threshold (manual compaction
summarizes; :meth:`CompactionPipeline.shake` is the manual shake).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from snapcompact.archive import message_from_json
from snapcompact.compaction.branch import (
    collect_entries_for_branch_summary,
    generate_branch_summary,
)
from snapcompact.compaction.context import (
    SessionContext,
    archive_blocks,
    build_session_context,
    convert_to_llm,
    estimate_entry_tokens,
    to_wire_json,
)
from snapcompact.compaction.control import (
    AbortSignal,
    CompactionAborted,
    guarded_complete,
    with_candidates,
)
from snapcompact.compaction.cut_point import CompactionPreparation, prepare_compaction
from snapcompact.compaction.entries import CompactionEntry, Entry
from snapcompact.compaction.hooks import (
    BeforeCompactEvent,
    BeforeTreeEvent,
    Cancel,
    CompactingEvent,
    HookCompaction,
    Hooks,
    TreeEvent,
)
from snapcompact.compaction.inline import InlineImager, InlineOptions, InlineRequest
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.openai_compact import (
    ResponsesCompactFn,
    compact_openai_remote,
    uses_openai_remote_compaction,
)
from snapcompact.compaction.prompts import prompt
from snapcompact.compaction.pruning import (
    PruneResult,
    prune_superseded_tool_results,
    prune_tool_outputs,
)
from snapcompact.compaction.remote import remote_complete
from snapcompact.compaction.session import Session
from snapcompact.compaction.settings import DEFAULT_SETTINGS, Settings
from snapcompact.compaction.shake import (
    AGGRESSIVE_SHAKE_CONFIG,
    DEFAULT_SHAKE_CONFIG,
    ShakeApplied,
    ShakeConfig,
    apply_shake_regions,
    collect_shake_regions,
    shake_artifact_text,
    shake_placeholder,
)
from snapcompact.compaction.strategies import (
    CompactionPayload,
    StrategyFallback,
    compact_context_full,
    compact_snapcompact,
    generate_handoff,
    generate_handoff_live,
)
from snapcompact.compaction.summarize import CompleteFn
from snapcompact.compaction.tokens import TokenEstimator
from snapcompact.compaction.triggers import (
    Reason,
    compaction_threshold,
    decide_after_turn,
    failure_message,
    recovery_trigger,
    should_run_idle,
)
from snapcompact.pricing import resolve_shape

__all__ = ["CompactionOutcome", "CompactionPipeline", "NavigationOutcome"]


@dataclass(frozen=True)
class CompactionOutcome:
    """What one maintenance run did. ``entry`` is None when nothing was written."""

    reason: str
    strategy: str | None = None
    entry: CompactionEntry | None = None
    handoff_session: Session | None = None
    cancelled: bool = False
    skipped: str | None = None
    error: str | None = None
    will_retry: bool = False
    auto_continue_prompt: str | None = None
    pruned: PruneResult | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: Context promotion: the larger model switched to instead of compacting.
    promoted_to: str | None = None
    #: The shake strategy: what it elided in place (no entry is written).
    shaken: ShakeApplied | None = None


@dataclass(frozen=True)
class NavigationOutcome:
    """Result of moving the leaf to another entry, with the branch summary written on the way."""

    cancelled: bool
    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry: Entry | None = None
    #: The branch summary was aborted (Escape); nothing changed.
    aborted: bool = False


def _has_tool_calls(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, Mapping) and b.get("type") == "toolCall"
                                             for b in content)


#: After an automatic shake the context must be back under this share of the threshold (the coding
#: agent's recovery band), else the next method runs: shaking again would find nothing new.
SHAKE_RECOVERY_BAND = 0.8


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _iso_to_ms(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


class CompactionPipeline:
    """An agent's compaction loop over one session: pruning, thresholds, strategies, hooks."""

    def __init__(self, session: Session, model: ModelInfo, *, settings: Settings = DEFAULT_SETTINGS,
                 complete: CompleteFn | None = None, hooks: Hooks | None = None,
                 protected_paths: Collection[str] = (), clock: Callable[[], float] = time.time,
                 handoff_path: Callable[[Session], str | Path | None] | None = None,
                 estimator: TokenEstimator | None = None,
                 models: Collection[ModelInfo] = (), chat: Callable[..., Any] | None = None,
                 system_prompt: str | Sequence[str] | None = None,
                 tools: Sequence[Mapping[str, Any]] | None = None,
                 responses_compact: ResponsesCompactFn | None = None) -> None:
        self.session = session
        self.model = model
        self.settings = settings
        #: Cooperative cancellation of the running compaction, handoff or branch summary.
        self.abort_signal = AbortSignal()
        self._running = threading.Lock()
        #: Called with ``{"type": "auto_compaction_start"|"auto_compaction_end", ...}`` events.
        self.listeners: list[Callable[[Mapping[str, Any]], None]] = []
        if isinstance(complete, (list, tuple)):
            # Several summarizer models: transient failures retried, long waits go to the next.
            complete = with_candidates(complete, signal=self.abort_signal)
        self.complete = complete
        self.hooks = hooks or Hooks()
        self.protected_paths = tuple(protected_paths)
        #: :meth:`_shake_config` per base config: (base, boundary, protected paths, config).
        self._shake_configs: dict[int, tuple[ShakeConfig, str | None, Any, ShakeConfig]] = {}
        self.clock = clock
        self._handoff_path = handoff_path
        self._estimator = estimator
        #: Models available for context promotion (by id).
        self.models = {m.id: m for m in models}
        #: The live request parts a handoff reuses (see :meth:`generate_handoff_document`).
        self.chat = chat
        self.system_prompt = system_prompt
        self.tools = tools
        #: OpenAI's ``/responses/compact`` (see :mod:`.openai_compact`), tried first for OpenAI
        #: models.
        self.responses_compact = responses_compact
        self.notices: list[str] = []
        self._handoff_pending = False
        self._inline: InlineImager | None = None

    # ------------------------------------------------------------------ views

    _estimator_from_model = False

    @property
    def estimator(self) -> TokenEstimator:
        """Every token count of this pipeline (thresholds, cut points, pruning) goes through it.

        Default: the agent core's estimate (:mod:`.tokens`), except that an archive frame is
        charged the model's ``image_tokens``, else the frame estimate of the shape and frame size
        the snapcompact settings resolve to for this model (the agent core charges a flat 5,024,
        which overcounts the smaller frames this pipeline can be configured to render).
        """
        if self._estimator is None:
            frame_tokens = self.model.image_tokens
            if frame_tokens is None:

                sc = self.settings.snapcompact
                frame_tokens = resolve_shape(self.model.id, api=self.model.api,
                                             provider=self.model.provider, shape=sc.shape,
                                             frame_size=sc.frame_size).frame_token_estimate
            limit = self.settings.snapcompact.max_frame_data_bytes
            self._estimator = TokenEstimator(
                frame_tokens=frame_tokens,
                archive_blocks=lambda message: archive_blocks(message, limit))
            self._estimator_from_model = True
        return self._estimator

    @property
    def image_tokens(self) -> int:
        """Tokens charged per archive frame (see :attr:`estimator`)."""
        return self.estimator.frame_tokens

    def context(self) -> SessionContext:
        """The LLM context the current branch builds (compactions applied)."""
        return build_session_context(self.session.get_branch())

    def transcript(self) -> SessionContext:
        """The current branch as a transcript: every message, compactions shown in place."""
        return build_session_context(self.session.get_branch(), transcript=True)

    def llm_messages(self) -> list[Any]:
        """The context as wire messages for the LLM, dropping what it never sees.

        With inline imaging on (``snapcompact.systemPrompt`` / ``snapcompact.toolResults``) these
        are the messages after it, as the agent sends them: the coding agent runs the transform
        on every provider request (18.3.4 ``sdk.ts:3932-3953``, ``transformProviderContext``;
        ``session/snapcompact-inline.ts``), not only on request. The session keeps the text;
        :meth:`llm_system_prompt` is the system prompt that goes with these messages.
        """
        limit = self.settings.snapcompact.max_frame_data_bytes
        if not InlineOptions.from_settings(self.settings.snapcompact).enabled:
            return convert_to_llm(self.context().messages, max_frame_data_bytes=limit)
        return [message_from_json(m, i) for i, m in enumerate(self.inline_request().messages)]

    def llm_system_prompt(self) -> tuple[str, ...]:
        """The system prompt the next request sends: the pipeline's, or its stub when inline
        imaging moved it (or its context-file sections) into frames on the first user message
        (``snapcompact.systemPrompt``)."""
        if not InlineOptions.from_settings(self.settings.snapcompact).enabled:
            prompt_ = self.system_prompt
            return (prompt_,) if isinstance(prompt_, str) else tuple(prompt_ or ())
        return self.inline_request().system_prompt

    def inline_request(self, system_prompt: str | Sequence[str] | None = None) -> InlineRequest:
        """The next request after inline imaging (``snapcompact.systemPrompt``/``toolResults``):
        the system prompt (default: the pipeline's) and the wire-role messages, with large older
        tool results and the prompt as frames where that pays. The session is not changed; frames
        are cached across calls."""
        options = InlineOptions.from_settings(self.settings.snapcompact)
        if (self._inline is None or self._inline.options != options
            or self._inline.estimator is not self.estimator):
            self._inline = InlineImager(options, self.estimator)
        limit = self.settings.snapcompact.max_frame_data_bytes
        wire = [w for m in self.context().messages
                if (w := to_wire_json(m, max_frame_data_bytes=limit)) is not None]
        return self._inline.transform(self.system_prompt if system_prompt is None
                                      else system_prompt, wire, self.model)

    def estimate_tokens(self) -> int:
        """Estimated prompt tokens of the current branch (from running totals: cheap when
        nothing changed, proportional to what was added otherwise)."""
        return self.session.branch_index.context_tokens(self.estimator)

    def threshold(self) -> int:
        """Context tokens above which auto-compaction runs, for this model and settings."""
        return compaction_threshold(self.model, self.settings.compaction)

    def _notice(self, text: str) -> str:
        self.notices.append(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)
        return text

    # ------------------------------------------------------------------ pruning

    def prune(self) -> PruneResult:
        """The threshold prune, applied to the session (file rewritten when anything changed)."""
        result = prune_tool_outputs(self.session.branch_index.sync(), self.settings.pruning,
                                    protected_paths=self.protected_paths, estimator=self.estimator)
        if result.changed:
            self.session.replace_messages(result.replacements)
        return result

    def prune_stale(self, idle_seconds: float = 0.0) -> PruneResult:
        """Drop superseded and useless tool results (when enabled) and rewrite the session."""
        if not self.settings.compaction.drop_useless:
            return PruneResult({}, 0, {})
        result = prune_superseded_tool_results(self.session.branch_index.sync(),
                                               self.settings.pruning,
                                               idle_seconds=idle_seconds,
                                               protected_paths=self.protected_paths,
                                               estimator=self.estimator)
        if result.changed:
            self.session.replace_messages(result.replacements)
        return result

    # ------------------------------------------------------------------ compaction

    def _strategy_for(self, reason: Reason, custom_instructions: str | None) -> str:
        strategy = self.settings.compaction.strategy
        if strategy == "off":
            return "context-full"  # only manual compaction gets here
        if strategy == "handoff" and reason in ("overflow", "manual"):
            return "context-full"
        if strategy == "snapcompact" and custom_instructions:
            return "context-full"
        if strategy == "shake" and reason == "manual":
            # a manual compaction asks for a summary; shake() is the manual shake
            return "context-full"
        return strategy

    def _kept_tokens(self, prep: CompactionPreparation) -> int:
        return sum(estimate_entry_tokens(self.session.get(i), self.estimator)
                   for i in prep.kept_entry_ids)

    def abort_compaction(self) -> None:
        """Stop the running compaction, handoff or branch summary (it ends cancelled, writing
        nothing)."""
        self.abort_signal.abort()

    def _emit(self, event: Mapping[str, Any]) -> None:
        for listener in self.listeners:
            listener(event)

    def compact(self, custom_instructions: str | None = None, *, reason: Reason = "manual",
                will_retry: bool = False,
                measured_prompt_tokens: int | None = None,
                auto_continue: bool = False) -> CompactionOutcome:
        """Run one compaction now. Manual failures raise; automatic ones return ``error``.

        A manual compaction first aborts one already running (in another thread) and waits for it
        to stop. Automatic ones are bracketed by ``auto_compaction_start``/``_end`` events. An
        aborted run returns ``cancelled=True, skipped="aborted"``.
        """
        if reason == "manual" and self._running.locked():
            self.abort_signal.abort()
        with self._running:
            self.abort_signal.reset()
            automatic = reason != "manual"
            if automatic:
                self._emit({"type": "auto_compaction_start", "reason": reason})
            try:
                outcome = self._compact(custom_instructions, reason, will_retry,
                                        measured_prompt_tokens, auto_continue)
            except CompactionAborted:
                outcome = CompactionOutcome(reason, cancelled=True, skipped="aborted")
            except Exception as exc:
                if not automatic:
                    raise
                outcome = CompactionOutcome(reason,
                                            error=self._notice(failure_message(reason, str(exc))),
                                            will_retry=False)
            if automatic:
                self._emit({"type": "auto_compaction_end", "reason": reason, "outcome": outcome,
                            "aborted": outcome.skipped == "aborted", "error": outcome.error})
            return outcome

    def _compact(self, custom_instructions: str | None, reason: Reason, will_retry: bool,
                 measured: int | None, auto_continue: bool) -> CompactionOutcome:
        shake_notes: list[str] = []
        if self._strategy_for(reason, custom_instructions) == "shake":
            # Shake runs first and inline (cheap, no LLM); when it cannot recover enough context
            # the next method of the agent's default order, a context-full summary, runs instead.
            shaken, note = self._auto_shake(reason, will_retry, measured, auto_continue)
            if shaken is not None:
                return shaken
            shake_notes.append(self._notice(note))
        path = self.session.get_branch()
        prep = prepare_compaction(path, self.settings.compaction.keep_recent_tokens,
                                  measured_prompt_tokens=measured, estimator=self.estimator)
        if prep is None:
            if reason in ("overflow", "incomplete"):
                # Retrying would send the same oversized context again: recovery failed, no retry.
                return CompactionOutcome(reason, skipped="nothing to compact", will_retry=False,
                                         error=self._notice(failure_message(
                                             reason,
                                             "nothing to compact (the kept recent turn alone is "
                                             "too large)")),
                                         warnings=tuple(shake_notes))
            return CompactionOutcome(reason, skipped="nothing to compact", will_retry=False,
                                     warnings=tuple(shake_notes))
        hook = self.hooks.run_before_compact(BeforeCompactEvent(prep, tuple(path),
                                                                custom_instructions, reason,
                                                                will_retry))
        if isinstance(hook, Cancel):
            return CompactionOutcome(reason, cancelled=True, skipped=hook.reason)
        notes: list[str] = list(shake_notes)
        payload: CompactionPayload | None  # from the hook or a strategy; None until one answers
        if isinstance(hook, HookCompaction):
            payload = CompactionPayload(
                summary=hook.summary,
                first_kept_entry_id=hook.first_kept_entry_id or prep.first_kept_entry_id,
                tokens_before=hook.tokens_before if hook.tokens_before is not None
                else prep.tokens_before,
                strategy="extension", short_summary=hook.short_summary, details=hook.details,
                preserve_data=hook.preserve_data, usage=hook.usage, from_extension=True)
        else:
            strategy = self._strategy_for(reason, custom_instructions)
            overrides = self.hooks.run_compacting(CompactingEvent(prep, reason))
            payload = None
            if strategy == "shake":
                strategy = "context-full"
            if strategy == "handoff":
                outcome = self._handoff(reason, custom_instructions, prep)
                if outcome is not None:
                    return outcome
                notes.append(self._notice("handoff returned no document: falling back to "
                                          "context-full"))
                strategy = "context-full"
            if strategy == "snapcompact":
                try:
                    payload = compact_snapcompact(prep, self.model, self.settings,
                                                  kept_tokens=self._kept_tokens(prep),
                                                  custom_instructions=custom_instructions,
                                                  overrides=overrides)
                except StrategyFallback as exc:
                    notes.append(self._notice(str(exc)))
            if payload is None:
                payload = self._openai_remote(prep, notes)
            if payload is None:
                payload = compact_context_full(prep,
                                               guarded_complete(self.summary_complete(),
                                                                self.abort_signal),
                                               self.model, self.settings,
                                               custom_instructions=custom_instructions,
                                               overrides=overrides)
        notes.extend(self._notice(note) for note in payload.warnings)
        entry = self.session.append_compaction(
            payload.summary, payload.first_kept_entry_id, payload.tokens_before,
            short_summary=payload.short_summary,
            details=payload.details, preserve_data=payload.preserve_data,
            from_extension=payload.from_extension, usage=payload.usage)
        self.hooks.emit_compact(entry, payload.from_extension)
        return CompactionOutcome(
            reason, payload.strategy, entry, will_retry=will_retry,
            auto_continue_prompt=prompt("auto-continue") if auto_continue else None,
            tokens_before=payload.tokens_before, tokens_after=self.estimate_tokens(),
            warnings=tuple(notes))

    def _openai_remote(self, prep: CompactionPreparation,
                       notes: list[str]) -> CompactionPayload | None:
        """OpenAI/Codex models: the provider's compact endpoint first; None = summarize locally."""
        if (self.responses_compact is None or not self.settings.compaction.remote_enabled
                or not uses_openai_remote_compaction(self.model)):
            return None
        self.abort_signal.check()
        try:
            payload = compact_openai_remote(prep, self.responses_compact, self.model,
                                            prompt("summarization-system"))
        except CompactionAborted:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the native request: summarize locally
            notes.append(self._notice(f"OpenAI remote compaction failed ({_one_line(exc)}): "
                                      "summarizing locally"))
            return None
        self.abort_signal.check()
        return payload

    # ------------------------------------------------------------------ shake

    def _shake_config(self, base: ShakeConfig) -> ShakeConfig:
        """``base`` at the latest compaction boundary, with the caller's protected paths (the
        plan)."""
        latest = self.session.latest_compaction()  # from the branch index (no walk)
        boundary = latest.first_kept_entry_id if latest is not None else None
        # Every maintenance pass shakes (39,555 in a 60,000-message replay), nearly always with
        # the same base, boundary and plan: the config made last for them is reused (frozen).
        made = self._shake_configs.get(id(base))
        if made is not None and made[0] is base and made[1] == boundary \
                and made[2] == self.protected_paths:
            return made[3]
        config = replace(base, keep_boundary_id=boundary,
                         protected_paths=(*base.protected_paths, *self.protected_paths))
        if len(self._shake_configs) > 8:
            self._shake_configs.clear()
        self._shake_configs[id(base)] = (base, boundary, self.protected_paths, config)
        return config

    def _save_shake_artifact(self, text: str) -> str | None:
        """Keep the shaken originals next to the session file; the artifact id, or None in
        memory."""
        if self.session.path is None:
            return None
        folder = self.session.path.with_name(self.session.path.stem + ".artifacts")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            number = sum(1 for _ in folder.glob("shake-*.md")) + 1
            while (folder / f"shake-{number}.md").exists():
                number += 1
            (folder / f"shake-{number}.md").write_text(text, encoding="utf-8")
        except OSError as exc:
            self._notice(f"shake could not save a recovery artifact ({exc}); placeholders carry no "
                         "link")
            return None
        return f"shake-{number}"

    def shake(self, config: ShakeConfig = AGGRESSIVE_SHAKE_CONFIG) -> ShakeApplied:
        """Elide heavy content now (the manual shake: aggressive by default).

        The session is rewritten when anything was elided; the originals go to a recovery artifact
        when the session has a file.
        """
        self.abort_signal.check()
        path = self.session.branch_index.sync()  # read only: the index's own list, not a copy
        regions = collect_shake_regions(path, self._shake_config(config), estimator=self.estimator)
        if not regions:
            return ShakeApplied({}, 0, 0, 0)
        artifact_id = self._save_shake_artifact(shake_artifact_text(regions))
        self.abort_signal.check()
        applied = apply_shake_regions(path, regions, [shake_placeholder(r, i, artifact_id)
                                                      for i, r in enumerate(regions)],
                                      now_ms=int(self.clock() * 1000), estimator=self.estimator)
        self.session.replace_entries(applied.replacements)
        return applied

    def _auto_shake(self, reason: Reason, will_retry: bool, measured: int | None,
                    auto_continue: bool) -> tuple[CompactionOutcome | None, str]:
        """The shake strategy: an outcome when shake handled the maintenance, else (None, why)."""
        tokens_before = max(measured or 0, self.estimate_tokens())
        applied = self.shake(DEFAULT_SHAKE_CONFIG)
        reclaimed = applied.tool_results_dropped + applied.blocks_dropped > 0
        threshold = self.threshold()
        if measured is not None:
            # Provider-anchored: the measured prompt less what shake freed, against the recovery
            # band.
            still_over = (max(0, measured - applied.tokens_freed)
                          > int(threshold * SHAKE_RECOVERY_BAND))
        else:
            still_over = self.estimate_tokens() > threshold
        if reason != "idle" and ((reason == "overflow" and not reclaimed) or still_over):
            if reclaimed:
                return None, (f"shake freed ~{applied.tokens_freed} tokens but the context is "
                              "still above "
                              "the threshold: falling back to context-full")
            return None, "shake found nothing to elide: falling back to context-full"
        return CompactionOutcome(reason, "shake", will_retry=will_retry,
                                 auto_continue_prompt=prompt("auto-continue") if auto_continue
                                 and reclaimed else None,
                                 tokens_before=tokens_before, tokens_after=self.estimate_tokens(),
                                 shaken=applied), ""

    def _handoff(self, reason: Reason, custom_instructions: str | None,
                 prep: CompactionPreparation) -> CompactionOutcome | None:
        document = self.generate_handoff_document(custom_instructions)
        if not document:
            return None
        return self._start_handoff_session(reason, document, prep.tokens_before)

    def _start_handoff_session(self, reason: str, document: str,
                               tokens_before: int) -> CompactionOutcome:
        old = self.session
        if self._handoff_path is not None:
            new_path = self._handoff_path(old)
        elif old.path is not None:
            # One suffix, not one per generation (a long run of handoffs would outgrow NAME_MAX).
            stem = re.sub(r"(\.handoff-[0-9a-f]{8})+$", "", old.path.stem)
            new_path = old.path.with_name(f"{stem}.handoff-{uuid.uuid4().hex[:8]}.jsonl")
        else:
            new_path = None
        new = old.fork(new_path)
        new.append_custom_message("handoff", document)
        self.session = new
        return CompactionOutcome(reason, "handoff", handoff_session=new,
                                 tokens_before=tokens_before, tokens_after=self.estimate_tokens())

    def generate_handoff_document(self, custom_instructions: str | None = None) -> str:
        """The handoff document: asked of the live conversation (the agent's system prompt, tools
        and real history, ``tool_choice="none"``) when a ``chat`` function and the system prompt
        were given; otherwise from a serialized transcript under the summarizer prompt."""
        if self.chat is not None and self.system_prompt is not None:
            self.abort_signal.check()
            document = generate_handoff_live(self.context().messages, self.chat, self.model,
                                             self.settings,
                                             system_prompt=self.system_prompt, tools=self.tools,
                                             custom_instructions=custom_instructions)
            self.abort_signal.check()
            return document
        return generate_handoff(self.context().messages,
                                guarded_complete(self.complete, self.abort_signal),
                                self.model, self.settings, custom_instructions=custom_instructions)

    def handoff(self, custom_instructions: str | None = None) -> CompactionOutcome:
        """Manual handoff: a document for a fresh session, which becomes this pipeline's session."""
        document = self.generate_handoff_document(custom_instructions)
        if not document:
            return CompactionOutcome("manual", "handoff", skipped="handoff returned no document")
        return self._start_handoff_session("manual", document, self.estimate_tokens())

    def summary_complete(self) -> CompleteFn | None:
        """What compaction summaries are asked of: ``compaction.remoteEndpoint`` when set and
        ``remoteEnabled``, else the injected completion function (handoffs and branch summaries
        always use the latter)."""
        cs = self.settings.compaction
        if cs.remote_enabled and cs.remote_endpoint:

            return remote_complete(cs.remote_endpoint, model=self.model.id)
        return self.complete

    # ------------------------------------------------------------------ promotion

    def promotion_target(self) -> ModelInfo | None:
        """The configured larger-window model to switch to, if promotion is on and one is known."""
        if not self.settings.compaction.context_promotion or self.model.promotion_target is None:
            return None
        target = self.models.get(self.model.promotion_target)
        if (target is None or target.id == self.model.id
            or target.context_window <= self.model.context_window):
            return None
        return target

    def promote(self) -> ModelInfo | None:
        """Switch to the promotion target (no compaction); the new model, or None when there is
        none."""
        target = self.promotion_target()
        if target is None:
            return None
        self.model = target
        if self._estimator is not None and self._estimator_from_model:
            self._estimator = None  # re-derive the frame charge for the new model
        return target

    # ------------------------------------------------------------------ triggers

    def _latest_compaction_ms(self) -> float | None:
        entry = self.session.latest_compaction()
        return _iso_to_ms(entry.timestamp) if entry is not None else None

    def after_turn(self, message: Mapping[str, Any], *, measured_prompt_tokens: int | None = None,
                   idle_seconds: float = 0.0) -> CompactionOutcome | None:
        """Record an assistant message and run the maintenance it calls for.

        An overflow or length-cut message is not recorded (it is dropped before the retry); the
        outcome then has ``will_retry``. Otherwise the message is appended, stale results are
        pruned, and if the context still exceeds the threshold tool output is pruned and, if that
        is not enough, the context is compacted.
        """
        cs = self.settings.compaction
        # Overflow and cut-off output try promotion whether or not compaction is on (the coding
        # agent, session-maintenance.ts:2870-2886 and 3050-3068; see recovery_trigger).
        first = recovery_trigger(message, model_id=self.model.id,
                                 latest_compaction_time=self._latest_compaction_ms())
        if first is not None and (self.promotion_target() is not None
                                  or (cs.enabled and cs.strategy != "off")):
            failed = self.model.id
            target = self.promote()
            if target is not None:
                # Retry on the larger model without compacting (the failing message is dropped).
                return CompactionOutcome(first.reason, strategy="promotion", will_retry=True,
                                         promoted_to=target.id,
                                         warnings=(self._notice(f"context promoted from {failed} "
                                                                f"to {target.id}"),))
            outcome = self.compact(reason=first.reason, will_retry=True,
                                   measured_prompt_tokens=measured_prompt_tokens)
            return outcome
        self.session.append_message(message)
        if not cs.enabled or cs.strategy == "off":
            return None
        if message.get("stopReason") in ("error", "aborted"):
            return None
        has_calls = _has_tool_calls(message)
        if self._handoff_pending and not has_calls:
            # The agent's turn is over: run the handoff scheduled while tools were still running.
            self._handoff_pending = False
            return self.compact(reason="threshold", measured_prompt_tokens=measured_prompt_tokens)
        self.prune_stale(idle_seconds)
        tokens = max(measured_prompt_tokens or 0, self.estimate_tokens())
        if tokens <= self.threshold():
            return None
        pruned = self.prune()
        measured_after = ((measured_prompt_tokens - pruned.tokens_saved) if measured_prompt_tokens
                          else None)
        tokens = max(measured_after or 0, self.estimate_tokens())
        trigger = decide_after_turn(message, context_window=self.model.context_window, settings=cs,
                                    context_tokens=tokens, model_id=self.model.id)
        if trigger is None:
            return CompactionOutcome("threshold", skipped="pruning was enough", pruned=pruned,
                                     tokens_before=tokens, tokens_after=self.estimate_tokens())
        failed = self.model.id
        target = self.promote()
        if target is not None:
            return CompactionOutcome("threshold", strategy="promotion", pruned=pruned,
                                     tokens_before=tokens,
                                     promoted_to=target.id, tokens_after=self.estimate_tokens(),
                                     warnings=(self._notice(f"context promoted from {failed} to "
                                                            f"{target.id}"),))
        if cs.strategy == "handoff" and has_calls:
            # A handoff starts a new session; doing it while tool results are pending would strand
            # them. Schedule it for the end of the agent's turn instead.
            self._handoff_pending = True
            return CompactionOutcome("threshold", skipped="handoff scheduled after the turn",
                                     pruned=pruned, tokens_before=tokens)
        outcome = self.compact(reason="threshold", measured_prompt_tokens=measured_after,
                               auto_continue=trigger.auto_continue)
        self._inject_auto_continue(outcome)
        return CompactionOutcome(**{**outcome.__dict__, "pruned": pruned})

    def _inject_auto_continue(self, outcome: CompactionOutcome) -> None:
        """After threshold maintenance, the agent-authored developer prompt that resumes the
        work."""
        wrote = outcome.entry is not None or (outcome.shaken is not None
                                              and outcome.shaken.replacements)
        if outcome.auto_continue_prompt and wrote and outcome.error is None:
            self.session.append_message({"role": "developer", "attribution": "agent",
                                         "content": [{"type": "text",
                                                      "text": outcome.auto_continue_prompt}],
                                         "timestamp": int(self.clock() * 1000)})

    def before_prompt(self, *,
                      measured_prompt_tokens: int | None = None) -> CompactionOutcome | None:
        """Pre-prompt check, before the next user message is appended: maintenance runs inline.

        When the context is over the threshold (or a handoff was scheduled after the last turn),
        promotion is tried, then the configured maintenance runs now, a handoff included, so it
        cannot race the turn the prompt starts. No auto-continue: the user's prompt is the next
        turn itself.
        """
        cs = self.settings.compaction
        if not cs.enabled or cs.strategy == "off":
            return None
        tokens = max(measured_prompt_tokens or 0, self.estimate_tokens())
        if not self._handoff_pending and tokens <= self.threshold():
            return None
        self._handoff_pending = False
        failed = self.model.id
        target = self.promote()
        if target is not None and tokens <= self.threshold():
            return CompactionOutcome("threshold", strategy="promotion", promoted_to=target.id,
                                     tokens_before=tokens, tokens_after=tokens,
                                     warnings=(self._notice(f"context promoted from {failed} to "
                                                            f"{target.id}"),))
        return self.compact(reason="threshold", measured_prompt_tokens=measured_prompt_tokens)

    def run_idle(self, idle_seconds: float | None = None, *, streaming: bool = False,
                 compacting: bool = False) -> CompactionOutcome | None:
        """Idle maintenance (no auto-continue afterwards)."""
        if idle_seconds is None:
            path = self.session.get_branch()
            last = path[-1].timestamp if path else None
            idle_seconds = (self.clock() - _iso_to_ms(last) / 1000) if last else 0.0
        trigger = should_run_idle(self.settings.compaction, context_tokens=self.estimate_tokens(),
                                  idle_seconds=idle_seconds, streaming=streaming,
                                  compacting=compacting)
        if trigger is None:
            return None
        self.prune_stale(idle_seconds)
        return self.compact(reason="idle")

    # ------------------------------------------------------------------ tree navigation

    def navigate_tree(self, target_id: str | None, *, summarize: bool | None = None,
                      custom_instructions: str | None = None) -> NavigationOutcome:
        """Move the leaf to ``target_id``, optionally summarizing the abandoned branch there."""
        if target_id is not None and target_id not in self.session:
            raise ValueError(f"unknown navigation target {target_id!r}")
        old_leaf = self.session.leaf_id
        if summarize is None:
            summarize = self.settings.branch_summary.enabled
        common, abandoned = collect_entries_for_branch_summary(self.session, old_leaf, target_id)
        hook = self.hooks.run_before_tree(BeforeTreeEvent(target_id, old_leaf, common,
                                                          tuple(abandoned), summarize))
        if isinstance(hook, Cancel):
            return NavigationOutcome(True, old_leaf, old_leaf)
        summary_entry = None
        if summarize and abandoned and old_leaf is not None:
            if hook is not None:
                summary, details, usage, from_ext = hook.summary, hook.details, hook.usage, True
            else:
                self.abort_signal.reset()
                try:
                    summary, details, usage = generate_branch_summary(
                        abandoned, guarded_complete(self.complete, self.abort_signal), self.model,
                        self.settings,
                        custom_instructions=custom_instructions, estimator=self.estimator)
                except CompactionAborted:
                    # Escape during the summary: navigation is cancelled, the leaf stays.
                    return NavigationOutcome(True, old_leaf, old_leaf, aborted=True)
                from_ext = False
            summary_entry = self.session.branch_with_summary(target_id, old_leaf, summary,
                                                             details=details,
                                                             from_extension=from_ext, usage=usage)
        else:
            self.session.branch(target_id)
        outcome = NavigationOutcome(False, self.session.leaf_id, old_leaf, summary_entry)
        self.hooks.emit_tree(TreeEvent(outcome.new_leaf_id, old_leaf, summary_entry))
        return outcome
