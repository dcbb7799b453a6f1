"""The embedded offline reader as a litellm custom provider (`snapocr/...`).

Why a litellm provider: the harness sends every request through one client (cache, budget,
retries, records) whatever the model is. Registering the OCR reader as a provider means the
default offline run exercises that exact path, with no key and no network, and its rows look
like any model's rows.

Models:
  snapocr/ocr-qa      image QA: transcribe each image part, then answer by locating the
                      evidence in the transcript (evals.readers.answer). Only images are read.
  snapocr/text-qa     text baseline: the same locator over the prompt's text (every text part
                      but the last, which is the question; the only one if there is just one).
  snapocr/transcribe  the transcript of all image parts, for character error rate.
  snapocr/context-qa  the whole context as production sends it: every part in message order,
                      text parts as text and image parts OCR'd at their seen size, then the
                      same locator over that reading (the last text part is the question).
                      This is the reader of the main job.

Side channel. The reader needs what a real model would not be told: the evidence sentence, the
gold answers and the size each frame is shown at. They travel in litellm's per-request
`metadata` keyword under the key "snapocr" (build it with `reader_metadata`):

    litellm.completion(model="snapocr/ocr-qa", messages=msgs,
                       metadata=reader_metadata(evidence=..., answers=[...],
                                                seen_sizes=[(w, h), ...],
                                                billed_prompt_tokens=1234))

`metadata` reaches a CustomLLM as `litellm_params["metadata"]` for `completion` and
`acompletion` alike, it is a litellm-side parameter (never forwarded to a real provider, unlike
`extra_body`), and it is what the harness client already passes through. `seen_sizes` holds
one (width, height) per image part, in order, from `snapcompact.pricing.billing.bill_image(...)`
(`seen_width`, `seen_height`); absent means native size.

Usage. The reader is billed nothing, but rows should still show the prompt tokens the *target*
model would be billed: `billed_prompt_tokens` from the metadata is echoed as
`usage.prompt_tokens` (0 when absent); completion tokens are a rough len(reply)/4. Prices are
registered as zero so `litellm.completion_cost` returns 0.0. The response also carries what the
reader did in `response._hidden_params["snapocr"]` (evidence score, OCR seconds).

`import litellm` costs about 5 s, so it happens only in `register()` (after setting
LITELLM_LOCAL_MODEL_COST_MAP=True, so no price map is fetched).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.readers.answer import ABSTENTION, MIN_EVIDENCE_SCORE, locate, reading_form
from evals.readers.ocr import DEFAULT_SETTINGS, OcrSettings, transcribe
from evals.transcripts import Reading
from snapcompact.core import estimate_text_tokens

PROVIDER = "snapocr"
METADATA_KEY = "snapocr"
OCR_QA, TEXT_QA, TRANSCRIBE, CONTEXT_QA = "ocr-qa", "text-qa", "transcribe", "context-qa"
MODELS = (OCR_QA, TEXT_QA, TRANSCRIBE, CONTEXT_QA)
MODEL_IDS = tuple(f"{PROVIDER}/{name}" for name in MODELS)

_DATA_URL = re.compile(r"^data:image/[A-Za-z0-9.+-]+;base64,(?P<payload>.*)$", re.DOTALL)


def reader_metadata(
    evidence: str | None = None,
    answers: Sequence[str] = (),
    seen_sizes: Sequence[tuple[int, int] | None] | None = None,
    billed_prompt_tokens: int | None = None,
    ocr: Mapping[str, Any] | None = None,
    min_evidence_score: float | None = None,
    ocr_cache_dir: str | None = None,
) -> dict[str, Any]:
    """The `metadata=` value for a snapocr request (JSON-safe: lists, not tuples)."""
    body: dict[str, Any] = {}
    if evidence is not None:
        body["evidence"] = evidence
    if answers:
        body["answers"] = list(answers)
    if seen_sizes is not None:
        body["seen_sizes"] = [None if s is None else [int(s[0]), int(s[1])] for s in seen_sizes]
    if billed_prompt_tokens is not None:
        body["billed_prompt_tokens"] = int(billed_prompt_tokens)
    if ocr:
        body["ocr"] = dict(ocr)
    if min_evidence_score is not None:
        body["min_evidence_score"] = float(min_evidence_score)
    if ocr_cache_dir is not None:
        body["ocr_cache_dir"] = str(ocr_cache_dir)
    return {METADATA_KEY: body}


# --------------------------------------------------------------------------------------------
# request parsing and the reader itself (no litellm needed)


@dataclass(frozen=True)
class ReaderRequest:
    """Everything one reader call needs, pulled out of messages and metadata."""

    model: str  # one of MODELS
    images: tuple[bytes, ...]
    texts: tuple[str, ...]  # text parts in message order
    order: tuple[str, ...] = ()  # "t"/"i" per part in message order (text or image)
    evidence: str | None = None
    answers: tuple[str, ...] = ()
    seen_sizes: tuple[tuple[int, int] | None, ...] = ()
    billed_prompt_tokens: int = 0
    ocr: OcrSettings = DEFAULT_SETTINGS
    min_evidence_score: float = MIN_EVIDENCE_SCORE
    ocr_cache_dir: str | None = None

    @property
    def question(self) -> str:
        return self.texts[-1] if self.texts else ""

    @property
    def history_text(self) -> str:
        return "\n".join(self.texts[:-1] if len(self.texts) > 1 else self.texts)


@dataclass(frozen=True)
class ReaderReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    details: Mapping[str, Any] = field(default_factory=dict)


def decode_image_url(url: str) -> bytes:
    """Bytes of a base64 `data:image/...` URL (the reader never fetches anything)."""
    match = _DATA_URL.match(url.strip()) if isinstance(url, str) else None
    if match is None:
        shown = url[:40] if isinstance(url, str) else type(url).__name__
        raise ValueError(f"snapocr reads only base64 data:image URLs, got {shown!r}...")
    try:
        return base64.b64decode(match["payload"], validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"image data URL has a bad base64 payload: {exc}") from exc


def _parts(messages: Sequence[Mapping[str, Any]]) -> tuple[list[bytes], list[str], list[str]]:
    images: list[bytes] = []
    texts: list[str] = []
    order: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            if content.strip():
                texts.append(content)
                order.append("t")
            continue
        for part in content or ():
            kind = part.get("type")
            if kind == "text" and str(part.get("text", "")).strip():
                texts.append(str(part["text"]))
                order.append("t")
            elif kind == "image_url":
                ref = part.get("image_url")
                images.append(decode_image_url(ref.get("url") if isinstance(ref, Mapping) else ref))
                order.append("i")
    return images, texts, order


def _seen_sizes(raw: Any, count: int) -> tuple[tuple[int, int] | None, ...]:
    if raw is None:
        return (None,) * count
    if not isinstance(raw, Sequence) or isinstance(raw, str) or len(raw) != count:
        raise ValueError(f"metadata seen_sizes must list one [width, height] per image ({count})")
    sizes = []
    for item in raw:
        if item is None:
            sizes.append(None)
            continue
        width, height = (int(v) for v in item)
        if width <= 0 or height <= 0:
            raise ValueError(f"metadata seen_sizes has a non-positive size {item!r}")
        sizes.append((width, height))
    return tuple(sizes)


def parse_request(model: str, messages: Sequence[Mapping[str, Any]],
                  metadata: Mapping[str, Any] | None) -> ReaderRequest:
    """Validate one call: known model, readable parts, the metadata the model needs."""
    name = model.split("/", 1)[1] if model.startswith(f"{PROVIDER}/") else model
    if name not in MODELS:
        raise ValueError(f"unknown snapocr model {model!r} (known: {', '.join(MODEL_IDS)})")
    body = dict((metadata or {}).get(METADATA_KEY) or {})
    images, texts, order = _parts(messages)
    if name in (OCR_QA, TRANSCRIBE) and not images:
        raise ValueError(f"snapocr/{name} needs at least one image_url part")
    evidence = body.get("evidence")
    answers = body.get("answers") or ()
    if isinstance(answers, str):
        answers = (answers,)
    if name in (OCR_QA, TEXT_QA, CONTEXT_QA):
        if not isinstance(evidence, str) or not evidence.strip():
            raise ValueError(f"snapocr/{name} needs metadata['{METADATA_KEY}']['evidence']")
        if not answers:
            raise ValueError(f"snapocr/{name} needs metadata['{METADATA_KEY}']['answers']")
        if not texts:
            raise ValueError(f"snapocr/{name} needs a text part holding the question")
    billed = body.get("billed_prompt_tokens") or 0
    if isinstance(billed, bool) or not isinstance(billed, int) or billed < 0:
        raise ValueError(f"metadata billed_prompt_tokens must be an int >= 0, got {billed!r}")
    return ReaderRequest(
        model=name,
        images=tuple(images),
        texts=tuple(texts),
        order=tuple(order),
        evidence=evidence,
        answers=tuple(str(a) for a in answers),
        seen_sizes=_seen_sizes(body.get("seen_sizes"), len(images)),
        billed_prompt_tokens=billed,
        ocr=OcrSettings(**body["ocr"]) if body.get("ocr") else DEFAULT_SETTINGS,
        min_evidence_score=float(body.get("min_evidence_score", MIN_EVIDENCE_SCORE)),
        ocr_cache_dir=body.get("ocr_cache_dir"),
    )


def _transcript(request: ReaderRequest) -> str:
    # frames continue one another mid-row, like rows inside a frame: join without a separator
    return "".join(
        transcribe(png, size, settings=request.ocr, cache_dir=request.ocr_cache_dir)
        for png, size in zip(request.images, request.seen_sizes)
    )


def context_reading(request: ReaderRequest) -> str:
    """The context as the reader sees it: text parts as they are, images as transcribed, in
    message order, without the last text part (the question)."""
    texts, images = iter(request.texts[:-1]), iter(zip(request.images, request.seen_sizes))
    pieces: list[str] = []
    text_left = len(request.texts) - 1
    for kind in request.order:
        if kind == "t":
            if text_left <= 0:
                continue
            text_left -= 1
            pieces.append(next(texts))
        else:
            png, size = next(images)
            pieces.append(transcribe(png, size, settings=request.ocr,
                                     cache_dir=request.ocr_cache_dir))
    return "\n".join(pieces)


def _read_text(request: ReaderRequest) -> str:
    """What a reader reads: the plain history (text-qa), the whole context (context-qa) or the
    frames' transcript (ocr-qa, transcribe)."""
    if request.model == TEXT_QA:
        return request.history_text
    if request.model == CONTEXT_QA:
        return context_reading(request)
    return _transcript(request)


def reading_of(request: ReaderRequest) -> Reading | None:
    """The reading behind a QA answer (transcript, evidence and answer spans); None for
    transcription requests. Same functions, same inputs as ``run_reader``, so the same answer;
    the OCR caches make a second call cheap."""
    if request.model == TRANSCRIBE:
        return None
    text = _read_text(request)
    found = locate(text, request.evidence, request.answers, request.min_evidence_score)
    located = found.answer != ABSTENTION
    return Reading(
        reader=request.model,
        reading=reading_form(text),
        evidence=request.evidence or "",
        score=found.score,
        evidence_span=(found.start, found.end) if found.end > found.start else None,
        answer_span=(found.answer_start, found.answer_end) if located else None,
        answer=found.answer,
    )


def run_reader(request: ReaderRequest) -> ReaderReply:
    """Do the reading: OCR (for image models), then locate or transcribe."""
    started = time.perf_counter()
    details: dict[str, Any] = {"reader": request.model, "images": len(request.images)}
    read = _read_text(request)
    if request.model != TEXT_QA:
        details["ocr_seconds"] = round(time.perf_counter() - started, 3)
    if request.model == TRANSCRIBE:
        text = read
    else:
        found = locate(read, request.evidence, request.answers, request.min_evidence_score)
        text = found.answer
        details["evidence_score"] = round(found.score, 2)
    details["abstained"] = text == ABSTENTION
    return ReaderReply(text=text, prompt_tokens=request.billed_prompt_tokens,
                       completion_tokens=estimate_text_tokens(len(text)), details=details)


# --------------------------------------------------------------------------------------------
# litellm glue


def _import_litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


_handler_class: type | None = None


def handler_class() -> type:
    """The CustomLLM subclass (built on first use so importing this module stays cheap)."""
    global _handler_class
    if _handler_class is not None:
        return _handler_class
    litellm = _import_litellm()
    from litellm.llms.custom_llm import CustomLLMError
    from litellm.types.utils import Choices, Message, ModelResponse, Usage

    def respond(model: str, messages: list, litellm_params: Mapping | None) -> Any:
        metadata = (litellm_params or {}).get("metadata") or {}
        try:
            request = parse_request(model, messages, metadata)
            reply = run_reader(request)
        except ValueError as exc:
            raise CustomLLMError(status_code=400, message=f"snapocr: {exc}") from exc
        usage = Usage(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                      total_tokens=reply.prompt_tokens + reply.completion_tokens)
        response = ModelResponse(
            model=f"{PROVIDER}/{request.model}",
            choices=[Choices(index=0, finish_reason="stop",
                             message=Message(role="assistant", content=reply.text))],
            usage=usage,
        )
        response._hidden_params[METADATA_KEY] = dict(reply.details)
        return response

    class SnapOcrReader(litellm.CustomLLM):
        """Offline OCR reader; see evals.readers.provider."""

        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            return respond(model, messages, kwargs.get("litellm_params"))

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            # OCR is CPU-bound and releases the GIL inside tesseract: run it off the event loop
            return await asyncio.to_thread(respond, model, messages, kwargs.get("litellm_params"))

    _handler_class = SnapOcrReader
    return _handler_class


def register() -> None:
    """Make `snapocr/*` callable through litellm and priced at zero. Safe to call repeatedly."""
    litellm = _import_litellm()
    cls = handler_class()
    entries = list(litellm.custom_provider_map or [])
    providers = [entry for entry in entries if entry.get("provider") != PROVIDER]
    existing = [entry for entry in entries if entry.get("provider") == PROVIDER
                and isinstance(entry.get("custom_handler"), cls)]
    handler = existing[0]["custom_handler"] if existing else cls()
    litellm.custom_provider_map = [*providers, {"provider": PROVIDER, "custom_handler": handler}]
    zero = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
            "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
            "litellm_provider": PROVIDER, "mode": "chat", "supports_vision": True}
    missing = {model_id: dict(zero) for model_id in MODEL_IDS if model_id not in litellm.model_cost}
    if missing:
        litellm.register_model(missing)
