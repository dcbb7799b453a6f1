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
    questions = sample_kinds(candidates, 5, 0, [message_text(m) for m in SESSION], sample_probes)
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


def test_quarter_quotas_go_to_the_fewest_first_under_the_cap():
    from evals.items.datasets.session_probe_kinds import quarter_quotas

    # ten over four quarters, three at most: q1 q2 q3 q4 q1 q2 q3 q4 q1 q2
    assert quarter_quotas([0, 0, 0, 0], [12, 3, 3, 3], 10, 3) == [3, 3, 2, 2]
    # q2-q4 hold one line each; q1 reaches the cap (3), then the cap gives way: 8 are drawn
    assert quarter_quotas([2, 0, 0, 0], [12, 1, 1, 1], 8, 3) == [5, 1, 1, 1]
    # fewer lines than probes: every line, no more
    assert quarter_quotas([0, 0, 0, 0], [1, 0, 0, 1], 5, 2) == [1, 0, 0, 1]


WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango", "uniform")
FILLER = "word " * 2000  # 10,000 characters of prose between the tool calls


def _spread_session():
    """Twelve labelled numbers in the first tool result (the first quarter), three in each of
    three more, which 10,000-character user turns push into the second, third and last
    quarters: the dense first quarter is where an unspread draw goes."""
    limits = iter(WORDS)
    value = iter(range(10, 99))

    def lines(k):
        return "\n".join(f"{next(limits)} limit = {next(value)}" for _ in range(k))

    return [{"role": "user", "content": [{"type": "text", "text": "start"}]},
            *_tool("c0", "cat a.cfg", lines(12)),
            {"role": "user", "content": [{"type": "text", "text": FILLER}]},
            *_tool("c1", "cat b.cfg", lines(3)),
            {"role": "user", "content": [{"type": "text", "text": FILLER}]},
            *_tool("c2", "cat c.cfg", lines(3)),
            {"role": "user", "content": [{"type": "text", "text": FILLER}]},
            *_tool("c3", "cat d.cfg", lines(3))]


def test_a_session_files_probes_are_spread_over_its_quarters():
    messages = _spread_session()
    texts = [message_text(m) for m in messages]
    candidates = probe_candidates(messages)
    assert len(candidates) == 21
    # by hand: "start\n" (6) + '{"command": "cat a.cfg"}\n' (25): the first result at 31
    total = len("\n".join(texts))
    first = [q for q in sample_kinds(candidates, 21, 0, texts, sample_probes)
             if q.meta["evidence_message"] == 2 and q.meta["evidence_line"] == 1]
    assert first and first[0].meta["depth"] == round(31 / total, 4)
    for seed in range(5):
        questions = sample_kinds(candidates, 10, seed, texts, sample_probes)
        quarters = [min(3, int(4 * q.meta["depth"])) for q in questions]
        # the messages hold the quarters: 2 -> first, 5 -> second, 8 -> third, 11 -> last
        assert quarters == [{2: 0, 5: 1, 8: 2, 11: 3}[q.meta["evidence_message"]]
                            for q in questions]
        counts = sorted(quarters.count(k) for k in range(4))
        assert counts == [2, 2, 3, 3], seed  # ten over four quarters, as even as can be
        lines = {(q.meta["evidence_message"], q.meta["evidence_line"]) for q in questions}
        assert len(lines) == 10
    # the draw without the spread (kind by kind only) follows the dense first result
    unspread = sample_probes(candidates, 10, 0)
    assert sum(c.message_index == 2 for c in unspread) > 3


def test_a_tools_paging_notice_is_not_asked():
    from evals.items.datasets.session_probe_kinds import is_tool_notice

    assert is_tool_notice("[890 more lines in file. Use offset=201 to continue.]")
    assert is_tool_notice("[40 matches limit reached. Use limit=80 for more, or refine pattern]")
    assert not is_tool_notice("timeout = 30")
    messages = [*_tool("c1", "cat big.txt", "[890 more lines in file. Use offset=201 to "
                                            "continue.]\nretry limit = 45")]
    questions = sample_kinds(probe_candidates(messages), 10, 0,
                             [message_text(m) for m in messages], sample_probes)
    assert {q.evidence for q in questions} == {"retry limit = 45"}


def test_the_script_prints_each_probe_with_its_kind_line_and_quarter(tmp_path, capsys):
    import json
    import runpy

    session = tmp_path / "s.json"
    session.write_text(json.dumps(_spread_session()))
    script = Path(__file__).resolve().parents[3] / "scripts" / "show_session_probes.py"
    main = runpy.run_path(str(script))["main"]
    assert main([str(session), "--n", "10"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("s.json: 10 probes (seed 0) from 21 candidates; per quarter")
    assert sorted(int(k) for k in out[0].rsplit(" ", 1)[1].split("/")) == [2, 2, 3, 3]
    blocks = [line for line in out[1:] if line[:3].strip().rstrip(".").isdigit()]
    assert len(blocks) == 10
    assert any(" message 2 line " in b and "limit = " in b for b in blocks)
    assert all(" (quarter " in b for b in blocks)


@pytest.mark.skipif(not REAL.is_file(), reason="../shared/real-sessions is absent")
def test_kimchi_devs_ten_probes_are_spread_over_its_quarters():
    from evals.items.datasets import load_dataset

    [item] = load_dataset("session-file", path=str(REAL), n_questions=10, seed=0)
    quarters = [min(3, int(4 * q.meta["depth"])) for q in item.questions]
    # before the spread the same draw gave 5/1/2/2
    assert max(quarters.count(k) for k in range(4)) <= 3
    assert not any(q.evidence.startswith("[") and "Use offset=" in q.evidence
                   for q in item.questions)
