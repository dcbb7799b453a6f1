"""The flat row: the one place the groups of a record become columns and columns become groups.

Why one place: ``records.jsonl`` lines, ``records.csv`` and the Parquet tables are flat, one
column per field, and their column order is part of the committed files' bytes. The groups
(:mod:`evals.store.record_groups`) say what belongs together; :data:`COLUMN_ORDER` says where
each column has always stood. :func:`flat_columns` checks the two agree (every group field
exactly once), so a field added to a group and not placed here fails at import, naming it.
"""

from __future__ import annotations

import collections.abc
import math
import types
import typing
from functools import cache
from typing import Any, Mapping

from evals.store.record_groups import GROUPS

#: The flat columns in the order every records file and table has written them (the order of
#: the one flat class rows were before they were grouped). A new field goes into its group and
#: at the end of this list, so every older column keeps its place in the tables.
COLUMN_ORDER: tuple[str, ...] = (
    "run_id", "experiment", "dataset", "item_id", "question_id", "model", "target_model", "arm",
    "shape", "frame_size", "reader", "seed",
    "package_version", "git_sha", "shape_table_sha256", "pricing_table_sha256",
    "renderer_version",
    "frames", "frame_px", "frame_hashes", "history_chars", "text_tokens", "text_token_method",
    "predicted_image_tokens", "predicted_prompt_tokens", "predicted_cost_usd",
    "answer", "reported_prompt_tokens", "reported_completion_tokens", "reported_cost_usd",
    "latency_s", "cached", "error", "attempts",
    "em", "f1", "correct", "abstained", "cer",
    "strategy", "policy", "compactions", "evidence_round", "frames_evicted", "text_tail_chars",
    "compaction_cost_tokens", "context_hash", "skipped",
    "model_config", "api", "provider", "price_model", "shape_requested", "image_detail",
    "context_window", "settings", "research", "summarizer",
    "bill_rules", "seen_px", "image_tokens_per_frame", "predicted_completion_tokens",
    "predicted_spend_usd",
    "prompt_version", "model_shapes_sha256", "reader_version", "cache_key", "replay_warnings",
    "replay_warnings_total",
    "methods_used", "frame_cap", "frames_by_shape", "context_tokens_estimate",
    "agent_token_method", "fits_window", "production_valid", "production_note",
    "summary_stand_in", "sent_hash", "code_sha256", "same_context_as", "shape_asked",
    "shape_asked_drawn", "dependency_versions",
    "prompt_cache_rule", "predicted_cache_write_tokens", "predicted_cache_read_tokens",
    "predicted_cost_cached_usd", "reported_cache_write_tokens", "reported_cache_read_tokens",
    "stable_prefix_tokens", "truncated_chars",
    "compaction_calls", "compaction_input_tokens", "compaction_output_tokens",
    "compaction_billed_tokens", "compaction_cache_read_tokens",
    "compaction_cache_write_tokens", "compaction_token_method", "compaction_price_model",
    "compaction_cost_usd", "compaction_bill_note", "context_questions",
    "session_requests", "session_input_tokens", "session_cache_read_tokens",
    "session_cache_write_tokens", "session_output_tokens", "session_billed_tokens",
    "session_cost_usd",
    "question", "gold_answers", "question_kind", "question_meta", "reading", "created_at",
    "schema_version", "extra", "full_history_prompt_tokens",
    "reported_reasoning_tokens",
)


@cache
def column_group() -> dict[str, str]:
    """Each flat column -> the ``Record`` attribute of the group holding it."""
    owner: dict[str, str] = {}
    for attr, group in GROUPS:
        for name in group.__dataclass_fields__:
            if name in owner:
                raise TypeError(f"record column {name!r} is in two groups: {owner[name]} "
                                f"and {attr}")
            owner[name] = attr
    return owner


@cache
def flat_columns() -> tuple[str, ...]:
    """The record's flat columns, in file order: what ``to_json`` writes, what the CSV and
    Parquet tables start with. Checked against the groups: no column missing, none extra."""
    owner = column_group()
    unplaced = sorted(set(owner) - set(COLUMN_ORDER))
    stray = sorted(set(COLUMN_ORDER) - set(owner))
    if unplaced or stray or len(set(COLUMN_ORDER)) != len(COLUMN_ORDER):
        raise TypeError(f"record columns and groups disagree: not placed in COLUMN_ORDER "
                        f"{unplaced}, in no group {stray}")
    return COLUMN_ORDER


@cache
def column_types() -> dict[str, Any]:
    """Each flat column's type annotation, read from its group."""
    hints: dict[str, Any] = {}
    for _, group in GROUPS:
        hints.update(typing.get_type_hints(group))
    return hints


@cache
def nested_columns() -> tuple[str, ...]:
    """The columns whose values are lists or objects (tuples and mappings): a table writes them
    as JSON text, one cell each."""
    hints = column_types()
    return tuple(name for name in flat_columns() if _is_nested(hints[name]))


def _is_nested(hint: Any) -> bool:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_is_nested(h) for h in typing.get_args(hint) if h is not type(None))
    return typing.get_origin(hint) in (tuple, collections.abc.Mapping, dict)


def split_columns(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Flat ``{column: value}`` -> ``{group attribute: {column: value}}``; an unknown column is
    an error naming it."""
    owner = column_group()
    unknown = sorted(set(values) - set(owner))
    if unknown:
        raise ValueError(f"record has unknown field(s): {', '.join(unknown)}")
    parts: dict[str, dict[str, Any]] = {attr: {} for attr, _ in GROUPS}
    for name, value in values.items():
        parts[owner[name]][name] = value
    return parts


def to_plain(value: Any) -> Any:
    """A field's value as JSON holds it: tuples as lists, mappings as dicts, all the way down."""
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def from_plain(value: Any, hint: Any) -> Any:
    """A JSON value as its field holds it: lists become the tuples the annotation names."""
    if typing.get_origin(hint) is tuple and isinstance(value, (list, tuple)):
        args = typing.get_args(hint)
        inner = args[0] if len(args) == 2 and args[1] is Ellipsis else None
        if inner is not None and typing.get_origin(inner) is tuple:
            return tuple(tuple(v) for v in value)
        return tuple(value)
    return value


def matches(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field annotation (tuples arrive as lists)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, h) for h in typing.get_args(hint))
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
            return all(matches(v, args[0]) for v in value)
        return len(args) == len(value) and all(matches(v, a) for v, a in zip(args, value))
    if origin in (collections.abc.Mapping, dict):
        return isinstance(value, Mapping)
    return True  # an annotation this checker does not know: accept
