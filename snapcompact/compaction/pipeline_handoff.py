"""Handoff: a document for a fresh session, which then becomes the pipeline's session.

Why a room: a handoff does not shorten the session; it writes a document of the work so far
(asked of the live conversation, the agent's own system prompt and tools with
``tool_choice="none"``, when the pipeline was given them; otherwise of a transcript under the
summarizer prompt) and forks a new session that starts from it, named after the old one with
a single ``.handoff-XXXXXXXX`` suffix. The ``handoff`` strategy is never used for an overflow
(the request itself would overflow) nor for manual compaction; when it returns no document the
run falls back to a context-full summary. :func:`handoff` is the manual handoff,
:func:`handoff_for_run` the strategy's.
"""

from __future__ import annotations

import re
import uuid

from snapcompact.compaction.control import guarded_complete
from snapcompact.compaction.cut_point import CompactionPreparation
from snapcompact.compaction.outcome import CompactionOutcome
from snapcompact.compaction.pipeline_state import PipelineState
from snapcompact.compaction.strategies import generate_handoff, generate_handoff_live
from snapcompact.compaction.triggers import Reason

__all__ = ["generate_handoff_document", "handoff", "handoff_for_run"]


def generate_handoff_document(state: PipelineState, custom_instructions: str | None = None) -> str:
    """The handoff document: asked of the live conversation (the agent's system prompt, tools
    and real history, ``tool_choice="none"``) when a ``chat`` function and the system prompt
    were given; otherwise from a serialized transcript under the summarizer prompt."""
    if state.chat is not None and state.system_prompt is not None:
        state.abort_signal.check()
        document = generate_handoff_live(state.context().messages, state.chat, state.model,
                                         state.settings,
                                         system_prompt=state.system_prompt, tools=state.tools,
                                         custom_instructions=custom_instructions)
        state.abort_signal.check()
        return document
    return generate_handoff(state.context().messages,
                            guarded_complete(state.complete, state.abort_signal),
                            state.model, state.settings, custom_instructions=custom_instructions)


def handoff(state: PipelineState, custom_instructions: str | None = None) -> CompactionOutcome:
    """Manual handoff: a document for a fresh session, which becomes this pipeline's session."""
    document = generate_handoff_document(state, custom_instructions)
    if not document:
        return CompactionOutcome("manual", "handoff", skipped="handoff returned no document")
    return _start_handoff_session(state, "manual", document, state.estimate_tokens())


def handoff_for_run(state: PipelineState, reason: Reason, custom_instructions: str | None,
                    prep: CompactionPreparation) -> CompactionOutcome | None:
    """The ``handoff`` strategy of a compaction run: the new session's outcome, or None when
    the document came back empty (the run then summarizes)."""
    document = generate_handoff_document(state, custom_instructions)
    if not document:
        return None
    return _start_handoff_session(state, reason, document, prep.tokens_before)


def _start_handoff_session(state: PipelineState, reason: str, document: str,
                           tokens_before: int) -> CompactionOutcome:
    old = state.session
    if state.handoff_path is not None:
        new_path = state.handoff_path(old)
    elif old.path is not None:
        # One suffix, not one per generation (a long run of handoffs would outgrow NAME_MAX).
        stem = re.sub(r"(\.handoff-[0-9a-f]{8})+$", "", old.path.stem)
        new_path = old.path.with_name(f"{stem}.handoff-{uuid.uuid4().hex[:8]}.jsonl")
    else:
        new_path = None
    new = old.fork(new_path)
    new.append_custom_message("handoff", document)
    state.session = new
    return CompactionOutcome(reason, "handoff", handoff_session=new,
                             tokens_before=tokens_before, tokens_after=state.estimate_tokens())
