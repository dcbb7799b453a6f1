"""What a session costs after its first compaction: every request the agent sends for a reply,
the prompt cache applied (issue 46 item 6).

Worked by hand: a tiny synthetic session (a user ask, a ``read`` call, its output, a reply, per
turn) replayed with the ``truncate`` strategy at a 16k window, so compactions fire and no model
is asked. Within one context the agent's request for a reply is the request before it plus the
messages stored since (the previous reply, the tool result, the next ask), each counted here
from its own text with the model's billed-text counter; it reads the request before from the
cache. The sums of :func:`bill_turns` are worked on round numbers.
"""

from __future__ import annotations

import json
import re
import warnings

from compaction_synth import read_turns

from snapcompact.agent import agent_settings, replay_agent_session
from snapcompact.billing import SessionBill, TurnRequest, bill_turns, billed_text_tokens
from snapcompact.compaction import DEFAULT_SETTINGS, ModelInfo, merge_settings
from snapcompact.pricing import PromptCacheRule

MODEL = "claude-sonnet-4-5"
RULE = PromptCacheRule(id="t", vendor="t", mode="breakpoints", patterns=(re.compile("t"),),
                       family_default=None, min_tokens=1000, max_breakpoints=4, increment=1,
                       ttl_s=300, write_multiplier=1.25, read_multiplier=0.1, source="test",
                       checked="2026-12-06", confidence="test")


def test_turns_sum_with_each_request_reading_the_one_before() -> None:
    turns = [TurnRequest(5_000, 0, 10), TurnRequest(5_600, 5_000, 20),
             TurnRequest(6_100, 5_600, 30)]
    # 1st: nothing cached, 5,000 written; 2nd: 5,000 read, 600 written; 3rd: 5,600 read, 500
    assert bill_turns(RULE, turns) == SessionBill(requests=3, input_tokens=16_700,
                                                  cache_read_tokens=10_600,
                                                  cache_write_tokens=6_100, output_tokens=60)
    assert bill_turns(None, turns).cache_use.uncached == 16_700


def _text(message: dict) -> str:
    """A message's text as a chat request carries it (text, then a call's name and arguments)."""
    pieces = [b["text"] for b in message["content"] if b.get("type") == "text"]
    for b in message["content"]:
        if b.get("type") == "toolCall":
            pieces += [b["name"], json.dumps(b["arguments"])]
    return "\n".join(p for p in pieces if p)


def _tokens(message: dict) -> int:
    return billed_text_tokens(_text(message), MODEL)[0]


def test_a_replay_counts_each_reply_request_after_the_first_compaction() -> None:
    messages = read_turns(90)
    model = ModelInfo(id=MODEL, context_window=16_000, provider="anthropic",
                      api="anthropic-messages", include_thinking=False)
    settings = agent_settings("truncate", merge_settings(DEFAULT_SETTINGS, {"compaction": {
        "keepRecentTokens": 1500, "reserveTokens": 1000, "textTokenizer": "bytes4"}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        replay = replay_agent_session(messages, model, settings, strategy="truncate",
                                      turns_for=MODEL)
    rounds = [r.after_message for r in replay.rounds]
    mid_turn = {p.after_message for p in replay.passes if p.check == "mid_turn" and p.method}
    assert len(rounds) >= 2
    # one request per reply from the first compaction on (its check runs before the reply)
    replies = [i for i, m in enumerate(messages) if m["role"] == "assistant" and i >= rounds[0]]
    turns = replay.turn_requests
    assert len(turns) == len(replies)
    assert [t.output_tokens for t in turns] == [_tokens(messages[i]) for i in replies]
    # the first request after the first compaction reads nothing back (no system prompt or
    # tools here, and the compaction replaced the head)
    assert turns[0].cached_prefix_tokens == 0
    same_context = 0
    for j in range(1, len(turns)):
        before, at = replies[j - 1], replies[j]
        # a compaction between them (a check after ``before`` was stored, or the mid-turn
        # check when ``at`` arrives, before its request): the request is counted whole
        if at in mid_turn or any(before <= r < at for r in rounds):
            continue
        same_context += 1
        added = sum(_tokens(messages[i]) for i in range(before, at))
        assert turns[j].prompt_tokens == turns[j - 1].prompt_tokens + added
        assert turns[j].cached_prefix_tokens == turns[j - 1].prompt_tokens
    assert same_context > 10


def test_the_summary_gives_each_session_one_vote_in_the_session_bill() -> None:
    # three sessions of 4, 2 and 1 questions whose sessions cost $2, $4 and $9: the arm's
    # session bill is their mean, $5 (a question-weighted mean would give $3.57), and a session
    # bootstrap over three one-figure sessions can draw nothing below $2 or above $9
    from record_rows import base_record

    from evals.analysis.aggregate import records_frame
    from evals.analysis.summary import summarize
    from snapcompact.pricing import shape_rules

    rows = [base_record().with_fields(
        reader="qa", strategy="truncate", policy="", arm="text", shape="text", frame_size=0,
        context_window=200_000, item_id=item, question_id=f"{item}-q{k}", correct=True,
        methods_used={"soft": 1}, session_cost_usd=cost, session_billed_tokens=tokens)
        for item, n, cost, tokens in (("A", 4, 2.0, 100_000), ("B", 2, 4.0, 200_000),
                                      ("C", 1, 9.0, 600_000)) for k in range(n)]
    row = summarize(records_frame(rows, shape_rules()), n_boot=400).iloc[0]
    assert row["session_cost_usd"] == 5.0
    assert row["session_billed_tokens"] == 300_000
    assert 2.0 <= row["session_cost_usd_lo"] < 5.0 < row["session_cost_usd_hi"] <= 9.0


def test_the_report_names_the_ranked_cost_and_states_the_session_bill_beside_it() -> None:
    from record_rows import base_record

    from evals.analysis.aggregate import records_frame
    from evals.analysis.report import _summary_lines
    from evals.analysis.summary import summarize
    from snapcompact.pricing import shape_rules

    rows = [base_record().with_fields(
        reader="qa", strategy="truncate", policy="", arm="text", shape="text", frame_size=0,
        context_window=200_000, item_id=item, question_id=f"{item}-q{k}", correct=True,
        methods_used={"soft": 1}, session_cost_usd=cost, session_billed_tokens=tokens)
        for item, cost, tokens in (("A", 2.0, 100_000), ("B", 4.0, 200_000)) for k in range(2)]
    text = "\n".join(_summary_lines(summarize(records_frame(rows, shape_rules()), n_boot=200)))
    assert "Ranked on billed tokens/q" in text
    assert "$3.00 [2.00, 4.00] per session, 150,000 tokens" in text
