"""A record in groups, written flat: the committed rows and tables are the proof the files did not
change when the one flat class became six groups (issue 38 item 3)."""

from __future__ import annotations

import csv
import dataclasses
import json
import pickle
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from record_rows import frame, make_record

from evals.store import record_columns
from evals.store.record import Record
from evals.store.record_columns import COLUMN_ORDER, flat_columns, nested_columns
from evals.store.record_groups import GROUPS, TokensAndBill
from evals.store.records import RECORDS_FILE, iter_records

ROOT = Path(__file__).resolve().parents[3]
RUN_RECORDS = sorted((ROOT / "results" / "runs").glob(f"*/{RECORDS_FILE}"))
#: what ``snapcompact-eval-table`` leaves out of the committed table (evals.analysis.table
#: PER_RUN_COLUMNS): a rerun's commit, clock and latency
PER_RUN = {"git_sha", "created_at", "latency_s", "cached", "attempts"}


def _committed_header(name: str) -> list[str]:
    path = ROOT / "results" / name
    if not path.is_file():
        pytest.skip(f"no committed results/{name}")
    with path.open(newline="") as fh:
        return next(csv.reader(fh))


@pytest.mark.skipif(not RUN_RECORDS, reason="no results/runs/*/records.jsonl in this checkout "
                    "(run folders are not committed; the lead's checkout holds them)")
@pytest.mark.parametrize("path", RUN_RECORDS, ids=[p.parent.name for p in RUN_RECORDS])
def test_every_run_row_reads_into_groups_and_writes_back_byte_for_byte(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    records = list(iter_records(path))
    assert len(records) == len(lines) > 0
    for line, rec in zip(lines, records):
        assert isinstance(rec.tokens, TokensAndBill)
        again = json.dumps(rec.to_json(), ensure_ascii=False, sort_keys=True, allow_nan=False)
        assert again == line


def test_the_committed_records_table_starts_with_the_flat_columns_in_order() -> None:
    header = _committed_header("records.csv")
    record_part = [c for c in flat_columns() if c not in PER_RUN]
    assert header[:len(record_part)] == record_part
    parquet = pq.read_schema(ROOT / "results" / "records.parquet").names
    assert parquet[:len(record_part)] == record_part


def test_every_column_is_in_exactly_one_group_and_in_the_order() -> None:
    names = [f.name for _, group in GROUPS for f in dataclasses.fields(group)]
    assert len(names) == len(set(names)) == len(COLUMN_ORDER)
    assert set(names) == set(COLUMN_ORDER)
    assert list(make_record().to_json()) == list(COLUMN_ORDER)


def test_a_column_missing_from_the_order_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setattr(record_columns, "COLUMN_ORDER",
                        tuple(c for c in COLUMN_ORDER if c != "stable_prefix_tokens"))
    flat_columns.cache_clear()
    try:
        with pytest.raises(TypeError, match="stable_prefix_tokens"):
            flat_columns()
    finally:
        monkeypatch.undo()
        flat_columns.cache_clear()
    assert flat_columns() == COLUMN_ORDER


def test_each_group_is_frozen_typed_and_says_what_it_holds() -> None:
    rec = make_record()
    for attr, group in GROUPS:
        assert isinstance(getattr(rec, attr), group)
        assert group.__dataclass_params__.frozen
        assert group.__doc__ and len(group.__doc__.split()) > 8
        assert all(f.type for f in dataclasses.fields(group))


def test_a_column_reads_flat_from_its_group_and_cannot_be_set() -> None:
    rec = make_record(correct=False, predicted_prompt_tokens=777, frame_cap=3)
    assert rec.correct is rec.outcome.correct is False
    assert rec.predicted_prompt_tokens == rec.tokens.predicted_prompt_tokens == 777
    assert rec.frame_cap == rec.images.frame_cap == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.correct = True  # type: ignore[misc]
    with pytest.raises(AttributeError, match="no_such_column"):
        _ = rec.no_such_column


def test_with_fields_changes_only_the_named_columns() -> None:
    rec = make_record()
    changed = rec.with_fields(error="Timeout", seed=3)
    before, after = rec.to_json(), changed.to_json()
    assert {k for k in before if before[k] != after[k]} == {"error", "seed"}
    assert changed.key() != rec.key()  # the seed is a coordinate
    with pytest.raises(ValueError, match="surprise"):
        rec.with_fields(surprise=1)


def test_from_fields_names_an_unknown_column() -> None:
    data = make_record().to_json()
    with pytest.raises(ValueError, match="unknown field.*surprise"):
        Record.from_fields(**data, surprise=1)
    data.pop("answer")
    with pytest.raises(ValueError, match="answer"):
        Record.from_fields(**data)


def test_a_record_survives_pickling() -> None:
    """Records cross process boundaries (Hydra joblib): the flat read must not recurse while a
    copy is being rebuilt."""
    rec = make_record(methods_used={"snapcompact": 2})
    assert pickle.loads(pickle.dumps(rec)) == rec


def test_the_tables_write_every_list_or_object_column_as_json_text() -> None:
    rec = make_record(settings={"a": 1}, methods_used={"snapcompact": 2},
                      frames_by_shape={"8on16-bw": 1}, question_meta={"depth": 0.5},
                      reading={"spans": [1, 2]}, dependency_versions={"litellm": "1"},
                      replay_warnings=("w",), bill_rules=("r",), seen_px=((1, 2),),
                      image_tokens_per_frame=(5,), extra={"note": "x"})
    df = frame([rec])
    assert set(nested_columns()) == {
        "frame_px", "frame_hashes", "gold_answers", "extra", "seen_px", "bill_rules",
        "image_tokens_per_frame", "replay_warnings", "settings", "question_meta", "reading",
        "dependency_versions", "methods_used", "frames_by_shape"}
    for name in nested_columns():
        assert json.loads(df[name].iloc[0]) == rec.to_json()[name], name


def test_a_row_without_frame_lists_reads_frameless() -> None:
    """Rows have always loaded without ``frame_px`` / ``frame_hashes`` (a text arm written by
    hand or by an early harness): they read as no frames, not as a malformed row."""
    data = make_record(frames=0).to_json()
    del data["frame_px"], data["frame_hashes"]
    rec = Record.from_json(data)
    assert rec.frame_px == () and rec.frame_hashes == ()
    data.pop("frames")
    with pytest.raises(ValueError, match="frames"):
        Record.from_json(data)


def test_a_row_written_before_reasoning_tokens_were_recorded_reads_none() -> None:
    from evals.store.record import Record

    row = make_record().to_json()
    assert "reported_reasoning_tokens" in row  # today's rows carry it (last column)
    old = {k: v for k, v in row.items() if k != "reported_reasoning_tokens"}
    assert Record.from_json(old).reported_reasoning_tokens is None
    assert Record.from_json({**old, "reported_reasoning_tokens": 37}).reported_reasoning_tokens \
        == 37
