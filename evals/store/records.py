"""Result records: one row per (item, question, model, shape, reader, dataset, seed).

This is the contract between running and analysing (design §5).  A row carries its own
coordinates and versions, so analysis never parses a directory name; what was sent (frames,
their pixels, predicted tokens and dollars); what came back (answer, provider-reported tokens,
cost, latency, cache hit, error); and the score.

Rows are appended to ``records.jsonl`` one complete line per ``os.write`` on a file opened with
``O_APPEND`` under an exclusive ``flock``, then fsynced: concurrent writers (threads, Hydra
joblib processes) never interleave, and a crash can at worst lose the row being written, never
corrupt earlier ones.  The append heals the file first: a torn last line (a ``kill -9`` or a
full disk in the middle of a write) is cut off, or terminated when it is a whole row that only
lacks its newline, so the next row never lands inside a fragment.  A write that fails (disk
full) is rolled back to the file's previous end before the error is raised.  On read, a torn
last line is skipped with a warning; any other line that is not a record is an error naming
the file and line.  Rows are type-checked on read, so a hand-edited or foreign row fails here,
not later in a table.  Frames are stored once by content hash (``frames/ab/<sha256>.png``).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import fcntl
import hashlib
import json
import math
import os
import types
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping

from snapcompact.agent import LLM_METHODS

SCHEMA_VERSION = 3
RECORDS_FILE = "records.jsonl"
#: The legacy strategies that always summarize with an LLM (the agent's methods that do are
#: ``snapcompact.agent.LLM_METHODS``): their rows carry compaction calls.
LLM_STRATEGIES = ("context-full", "handoff")


@dataclass(frozen=True)
class Record:
    # --- coordinates -------------------------------------------------------------------------
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
    # --- versions ----------------------------------------------------------------------------
    package_version: str
    git_sha: str
    shape_table_sha256: str
    pricing_table_sha256: str
    renderer_version: str
    # --- what was sent -----------------------------------------------------------------------
    frames: int
    frame_px: tuple[tuple[int, int], ...]  # (width, height) per frame
    frame_hashes: tuple[str, ...]
    history_chars: int
    text_tokens: int  # the request's text: context text + question (a skipped row: the context's)
    text_token_method: str
    predicted_image_tokens: int
    predicted_prompt_tokens: int
    predicted_cost_usd: float | None
    # --- what came back ----------------------------------------------------------------------
    answer: str
    reported_prompt_tokens: int | None
    reported_completion_tokens: int | None
    reported_cost_usd: float | None
    latency_s: float | None
    cached: bool
    error: str | None
    attempts: int
    # --- score -------------------------------------------------------------------------------
    em: float
    f1: float
    correct: bool
    abstained: bool
    cer: float | None = None  # schema 1 transcription reader only
    # --- where the answer was, and what the context cost (schema 2) ---------------------------
    strategy: str = ""  # full | truncate | snapcompact | context-full | handoff
    policy: str = ""  # pinned | foveated for snapcompact, else ""
    compactions: int = 0  # compaction rounds before the question
    evidence_round: int | None = None  # 0 = evidence in the kept tail, k = discarded by round k
    frames_evicted: int = 0  # frames of earlier rounds no longer in the archive
    text_tail_chars: int = 0  # the archive's verbatim text (head + tail) in the summary
    #: what the summarizer *reported* as its usage over every round (input + output): litellm's
    #: mock path reports a few dozen tokens, the oracle none. Not the bill: see
    #: ``compaction_billed_tokens``.
    compaction_cost_tokens: int = 0
    context_hash: str = ""  # contexts/<hh>/<sha256>.json: the request without the question
    skipped: str | None = None  # why the question was not asked (e.g. exceeds the window)
    # --- the arm and the target, every coordinate a field (schema 3) -------------------------
    model_config: str = ""  # configs/model/<name>.yaml that answered
    api: str | None = None  # wire API of the target (anthropic-messages, openai-responses, ...)
    provider: str | None = None  # provider id of the target (anthropic, openrouter, ...)
    price_model: str | None = None  # litellm cost-map id the dollars come from
    shape_requested: str = ""  # the arm's shape ("auto" or a name); `shape` is what was drawn
    image_detail: str | None = None  # the detail every image was sent with (OpenAI, Gemini)
    context_window: int | None = None  # tokens the replay compacts against
    settings: Mapping[str, Any] = field(default_factory=dict)  # snapcompact settings overrides
    #: the research knobs in effect (configs/research/, evals.spec.run_spec.ResearchSpec.label):
    #: "production", or the research name and a hash of its knobs (merged into ``settings``)
    research: str = "production"
    summarizer: str | None = None  # litellm id of the summarizer (context-full, handoff)
    # --- how the request was billed (per frame) ----------------------------------------------
    bill_rules: tuple[str, ...] = ()  # pricing rule applied to each image
    seen_px: tuple[tuple[int, int], ...] = ()  # (width, height) each image is read at
    image_tokens_per_frame: tuple[int, ...] = ()
    predicted_completion_tokens: int = 0  # the reader's answer cap
    predicted_spend_usd: float = 0.0  # dollars the budget reserved for the request
    # --- versions of what shaped the request -------------------------------------------------
    prompt_version: str = ""
    model_shapes_sha256: str = ""
    reader_version: str | None = None  # the offline OCR reader's version (None for API models)
    cache_key: str | None = None  # the response cache entry (no secrets: send.response_cache)
    replay_warnings: tuple[str, ...] = ()  # the first five warnings of the replay
    replay_warnings_total: int = 0  # every warning of the replay (only five are kept above)
    # --- what the coding agent's maintenance did (snapcompact.agent) --------------------------
    methods_used: Mapping[str, int] = field(default_factory=dict)  # accepted method -> passes
    frame_cap: int | None = None  # the largest frame cap a maintenance pass was given
    frames_by_shape: Mapping[str, int] = field(default_factory=dict)  # frames sent, by shape
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
    #: sha256 of the context sent (question excluded): equal values, byte-identical contexts
    sent_hash: str = ""
    #: content hash of the code that wrote the row (evals.spec.provenance.code_sha256)
    code_sha256: str = ""
    #: the arm (label) of the same item whose context was byte-identical: this row is that
    #: arm's measurement again, asked once (None: a context of its own)
    same_context_as: str | None = None
    #: the shape the arm asked for (auto resolved) and whether any frame was drawn in it
    #: (False: every frame came out in another shape; None: no frames / not snapcompact)
    shape_asked: str = ""
    shape_asked_drawn: bool | None = None
    # --- the question ------------------------------------------------------------------------
    # --- versions of the packages that change answers or prices (evals.spec.dependency_versions)
    dependency_versions: Mapping[str, str] = field(default_factory=dict)
    # --- the provider's prompt cache (evals.send.prompt_cache; pricing.toml [[prompt_cache]]) ----
    prompt_cache_rule: str | None = None  # the rule that predicted it (None: uncached)
    predicted_cache_write_tokens: int = 0  # the context written by the first question
    predicted_cache_read_tokens: int = 0  # the context read by every later question
    predicted_cost_cached_usd: float | None = None  # the target's dollars with the cache
    reported_cache_write_tokens: int | None = None  # cache_creation_input_tokens
    reported_cache_read_tokens: int | None = None  # cache_read_input_tokens / cached_tokens
    # tokens at the head of the context unchanged since the compaction before the last one
    # (a provider's cache still holds them): production's next turns
    # (evals.replay.conversation_bill)
    stable_prefix_tokens: int | None = None
    #: archive characters the compactions dropped (neither framed nor kept as text edges)
    truncated_chars: int = 0
    # --- the arm's own compaction calls (evals.replay.compaction_bill) ------------------------
    # A handoff or LLM (soft) summary is a request over the whole context it summarizes, input
    # and output, uncached; snapcompact and truncate make none. These figures are the
    # *session's* (one context per session and arm), repeated on every question row of that
    # context: the bill is paid once, not once per question. A question's share is
    # ``compaction_billed_tokens / context_questions``; the report's billed tokens per question
    # are ``predicted_prompt_tokens + compaction_billed_tokens / context_questions``.
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
    compaction_token_method: str | None = None  # the counter of the three figures above
    compaction_price_model: str | None = None  # the summarizer's price model (its dollars)
    compaction_cost_usd: float | None = None  # the session's compaction dollars at that price
    #: why the compaction figures are an estimate (the offline stand-in's fixed text as output,
    #: the perfect oracle's prompts and summary); None: a real summarizer's calls, counted
    compaction_bill_note: str | None = None
    #: questions asked after this context (the divisor of the per-question compaction share)
    context_questions: int | None = None
    # --- context -----------------------------------------------------------------------------
    question: str = ""
    gold_answers: tuple[str, ...] = ()
    question_kind: str | None = None  # the generator's question kind (e.g. "fact", "needle")
    question_meta: Mapping[str, Any] = field(default_factory=dict)  # depth, template, place
    reading: Mapping[str, Any] | None = None  # the offline reader's transcript summary
    created_at: str = ""
    schema_version: int = SCHEMA_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)  # free-form notes only

    def _calls_known_absent(self) -> bool:
        """A row written before compaction calls were billed made none for sure: ``truncate``
        (its hook answers the nominal soft method with an empty summary, no request), or no LLM
        method (handoff, soft, remote) ran in its replay and its strategy is not an LLM one."""
        if self.strategy == "truncate":
            return True
        return (self.strategy not in LLM_STRATEGIES
                and not LLM_METHODS.intersection(self.methods_used or {}))

    def _share(self, total: float | None) -> float:
        if total is None:
            return 0.0 if self._calls_known_absent() else math.nan
        if not total:
            return 0.0
        if not self.context_questions:
            return math.nan
        return total / self.context_questions

    @property
    def compaction_tokens_per_question(self) -> float:
        """This question's share of its session's compaction bill:
        ``compaction_billed_tokens / context_questions`` (the calls are made once per session,
        not per question). NaN: not recorded on a row whose replay ran an LLM method."""
        return self._share(self.compaction_billed_tokens)

    @property
    def billed_tokens(self) -> float:
        """What a question costs as billed: its request's prompt tokens plus its share of the
        session's compaction calls (``compaction_tokens_per_question``)."""
        return self.predicted_prompt_tokens + self.compaction_tokens_per_question

    @property
    def compaction_cost_usd_per_question(self) -> float:
        """This question's share of the session's compaction dollars (the summarizer's price)."""
        return self._share(self.compaction_cost_usd)

    def key(self) -> tuple:
        """Identity of the measurement: a resumed run skips rows whose key is present."""
        return record_key(self.dataset, self.item_id, self.question_id, self.model,
                          self.target_model, self.shape, self.frame_size, self.reader, self.seed,
                          self.strategy, self.policy, self.shape_requested,
                          self.context_window, self.research, self.summarizer)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["frame_px"] = [list(p) for p in self.frame_px]
        data["frame_hashes"] = list(self.frame_hashes)
        data["gold_answers"] = list(self.gold_answers)
        data["seen_px"] = [list(p) for p in self.seen_px]
        for name in ("bill_rules", "image_tokens_per_frame", "replay_warnings"):
            data[name] = list(getattr(self, name))
        for name in ("settings", "question_meta", "extra", "methods_used", "frames_by_shape"):
            data[name] = dict(getattr(self, name))
        if self.reading is not None:
            data["reading"] = dict(self.reading)
        data["dependency_versions"] = dict(self.dependency_versions)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Record":
        if not isinstance(data, Mapping):
            raise ValueError(f"a record is a JSON object, got {type(data).__name__}")
        data = upgrade_record(data)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"record has unknown field(s): {', '.join(sorted(unknown))}")
        hints = _field_types()
        for name, value in data.items():
            if not _matches(value, hints[name]):
                raise ValueError(f"record field {name!r} has the wrong type: {value!r:.80}")
        values = dict(data)
        if values.get("schema_version", 1) == 1:
            # schema 1 measured rendered items, not compacted sessions: name them so
            values.setdefault("strategy", "full" if values.get("arm") == "text" else "render")
        values["frame_px"] = tuple(tuple(p) for p in values.get("frame_px", ()))
        values["frame_hashes"] = tuple(values.get("frame_hashes", ()))
        values["gold_answers"] = tuple(values.get("gold_answers", ()))
        values["seen_px"] = tuple(tuple(p) for p in values.get("seen_px", ()))
        for name in ("bill_rules", "image_tokens_per_frame", "replay_warnings"):
            values[name] = tuple(values.get(name, ()))
        try:
            return cls(**values)
        except TypeError as exc:
            raise ValueError(f"malformed record: {exc}") from exc


#: Schema 2 kept these coordinates in ``extra``; schema 3 makes each a field.
_EXTRA_TO_FIELD = {
    "model_config": "model_config", "api": "api", "provider": "provider",
    "price_model": "price_model", "shape_choice": "shape_requested", "image_detail": "image_detail",
    "bill_rules": "bill_rules", "seen_px": "seen_px",
    "image_tokens_per_frame": "image_tokens_per_frame", "context_window": "context_window",
    "settings": "settings", "summarizer": "summarizer", "prompt_version": "prompt_version",
    "model_shapes_sha256": "model_shapes_sha256",
    "predicted_completion_tokens": "predicted_completion_tokens",
    "spend_predicted_usd": "predicted_spend_usd", "cache_key": "cache_key",
    "replay_warnings": "replay_warnings", "reader_version": "reader_version", "reading": "reading",
    "kind": "question_kind",
}
_QUESTION_META = ("depth", "template", "place")
#: Schema 3 fields renamed since (one word per thing: ``predicted_`` / ``reported_`` first):
#: old name -> new name. A row with an old name is read with a ``FutureWarning``.
RENAMED_FIELDS: Mapping[str, str] = {"spend_predicted_usd": "predicted_spend_usd"}
#: Schema 2 fields that repeated another field under a second name (same value by construction).
_SCHEMA2_DUPLICATES = {"frames_sent": "frames", "context_text_tokens": "text_tokens",
                       "context_image_tokens": "predicted_image_tokens",
                       "context_billed_tokens": "predicted_prompt_tokens"}


def upgrade_record(data: Mapping[str, Any]) -> dict[str, Any]:
    """A schema 1 or 2 row in schema 3's fields; a schema 3 row unchanged but for renamed fields.

    A field in its old spelling (:data:`RENAMED_FIELDS`) is renamed, with a warning. Schema 2
    coordinates move out of ``extra`` into their fields and the four duplicated token
    and frame counts are dropped after checking they agree with the field they repeat (a row
    where they disagree is refused: it was not written by this harness).
    """
    values = dict(data)
    version = values.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version > SCHEMA_VERSION:
        raise ValueError(f"record schema_version {version!r} is newer than this reader "
                         f"({SCHEMA_VERSION}); upgrade snapcompact-evals")
    for old_name, new_name in RENAMED_FIELDS.items():
        if old_name in values:
            warnings.warn(f"record field {old_name} is the old spelling; read as {new_name}",
                          FutureWarning, stacklevel=2)
            value = values.pop(old_name)
            values.setdefault(new_name, value)
    if version == SCHEMA_VERSION:
        return values
    for old, kept in _SCHEMA2_DUPLICATES.items():
        if old in values:
            value = values.pop(old)
            if kept in values and value != values[kept]:
                raise ValueError(f"schema {version} record: {old}={value!r} disagrees with "
                                 f"{kept}={values[kept]!r}")
    extra = dict(values.get("extra") or {}) if isinstance(values.get("extra"), Mapping) else {}
    for old, new in _EXTRA_TO_FIELD.items():
        if old in extra:
            values[new] = extra.pop(old)
    meta = {k: extra.pop(k) for k in _QUESTION_META if k in extra}
    if meta:
        values["question_meta"] = meta
    values["extra"] = extra
    values["schema_version"] = SCHEMA_VERSION if version == 2 else version
    return values


_FIELD_TYPES: dict[str, Any] = {}


def _field_types() -> dict[str, Any]:
    if not _FIELD_TYPES:
        _FIELD_TYPES.update(typing.get_type_hints(Record))
    return _FIELD_TYPES


def _matches(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field annotation (tuples arrive as lists)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value))
    if hint is str:
        return isinstance(value, str)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            return False
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in value)
        return len(args) == len(value) and all(_matches(v, a) for v, a in zip(args, value))
    if origin in (collections.abc.Mapping, dict):
        return isinstance(value, Mapping)
    return True  # an annotation this checker does not know: accept


def record_key(dataset: str, item_id: str, question_id: str, model: str, target_model: str,
               shape: str, frame_size: int, reader: str, seed: int, strategy: str = "",
               policy: str = "", shape_requested: str = "",
               context_window: int | None = None, research: str = "production",
               summarizer: str | None = None) -> tuple:
    """A measurement's identity. The arm's requested shape and the window are part of it: two
    arms can draw the same frames (the foveated middle is drawn in the companion shape whatever
    was asked for), and one session at two windows is two measurements. So are the research
    knobs (``research=NAME``: the same question under other knobs is another measurement);
    production's keys carry no research part, so rows recorded before the knobs keep theirs.
    An oracle summarizer (``summarizer`` starting ``oracle/``) writes other summaries on the same
    path, so its rows are other measurements too (``("summarizer", id)`` at the end); a language
    model or the offline stand-in adds nothing, so every earlier key stays as it was."""
    key = (dataset, item_id, question_id, model, target_model, shape, int(frame_size), reader,
           int(seed), strategy, policy, shape_requested,
           int(context_window) if context_window is not None else None)
    if research != "production":
        key = (*key, research)
    if is_oracle_summarizer(summarizer):
        key = (*key, ("summarizer", summarizer))
    return key


#: litellm ids of summarizers that are oracles, not models (configs/summarizer/perfect.yaml)
ORACLE_SUMMARIZER_PREFIX = "oracle/"


def is_oracle_summarizer(summarizer: str | None) -> bool:
    """Whether a row's summaries were written by an oracle (an upper bound), not a model."""
    return summarizer is not None and summarizer.startswith(ORACLE_SUMMARIZER_PREFIX)


Row = typing.TypeVar("Row")


def one_row_per_measurement(rows: Iterable[Row], key: Callable[[Row], Hashable],
                            succeeded: Callable[[Row], bool],
                            created_at: Callable[[Row], str]) -> list[Row]:
    """The one rule that picks a row when a measurement was recorded more than once (a resumed
    run, an error row and its retry): the latest successful row, else the latest row
    (``created_at``, then file order). Rows come back in the order their keys first appeared.

    The tables (:func:`evals.analysis.aggregate.records_frame`), the console summary (through them)
    and the viewer (:func:`evals.view.entries.build_entries`, whose key adds the run id) all pick
    with this function, so they cannot disagree on which row counts.
    """
    chosen: dict[Hashable, tuple[tuple[bool, str, int], Row]] = {}
    for order, row in enumerate(rows):
        rank = (bool(succeeded(row)), str(created_at(row) or ""), order)
        k = key(row)
        if k not in chosen or rank > chosen[k][0]:
            chosen[k] = (rank, row)
    return [row for _, row in chosen.values()]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def heal_torn_tail(fd: int, path: Path) -> None:
    """Make the file end with a newline: cut a torn last line, or terminate a whole row.

    ``fd`` is open for reading and appending, under the caller's exclusive lock.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = size
    chunk = 1 << 16
    while start > 0:  # find the last newline, reading backwards
        lo = max(0, start - chunk)
        block = os.pread(fd, start - lo, lo)
        cut = block.rfind(b"\n")
        if cut >= 0:
            start = lo + cut + 1
            break
        start = lo
    tail = os.pread(fd, size - start, start)
    try:
        Record.from_json(json.loads(tail))
    except (ValueError, RecursionError):
        os.ftruncate(fd, start)
        warnings.warn(f"{path}: cut a torn last line ({len(tail)} bytes) before appending",
                      stacklevel=3)
    else:
        _write_all(fd, b"\n")  # a whole row that only lacks its newline: keep it


def append_records(path: str | os.PathLike[str], records: Iterable[Record]) -> int:
    """Append rows atomically (one write per row, under an exclusive lock); returns the count.

    A torn tail left by an earlier crash is healed first (``heal_torn_tail``). If a write
    fails (``OSError``: disk full, quota), the file is cut back to where it ended before this
    call, so it never keeps half a row, and the error is raised.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        (json.dumps(r.to_json(), ensure_ascii=False, sort_keys=True, allow_nan=False)
         + "\n").encode()
        for r in records
    ]
    if not lines:
        return 0
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            heal_torn_tail(fd, path)
            end = os.fstat(fd).st_size
            try:
                _write_all(fd, b"".join(lines))
                os.fsync(fd)
            except OSError:
                try:
                    os.ftruncate(fd, end)
                except OSError:
                    pass  # the next append heals what is left
                raise
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return len(lines)


def iter_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """Rows of one records file; a torn (unterminated, unparsable) final line is skipped, any
    other bad line is an error naming the file and the line."""
    for number, row in _numbered_rows(path):
        try:
            record = Record.from_json(row)
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
        yield record


def iter_rows(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The raw JSON objects of one records file, torn last line skipped as in ``iter_records``.

    For readers that must accept rows of other schema versions as they are (the viewer).
    """
    for _, row in _numbered_rows(path):
        yield row


def _numbered_rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            if number == len(lines):  # unterminated last line: an interrupted append
                warnings.warn(f"{path}: skipping a torn last line", stacklevel=2)
                continue
            raise ValueError(f"{path}:{number}: not a JSON record") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: a record is a JSON object, got "
                             f"{type(row).__name__}")
        yield number, row


def find_record_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every records file under the given files or directories (recursively), sorted."""
    found: set[Path] = set()
    for p in paths:
        p = Path(p)
        if p.is_file():
            found.add(p)
        elif p.is_dir():
            found.update(p.rglob(RECORDS_FILE))
        else:
            raise ValueError(f"no such records file or directory: {p}")
    return sorted(found)


def load_records(paths: Iterable[str | os.PathLike[str]]) -> list[Record]:
    return [r for f in find_record_files(paths) for r in iter_records(f)]


def completed_keys(path: str | os.PathLike[str]) -> set[tuple]:
    """Keys already recorded without an error: a resumed run skips exactly these."""
    return {r.key() for r in iter_records(path) if r.error is None}


class FrameStore:
    """Frames by content hash: ``root/ab/<sha256>.png``, written once, atomically."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @staticmethod
    def digest(png: bytes) -> str:
        return hashlib.sha256(png).hexdigest()

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.png"

    def put(self, png: bytes) -> str:
        digest = self.digest(png)
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(png)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        return digest

    def get(self, digest: str) -> bytes:
        return self.path(digest).read_bytes()


class JsonStore:
    """JSON documents by content hash: ``root/ab/<sha256>.json``, written once, atomically
    (the hash is over the exact bytes stored, so a name proves its content)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.json"

    def put_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.{id(data)}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        return digest

    def get(self, digest: str) -> dict[str, Any]:
        return json.loads(self.path(digest).read_bytes())


class ContextStore(JsonStore):
    """Contexts by content hash. A context is the request of one (item, arm) without the
    question, with every image's data replaced by its frame hash and sizes (the frames live in
    the :class:`FrameStore`). Records point at it by ``context_hash``, so a viewer can show
    exactly what was sent."""

    def put(self, context: Mapping[str, Any]) -> str:
        return self.put_bytes(json.dumps(context, ensure_ascii=False, sort_keys=True,
                                         separators=(",", ":")).encode())
