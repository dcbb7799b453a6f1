"""Are two runs' records the same measurements? Rows matched by their key, compared field by field.

Why: a sweep on a cluster must measure exactly what the same sweep measures on one machine; only
the bookkeeping of *this* run may differ (when a row was written, how long its answer took, whether
it came from the response cache and after how many attempts, what this run spent, its run id).
Everything else (answers, scores, frames, tokens, predictions, versions) must be equal.

    python scripts/compare_records.py RESULTS_A RESULTS_B     # folders (searched) or records files

Prints ``records: N rows identical`` and exits 0, or one line per difference (at most 20) and
exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.store.records import Record, find_record_files, iter_records

#: Fields that describe this run, not the measurement.
RUN_SPECIFIC = frozenset({
    "created_at",            # wall clock of the write
    "latency_s",             # how long the answer took (a cache hit keeps the first one's)
    "cached",                # whether the response cache answered
    "attempts",              # HTTP attempts (0 for a cache hit)
    "predicted_spend_usd",   # what this run spent (nothing for a cache hit)
})


def _rows(path: str) -> dict[tuple, dict]:
    """Rows by (run folder relative to ``path``, row key): a sweep's jobs may measure the same
    key (a text arm does not depend on the job's shape), each in its own folder."""
    root = Path(path)
    rows: dict[tuple, dict] = {}
    for records in find_record_files([root]):
        folder = str(records.parent.relative_to(root)) if root.is_dir() else "."
        for record in iter_records(records):
            key = (folder, *record.key())
            if key in rows:
                raise SystemExit(f"compare_records: {records}: two rows for {key}")
            rows[key] = _measurement(record)
    return rows


def _measurement(record: Record) -> dict:
    return {k: v for k, v in record.to_json().items() if k not in RUN_SPECIFIC}


def compare(a: str, b: str) -> list[str]:
    """Differences between the records under ``a`` and ``b`` (empty when the same)."""
    rows_a, rows_b = _rows(a), _rows(b)
    problems = [f"only in {a}: {key}" for key in rows_a.keys() - rows_b.keys()]
    problems += [f"only in {b}: {key}" for key in rows_b.keys() - rows_a.keys()]
    for key in sorted(rows_a.keys() & rows_b.keys(), key=repr):
        ra, rb = rows_a[key], rows_b[key]
        for field in sorted(ra.keys() | rb.keys()):
            if ra.get(field) != rb.get(field):
                problems.append(f"{key}: {field}: {ra.get(field)!r:.80} != {rb.get(field)!r:.80}")
    if not rows_a:
        problems.append(f"no records under {a}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    args = parser.parse_args(argv)
    problems = compare(args.a, args.b)
    if problems:
        for line in problems[:20]:
            print(f"compare_records: {line}", file=sys.stderr)
        print(f"compare_records: {len(problems)} differences", file=sys.stderr)
        return 1
    ignored = ", ".join(sorted(RUN_SPECIFIC))
    print(f"records: {len(_rows(args.a))} rows identical (ignoring {ignored})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
