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

With the pre-prompt check reading the provider's recorded usage as the agent does (the usage
anchor, snapcompact/agent/usage_anchor.py) every step of every case is identical, so the tests
below hold that: every step, and every last archive within the overflow line's wording (the
only remaining difference, explained in docs/production-caller.md, "Step parity family").
Issue 45 added the six real files of ``../shared/real-sessions`` (pi v1 with signed thinking,
Claude Code) at 16k/32k/200k with both settings; the replay counts the agent's own system
prompt, checked here against the sha256 of the one the agent sent.
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

from snapcompact.agent import agent_system_prompt
from snapcompact.agent.stepwise import plan_upstream_steps

CASES = case_names()
#: The last archive's characters may differ by the overflow line's wording only: the port words
#: "... (N more files omitted)" 4 characters longer than the agent (tests/agent/test_agent_parity.py),
#: per omitted-files line, a few such lines on the real files (+0.07 % on gjc03-32k, the most).
ARCHIVE_TOLERANCE = 0.001
#: The current goldens' seeds/sizes (tests/golden/agent): the family must not repeat them.
CURRENT_GENERATED = {(22, 60_000), (22, 262_000)}


def _session(name: str):
    try:
        return session_of(load_golden(name))
    except Unavailable as why:
        pytest.skip(str(why))


def _compare(name: str):
    """The case compared, or skipped with the reason (its session is absent, or ctok is
    missing and the check refuses a stand-in counter)."""
    _session(name)
    try:
        return compare(name)
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


#: Issue 45 item 6: the six real files of ../shared/real-sessions, by name prefix.
REAL_FILES = {"piv1a": "pi-mono__before-compaction.jsonl", "piv1b": "pi-mono__compact.jsonl",
              "claude": "posthog-impact-dashboard__claude-session.jsonl",
              "kimchi": "kimchi-dev__session.jsonl",
              "gjc03": "agent-complex-task__03-raddit-dashboard-pr__session.jsonl",
              "gjc04": "agent-complex-task__04-awesome-agent-ide__session.jsonl"}


def test_family_covers_what_issue_45_asks() -> None:
    """Every real file at 16k, 32k and 200k with the agent's defaults and with keep 8,000 /
    reserve 4,096 (36 cases), the signed-thinking pi v1 file with the model its turns recorded
    (claude-opus-4-5); each case replays its file at its window."""
    goldens = {n: load_golden(n) for n in CASES}
    for prefix, file in REAL_FILES.items():
        for window in (16, 32, 200):
            for suffix in ("", "-keep8k"):
                golden = goldens[f"{prefix}-{window}k{suffix}"]
                assert (golden["file"], golden["window"]) == (file, window * 1000)
    assert goldens["piv1a-200k"]["model"] == "claude-opus-4-5"
    keep8k = {"compaction": {"keepRecentTokens": 8000, "reserveTokens": 4096}}
    assert all(g["settings"] == keep8k for n, g in goldens.items() if n.endswith("-keep8k"))


@pytest.mark.parametrize("case", [n for n in CASES if "system_sha256" in load_golden(n)])
def test_the_replays_system_prompt_is_the_one_the_agent_sent(case: str) -> None:
    """The package's copy of the agent's prompt, for the case's model, is byte for byte the
    ``system`` the agent sent in that case (sha256 recorded from its request)."""
    import hashlib

    golden = load_golden(case)
    text = agent_system_prompt(golden.get("model", "claude-sonnet-4-5"))
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == golden["system_sha256"]


@pytest.mark.parametrize("case", CASES)
def test_step_plan_matches_the_oracle(case: str) -> None:
    golden = load_golden(case)
    plan = plan_upstream_steps(_session(case), golden["steps"], golden["question"])
    assert [p.turns for p in plan] == [r["turns"] for r in golden["rows"]]


@pytest.mark.parametrize("case", CASES)
def test_every_step_is_identical(case: str) -> None:
    result = _compare(case)
    assert result.same == result.steps, (
        f"{case}: {result.same}/{result.steps} steps identical (first difference at step "
        f"{result.first_diff})")


@pytest.mark.parametrize("case", CASES)
def test_last_archive_within_the_overflow_wording(case: str) -> None:
    result = _compare(case)
    if result.archives != "both":
        assert result.archives == "none", result  # an archive on one side only is a difference
        return
    assert abs(result.total_delta or 0.0) <= ARCHIVE_TOLERANCE, result
    assert abs(result.truncated_delta or 0.0) <= ARCHIVE_TOLERANCE, result
