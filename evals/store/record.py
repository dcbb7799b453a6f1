"""One result row: one (item, question, model, shape, reader, dataset, seed) measurement.

This is the contract between running and analysing (design §5). A row carries its own
coordinates and versions, so analysis never parses a directory name; what was sent (frames,
their pixels, predicted tokens and dollars); what came back (answer, provider-reported tokens,
cost, latency, cache hit, error); and the score.

A :class:`Record` holds six groups (:mod:`evals.store.record_groups`): ``coordinates``,
``context``, ``images``, ``tokens``, ``outcome`` and ``provenance``. Every field also reads
flat (``rec.correct`` is ``rec.outcome.correct``): the readers of rows (tables, viewer, search)
name columns, and the flat names are the columns. The flat row, read and written, goes through
:mod:`evals.store.record_columns` alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping

from evals.store.record_columns import (
    column_group,
    column_types,
    flat_columns,
    from_plain,
    matches,
    split_columns,
    to_plain,
)
from evals.store.record_groups import (
    GROUPS,
    AnswerAndScore,
    ContextFacts,
    Coordinates,
    Provenance,
    SentFrames,
    TokensAndBill,
)
from evals.store.record_upgrade import upgrade_record
from snapcompact.agent import LLM_METHODS

#: The legacy strategies that always summarize with an LLM (the agent's methods that do are
#: ``snapcompact.agent.LLM_METHODS``): their rows carry compaction calls.
LLM_STRATEGIES = ("context-full", "handoff")
#: litellm ids of summarizers that are oracles, not models (configs/summarizer/perfect.yaml)
ORACLE_SUMMARIZER_PREFIX = "oracle/"


@dataclass(frozen=True)
class Record:
    """A row as its six groups; any column also reads flat (``rec.em``), read-only."""

    coordinates: Coordinates
    context: ContextFacts
    images: SentFrames
    tokens: TokensAndBill
    outcome: AnswerAndScore
    provenance: Provenance

    def __getattr__(self, name: str) -> Any:
        """The flat read of a column: the group that holds it, then the field."""
        group = column_group().get(name)
        if group is None or group not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.__dict__[group], name)

    @classmethod
    def from_fields(cls, **values: Any) -> "Record":
        """A row from flat columns (``run_id=...``, ``correct=...``); each goes to its group."""
        parts = split_columns(values)
        try:
            return cls(**{attr: group(**parts[attr]) for attr, group in GROUPS})
        except TypeError as exc:
            raise ValueError(f"malformed record: {exc}") from exc

    def with_fields(self, **changes: Any) -> "Record":
        """A copy with some flat columns changed (``rec.with_fields(error="Timeout")``)."""
        parts = split_columns(changes)
        return replace(self, **{attr: replace(getattr(self, attr), **parts[attr])
                                for attr, _ in GROUPS if parts[attr]})

    # --- the question's share of its session's compaction bill -------------------------------

    def _calls_known_absent(self) -> bool:
        """A row written before compaction calls were billed made none for sure: ``truncate``
        (its hook answers the nominal soft method with an empty summary, no request), or no LLM
        method (handoff, soft, remote) ran in its replay and its strategy is not an LLM one."""
        strategy = self.coordinates.strategy
        if strategy == "truncate":
            return True
        return (strategy not in LLM_STRATEGIES
                and not LLM_METHODS.intersection(self.context.methods_used or {}))

    def _share(self, total: float | None) -> float:
        if total is None:
            return 0.0 if self._calls_known_absent() else math.nan
        if not total:
            return 0.0
        if not self.tokens.context_questions:
            return math.nan
        return total / self.tokens.context_questions

    @property
    def compaction_tokens_per_question(self) -> float:
        """This question's share of its session's compaction bill:
        ``compaction_billed_tokens / context_questions`` (the calls are made once per session,
        not per question). NaN: not recorded on a row whose replay ran an LLM method."""
        return self._share(self.tokens.compaction_billed_tokens)

    @property
    def billed_tokens(self) -> float:
        """What a question costs as billed: its request's prompt tokens plus its share of the
        session's compaction calls (``compaction_tokens_per_question``)."""
        return self.tokens.predicted_prompt_tokens + self.compaction_tokens_per_question

    @property
    def compaction_cost_usd_per_question(self) -> float:
        """This question's share of the session's compaction dollars (at compaction_price_model)."""
        return self._share(self.tokens.compaction_cost_usd)

    # --- identity and the flat row -----------------------------------------------------------

    def key(self) -> tuple:
        """Identity of the measurement: a resumed run skips rows whose key is present."""
        c = self.coordinates
        return record_key(c.dataset, c.item_id, c.question_id, c.model, c.target_model, c.shape,
                          c.frame_size, c.reader, c.seed, c.strategy, c.policy,
                          c.shape_requested, c.context_window, c.research, c.summarizer)

    def to_json(self) -> dict[str, Any]:
        """The flat row, in column order (:func:`evals.store.record_columns.flat_columns`),
        tuples as lists and mappings as dicts."""
        return {name: to_plain(getattr(self, name)) for name in flat_columns()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Record":
        """A flat row as read from a file: old rows upgraded (``record_upgrade``), every value
        type-checked against its column, lists made tuples; a bad row is a ``ValueError``."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a record is a JSON object, got {type(data).__name__}")
        values = upgrade_record(data)
        split_columns(values)  # an unknown column fails here, named
        hints = column_types()
        for name, value in values.items():
            if not matches(value, hints[name]):
                raise ValueError(f"record field {name!r} has the wrong type: {value!r:.80}")
        if values.get("schema_version", 1) == 1:
            # schema 1 measured rendered items, not compacted sessions: name them so
            values.setdefault("strategy", "full" if values.get("arm") == "text" else "render")
        values = {name: from_plain(value, hints[name]) for name, value in values.items()}
        for name in ("frame_px", "frame_hashes"):  # a row without them has always read frameless
            values.setdefault(name, ())
        return cls.from_fields(**values)


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


def is_oracle_summarizer(summarizer: str | None) -> bool:
    """Whether a row's summaries were written by an oracle (an upper bound), not a model."""
    return summarizer is not None and summarizer.startswith(ORACLE_SUMMARIZER_PREFIX)
