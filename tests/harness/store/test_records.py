"""Records: round trip, atomic concurrent appends, torn lines, resume keys, frame store."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest
from record_rows import make_record

from evals.store.records import (
    FrameStore,
    Record,
    append_records,
    completed_keys,
    find_record_files,
    iter_records,
    load_records,
)


def test_round_trip(tmp_path) -> None:
    rec = make_record(extra={"note": "x"})
    append_records(tmp_path / "records.jsonl", [rec])
    assert list(iter_records(tmp_path / "records.jsonl")) == [rec]


def _writer(path: str, worker: int) -> None:
    for i in range(50):
        append_records(path, [make_record(question_id=f"w{worker}-{i}", answer="x" * 5000)])


def test_concurrent_process_appends_never_interleave(tmp_path) -> None:
    path = str(tmp_path / "records.jsonl")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    rows = list(iter_records(path))
    assert len(rows) == 200
    assert len({r.question_id for r in rows}) == 200


def test_torn_last_line_is_skipped_and_earlier_rows_survive(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, [make_record(), make_record(question_id="q2")])
    with open(path, "ab") as fh:
        fh.write(b'{"run_id": "r1", "trunc')
    with pytest.warns(UserWarning, match="torn"):
        rows = list(iter_records(path))
    assert [r.question_id for r in rows] == ["q1", "q2"]


def test_corrupt_middle_line_is_an_error(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"bad\n' + "\n")
    append_records(path, [make_record()])
    with pytest.raises(ValueError, match="not a JSON record"):
        list(iter_records(path))


def test_completed_keys_skip_errors(tmp_path) -> None:
    path = tmp_path / "records.jsonl"
    ok = make_record()
    failed = make_record(question_id="q2", error="RateLimitError")
    append_records(path, [ok, failed])
    assert completed_keys(path) == {ok.key()}


def test_unknown_fields_are_rejected() -> None:
    data = make_record().to_json()
    data["surprise"] = 1
    with pytest.raises(ValueError, match="surprise"):
        Record.from_json(data)


def test_load_records_walks_directories_without_parsing_names(tmp_path) -> None:
    a = tmp_path / "weird name" / "records.jsonl"
    b = tmp_path / "x" / "y" / "records.jsonl"
    append_records(a, [make_record(run_id="A")])
    append_records(b, [make_record(run_id="B")])
    assert find_record_files([tmp_path]) == sorted([a, b])
    assert sorted(r.run_id for r in load_records([tmp_path])) == ["A", "B"]
    with pytest.raises(ValueError, match="no such"):
        load_records([tmp_path / "missing"])


def test_frame_store_is_content_addressed(tmp_path) -> None:
    store = FrameStore(tmp_path)
    d1 = store.put(b"\x89PNG one")
    d2 = store.put(b"\x89PNG one")
    assert d1 == d2 and store.get(d1) == b"\x89PNG one"
    assert store.path(d1).parent.name == d1[:2]
    assert not [p for p in tmp_path.rglob("*.tmp")]
    assert os.listdir(store.path(d1).parent) == [f"{d1}.png"]


def _schema2_row() -> dict:
    """A row as schema 2 wrote it: coordinates in ``extra``, four counts under two names each."""
    row = make_record(frames=2, text_tokens=300, predicted_image_tokens=3042,
                      predicted_prompt_tokens=3342).to_json()
    for name in ("model_config", "api", "provider", "price_model", "shape_requested", "image_detail",
                 "context_window", "settings", "summarizer", "bill_rules", "seen_px",
                 "image_tokens_per_frame", "predicted_completion_tokens", "predicted_spend_usd",
                 "prompt_version", "model_shapes_sha256", "reader_version", "cache_key",
                 "replay_warnings", "question_kind", "question_meta", "reading"):
        row.pop(name)
    row.update(schema_version=2, frames_sent=2, context_text_tokens=300,
               context_image_tokens=3042, context_billed_tokens=3342)
    row["extra"] = {"model_config": "claude-sonnet-4-5", "api": "anthropic-messages",
                    "provider": "anthropic", "shape_choice": "auto",
                    "seen_px": [[1092, 1092], [1092, 546]], "image_tokens_per_frame": [1521, 1521],
                    "bill_rules": ["anthropic-patch: 28x28 patches", "anthropic-patch: 28x28 patches"],
                    "kind": "fact", "depth": 0.25, "note": "free text stays here"}
    return row


def test_a_schema2_row_reads_as_schema3_with_its_coordinates_as_fields() -> None:
    record = Record.from_json(_schema2_row())
    assert record.schema_version == 3
    assert (record.model_config, record.api, record.provider, record.shape_requested) == (
        "claude-sonnet-4-5", "anthropic-messages", "anthropic", "auto")
    assert record.seen_px == ((1092, 1092), (1092, 546))
    assert record.image_tokens_per_frame == (1521, 1521)
    assert record.question_kind == "fact" and record.question_meta == {"depth": 0.25}
    assert (record.frames, record.text_tokens, record.predicted_image_tokens,
            record.predicted_prompt_tokens) == (2, 300, 3042, 3342)
    assert record.extra == {"note": "free text stays here"}
    assert Record.from_json(record.to_json()) == record


def test_a_schema2_row_whose_duplicate_counts_disagree_is_refused() -> None:
    row = _schema2_row()
    row["context_billed_tokens"] = 9999
    with pytest.raises(ValueError, match="context_billed_tokens=9999 disagrees"):
        Record.from_json(row)


def test_a_row_from_a_newer_schema_is_refused_naming_the_version() -> None:
    row = make_record().to_json()
    row["schema_version"] = 4
    with pytest.raises(ValueError, match="schema_version 4 is newer"):
        Record.from_json(row)


def test_a_row_with_the_old_spend_field_name_reads_with_a_warning(tmp_path) -> None:
    """``spend_predicted_usd`` (runs before the predicted_/reported_ spelling) is read as
    ``predicted_spend_usd``, with a warning naming the new spelling."""
    row = make_record().to_json()
    row["spend_predicted_usd"] = row.pop("predicted_spend_usd")
    row["spend_predicted_usd"] = 0.25
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.warns(FutureWarning, match="spend_predicted_usd is the old spelling; read as "
                                           "predicted_spend_usd"):
        (rec,) = iter_records(path)
    assert rec.predicted_spend_usd == 0.25
