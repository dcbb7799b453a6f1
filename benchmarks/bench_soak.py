"""Soak: a whole eval run against a provider that fails 20 % of the time, and what survived.

Why: the harness promises that nothing paid for is lost and nothing is billed twice. This runs
the real pipeline (plan, cache, client, records) through litellm's HTTP stack against the
loopback server (``evals.twins.fake_server``) failing at random with 429 + Retry-After, 500, 503,
answers slower than the 3 s client timeout, connection resets and 200 bodies cut halfway, then
reruns the same command (which must send nothing), and prints:

    requests sent / questions / rows / duplicate rows / lost / re-billed / truncated

Targets: every question answered once (rows == questions, 0 duplicates, 0 lost, 0 re-billed);
the rerun sends 0 requests.

    .venv/bin/python benchmarks/bench_soak.py                      # 2,000 questions, 32 at once
    .venv/bin/python benchmarks/bench_soak.py --questions 200 --concurrency 16
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(argv: list[str] | None = None) -> int:
    from evals.twins.soak import run_soak

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="soak-") as work:
        first = run_soak(work, questions=args.questions, concurrency=args.concurrency,
                         fault_rate=args.fault_rate, seed=args.seed)
        again = run_soak(work, questions=args.questions, concurrency=args.concurrency,
                         fault_rate=args.fault_rate, seed=args.seed + 1)
    print(f"\nsoak: {args.questions} questions, concurrency {args.concurrency}, "
          f"{args.fault_rate:.0%} faults", file=sys.stderr)
    for line in first.lines():
        print("  " + line, file=sys.stderr)
    print(f"  rerun of the same command: {again.requests_sent} requests sent, {again.rows} rows, "
          f"{again.duplicate_rows} duplicates", file=sys.stderr)
    ok = (first.rows == first.questions and first.duplicate_rows == 0 and first.lost == 0
          and first.rebilled == 0 and again.requests_sent == 0 and again.rows == first.rows)
    print(f"  {'PASS' if ok else 'FAIL'}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
