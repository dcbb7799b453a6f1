"""What a compaction pipeline holds, and the views of it every room reads.

Why a room: the pipeline's rooms (:mod:`.compaction_run`, :mod:`.pipeline_shake`,
:mod:`.pipeline_handoff`, :mod:`.promotion`, :mod:`.next_request`, :mod:`.tree_navigation`)
are functions over one session with one model, one set of settings, the injected model
functions and the hooks, and all of them count the context the same way. :class:`PipelineState`
is what they are handed: the attributes, the token estimator (the agent core's, with an archive
frame charged the model's frame estimate), the context the branch builds
(``buildSessionContext``), its size and the compaction threshold
(:func:`~.triggers.compaction_threshold`, the one the agent's maintenance reads too) and the
notices. :class:`~.pipeline.CompactionPipeline` is one, with the check points on top. The
summarizer (``compaction.remoteEndpoint`` or the injected function, :func:`summary_complete`),
the transcript view and the latest compaction's time are functions of the state or its session.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from snapcompact.compaction.artifacts import ArtifactStore
from snapcompact.compaction.context import SessionContext, archive_blocks, build_session_context
from snapcompact.compaction.control import AbortSignal, with_candidates
from snapcompact.compaction.hooks import Hooks
from snapcompact.compaction.inline import InlineImager
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.openai_compact import ResponsesCompactFn
from snapcompact.compaction.remote import remote_complete
from snapcompact.compaction.session import Session
from snapcompact.compaction.settings import DEFAULT_SETTINGS, Settings
from snapcompact.compaction.settings_shape import asked_shape
from snapcompact.compaction.shake import ShakeConfig
from snapcompact.compaction.summarize import CompleteFn
from snapcompact.compaction.tokens import TokenEstimator
from snapcompact.compaction.triggers import compaction_threshold

__all__ = ["PipelineState", "iso_to_ms", "latest_compaction_ms", "summary_complete",
           "transcript"]


def iso_to_ms(stamp: str) -> float:
    """An ISO-8601 entry timestamp as epoch milliseconds (the agent's message timestamps)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


class PipelineState:
    """An agent's compaction loop over one session: what it holds and what it reads off it."""

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
        #: Held while a compaction runs (a manual one aborts the running one and waits on it).
        self.compaction_lock = threading.Lock()
        #: Called with ``{"type": "auto_compaction_start"|"auto_compaction_end", ...}`` events.
        self.listeners: list[Callable[[Mapping[str, Any]], None]] = []
        if isinstance(complete, (list, tuple)):
            # Several summarizer models: transient failures retried, long waits go to the next.
            complete = with_candidates(complete, signal=self.abort_signal)
        self.complete = complete
        self.hooks = hooks or Hooks()
        self.protected_paths = tuple(protected_paths)
        #: The shake configs made per base config: (base, boundary, protected paths, config).
        self.shake_configs: dict[int, tuple[ShakeConfig, str | None, Any, ShakeConfig]] = {}
        self.clock = clock
        #: Where a handoff's new session is written (default: next to the old one).
        self.handoff_path = handoff_path
        self._given_estimator = estimator
        #: The estimator derived from a model (see :attr:`estimator`), with that model.
        self._derived_estimator: tuple[ModelInfo, TokenEstimator] | None = None
        #: Models available for context promotion (by id).
        self.models = {m.id: m for m in models}
        #: The live request parts a handoff reuses (see ``generate_handoff_document``).
        self.chat = chat
        self.system_prompt = system_prompt
        self.tools = tools
        #: OpenAI's ``/responses/compact`` (see :mod:`.openai_compact`), tried first for OpenAI
        #: models.
        self.responses_compact = responses_compact
        self.notices: list[str] = []
        #: Recovery artifacts (shake's originals), numbered as the agent numbers them.
        self.artifacts = ArtifactStore()
        self._handoff_pending = False
        #: The inline imager of the next request (its frames cached across requests).
        self.inline_imager: InlineImager | None = None

    @property
    def estimator(self) -> TokenEstimator:
        """Every token count of this pipeline (thresholds, cut points, pruning) goes through it.

        Default: the agent core's estimate (:mod:`.tokens`), except that an archive frame is
        charged the model's ``image_tokens``, else the frame estimate of the shape and frame size
        the snapcompact settings resolve to for this model (the agent core charges a flat 5,024,
        which overcounts the smaller frames this pipeline can be configured to render). Derived
        once per model: a promotion to another model derives it again.
        """
        if self._given_estimator is not None:
            return self._given_estimator
        derived = self._derived_estimator
        if derived is not None and derived[0] is self.model:
            return derived[1]
        frame_tokens = self.model.image_tokens
        if frame_tokens is None:
            frame_tokens = asked_shape(self.model, self.settings.snapcompact).frame_token_estimate
        limit = self.settings.snapcompact.max_frame_data_bytes
        estimator = TokenEstimator(frame_tokens=frame_tokens,
                                   archive_blocks=lambda message: archive_blocks(message, limit))
        self._derived_estimator = (self.model, estimator)
        return estimator

    def context(self) -> SessionContext:
        """The LLM context the current branch builds (compactions applied)."""
        return build_session_context(self.session.get_branch())

    def estimate_tokens(self) -> int:
        """Estimated prompt tokens of the current branch (from running totals: cheap when
        nothing changed, proportional to what was added otherwise)."""
        return self.session.branch_index.context_tokens(self.estimator)

    def threshold(self) -> int:
        """Context tokens above which auto-compaction runs, for this model and settings."""
        return compaction_threshold(self.model, self.settings.compaction)

    def abort_compaction(self) -> None:
        """Stop the running compaction, handoff or branch summary (it ends cancelled, writing
        nothing)."""
        self.abort_signal.abort()

    def notice(self, text: str) -> str:
        """Record ``text`` in :attr:`notices` and warn with it (the agent's UI notice); returns
        it."""
        self.notices.append(text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)
        return text


def transcript(session: Session) -> SessionContext:
    """The current branch as a transcript: every message, compactions shown in place."""
    return build_session_context(session.get_branch(), transcript=True)


def latest_compaction_ms(session: Session) -> float | None:
    """When the branch's latest compaction was written (epoch ms), or None."""
    entry = session.latest_compaction()
    return iso_to_ms(entry.timestamp) if entry is not None else None


def summary_complete(state: PipelineState) -> CompleteFn | None:
    """What compaction summaries are asked of: ``compaction.remoteEndpoint`` when set and
    ``remoteEnabled``, else the injected completion function (handoffs and branch summaries
    always use the latter)."""
    cs = state.settings.compaction
    if cs.remote_enabled and cs.remote_endpoint:
        return remote_complete(cs.remote_endpoint, model=state.model.id)
    return state.complete
