"""dataset=session-file: probe questions from a session's own tool output.

The fixture (tests/fixtures/datasets/probe_session.json) is a session written by hand for these
tests, with its facts known: a pytest run (a failing file, an AssertionError message, 1 failed /
5 passed), a commit hash, a settings file (timeout = 30; `retries = 3` printed twice), and values
that occur twice on purpose (src/app/main.py in ls and grep output, the hash abc1234 in a deploy
and a rollback). The expected probes below are worked out from the fixture by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from locations import FIXTURES

from evals.items.datasets import dataset_names, load_dataset
from evals.items.datasets.session_probes import (
    ProbeCandidate,
    probe_candidates,
    sample_probes,
)
from evals.items.sessions import message_text
from evals.pipeline.scoring import score

SESSION = FIXTURES / "datasets" / "probe_session.json"
PYTEST = "In the output of the `bash` call running `pytest tests/unit -q` (message 2), "

# (evidence message, kind, answer, question): every unambiguous fact in the fixture.
EXPECTED = [
    (2, "probe-path", "tests/unit/test_io.py",
     PYTEST + "what is the file path printed right after `FAILED`?"),
    (2, "probe-error", "sizes differ after write",
     PYTEST + "what message follows `AssertionError:` in it?"),
    (2, "probe-count", "1", PYTEST + "how many failed does it report?"),
    (2, "probe-count", "5", PYTEST + "how many passed does it report?"),
    (4, "probe-hash", "3f9a2c71d0be45e8a61f0c2d9b7e4a5c6d8f1e20",
     "In the output of the `bash` call running `git log -1 --format='commit %H'` (message 4), "
     "what is the hash printed right after `commit`?"),
    (6, "probe-number", "30",
     "In the output of the `read` call on `src/settings.py` (message 6), what value does it "
     "give for `timeout`?"),
]


def _messages() -> list[dict]:
    return json.loads(SESSION.read_text())


def _load(**params):
    # the draw before probe kinds (tests/harness/items/test_probe_kinds.py checks the kinds)
    return load_dataset("session-file", path=str(SESSION), probe_kinds=False, **params)


def test_registered_under_the_issue_name():
    assert "session-file" in dataset_names()


def test_the_fixture_yields_exactly_the_hand_worked_probes():
    [item] = _load(n_questions=10)
    got = [(item.evidence_index[q.question_id], q.meta["kind"], q.answers[0], q.question)
           for q in item.questions]
    assert got == EXPECTED
    for q in item.questions:
        assert q.meta["evidence_message"] == item.evidence_index[q.question_id]
        assert q.answers[0] in q.evidence  # the value as the tool printed it
        assert item.messages[q.meta["evidence_message"]]["role"] == "toolResult"
    assert item.meta["probe_candidates"] == len(EXPECTED)


def test_ambiguous_values_are_left_out():
    values = {c.value for c in probe_candidates(_messages())}
    assert "abc1234" not in values           # the same hash in two tool results
    assert "src/app/main.py" not in values   # the same path in ls and grep output
    assert "3" not in values                 # `retries = 3` printed twice


def test_a_value_once_becomes_ambiguous_when_a_second_message_repeats_its_line():
    messages = _messages()
    messages.append({"role": "toolResult", "toolCallId": "c8", "toolName": "bash",
                     "content": [{"type": "text", "text": "timeout = 30"}], "isError": False})
    assert "30" not in {c.value for c in probe_candidates(messages)}


def test_sampling_is_deterministic_by_seed_and_keeps_session_order():
    first = [q.question_id for q in _load(n_questions=3, seed=7)[0].questions]
    again = [q.question_id for q in _load(n_questions=3, seed=7)[0].questions]
    assert first == again and len(first) == 3
    draws = {tuple(q.question_id for q in _load(n_questions=3, seed=s)[0].questions)
             for s in range(8)}
    assert len(draws) > 1  # the seed decides the draw
    order = [q.question_id for q in _load(n_questions=10)[0].questions]
    assert first == [qid for qid in order if qid in first]


def test_sampling_takes_each_kind_in_turn():
    """Many paths and one count: a draw of two holds the count (kinds alternate)."""
    paths = [ProbeCandidate("path", f"p{i}.py", f"line {i}", i, 1, f"q{i}") for i in range(50)]
    count = ProbeCandidate("count", "4", "4 passed", 60, 1, "q-count")
    for seed in range(5):
        picked = sample_probes([*paths, count], 2, seed)
        assert count in picked and len(picked) == 2
    five = sample_probes(paths, 5, 1)
    assert len(set(five)) == 5 and five == sorted(five, key=lambda c: c.message_index)


def test_answer_check_is_exact_after_normalization():
    [item] = _load(n_questions=10)
    by_kind = {q.meta["kind"]: q for q in item.questions}
    sha = by_kind["probe-hash"]
    assert score(sha.answers[0], sha.answers).em == 1.0
    assert score(f"The hash is {sha.answers[0]}.", sha.answers).em == 0.0
    assert score(sha.answers[0].upper(), sha.answers).correct  # case is normalized away
    wrong = sha.answers[0][:-1] + "1"  # one hex digit off
    assert not score(wrong, sha.answers).correct
    passed = next(q for q in item.questions if q.question.endswith("passed does it report?"))
    assert score("5", passed.answers).correct and not score("6", passed.answers).correct
    path = by_kind["probe-path"]
    assert score("tests/unit/test_io.py", path.answers).em == 1.0
    assert not score("tests/unit/test_io2.py", path.answers).correct


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="needs dataset.params.path"):
        load_dataset("session-file")
    with pytest.raises(ValueError, match="n_questions must be at least 1"):
        _load(n_questions=0)


def test_a_session_without_tool_facts_is_refused(tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "stopReason": "stop"}]))
    with pytest.raises(ValueError, match="no fact that makes an unambiguous probe"):
        load_dataset("session-file", path=str(plain))


REAL = Path(__file__).resolve().parents[3].parent / "shared" / "real-sessions" / \
    "kimchi-dev__session.jsonl"


@pytest.mark.skipif(not REAL.is_file(), reason="../shared/real-sessions is absent")
def test_a_real_session_gives_ten_probes_each_in_one_tool_result():
    [item] = load_dataset("session-file", path=str(REAL), n_questions=10, seed=0)
    assert len(item.questions) == 10
    texts = [message_text(m) for m in item.messages]
    for q in item.questions:
        assert item.messages[item.evidence_index[q.question_id]]["role"] == "toolResult"
        holders = [i for i, t in enumerate(texts) if q.evidence in t]
        assert holders == [item.evidence_index[q.question_id]], q.question
    assert len({q.meta["kind"] for q in item.questions}) >= 3
