"""The hostile-session corpus (tests/hostile_sessions/): every session or questions file a user
might bring, broken or adversarial, through both readers of it.

Each case of ``expectations.tsv`` is either a correct run ("ok"), a run that goes on as the
coding agent does after one warning per repaired line ("warns: FRAGMENT", the fragment naming the
line), or one clear error line that
names the file, and the line or entry, and contains the expected fragment; never a traceback
and never a hang (every case runs under a CPU-time and a wall-time alarm). The readers:

* ``python -m snapcompact compact FILE --context-window 32000`` (the CLI's ``main``, in process:
  exit status 0 and a JSON summary, or 2 and one ``error:`` line on stderr);
* the harness's ``dataset=session`` loader (``evals.items.datasets.load_dataset``), whose error reaches
  the user through ``evals.pipeline.run``'s one-line message, and once end to end through
  ``snapcompact-eval``.

Small files are committed (``files/``); the big ones (megabytes, 100,000 levels of nesting) are
written from ``make_corpus.BIG`` into a scratch folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from locations import TESTS

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

HERE = TESTS / "hostile_sessions"
sys.path.insert(0, str(HERE))
import make_corpus  # noqa: E402

CASES = [tuple(line.split("\t")) for line in (HERE / "expectations.tsv").read_text().splitlines()
         if line.strip() and not line.startswith("#")]
SESSION_CASES = sorted({(s, e) for s, q, e in CASES if q == "q_ok.jsonl"})
TIMEOUT_S = 120  # CPU seconds: a case that takes longer hangs
WALL_S = 900  # a case blocked this long hangs (generous: CI machines are shared)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The committed files plus the big ones, in one folder."""
    folder = tmp_path_factory.mktemp("hostile")
    for path in (HERE / "files").iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    make_corpus.write(folder, make_corpus.BIG)
    (folder / "q_nested.jsonl").write_bytes(make_corpus.QUESTIONS["q_nested.jsonl"]())
    return folder


class _Alarm:
    """Fail a case that spends ``TIMEOUT_S`` of CPU (SIGPROF: every loop of the readers is Python
    code in the main thread, so the signal interrupts it), or that blocks for ``WALL_S``
    (SIGALRM: waiting on something that never comes). CPU rather than wall time for the first,
    so a loaded machine cannot turn a slow-but-finite case into a "hang"."""

    def __enter__(self):
        def hang(signum, _frame):
            what = f"{TIMEOUT_S} CPU s" if signum == signal.SIGPROF else f"{WALL_S} s"
            raise TimeoutError(f"did not finish in {what}")
        self.old = (signal.signal(signal.SIGPROF, hang), signal.signal(signal.SIGALRM, hang))
        signal.setitimer(signal.ITIMER_PROF, TIMEOUT_S)
        signal.alarm(WALL_S)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.alarm(0)
        signal.signal(signal.SIGPROF, self.old[0])
        signal.signal(signal.SIGALRM, self.old[1])


def test_the_corpus_is_complete_and_committed_files_match_their_recipes():
    names = {s for s, _, _ in CASES} | {q for _, q, _ in CASES}
    recipes = {**make_corpus.SESSIONS, **make_corpus.BIG, **make_corpus.QUESTIONS}
    assert names == set(recipes), names ^ set(recipes)
    assert len(CASES) >= 60
    for name, make in {**make_corpus.SESSIONS, **make_corpus.QUESTIONS}.items():
        if name != "q_nested.jsonl":
            assert (HERE / "files" / name).read_bytes() == make(), f"{name}: run make_corpus.py"


@pytest.mark.parametrize("session,expect", SESSION_CASES, ids=[c[0] for c in SESSION_CASES])
def test_compact_command(session, expect, corpus, tmp_path, capsys):
    from snapcompact.cli import commands

    path = corpus / session
    with _Alarm(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the torn-last-line case warns, then runs
        status = commands.main(["compact", str(path), "--model", "claude-sonnet-4-5",
                                "--context-window", "32000", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    if expect.startswith("warns: "):
        assert status == 0, err
        summary = json.loads(out)
        assert summary["messages_replayed"] >= 1
        fragment = expect.removeprefix("warns: ")
        # one clean line on stderr (no Python warning display, no library source path), and
        # counted with the replay's warnings
        lines = [x for x in err.splitlines() if fragment in x]
        assert len(lines) == 1 and lines[0].startswith("snapcompact compact: warning: "), err
        assert str(path) in lines[0] and "UserWarning" not in err and ".py:" not in err
        assert [w for w in summary["load_warnings"] if fragment in w] == [
            lines[0].removeprefix("snapcompact compact: warning: ")]
        assert summary["warnings_total"] >= 1 and not [w for w in caught
                                                       if fragment in str(w.message)]
        return
    if expect == "ok":
        assert status == 0, err
        summary = json.loads(out)
        assert summary["messages_replayed"] >= 4
        return
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("snapcompact compact: error: "), err
    assert str(path) in lines[0] and expect in lines[0], lines[0]


@pytest.mark.parametrize("session,questions,expect", CASES, ids=[f"{c[0]}+{c[1]}" for c in CASES])
def test_harness_session_loader(session, questions, expect, corpus):
    from evals.items.datasets import load_dataset
    from evals.pipeline.run import _user_message

    try:
        with _Alarm(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            items = load_dataset("session", path=str(corpus / session),
                                 questions=str(corpus / questions), seed=0)
    except ValueError as exc:
        line = _user_message(exc)
        assert expect != "ok", line
        if expect.startswith("warns: "):
            # the repaired session loads; what the agent no longer sees (lines before a break)
            # can leave a question's evidence out, which is one clear line about the questions
            assert sum(expect.removeprefix("warns: ") in str(w.message) for w in caught) == 1
            assert "\n" not in line and str(corpus / questions) in line, line
            return
        assert "\n" not in line and expect in line, line
        named = corpus / (questions if questions != "q_ok.jsonl" else session)
        assert str(named) in line, line
        return
    (item,) = items
    if expect.startswith("warns: "):
        fragment = expect.removeprefix("warns: ")
        assert sum(fragment in str(w.message) for w in caught) == 1
        assert [q.question_id for q in item.questions] and item.messages
        return
    assert expect == "ok"
    assert [q.question_id for q in item.questions] and len(item.messages) >= 4


def test_a_broken_session_through_the_harness_is_one_line(tmp_path):
    session = HERE / "files" / "toolcall_without_id.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "evals.pipeline.run", "dataset=session",
         f"dataset.params.path={session}",
         f"dataset.params.questions={HERE / 'files' / 'q_ok.jsonl'}",
         f"results_dir={tmp_path}", "dry_run=true", "progress=false"],
        capture_output=True, text=True, timeout=TIMEOUT_S,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert errors == [f"snapcompact-eval: error: {session}: line 3 (assistant) block 1: field "
                      "'id' must be a string, got null/missing"], proc.stderr
    assert "Traceback" not in proc.stderr
