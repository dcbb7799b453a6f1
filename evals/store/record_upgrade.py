"""The one converter of old rows: a schema 1 or 2 row, or a field in its old spelling, read as
today's columns.

Why one place: every reader of ``records.jsonl`` (``Record.from_json``, and through it the
tables, the viewer's entries and the resumed run) goes through :func:`upgrade_record`, so an old
results folder reads the same everywhere and a rename is written down once.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

from evals.store.record_groups import SCHEMA_VERSION

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

