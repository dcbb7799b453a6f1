"""The request the next provider call sends: the context's wire messages and system prompt.

Why a room: what the pipeline's session holds is not what the model is sent. The wire drops
what the model never sees (:func:`~.context.convert_to_llm`), and with inline imaging on
(``snapcompact.systemPrompt`` / ``snapcompact.toolResults``) the coding agent renders large
older tool results and the system prompt (or its context-file sections) as frames on every
provider request (18.3.4 ``sdk.ts:3932-3953``, ``transformProviderContext``;
``session/snapcompact-inline.ts``), while the session keeps the text. A harness measuring
"what production sends" reads it here (:func:`llm_messages`, :func:`llm_system_prompt`,
:func:`inline_request`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from snapcompact.archive import message_from_json
from snapcompact.compaction.context import convert_to_llm, to_wire_json
from snapcompact.compaction.inline import InlineImager, InlineOptions, InlineRequest
from snapcompact.compaction.pipeline_state import PipelineState

__all__ = ["inline_request", "llm_messages", "llm_system_prompt"]


def llm_messages(state: PipelineState) -> list[Any]:
    """The context as wire messages for the LLM, dropping what it never sees.

    With inline imaging on (``snapcompact.systemPrompt`` / ``snapcompact.toolResults``) these
    are the messages after it, as the agent sends them: the coding agent runs the transform
    on every provider request (18.3.4 ``sdk.ts:3932-3953``, ``transformProviderContext``;
    ``session/snapcompact-inline.ts``), not only on request. The session keeps the text;
    :func:`llm_system_prompt` is the system prompt that goes with these messages.
    """
    limit = state.settings.snapcompact.max_frame_data_bytes
    if not InlineOptions.from_settings(state.settings.snapcompact).enabled:
        return convert_to_llm(state.context().messages, max_frame_data_bytes=limit)
    return [message_from_json(m, i) for i, m in enumerate(inline_request(state).messages)]


def llm_system_prompt(state: PipelineState) -> tuple[str, ...]:
    """The system prompt the next request sends: the pipeline's, or its stub when inline
    imaging moved it (or its context-file sections) into frames on the first user message
    (``snapcompact.systemPrompt``)."""
    if not InlineOptions.from_settings(state.settings.snapcompact).enabled:
        prompt_ = state.system_prompt
        return (prompt_,) if isinstance(prompt_, str) else tuple(prompt_ or ())
    return inline_request(state).system_prompt


def inline_request(state: PipelineState,
                   system_prompt: str | Sequence[str] | None = None) -> InlineRequest:
    """The next request after inline imaging (``snapcompact.systemPrompt``/``toolResults``):
    the system prompt (default: the pipeline's) and the wire-role messages, with large older
    tool results and the prompt as frames where that pays. The session is not changed; frames
    are cached across calls (in the state's inline imager)."""
    options = InlineOptions.from_settings(state.settings.snapcompact)
    imager = state.inline_imager
    if imager is None or imager.options != options or imager.estimator is not state.estimator:
        imager = state.inline_imager = InlineImager(options, state.estimator)
    limit = state.settings.snapcompact.max_frame_data_bytes
    wire = [w for m in state.context().messages
            if (w := to_wire_json(m, max_frame_data_bytes=limit)) is not None]
    return imager.transform(state.system_prompt if system_prompt is None else system_prompt,
                            wire, state.model)
