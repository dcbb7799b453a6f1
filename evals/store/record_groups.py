"""The six groups a result row is made of: which measurement, the context, its frames, its
tokens and bill, its answer and score, its provenance.

Why groups: a row has over a hundred fields, and a reader looking for "what did this question
cost" should find the bill in one place, not between the score and the versions. Each group is
a frozen dataclass whose field names are the row's flat column names (``records.jsonl`` keys,
``records.csv`` columns), so a group never renames a column: the flat row is the groups' fields
side by side (:mod:`evals.store.record_columns` fixes their order). Defaults are what a row
written before the field existed reads as.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

SCHEMA_VERSION = 3


@dataclass(frozen=True)
class Coordinates:
    """Which measurement a row is: the item and question, the model that answered and the one it
    stands for, the arm (strategy, policy, shape, window, research knobs, summarizer) and the
    seed. A resumed run's identity of a row (``Record.key``) is read from here alone."""

    run_id: str
    experiment: str
    dataset: str
    item_id: str
    question_id: str
    model: str  # litellm model id that answered (e.g. "snapocr/ocr-qa", "anthropic/claude-...")
    target_model: str  # model whose billing/resize the request stands for
    arm: str  # "image" (the context carries frames) or "text" (text only)
    shape: str  # shape drawn, or "text" when the arm sends no frames
    frame_size: int  # px; 0 when the arm sends no frames
    reader: str  # "qa" (schema 1: "image_qa", "text_qa" or "transcribe")
    seed: int
    strategy: str = ""  # full | truncate | snapcompact | context-full | handoff
    policy: str = ""  # pinned | foveated for snapcompact, else ""
    shape_requested: str = ""  # the arm's shape ("auto" or a name); `shape` is what was drawn
    context_window: int | None = None  # tokens the replay compacts against
    #: the research knobs in effect (configs/research/, evals.spec.run_spec.ResearchSpec.label):
    #: "production", or the research name and a hash of its knobs (merged into ``settings``)
    research: str = "production"
    summarizer: str | None = None  # litellm id of the summarizer (context-full, handoff)
    model_config: str = ""  # configs/model/<name>.yaml that answered
    api: str | None = None  # wire API of the target (anthropic-messages, openai-responses, ...)
    provider: str | None = None  # provider id of the target (anthropic, openrouter, ...)
    price_model: str | None = None  # litellm cost-map id the dollars come from
    image_detail: str | None = None  # the detail every image was sent with (OpenAI, Gemini)
    settings: Mapping[str, Any] = field(default_factory=dict)  # snapcompact settings overrides


@dataclass(frozen=True)
class ContextFacts:
    """The context the question was asked after: the history replayed, what the compactions kept,
    dropped and where the evidence went, what the coding agent's maintenance did
    (``snapcompact.agent``), whether production would send it, and the hashes naming it."""

    history_chars: int
    compactions: int = 0  # compaction rounds before the question
    evidence_round: int | None = None  # 0 = evidence in the kept tail, k = discarded by round k
    frames_evicted: int = 0  # frames of earlier rounds no longer in the archive
    text_tail_chars: int = 0  # the archive's verbatim text (head + tail) in the summary
    #: archive characters the compactions dropped (neither framed nor kept as text edges)
    truncated_chars: int = 0
    context_hash: str = ""  # contexts/<hh>/<sha256>.json: the request without the question
    #: sha256 of the context sent (question excluded): equal values, byte-identical contexts
    sent_hash: str = ""
    #: the arm (label) of the same item whose context was byte-identical: this row is that
    #: arm's measurement again, asked once (None: a context of its own)
    same_context_as: str | None = None
    skipped: str | None = None  # why the question was not asked (e.g. exceeds the window)
    replay_warnings: tuple[str, ...] = ()  # the first five warnings of the replay
    replay_warnings_total: int = 0  # every warning of the replay (only five are kept above)
    methods_used: Mapping[str, int] = field(default_factory=dict)  # accepted method -> passes
    context_tokens_estimate: int | None = None  # the agent's count of context + question
    agent_token_method: str | None = None  # how the agent counted text (e.g. claude-v3 via ctok)
    fits_window: bool | None = None  # the context fits context_window (billed and counted)
    #: True: production would send this context; False: it would not (production_note says
    #: why; never ranked); None: a labelled bound (full, truncate).
    production_valid: bool | None = None
    production_note: str | None = None
    #: an LLM method ran with the offline summarizer stand-in (configs/summarizer/offline.yaml):
    #: production's path, the stand-in's fixed text where an LLM's summary would be
    summary_stand_in: bool = False


@dataclass(frozen=True)
class SentFrames:
    """The frames the context carried: how many, their pixels and content hashes, the shapes they
    were drawn in, the cap the maintenance gave them, and how each image was read and billed."""

    frames: int
    frame_px: tuple[tuple[int, int], ...]  # (width, height) per frame
    frame_hashes: tuple[str, ...]
    frames_by_shape: Mapping[str, int] = field(default_factory=dict)  # frames sent, by shape
    #: the shape the arm asked for (auto resolved) and whether any frame was drawn in it
    #: (False: every frame came out in another shape, or none was drawn; None: not snapcompact)
    shape_asked: str = ""
    shape_asked_drawn: bool | None = None
    frame_cap: int | None = None  # the largest frame cap a maintenance pass was given
    bill_rules: tuple[str, ...] = ()  # pricing rule applied to each image
    seen_px: tuple[tuple[int, int], ...] = ()  # (width, height) each image is read at
    image_tokens_per_frame: tuple[int, ...] = ()


@dataclass(frozen=True)
class TokensAndBill:
    """What the question cost: the request's predicted tokens and dollars, what the provider
    reported, the prompt cache's share, and the session's compaction calls.

    The compaction figures are the *session's* (one context per session and arm), repeated on
    every question row of that context: the bill is paid once, not once per question. A
    question's share is ``compaction_billed_tokens / context_questions``
    (``Record.compaction_tokens_per_question``). A handoff or LLM (soft) summary is a request
    over the whole context it summarizes, input and output, uncached; snapcompact and truncate
    make none (``evals.replay.compaction_bill``).
    """

    text_tokens: int  # the request's text: context text + question (a skipped row: the context's)
    text_token_method: str
    predicted_image_tokens: int
    predicted_prompt_tokens: int
    predicted_cost_usd: float | None
    reported_prompt_tokens: int | None
    reported_completion_tokens: int | None
    reported_cost_usd: float | None
    predicted_completion_tokens: int = 0  # the reader's answer cap
    predicted_spend_usd: float = 0.0  # dollars the budget reserved for the request
    # the provider's prompt cache (evals.send.prompt_cache; pricing.toml [[prompt_cache]])
    prompt_cache_rule: str | None = None  # the rule that predicted it (None: uncached)
    predicted_cache_write_tokens: int = 0  # the context written by the first question
    predicted_cache_read_tokens: int = 0  # the context read by every later question
    predicted_cost_cached_usd: float | None = None  # the target's dollars with the cache
    reported_cache_write_tokens: int | None = None  # cache_creation_input_tokens
    reported_cache_read_tokens: int | None = None  # cache_read_input_tokens / cached_tokens
    #: tokens at the head of the context unchanged since the compaction before the last one
    #: (a provider's cache still holds them): production's next turns
    #: (snapcompact.billing.next_turns)
    stable_prefix_tokens: int | None = None
    #: what the summarizer *reported* as its usage over every round (input + output): litellm's
    #: mock path reports a few dozen tokens, the oracle none. Not the bill: see
    #: ``compaction_billed_tokens``.
    compaction_cost_tokens: int = 0
    #: summary / handoff requests the replay made for this context (the session's)
    compaction_calls: int = 0
    #: their input: each request's text as the library built it, counted by the summarizer's
    #: model line's counter (``snapcompact.compaction.billed_text_tokens``, as a question's text)
    compaction_input_tokens: int = 0
    #: their output: the returned summaries' text, counted the same way
    compaction_output_tokens: int = 0
    #: input + output: the session's compaction bill. None: a row written before compaction
    #: calls were billed (the analysis reads 0 only when the row's methods show no LLM call)
    compaction_billed_tokens: int | None = None
    #: the parts of ``compaction_input_tokens`` read from / written to the provider's prompt
    #: cache (a handoff asked of the live conversation reads the prefix the live turn cached);
    #: None: a row written before the cache was applied to the compaction calls
    compaction_cache_read_tokens: int | None = None
    compaction_cache_write_tokens: int | None = None
    compaction_token_method: str | None = None  # the counter of the three figures above
    compaction_price_model: str | None = None  # the price model of the model that pays them
    compaction_cost_usd: float | None = None  # the session's compaction dollars at that price
    #: why the compaction figures are an estimate (the offline stand-in's fixed text as output,
    #: the perfect oracle's prompts and summary); None: a real summarizer's calls, counted
    compaction_bill_note: str | None = None
    #: questions asked after this context (the divisor of the per-question compaction share)
    context_questions: int | None = None
    #: the session's whole history as the ``full`` arm sends it, plus this question, billed for
    #: the target: every arm's compression baseline (a skipped row: the history alone; None:
    #: a row written before it was recorded)
    full_history_prompt_tokens: int | None = None
    #: What the session costs after its first compaction (the session's, on every row of the
    #: context; ``snapcompact.billing.session_bill``): the requests the agent sent for its
    #: replies, their whole prompts, the parts read from / written to the prompt cache, the
    #: replies' tokens; ``session_billed_tokens`` adds the compaction calls' tokens (input +
    #: output, no cache weighting), ``session_cost_usd`` prices it all at the target's price
    #: model, cache applied, plus ``compaction_cost_usd``. None: a row written before sessions
    #: were billed.
    session_requests: int | None = None
    session_input_tokens: int | None = None
    session_cache_read_tokens: int | None = None
    session_cache_write_tokens: int | None = None
    session_output_tokens: int | None = None
    session_billed_tokens: int | None = None
    session_cost_usd: float | None = None
    #: of ``reported_completion_tokens`` (the answer's output, billed at the output price), the
    #: reasoning (thinking) tokens the provider reported; None: none reported (the offline
    #: readers, a provider without the field, a row written before it existed)
    reported_reasoning_tokens: int | None = None


@dataclass(frozen=True)
class AnswerAndScore:
    """The question, its gold answers and what came back: the answer, how the request went
    (latency, cache hit, error, attempts, the response cache entry), and the score."""

    answer: str
    latency_s: float | None
    cached: bool
    error: str | None
    attempts: int
    em: float
    f1: float
    correct: bool
    abstained: bool
    cer: float | None = None  # schema 1 transcription reader only
    question: str = ""
    gold_answers: tuple[str, ...] = ()
    question_kind: str | None = None  # the generator's question kind (e.g. "fact", "needle")
    question_meta: Mapping[str, Any] = field(default_factory=dict)  # depth, template, place
    reading: Mapping[str, Any] | None = None  # the offline reader's transcript summary
    cache_key: str | None = None  # the response cache entry (no secrets: send.response_cache)


@dataclass(frozen=True)
class Provenance:
    """What wrote the row: the versions and content hashes of the code, tables, prompts and
    packages that shape a request or its price, when the row was written and in which schema.
    Analysis never parses a directory name: a row carries these itself."""

    package_version: str
    git_sha: str
    shape_table_sha256: str
    pricing_table_sha256: str
    renderer_version: str
    prompt_version: str = ""
    model_shapes_sha256: str = ""
    reader_version: str | None = None  # the offline OCR reader's version (None for API models)
    #: content hash of the code that wrote the row (evals.spec.provenance.code_sha256)
    code_sha256: str = ""
    #: versions of the packages that change answers or prices (evals.spec.dependency_versions)
    dependency_versions: Mapping[str, str] = field(default_factory=dict)
    created_at: str = ""
    schema_version: int = SCHEMA_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)  # free-form notes only


#: The groups in the order a Record holds them: (attribute on ``Record``, group class).
GROUPS: tuple[tuple[str, type], ...] = (
    ("coordinates", Coordinates),
    ("context", ContextFacts),
    ("images", SentFrames),
    ("tokens", TokensAndBill),
    ("outcome", AnswerAndScore),
    ("provenance", Provenance),
)
