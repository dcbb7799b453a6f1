"""Probe kinds in the datasets: all three at every depth of a generated session, and a session
file's probes from distinct lines without trivial values.

Hand-worked: the generated session is checked against its own text (the gist line in the turn's
explanation, the never-stated subject absent from the whole session, the lure's value), and the
small session below was written for these tests with its facts known.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.items.datasets.agent_session import load_agent_session
from evals.items.datasets.probe_plants import GIST_LEAD
from evals.items.datasets.session_probe_kinds import is_trivial, sample_kinds
from evals.items.datasets.session_probes import probe_candidates, sample_probes
from evals.items.sessions import message_text

KINDS = ["exact", "gist", "never-stated"]


def _strip_gists(messages):
    out = []
    for m in messages:
        text = "".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
        out.append(text.split(f"\n\n{GIST_LEAD} ")[0])
    return out


def test_a_generated_session_asks_all_three_kinds_at_every_depth():
    depths = [0.2, 0.6, 0.9]
    [item] = load_agent_session(target_tokens=12_000, depths=depths, probes=KINDS)
    whole = "\n".join(message_text(m) for m in item.messages)
    by_depth = {}
    for q in item.questions:
        by_depth.setdefault(q.meta["depth"], set()).add(q.meta["probe"])
    assert by_depth == {d: set(KINDS) for d in depths}
    exact = {q.meta["depth"]: q for q in item.questions if q.meta["probe"] == "exact"}
    for q in item.questions:
        if q.meta["probe"] == "never-stated":
            lure = exact[q.meta["depth"]]
            assert q.answers == ("unanswerable",)
            assert (q.evidence, q.meta["lure_answer"]) == (lure.evidence, lure.answers[0])
            assert q.meta["subject"] in q.question and q.meta["subject"] not in whole
            assert q.question != lure.question
        if q.meta["probe"] == "gist":
            assert f"{GIST_LEAD} {q.evidence}" in whole
            assert q.answers[0] in q.evidence and q.meta["keywords"]


def test_probes_leave_the_sessions_own_draws_as_they_were():
    [plain] = load_agent_session(target_tokens=12_000, depths=[0.2, 0.9])
    [probed] = load_agent_session(target_tokens=12_000, depths=[0.2, 0.9], probes=KINDS)
    assert _strip_gists(plain.messages) == _strip_gists(probed.messages)
    assert [q.question_id for q in plain.questions] == \
        [q.question_id for q in probed.questions if q.meta["probe"] == "exact"]
    assert all("probe" not in q.meta for q in plain.questions)  # an old item: no kind


def _tool(call_id, command, output):
    call = {"role": "assistant", "stopReason": "toolUse", "content": [
        {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}]}
    result = {"role": "toolResult", "toolCallId": call_id, "toolName": "bash", "isError": False,
              "content": [{"type": "text", "text": output}]}
    return [call, result]


SESSION = [
    {"role": "user", "content": [{"type": "text", "text": "check the repo"}]},
    *_tool("c1", "git show --stat", "3 files changed, 11 insertions(+), 4 deletions(-)"),
    *_tool("c2", "cat loop.ts", "for (let i = 0; i < n; i++) {\ntimeout = 30"),
    *_tool("c3", "pytest -q", "ValueError: the cache file was written twice by the worker\n"
                              "12 passed, 25 warnings"),
]


def test_trivial_values_go():
    assert is_trivial("count", "3", "how many files changed does it report?")
    assert is_trivial("number", "0", "what value does it give for `let i`?")
    assert not is_trivial("number", "30", "what value does it give for `timeout`?")
    assert not is_trivial("count", "12", "how many passed does it report?")


def test_a_session_files_probes_are_of_three_kinds_on_distinct_lines():
    candidates = probe_candidates(SESSION)
    whole = "\n".join(message_text(m) for m in SESSION)
    questions = sample_kinds(candidates, 5, 0, whole, sample_probes)
    lines = [(q.meta["evidence_message"], q.meta["evidence_line"]) for q in questions]
    assert len(lines) == len(set(lines))
    kinds = {q.meta["probe"]: q for q in questions}
    assert set(kinds) == set(KINDS)
    # the non-trivial values by hand: 11 (insertions), 30 (timeout), 12 (passed), 25 (warnings)
    # and the error message; 3, 4 and the loop's 0 never come back
    answers = {q.answers[0] for q in questions}
    assert not answers & {"3", "4", "0"}
    gist = kinds["gist"]
    assert gist.meta["keywords"] == ["cache", "file", "written", "twice"]
    never = kinds["never-stated"]
    assert never.question.endswith("what value does it give for `peak memory`?")
    assert never.meta["lure_answer"] in {"11", "30", "12", "25"}


REAL = Path(__file__).resolve().parents[3].parent / "shared" / "real-sessions" / \
    "kimchi-dev__session.jsonl"


@pytest.mark.skipif(not REAL.is_file(), reason="../shared/real-sessions is absent")
def test_kimchi_devs_ten_probes_come_from_ten_lines_without_a_loop_counter():
    from evals.items.datasets import load_dataset

    [item] = load_dataset("session-file", path=str(REAL), n_questions=10, seed=0)
    lines = {(q.meta["evidence_message"], q.meta["evidence_line"]) for q in item.questions}
    assert len(item.questions) == len(lines) == 10
    assert {q.meta["probe"] for q in item.questions} == set(KINDS)
    assert not any("`let i`" in q.question for q in item.questions)
    assert all(not is_trivial(q.meta["kind"].removeprefix("probe-"), q.answers[0], q.question)
               for q in item.questions if q.meta["probe"] == "exact")
