"""The per-question records of a research comparison, committed beside its tables as Parquet.

Why: a comparison whose runs live outside the repository cannot be re-derived by anyone else
(issue 46: the held-out comparison's per-question rows were never committed, so what pairs
questions had to be withdrawn). ``research_compare --out DIR`` writes every record it read to
``DIR/research_records.parquet`` and names that file, not the run folders, in the command it
writes at the top of its markdown, so ``--check`` reruns the comparison from committed data.

Each row is one record: readable columns (session, label, arm, question, score, round, billed
tokens) for a reader with pandas, and ``record``, the record's exact flat JSON row
(:meth:`evals.store.record.Record.to_json`), which is what is read back, in the order written
(the order the comparison read them: the session bootstrap's draws follow it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from evals.store.record import Record

__all__ = ["RECORDS_TABLE", "read_records_table", "records_table"]

#: the file name beside the comparison's tables
RECORDS_TABLE = "research_records.parquet"
_READABLE = ("dataset", "seed", "item_id", "question_id", "research", "summarizer", "strategy",
             "policy", "shape_requested", "context_window", "correct", "evidence_round",
             "production_valid", "summary_stand_in", "billed_tokens")


def records_table(records: Sequence[Record]) -> pd.DataFrame:
    """One row per record: the readable columns and the exact ``record`` JSON."""
    rows = []
    for r in records:
        row = r.to_json()
        readable = {k: row.get(k) for k in _READABLE if k in row}
        readable["billed_tokens"] = float(r.billed_tokens)
        rows.append({**readable, "record": json.dumps(row, sort_keys=True)})
    return pd.DataFrame(rows)


def read_records_table(path: Path) -> list[Record]:
    """The records of a table :func:`records_table` wrote, in its order."""
    frame = pd.read_parquet(path, columns=["record"])
    return [Record.from_json(json.loads(cell)) for cell in frame["record"]]
