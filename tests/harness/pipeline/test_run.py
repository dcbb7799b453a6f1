"""``snapcompact-eval`` end to end: an offline run, cache reruns, resume, the CLI.

The smoke experiment runs on the embedded OCR reader over a small generated agent session; a
rerun into a fresh folder must be answered entirely from the response cache with zero requests
sent (counted at the litellm call); an interrupted run -- gracefully, and by SIGKILL in a
subprocess talking to the loopback server -- must resume without re-sending any request whose
answer had arrived.
No key, no network: dummy keys are set and must never reach a file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hydra_compose import compose_eval

from evals.pipeline.rows import OCR_NOTE
from evals.pipeline.run import main, run_config
from evals.send.response_cache import ResponseCache
from evals.store.records import iter_records

# split: not a real key
DUMMY_KEYS = {"ANTHROPIC_API_KEY": "sk-ant-" + "dummy-not-a-key-0123456789",
              "OPENAI_API_KEY": "sk-test-dummy-not-a-key-9876543210"}


class Interrupted(BaseException):
    """Stands in for Ctrl-C: not an Exception, so nothing on the way up may swallow it (a real
    KeyboardInterrupt would also stop pytest itself)."""


class Counting:
    """litellm.acompletion, counted; optionally interrupted after ``stop_after`` calls."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.calls = 0
        self.stop_after = stop_after

    async def __call__(self, **kwargs):
        from evals.send.client import import_litellm

        self.calls += 1
        if self.stop_after is not None and self.calls > self.stop_after:
            raise Interrupted  # what Ctrl-C does in the middle of a sweep
        return await import_litellm().acompletion(**kwargs)


def rows_of(run_dir: Path):
    return list(iter_records(run_dir / "records.jsonl"))


def assert_no_secrets(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in DUMMY_KEYS.values():
                assert value.encode() not in data, f"{value} leaked into {path}"


@pytest.fixture
def dummy_keys(monkeypatch):
    for name, value in DUMMY_KEYS.items():
        monkeypatch.setenv(name, value)


def test_default_run_on_the_ocr_reader_then_answered_from_the_cache(tmp_path, capsys,
                                                                    dummy_keys):
    """The smoke experiment on the OCR reader, then a rerun with zero requests sent.

    At a 20k window, not the experiment's 16k: with the agent's own system prompt and tools
    counted (issue 45 item 3), at 16k a snapcompact round sometimes cannot reduce the context
    enough and the agent hands off (an LLM method, so not production's context offline); from
    20k every round of both shapes compacts to frames (configs/experiment/smoke.yaml)."""
    overrides = [f"results_dir={tmp_path}", "progress=false", "experiment=smoke",
                 "context_window=20000"]
    first = run_config(compose_eval(overrides), tmp_path / "first", base_dir=tmp_path,
                       completion_fn=(calls := Counting()))
    out = capsys.readouterr().out
    rows = rows_of(tmp_path / "first")
    # 2 questions x (full + truncate + snapcompact 11on16-bw + snapcompact 6x6u-bw)
    assert first.planned == len(rows) == calls.calls == first.requests_sent == 8
    assert {r.shape_requested for r in rows if r.strategy == "snapcompact"} == {"11on16-bw",
                                                                                "6x6u-bw"}
    assert {r.frame_size for r in rows if r.shape != "text"} == {512}
    assert all(r.error is None and r.extra["note"] == OCR_NOTE for r in rows)
    assert OCR_NOTE in out

    by = {(r.strategy, r.shape, r.question_id): r for r in rows}
    # the whole history as text is read; what truncation dropped cannot be answered
    assert all(r.correct for r in rows if r.strategy == "full")
    dropped = [r for r in rows if r.strategy == "truncate" and r.evidence_round >= 1]
    assert dropped and not any(r.correct for r in dropped)
    # what production would send: every snapcompact context fits the window and was built by
    # the agent's own methods (nothing an offline run could not run); the bounds are labelled
    snap = [r for r in rows if r.strategy == "snapcompact"]
    assert all(r.production_valid is True and r.fits_window for r in snap)
    assert all(r.compactions >= 2 and r.methods_used.get("snapcompact", 0) >= 2 for r in snap)
    assert all(sum(r.frames_by_shape.values()) == r.frames <= r.frame_cap for r in snap)
    assert all(r.production_valid is None and r.production_note for r in rows
               if r.strategy in ("full", "truncate"))
    assert len(by) == 8
    # the reader echoes the target's predicted prompt tokens as its usage
    assert all(r.reported_prompt_tokens == r.predicted_prompt_tokens for r in rows)

    # a fresh run folder, the same response cache: 100 % cache hits, nothing sent
    again = run_config(compose_eval(overrides), tmp_path / "second", base_dir=tmp_path,
                       completion_fn=(calls2 := Counting()))
    rows2 = rows_of(tmp_path / "second")
    assert calls2.calls == 0 and again.requests_sent == 0
    assert again.cache_hits == len(rows2) == 8
    assert all(r.cached for r in rows2)
    assert {(r.key(), r.answer) for r in rows2} == {(r.key(), r.answer) for r in rows}

    # the same folder again: every row is already recorded, nothing is asked at all
    resumed = run_config(compose_eval(overrides), tmp_path / "second", base_dir=tmp_path,
                         completion_fn=(calls3 := Counting()))
    assert resumed.skipped_done == 8 and resumed.planned == 0 and calls3.calls == 0
    assert len(rows_of(tmp_path / "second")) == 8
    assert_no_secrets(tmp_path)


def test_interrupted_run_resumes_without_asking_twice(tmp_path):
    overrides = [f"results_dir={tmp_path}", "progress=false", "model=mock", "experiment=smoke",
                 "model.concurrency=1"]
    with pytest.raises(Interrupted):
        run_config(compose_eval(overrides), tmp_path / "run", base_dir=tmp_path,
                   completion_fn=Counting(stop_after=5))
    # every answer that arrived before the interrupt was cached (the one arriving at that very
    # moment may be lost); rows in hand are flushed on the way out (a row whose task was
    # cancelled between the cache write and the row is simply a cache hit on resume)
    answered = len(ResponseCache(tmp_path / "cache" / "responses"))
    recorded = len(rows_of(tmp_path / "run"))
    assert 4 <= answered <= 5 and 1 <= recorded <= answered

    result = run_config(compose_eval(overrides), tmp_path / "run", base_dir=tmp_path,
                        completion_fn=(calls := Counting()))
    rows = rows_of(tmp_path / "run")
    total = 8  # 2 questions x 4 arms
    assert result.skipped_done == recorded
    assert calls.calls == result.requests_sent == total - answered
    assert len(rows) == len({r.key() for r in rows}) == total


def _console_script() -> list[str]:
    script = Path(sys.executable).with_name("snapcompact-eval")
    return [str(script)] if script.exists() else [sys.executable, "-m", "evals.pipeline.run"]


def test_killed_sweep_never_rebills_an_answered_request(tmp_path, monkeypatch):
    """SIGKILL a CLI run mid-sweep (loopback server, real HTTP), rerun the same command."""
    from evals.twins.fake_server import FakeChatServer

    args = ["model=fake", "experiment=smoke", "dataset.params.depths=[0.1,0.3,0.5,0.7,0.9]",
            "model.concurrency=2", "progress=false", f"results_dir={tmp_path}"]
    with FakeChatServer(latency_s=0.3) as server:
        env = {**os.environ, **DUMMY_KEYS, "SNAPCOMPACT_FAKE_API_BASE": server.api_base}
        proc = subprocess.Popen([*_console_script(), *args], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while server.requests < 6 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        time.sleep(1.0)  # handlers still answering the dead client finish their count first
        sent_before = server.requests
        answered = len(ResponseCache(tmp_path / "cache" / "responses"))
        assert 0 < answered <= sent_before < 20

        for name, value in {**DUMMY_KEYS, "SNAPCOMPACT_FAKE_API_BASE": server.api_base}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(sys, "argv", ["snapcompact-eval", *args])
        main()  # the same command, in this process
        resent = server.requests - sent_before

    run_dir = tmp_path / "runs" / "smoke"
    rows = rows_of(run_dir)
    total = 20  # 5 questions x 4 arms
    assert resent == total - answered  # only requests whose answer never arrived
    assert len(rows) == len({r.key() for r in rows}) == total
    assert all(r.error is None for r in rows)
    assert_no_secrets(tmp_path)


def test_cli_refuses_a_run_past_its_budget(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["snapcompact-eval", "model=mock", "experiment=smoke",
                                      "budget_usd=0.0001", "progress=false"])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "snapcompact-eval: budget: predicted cost $" in err
    assert "exceeds the budget $0.0001" in err and "raise budget_usd" in err
    assert not list(tmp_path.rglob("records.jsonl"))
    assert (tmp_path / "results" / "cache" / "responses").is_dir()  # default, under the cwd


def test_cli_dry_run_prints_prediction(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(sys, "argv", ["snapcompact-eval", "model=gpt-5", "dry_run=true",
                                      "experiment=smoke", "progress=false"])
    main()
    out = capsys.readouterr().out
    assert "dry run (predicted, nothing sent)" in out
    assert "gpt-5 via openai-completions" in out
    assert not list(tmp_path.rglob("records.jsonl"))


@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_multirun_runs_one_job_per_shape(tmp_path, launcher):
    args = ["-m", f"launcher={launcher}", "model=mock", "experiment=smoke",
            "shape=11on16-bw,6x6u-bw", f"results_dir={tmp_path}"]
    out = subprocess.run([*_console_script(), *args], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    sweep = tmp_path / "runs" / "multirun"
    files = sorted((sweep / "smoke").glob("*/records.jsonl"))
    assert [f.parent.name for f in files] == ["model=mock,shape=11on16-bw",
                                              "model=mock,shape=6x6u-bw"]
    asked = [{r.shape_requested for r in iter_records(f) if r.strategy == "snapcompact"}
             for f in files]
    assert asked == [{"11on16-bw"}, {"6x6u-bw"}]
    # the shape column says what was drawn: at 512 px the foveated planner draws the single
    # page of the 11on16-bw job in the denser 8on16-bw companion, and 6x6u-bw (denser than
    # the companion) as asked; full/truncate send text
    shapes = [{r.shape for r in iter_records(f)} for f in files]
    assert shapes == [{"8on16-bw", "text"}, {"6x6u-bw", "text"}]
    assert (sweep / "multirun.yaml").is_file()


def _user_session(path: Path) -> list[dict]:
    """A session the harness has never seen: a pipeline JSONL tree written by hand."""
    from snapcompact.compaction import Session

    facts = {3: "The staging database password was rotated to maple-7731 on Tuesday.",
             17: "Our release branch for the mobile app is called rb-harbor-42."}
    session = Session(path, fsync=False)
    for turn in range(24):
        note = facts.get(turn, "")
        session.append_message({"role": "user", "content": [
            {"type": "text", "text": f"Step {turn}: please review module m{turn}. {note}"}]})
        session.append_message({"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": f"t{turn}", "name": "read",
             "arguments": {"path": f"src/m{turn}.py"}}]})
        body = "\n".join(f"{i:>5}\tvalue_{turn}_{i} = compute({i}, {turn})" for i in range(60))
        session.append_message({"role": "toolResult", "toolCallId": f"t{turn}",
                                "toolName": "read", "isError": False,
                                "content": [{"type": "text", "text": body}]})
        session.append_message({"role": "assistant", "stopReason": "stop", "content": [
            {"type": "text", "text": f"Module m{turn} looks fine."}]})
    return [{"id": "pw", "question": "What was the staging database password rotated to?",
             "answers": ["maple-7731"], "evidence": facts[3]},
            {"id": "rb", "question": "What is the mobile app's release branch called?",
             "answers": ["rb-harbor-42"], "evidence": facts[17]}]


def test_a_users_session_and_questions_run_and_rerun_for_free(tmp_path):
    session = tmp_path / "mine.jsonl"
    questions = tmp_path / "questions.jsonl"
    rows = _user_session(session)
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = tmp_path / "R"
    args = ["dataset=session", f"dataset.params.path={session}",
            f"dataset.params.questions={questions}", "strategies=[full,truncate,snapcompact]",
            "shapes=[11on16-bw,6x6u-bw]", "policies=[foveated]", "context_window=6000",
            "++settings.compaction.keepRecentTokens=1000",
            "++settings.compaction.reserveTokens=1000", "model=ocr", f"results_dir={results}",
            "progress=false"]
    first = subprocess.run([*_console_script(), *args], cwd=tmp_path, capture_output=True,
                           text=True, timeout=900, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    records = rows_of(results / "runs" / "default")
    assert len(records) == 2 * 4 and {r.dataset for r in records} == {"session"}
    for r in records:
        assert r.strategy in ("full", "truncate", "snapcompact") and r.question_id in ("pw", "rb")
        assert r.predicted_prompt_tokens == r.text_tokens + r.predicted_image_tokens > 0
        assert r.evidence_round is not None and r.compactions >= (r.strategy == "truncate")
        assert r.context_hash and r.skipped is None
        if r.strategy == "snapcompact" and r.compactions == 0:
            # at a 6k window five-thousand-token frames never reduce the context: the agent
            # would hand over to an LLM method, which this offline run cannot run, and says so
            assert r.production_valid is False and "LLM method" in r.production_note
    # the password sat early in the session: a compaction discarded it except under `full`
    pw = {r.strategy: r for r in records if r.question_id == "pw" and r.shape != "6x6u-bw"}
    assert pw["full"].evidence_round == 0 and pw["full"].correct
    assert pw["truncate"].evidence_round >= 1 and not pw["truncate"].correct
    sent = re.search(r"(\d+) sent, (\d+) cache hits, (\d+) shared", first.stdout)
    assert sent and int(sent[1]) + int(sent[2]) + int(sent[3]) == 8  # equal contexts share
    again = subprocess.run([*_console_script(), *args], cwd=tmp_path, capture_output=True,
                           text=True, timeout=900, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    # finished at this code: no replay, nothing sent (evals.pipeline.finished)
    assert "nothing to do: this run finished at this code (8 rows" in again.stdout
    assert len(rows_of(results / "runs" / "default")) == 8
