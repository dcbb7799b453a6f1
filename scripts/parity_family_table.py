"""Print the step parity family's table: the agent's recorded steps against the port's.

    python scripts/parity_family_table.py [--steps] [CASE ...]

For every case of ``tests/golden/agent_family/`` (recorded by ``scripts/make_parity_family.py``)
the port replays the oracle's step protocol with the maintenance's default token counter and
the row says how many steps are identical in (compactions, method, frames), where they first
differ, the final (compactions, method, frames) of each side, and the total and truncated
characters of the last archive the agent's requests carried (a later soft compaction drops
it) against the port's at that step, as (port - agent) / agent. ``--steps`` adds
the per-step comparison under each row. Cases whose session is not available here are listed
as skipped with the reason. The figures are what ``tests/agent/test_agent_family.py`` holds
as its measured floors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import agent_family  # noqa: E402
from agent_family import Unavailable, case_names, compare, step_lines  # noqa: E402


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.2f} %"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--steps", action="store_true", help="print every step under its case")
    ap.add_argument("--allow-estimate", action="store_true",
                    help="run on a stand-in Claude counter when ctok is missing (refused "
                    "otherwise: the cases are a parity check)")
    args = ap.parse_args()
    agent_family.ALLOW_ESTIMATE = args.allow_estimate
    print("| case | window | settings | steps same / steps | first differing step "
          "| final agent (compactions, method, frames) | final port | last archive step "
          "| archive total delta | archive truncated delta |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    same = steps = 0
    within = archives = 0
    for name in args.cases or case_names():
        try:
            r = compare(name)
        except Unavailable as why:
            print(f"| {name} | skipped: {why} |")
            continue
        same, steps = same + r.same, steps + r.steps
        if r.archives == "both":
            archives += 1
            within += abs(r.total_delta or 0) <= 0.02 and abs(r.truncated_delta or 0) <= 0.02
        total = _pct(r.total_delta) if r.archives == "both" else r.archives
        trunc = _pct(r.truncated_delta) if r.archives == "both" else r.archives
        print(f"| {r.name} | {r.window // 1000}k | {r.settings} | {r.same}/{r.steps} "
              f"| {r.first_diff or '-'} | {r.agent_final} | {r.port_final} | {r.archive_step} "
              f"| {total} | {trunc} |")
        if args.steps:
            print("\n".join(step_lines(name)))
    if steps:
        print(f"\nsteps identical: {same}/{steps} = {100 * same / steps:.1f} %; last archives "
              f"within 2 %: {within}/{archives} cases with an archive on both sides")
    return 0


if __name__ == "__main__":
    sys.exit(main())
