"""The blind reader as a litellm custom provider: ``snapblind/context-qa``.

Why the same path as the told reader: every request goes through the harness client (cache,
budget, records), so the blind reader's rows look like any model's. It reads the context exactly
as ``snapocr/context-qa`` does (``evals.readers.provider.context_reading``: text parts as text,
every frame OCR'd at the size the target sees it, the same OCR cache), but its metadata carries
no evidence and no gold answers: only the seen sizes, the billed prompt tokens (echoed as usage,
like the told reader) and the OCR cache folder, under the key ``"snapblind"``
(:func:`blind_metadata`). The answer comes from ``evals.blind.retrieval.answer_blind``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from evals.blind.retrieval import MIN_COVERAGE, answer_blind
from evals.items.prompts import QUESTION_TEMPLATE
from evals.readers.provider import (
    CONTEXT_QA,
    ReaderRequest,
    context_reading,
    decode_image_url,
)
from evals.store.transcripts import Reading
from snapcompact.core import estimate_text_tokens

PROVIDER = "snapblind"
METADATA_KEY = "snapblind"
MODEL_ID = f"{PROVIDER}/{CONTEXT_QA}"
#: What tables call the two offline readers.
BLIND_LABEL = "blind (BM25 retrieval)"
TOLD_LABEL = "told evidence (legibility floor)"


_BEFORE, _AFTER = QUESTION_TEMPLATE.split("{question}")


def question_of(text: str) -> str:
    """The question inside the harness's question prompt (``evals.items.prompts``): the
    instructions around it are not words to retrieve by. Other text is taken whole."""
    if text.startswith(_BEFORE) and text.endswith(_AFTER):
        return text[len(_BEFORE):len(text) - len(_AFTER)]
    return text


def blind_metadata(seen_sizes: Sequence[Sequence[int] | None], billed_prompt_tokens: int,
                   ocr_cache_dir: str | None = None,
                   min_coverage: float | None = None) -> dict[str, Any]:
    """The ``metadata=`` value of a blind request: nothing about the answer."""
    body: dict[str, Any] = {
        "seen_sizes": [None if s is None else [int(s[0]), int(s[1])] for s in seen_sizes],
        "billed_prompt_tokens": int(billed_prompt_tokens)}
    if ocr_cache_dir is not None:
        body["ocr_cache_dir"] = str(ocr_cache_dir)
    if min_coverage is not None:
        body["min_coverage"] = float(min_coverage)
    return {METADATA_KEY: body}


def parse_blind(messages: Sequence[Mapping[str, Any]],
                metadata: Mapping[str, Any] | None) -> tuple[ReaderRequest, float]:
    """The told reader's request form (no evidence) and the coverage threshold."""
    body = dict((metadata or {}).get(METADATA_KEY) or {})
    images: list[bytes] = []
    texts: list[str] = []
    order: list[str] = []
    for message in messages:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for part in parts or ():
            if part.get("type") == "text" and str(part.get("text", "")).strip():
                texts.append(str(part["text"]))
                order.append("t")
            elif part.get("type") == "image_url":
                ref = part.get("image_url")
                images.append(decode_image_url(str(ref.get("url")) if isinstance(ref, Mapping)
                                               else str(ref)))
                order.append("i")
    if not texts:
        raise ValueError("snapblind needs a text part holding the question")
    sizes = body.get("seen_sizes") or [None] * len(images)
    if len(sizes) != len(images):
        raise ValueError(f"metadata seen_sizes must list one size per image ({len(images)})")
    billed = int(body.get("billed_prompt_tokens") or 0)
    request = ReaderRequest(
        model=CONTEXT_QA, images=tuple(images), texts=tuple(texts), order=tuple(order),
        seen_sizes=tuple(None if s is None else (int(s[0]), int(s[1])) for s in sizes),
        billed_prompt_tokens=billed, ocr_cache_dir=body.get("ocr_cache_dir"))
    return request, float(body.get("min_coverage", MIN_COVERAGE))


def blind_reading(messages: Sequence[Mapping[str, Any]],
                  metadata: Mapping[str, Any] | None) -> Reading:
    """The reading behind a blind answer, for the viewer: the retrieved segment stands where the
    told reader's evidence does (the OCR cache makes the second read cheap)."""
    from evals.readers.answer import reading_form

    request, min_coverage = parse_blind(messages, metadata)
    raw = context_reading(request)
    found = answer_blind(raw, question_of(request.question), min_coverage)
    text, segment = reading_form(raw), reading_form(found.segment or "")
    at = text.find(segment) if segment else -1
    span = (at, at + len(segment)) if at >= 0 else None
    answer_at = text.find(found.answer, at) if span is not None and not found.abstained else -1
    return Reading(reader=MODEL_ID, reading=text, evidence=segment, score=100 * found.coverage,
                   evidence_span=span, answer=found.answer,
                   answer_span=(answer_at, answer_at + len(found.answer)) if answer_at >= 0
                   else None)


def run_blind(messages: Sequence[Mapping[str, Any]],
              metadata: Mapping[str, Any] | None) -> tuple[str, int, int, dict[str, Any]]:
    """(reply, prompt tokens, completion tokens, details) of one blind call."""
    request, min_coverage = parse_blind(messages, metadata)
    found = answer_blind(context_reading(request), question_of(request.question), min_coverage)
    details = {"reader": MODEL_ID, "images": len(request.images), "bm25": round(found.bm25, 3),
               "coverage": round(found.coverage, 3), "abstained": found.abstained}
    return (found.answer, request.billed_prompt_tokens,
            estimate_text_tokens(len(found.answer)), details)


_handler: Any = None


def register() -> None:
    """Make ``snapblind/*`` callable through litellm, priced at zero. Safe to call repeatedly."""
    global _handler
    from evals.readers.provider import _import_litellm

    litellm = _import_litellm()
    if _handler is None:
        from litellm.llms.custom_llm import CustomLLMError
        from litellm.types.utils import Choices, Message, ModelResponse, Usage

        def respond(messages: list, litellm_params: Mapping | None) -> Any:
            try:
                text, prompt, completion, details = run_blind(
                    messages, (litellm_params or {}).get("metadata"))
            except ValueError as exc:
                raise CustomLLMError(status_code=400, message=f"snapblind: {exc}") from exc
            response = ModelResponse(
                model=MODEL_ID, usage=Usage(prompt_tokens=prompt, completion_tokens=completion,
                                            total_tokens=prompt + completion),
                choices=[Choices(index=0, finish_reason="stop",
                                 message=Message(role="assistant", content=text))])
            response._hidden_params[METADATA_KEY] = details
            return response

        class SnapBlindReader(litellm.CustomLLM):
            """Offline blind reader; see evals.blind.provider."""

            def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
                return respond(messages, kwargs.get("litellm_params"))

            async def acompletion(self, model: str, messages: list, *args: Any,
                                  **kwargs: Any) -> Any:
                return await asyncio.to_thread(respond, messages, kwargs.get("litellm_params"))

        _handler = SnapBlindReader()
    entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != PROVIDER]
    litellm.custom_provider_map = [*entries, {"provider": PROVIDER, "custom_handler": _handler}]
    if MODEL_ID not in litellm.model_cost:
        litellm.register_model({MODEL_ID: {
            "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
            "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
            "litellm_provider": PROVIDER, "mode": "chat", "supports_vision": True}})
