"""The step parity family against the real coding agent, with the port's own counter (issue 37).

Goldens: ``tests/golden/agent_family/<case>.json`` (``scripts/make_parity_family.py``: the
agent's per-step summary from ``upstream-agent run --steps K``). Sessions are rebuilt, never
committed: real files from ``../shared/real-sessions`` (skipped with the reason when absent or
changed), generated ones from the project's generator (skipped when this interpreter draws
another session). The port replays the oracle's protocol with the maintenance's DEFAULT token
counter, not the agent's recorded counts (``tests/agent_family.py``).

A step is identical when both sides have the same compactions so far, the same method of the
latest compaction and the same number of frames in the request. The goal is >= 95 % of the
steps identical and last archives within 2 % (total and truncated characters).

MEASURED FLOORS, NOT THE GOAL: ``SAME_STEPS`` and ``ARCHIVE_DELTA`` below hold what the
family measures today (``python scripts/parity_family_table.py``); the test fails when parity
drops below them. Raise them when a fix makes more steps agree; each remaining difference is
explained in docs/production-caller.md, "Step parity family".
"""

from __future__ import annotations

import pytest
from agent_family import (
    FAMILY,
    Unavailable,
    case_names,
    compare,
    load_golden,
    session_of,
)

from snapcompact.agent.stepwise import plan_upstream_steps

CASES = case_names()
#: The archive's file list words its overflow line 4 characters longer than the agent's
#: ("... (N more files omitted)", tests/agent/test_agent_parity.py): +4 of 25,012 at most here.
OVERFLOW_WORDING = 0.0002
#: MEASURED FLOOR (not the goal): identical steps per case today. Raise, never lower, when a
#: fix lands (the goal is every case at >= 95 % of its steps).
SAME_STEPS: dict[str, int] = {
    "gen101-100k-32k": 17, "gen102-300k-64k": 23, "gen103-600k-128k": 23,
    "gen104-1500k-200k": 22, "gen105-200k-64k": 25, "gen106-900k-128k": 24,
    "gen107-450k-32k": 20,  # every generated step identical (181/210 in all, 86.2 %)
    "gjc03-200k": 4, "gjc03-32k": 2, "gjc04-200k": 4, "gjc04-32k": 4,
    "kimchi-200k": 6, "kimchi-32k": 5, "kimchi-64k-keep10k": 2,
}
#: MEASURED FLOOR (not the goal): |delta| of the last archive the agent sent, per case with
#: an archive on both sides at that step (total, truncated), as fractions; the goal is 0.02.
ARCHIVE_DELTA: dict[str, tuple[float, float]] = {
    **{name: (OVERFLOW_WORDING, 0.0) for name in (
        "gen101-100k-32k", "gen102-300k-64k", "gen103-600k-128k", "gen104-1500k-200k",
        "gen105-200k-64k", "gen106-900k-128k", "gen107-450k-32k")},
    # the agent compacted more often on these (its pre-prompt count is the recorded usage):
    # its last archive holds more of the session than the port's
    "gjc03-200k": (0.385, 0.0), "gjc04-200k": (0.213, 0.0), "kimchi-64k-keep10k": (0.083, 0.0),
}
#: The goal of issue 37, for the report line of the family test.
GOAL_SAME_SHARE = 0.95
#: The current goldens' seeds/sizes (tests/golden/agent): the family must not repeat them.
CURRENT_GENERATED = {(22, 60_000), (22, 262_000)}


def _session(name: str):
    try:
        return session_of(load_golden(name))
    except Unavailable as why:
        pytest.skip(str(why))


def test_family_covers_what_issue_37_asks() -> None:
    """>= 12 cases; real pi v3 files; generated sessions of new seeds and sizes between 100k
    and 1.5M characters; every window of 32k, 64k, 128k, 200k; non-default keep/reserve."""
    goldens = [load_golden(n) for n in CASES]
    assert len(goldens) >= 12
    real = {g["file"] for g in goldens if "real" in g["source"]}
    assert {"kimchi-dev__session.jsonl"} <= real
    generated = [g for g in goldens if "seed" in g["source"]]
    assert generated and all((g["source"]["seed"], g["source"]["target_tokens"])
                             not in CURRENT_GENERATED for g in generated)
    assert all(100_000 <= g["chars"] <= 1_500_000 for g in generated)
    assert {g["window"] for g in generated} == {32_000, 64_000, 128_000, 200_000}
    assert all(g["settings"].get("compaction") for g in generated)
    assert all((FAMILY / f"{n}.json").stat().st_size < 200_000 for n in CASES)


@pytest.mark.parametrize("case", CASES)
def test_step_plan_matches_the_oracle(case: str) -> None:
    golden = load_golden(case)
    plan = plan_upstream_steps(_session(case), golden["steps"], golden["question"])
    assert [p.turns for p in plan] == [r["turns"] for r in golden["rows"]]


@pytest.mark.parametrize("case", CASES)
def test_identical_steps_do_not_drop_below_the_measured_floor(case: str) -> None:
    _session(case)
    result = compare(case)
    assert result.same >= SAME_STEPS[case], (
        f"{case}: {result.same}/{result.steps} steps identical, the floor is "
        f"{SAME_STEPS[case]} (first difference at step {result.first_diff})")


@pytest.mark.parametrize("case", sorted(ARCHIVE_DELTA))
def test_last_archive_within_the_measured_floor(case: str) -> None:
    _session(case)
    result = compare(case)
    assert result.archives == "both"
    total, truncated = ARCHIVE_DELTA[case]
    assert abs(result.total_delta or 0.0) <= total, result
    assert abs(result.truncated_delta or 0.0) <= truncated, result
