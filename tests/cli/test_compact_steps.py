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
                   "--question", golden["question"], "--settings", str(settings),
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
    (("--allow-estimate",), "--allow-estimate belongs to the step protocol"),
    (("--steps", "0"), "--steps must be >= 1"),
    (("--steps", "1", "--system-prompt", "/no/such/prompt.txt"), "does not exist"),
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
    # The oracle's --steps replays the file's type:"message" entries only (its 12 custom
    # messages are left out), so the command is given that list, as a JSON file.
    from agent_family import oracle_messages

    session = tmp_path / "kimchi.json"
    session.write_text(json.dumps(oracle_messages(KIMCHI)), encoding="utf-8")
    proc = run_cli("compact", str(session), "--model", "claude-sonnet-4-5", "--context-window",
                   "32000", "--steps", "1", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert [r["turns"] for r in rows] == [2, 3, 4, 5, 6, 6]
    assert [r["compactions"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r["method"] for r in rows] == ["soft", "soft", "snapcompact", "snapcompact", "soft",
                                           "snapcompact"]
    assert all(not r["request"]["frames"] for r in rows)


def test_the_agents_own_system_prompt_is_counted_by_default(example):
    """The default is the text omp 18.3.4 sent (its sha256 recorded by the oracle's capture for
    the case piv1a-200k, model claude-opus-4-5): 7,273 characters for claude-sonnet-4-5, 1,991
    claude-v3 tokens, where 7,273 "s" were 3,637 (issue 45 item 3)."""
    import hashlib

    from snapcompact.agent import agent_system_prompt

    _, summary, _, _ = example
    assert summary["system_prompt"]["chars"] == 7273 and summary["system_prompt"]["tokens"] == 1991
    assert hashlib.sha256(agent_system_prompt("claude-opus-4-5").encode()).hexdigest() == (
        "e8f5b77132f6b7f127a6dd189944f10cc481cd668875d1ae041d6755b3b1ad04")


def test_a_system_prompt_file_replaces_it(tmp_path):
    session = tmp_path / "s.json"
    session.write_text(json.dumps([{"role": "user", "content": "hi"},
                                   {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are terse.", encoding="utf-8")
    for extra in ((), ("--steps", "1")):
        proc = run_cli("compact", str(session), "--model", "claude-sonnet-4-5", "--system-prompt",
                       str(prompt), "--out", str(tmp_path / "out"), *extra)
        assert proc.returncode == 0, proc.stderr
        told = json.loads(proc.stdout)["system_prompt"]
        assert (told["source"], told["chars"]) == (str(prompt), 14) and 0 < told["tokens"] < 14


def test_steps_refuse_a_stand_in_counter_unless_allowed(tmp_path):
    """Without ctok (simulated: its import blocked) the steps are refused with the fix named;
    --allow-estimate runs them and every row says ESTIMATE; the warning is said once."""
    session = tmp_path / "s.json"
    session.write_text(json.dumps([{"role": "user", "content": "hi"},
                                   {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]))
    blocked = ("import sys, runpy; sys.modules['ctok'] = None; "
               "sys.argv = ['snapcompact', *sys.argv[1:]]; "
               "runpy.run_module('snapcompact', run_name='__main__')")
    base = [sys.executable, "-c", blocked, "compact", str(session), "--model",
            "claude-sonnet-4-5", "--steps", "1", "--out", str(tmp_path / "out")]
    refused = subprocess.run(base, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2
    assert "refuses a stand-in counter" in refused.stderr
    assert "pip install --no-deps --ignore-requires-python ctok==1.3.0" in refused.stderr
    allowed = subprocess.run([*base, "--allow-estimate"], capture_output=True, text=True,
                             timeout=600)
    assert allowed.returncode == 0, allowed.stderr
    summary = json.loads(allowed.stdout)
    assert summary["counts_estimated_by"] == "estimate:claude-v3~o200kx1.19"
    assert all(r["counts_estimated_by"] for r in summary["rows"])
    steps = [line for line in allowed.stderr.splitlines() if line.startswith("step ")]
    assert steps and all("ESTIMATE: counted by a stand-in" in line for line in steps)
    assert allowed.stderr.count("snapcompact: warning: the Claude token counter needs") == 1
