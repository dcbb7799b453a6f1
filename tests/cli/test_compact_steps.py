"""``compact --steps K``: the upstream-agent oracle's protocol from the command line (issue 37/3).

Expected values are the real agent's: the committed ``example`` golden is ``upstream-agent run
session.json --window 32000 --steps 20`` (omp 18.3.4, keep 8,000, reserve 4,096), and the
kimchi-dev figures are that tool's run on ``../shared/real-sessions/kimchi-dev__session.jsonl``
at 32k with ``--steps 1`` (compactions 1..6; methods soft, soft, snapcompact, snapcompact,
soft, snapcompact; no frames). The step plan (turns per step) is the oracle's ``plan``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agent_parity import load_case

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-sessions"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snapcompact", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    golden = load_case("example")
    folder = tmp_path_factory.mktemp("example")
    session = folder / "session.json"
    session.write_text(json.dumps(golden["session"]), encoding="utf-8")
    settings = folder / "settings.json"
    settings.write_text(json.dumps(golden["settings"]), encoding="utf-8")
    proc = run_cli("compact", str(session), "--model", "claude-sonnet-4-5",
                   "--context-window", str(golden["window"]), "--steps", str(golden["steps"]),
                   "--question", golden["question"], "--system-chars",
                   str(golden["system_chars"]), "--settings", str(settings),
                   "--out", str(folder / "out"))
    assert proc.returncode == 0, proc.stderr
    return golden, json.loads(proc.stdout), proc.stderr, folder / "out"


def test_steps_follow_the_oracles_plan(example):
    golden, summary, _, _ = example
    assert summary["protocol"] == "steps" and summary["steps"] == golden["steps"]
    assert [r["turns"] for r in summary["rows"]] == [r["turns"] for r in golden["rows"]]
    assert summary["method_order"] == ["snapcompact", "remote", "soft"]  # strategy migrated


def test_compactions_methods_and_frames_per_step_are_the_agents(example):
    golden, summary, _, _ = example
    assert [r["compactions"] for r in summary["rows"]] == [r["compactions"]
                                                          for r in golden["rows"]]
    assert [r["method"] for r in summary["rows"]] == [r["method"] for r in golden["rows"]]
    assert [len(r["request"]["frames"]) for r in summary["rows"]] == [
        len(r["frames"]) for r in golden["rows"]]
    assert [[f[:2] for f in r["request"]["frames"]] for r in summary["rows"]] == [
        [f[:2] for f in r["frames"]] for r in golden["rows"]]


def test_archive_totals_are_the_agents(example):
    golden, summary, _, _ = example
    for ours, theirs in zip(summary["rows"], golden["rows"]):
        assert ours["archive"] == theirs["archive"]


def test_one_line_per_step_on_stderr_and_the_session_written(example):
    golden, summary, stderr, out = example
    lines = [line for line in stderr.splitlines() if line.startswith("step ")]
    n = len(golden["rows"])
    assert [line.split(" | ")[0] for line in lines] == [
        f"step {r['step']}/{n} turns {r['turns']}" for r in golden["rows"]]
    assert "archive (snapcompact) total 36,059 truncated 19,230" in lines[1]
    assert "last compaction: soft (no snapcompact archive)" in lines[2]
    entries = [json.loads(x) for x in (out / "session.jsonl").read_text().splitlines()]
    assert sum(e.get("type") == "compaction" for e in entries) == summary["compactions"] == 2
    assert len(list((out / "frames").glob("*.png"))) == summary["frames"] == 0


@pytest.mark.parametrize(("extra", "message"), [
    (("--question", "Why?"), "--question belongs to the step protocol"),
    (("--system-chars", "10"), "--system-chars belongs to the step protocol"),
    (("--steps", "0"), "--steps must be >= 1"),
    (("--steps", "1", "--system-chars", "-1"), "--system-chars must be >= 0"),
    (("--steps", "1", "--strategy", "truncate"), "strategy must be one of"),
])
def test_bad_step_flags_exit_2_with_one_line(tmp_path, extra, message):
    session = tmp_path / "s.json"
    session.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    proc = run_cli("compact", str(session), "--model", "claude-sonnet-4-5",
                   "--out", str(tmp_path / "out"), *extra)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


KIMCHI = REAL / "kimchi-dev__session.jsonl"


@pytest.mark.skipif(not KIMCHI.is_file(), reason="../shared/real-sessions is absent")
def test_kimchi_at_32k_next_to_the_agent(tmp_path):
    proc = run_cli("compact", str(KIMCHI), "--model", "claude-sonnet-4-5", "--context-window",
                   "32000", "--steps", "1", "--system-chars", "7273", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert [r["turns"] for r in rows] == [2, 3, 4, 5, 6, 6]
    assert [r["compactions"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r["method"] for r in rows] == ["soft", "soft", "snapcompact", "snapcompact", "soft",
                                           "snapcompact"]
    assert all(not r["request"]["frames"] for r in rows)
