"""A small soak (the full one is benchmarks/bench_soak.py): 20 % faults, every kind of fault.

Real HTTP through litellm to the loopback server failing with 429 + Retry-After, 500, 503,
timeouts, resets and truncated bodies; the run must end with one row per question, none lost,
none duplicated, no complete answer delivered twice, and a rerun must send nothing.
"""

from __future__ import annotations

from evals.twins.soak import run_soak


def test_soak_at_20_percent_faults_loses_nothing_and_bills_nothing_twice(tmp_path):
    first = run_soak(tmp_path, questions=80, concurrency=16, fault_rate=0.2, seed=3)
    assert first.rows == first.questions == 80
    assert first.duplicate_rows == 0 and first.lost == 0 and first.rebilled == 0
    assert first.requests_sent > first.questions  # faults were injected and retried
    assert sum(v for k, v in first.outcomes.items() if k != "200") >= 5
    again = run_soak(tmp_path, questions=80, concurrency=16, fault_rate=0.2, seed=4)
    assert again.requests_sent == 0 and again.rows == 80 and again.duplicate_rows == 0
