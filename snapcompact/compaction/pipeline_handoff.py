"""Handoff: a document for a fresh session, which then becomes the pipeline's session.

Why a room: a handoff does not shorten the session; it writes a document of the work so far
(asked of the live conversation, the agent's own system prompt and tools with
``tool_choice="none"``, when the pipeline was given them; otherwise of a transcript under the
summarizer prompt) and forks a new session that starts from it, named after the old one with
a single ``.handoff-XXXXXXXX`` suffix. The ``handoff`` strategy is never used for an overflow
(the request itself would overflow) nor for manual compaction; when it returns no document the
run falls back to a context-full summary.
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

__all__ = ["HandoffRoom"]


class HandoffRoom(PipelineState):
    """The pipeline's handoff: the document, the manual handoff, the strategy's."""

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
