"""What the maintenance reads of its session: the counts, the threshold, the budget, the order.

Why a room: every other room of the maintenance (the check points, the method loop, the
snapcompact path, the recovery band) compares the same few figures, and the agent's session
maintenance (``src/session/session-maintenance.ts``, SM below) computes each one way: the stored
context is the non-message part plus the context's messages plus the pending ones
(``#estimateStoredContextTokens``, SM:2440-2453); the threshold is the pipeline's
(:func:`~snapcompact.compaction.compaction_threshold`, read by both); a compacted context must
fit the window less the effective reserve; the method order is ``compaction.methodOrder``
(``compaction-methods.ts:44``); the branch is partitioned by ``prepareCompaction``. The view
makes each once per change of session or settings: a session above its threshold runs a pass
at every check point (39,555 in a 60,000-message replay).

:class:`~.maintenance.SessionMaintenance` holds one :class:`MaintenanceView` (its ``view``)
and hands it to the rooms; they take the view as their argument and never the orchestrator, so
none of them imports it back.
"""

from __future__ import annotations

import dataclasses
import operator
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from snapcompact.agent.counting import (
    count_non_message_tokens,
    frame_charge_kwargs,
    production_estimator,
)
from snapcompact.agent.methods import DEFAULT_METHOD_ORDER, resolve_method_order
from snapcompact.agent.rounds import MaintenanceRound
from snapcompact.agent.usage_anchor import anchored_context_tokens
from snapcompact.compaction import (
    CompactionPipeline,
    CompactionPreparation,
    Hooks,
    ModelInfo,
    Session,
    Settings,
    TokenEstimator,
    compaction_threshold,
    effective_reserve_tokens,
    prepare_compaction,
    promote,
    text_counter_for,
)

__all__ = ["MaintenanceView", "PreparationMemo"]


class PreparationMemo:
    """The partition of the branch made last, and the session version it was made at.

    A pass asks once per method it tries; the answer depends only on the branch (the session
    version and leaf name it), so an unchanged session gets the same preparation back instead
    of a new walk of the history.
    """

    def __init__(self) -> None:
        self._made: tuple[CompactionPreparation | None, tuple[int, str | None]] | None = None

    def prepare(self, session: Session, keep_recent_tokens: int,
                estimator: TokenEstimator) -> CompactionPreparation | None:
        """The preparation of ``session``'s branch as it is now."""
        version = (session.version, session.leaf_id)
        made = self._made
        if made is not None and made[1] == version:
            return made[0]
        prep = prepare_compaction(session.branch_index.sync(), keep_recent_tokens,
                                  estimator=estimator)
        self._made = (prep, version)
        return prep

    def is_current(self, prep: CompactionPreparation, session: Session) -> bool:
        """Whether ``prep`` is the one :meth:`prepare` made last and ``session`` has not
        changed since."""
        made = self._made
        return made is not None and made[0] is prep and made[1] == (session.version,
                                                                     session.leaf_id)

    def recent_tokens(self, prep: CompactionPreparation, session: Session,
                      estimator: TokenEstimator) -> int:
        """``estimator.messages(prep.recent_messages)``; from the branch's running totals when
        ``prep`` is current (the same entries, each estimated once), else counted afresh."""
        if self.is_current(prep, session):
            context = session.branch_index.totals(estimator).context
            return context[-1] - context[prep.first_kept_index]
        return estimator.messages(list(prep.recent_messages))


class MaintenanceView:
    """The agent's maintenance over one session (wraps a :class:`CompactionPipeline`): what it
    reads, and the record of its passes. :class:`~.maintenance.SessionMaintenance` composes it
and adds the check points.

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
                **frame_charge_kwargs(model, settings))
        else:
            self.text_token_method = "caller's estimator"
        self.estimator = estimator
        #: The same counter without opaque replay payloads (``thinkingSignature``,
        #: ``redactedThinking``, server-tool blocks): the agent's local estimate of the stored
        #: context and the reduction guard count that way (``excludeEncryptedReasoning``,
        #: SM:2440-2453, 2478-2497, 4706-4723), the cut point and the window guard do not.
        self.reasoning_free = dataclasses.replace(estimator, exclude_encrypted_reasoning=True)
        self.pipeline = CompactionPipeline(
            session, model, settings=settings, complete=complete, hooks=hooks,
            protected_paths=protected_paths, clock=clock, estimator=self.estimator, chat=chat,
            system_prompt=system_prompt, tools=tools, responses_compact=responses_compact,
            handoff_path=handoff_path, models=models)
        self.use_recorded_usage = use_recorded_usage
        self.non_message_tokens = count_non_message_tokens(self.estimator, system_prompt, tools)
        self.rounds: list[MaintenanceRound] = []
        self.notices: list[str] = []
        #: The source message index the next check is attributed to (set by a replay driver).
        self.message_index = -1
        #: The preparation made last (see :class:`PreparationMemo`).
        self.preparation = PreparationMemo()
        #: :meth:`derived` values: name -> (the objects they were made from, value).
        self._made: dict[str, tuple[tuple[Any, ...], Any]] = {}

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

    def derived(self, name: str, sources: tuple[Any, ...], make: Callable[[], Any]) -> Any:
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
        order: tuple[str, ...] = self.derived(
            "method_order", (cs,), lambda: DEFAULT_METHOD_ORDER if cs.method_order is None
            else resolve_method_order(cs.method_order))
        return order

    def threshold(self) -> int:
        """Context tokens above which maintenance runs (the pipeline's own threshold)."""
        model, cs = self.model, self.settings.compaction
        threshold: int = self.derived(
            "threshold", (model, cs),
            lambda: compaction_threshold(model, cs))
        return threshold

    def window_budget(self) -> int:
        """``window - effective reserve``: what a compacted context must fit in."""
        window = self.model.context_window
        return window - effective_reserve_tokens(window, self.settings.compaction)

    def stored_tokens(self, pending: Sequence[Mapping[str, Any]] = ()) -> int:
        """The agent's local estimate (``#estimateStoredContextTokens``, SM:2440-2453):
        non-message tokens + the context's messages + pending, opaque replay payloads left out
        ("its local byte size diverges from what the provider bills", SM:2442-2446)."""
        return (self.non_message_tokens
                + self.session.branch_index.context_tokens(self.reasoning_free)
                + self.reasoning_free.messages(list(pending)))

    def residual_tokens(self) -> int:
        """What the agent's headroom and fit checks read after a pass
        (``#compactionCreatedHeadroom``, SM:3769-3786; ``contextFitsModel``, SM:3807-3828):
        the larger of the context usage (the breakdown: from the usage anchor when
        ``use_recorded_usage`` finds one, else every block counted) and the local estimate."""
        anchored = None
        if self.use_recorded_usage:
            anchored = anchored_context_tokens(
                self.session.branch_index, self.estimator,
                non_message_tokens=self.non_message_tokens, pending_tokens=0)
        usage = self.context_tokens() if anchored is None else anchored
        return max(usage, self.stored_tokens())

    def context_tokens(self) -> int:
        """Non-message tokens + the context's messages, every block counted (the agent's
        ``getContextBreakdown`` without a usage anchor, session-stats.ts:304-306)."""
        return self.non_message_tokens + self.pipeline.estimate_tokens()

    def llm_messages(self) -> list[Any]:
        """The context as wire messages for the LLM."""
        return self.pipeline.llm_messages()

    def prepare(self) -> CompactionPreparation | None:
        """The partition of the current branch (``prepareCompaction``), remembered while the
        session is unchanged."""
        return self.preparation.prepare(self.session, self.settings.compaction.keep_recent_tokens,
                                        self.estimator)

    def notice(self, text: str) -> str:
        """Record ``text`` in :attr:`notices` and warn with it; returns it."""
        self.notices.append(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)
        return text

    def enabled(self) -> bool:
        """Compaction on, with at least one method in the order."""
        return self.settings.compaction.enabled and bool(self.method_order())

    def promoted(self) -> bool:
        """Context promotion instead of compacting (``#tryContextPromotion``, SM:3260-3318):
        True when the pipeline switched to the configured larger model."""
        target = promote(self.pipeline)
        if target is not None:
            self.notice(f"context promoted to {target.id}")
            return True
        return False
