"""Print the probes ``dataset=session-file`` draws from one session file.

    .venv/bin/python scripts/show_session_probes.py ../shared/real-sessions/SESSION.jsonl

One block per probe: its kind, its depth in the session and the quarter it falls in, the
evidence message and line number (within that tool result), the evidence line, the question and
the answer; first a line counting the probes per quarter of the session
(``evals.items.datasets.session_probes.describe_probes``). Reads the file, writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evals.items.datasets.session_probes import describe_probes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="show_session_probes.py",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("session", help="a session file (JSONL)")
    parser.add_argument("--n", type=int, default=10, help="probes to draw (default: 10)")
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed (default: 0)")
    args = parser.parse_args(argv)
    try:
        print(describe_probes(args.session, args.n, args.seed))
    except (OSError, ValueError) as exc:
        print(f"show_session_probes.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
