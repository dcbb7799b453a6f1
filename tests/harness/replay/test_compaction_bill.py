"""Production's own compaction calls are billed to its arm, once per session (issue 36 item 6).

Expectations are worked out here, not read from the code under test. A handoff is asked of the
live conversation, as the agent 18.3.4 asks it (its base system prompt, its tools, the live
messages and one agent-attributed user message with the handoff prompt, under the live turn's
prompt-cache key, with the session's model): the request the chat function was given is captured
here, its text joined as the library counts a request's text (every text part, tool-call name and
arguments, newline-joined; the tool declarations appended as compact JSON) and counted with the
billed-text counter of the model that pays it; the prompt cache is Anthropic's as pricing.toml
quotes it (the request before, the live turn, ended at the conversation's last non-assistant
message: that prefix is read, the rest written). A summary of a transcript (a real summarizer)
is the summarizer's request: its text joined as a chat request's text is (system, newline,
user). The output is the stub's own reply counted the same way; the dollars come from litellm's
price map read here. The per-question share is worked by hand from rows whose session bills are
chosen here.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hydra_compose import compose_eval
from record_rows import base_record

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import snapcompact.compaction
from evals.analysis.aggregate import records_frame
from evals.analysis.report import _summary_lines
from evals.analysis.research_compare import compare_research, format_markdown
from evals.analysis.search_objectives import objectives_of
from evals.analysis.summary import summarize
from evals.items.datasets import load_dataset
from evals.pipeline.run import run_config
from evals.replay import contexts as replay_contexts
from evals.replay.compaction_bill import CallRecorder
from evals.replay.contexts import build_context
from evals.spec.run_spec import ArmSpec, RunSpec
from evals.store.records import iter_records
from snapcompact.billing import billed_text_tokens
from snapcompact.pricing import shape_rules

#: the smoke session at a 32k window: the agent hands over exactly once (worked out by running
#: the replay: one handoff pass, one summary request)
ONCE = ["experiment=smoke", "context_window=32000", "model=mock", "strategies=[handoff]",
        "summarizer=mock"]
SUMMARIZER = "claude-haiku-4-5"  # configs/summarizer/mock.yaml: target_model and price_model
#: configs/model/mock.yaml's price model: a stand-in summarizer stands for the session's model,
#: which the agent hands off and summarizes with (issue 46 item 5)
SESSION_MODEL = "claude-sonnet-4-5"
STUB_REPLY = "## Goal\nThe stub's handoff: the build was green at step 3 and the port is 8431."

#: the handoff prompt as shipped (read from the file, not through the library)
HANDOFF_PROMPT = (Path(snapcompact.compaction.__file__).parent / "prompts"
                  / "handoff-document.md").read_text(encoding="utf-8").rstrip("\n")
#: a window at which the smoke session's snapcompact arms compact to frames in every round
#: (worked out by running the replay: at the smoke experiment's 16k some rounds hand off)
FRAMES_ONLY = "context_window=20000"


@pytest.fixture(scope="module")
def session_item():
    return load_dataset("agent_session", target_tokens=30000, depths=(0.2, 0.9))[0]


def _spec(tmp_path: Path, overrides: list[str]) -> RunSpec:
    return RunSpec.from_config(compose_eval([f"results_dir={tmp_path}", "progress=false",
                                            *overrides]), base_dir=tmp_path)


def _request_text(system: str, conversation: list, tools: list) -> str:
    """A live request's text as the library counts it, joined here from agent messages: the
    system prompt, every text block, each tool call's name and JSON arguments, newline-joined
    (empty pieces skipped), then the tool declarations as compact JSON."""
    pieces = [system]
    for message in conversation:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        pieces += [b["text"] for b in blocks if b["type"] == "text"]
        for block in blocks:
            if block["type"] == "toolCall":
                pieces += [block["name"], json.dumps(block.get("arguments") or {})]
    text = "\n".join(p for p in pieces if p)
    return text + "\n" + json.dumps(tools, ensure_ascii=False, separators=(",", ":"))


def _spy_on_the_live_chat(monkeypatch) -> list:
    """What the replay's live chat function is given: (system prompt, messages, keywords)."""
    sent: list = []
    stand_in = replay_contexts.stand_in_chat

    def spying(complete):
        chat = stand_in(complete)

        def spy(system_prompt, messages, **kwargs):
            sent.append((system_prompt, [dict(m) for m in messages], kwargs))
            return chat(system_prompt, messages, **kwargs)

        return spy

    monkeypatch.setattr(replay_contexts, "stand_in_chat", spying)
    return sent


def test_a_live_handoff_bills_the_live_request_with_its_prompt_cache(
        tmp_path, session_item, monkeypatch):
    sent = _spy_on_the_live_chat(monkeypatch)
    received: list[tuple[str, str]] = []

    def stub(system_prompt: str, user_prompt: str, *, max_tokens: int) -> dict:
        received.append((system_prompt, user_prompt))
        return {"text": STUB_REPLY, "usage": {"input": 7, "output": 5}}  # a too-small report

    context = build_context(session_item, ArmSpec("handoff"), _spec(tmp_path, ONCE),
                            frames=None, contexts=None, complete=stub)
    assert context.methods_used == {"handoff": 1} and len(sent) == len(received) == 1
    [(system, messages, keywords)] = sent
    # the live conversation, unchanged: the session's first messages, as the agent holds them,
    # then one agent-attributed user message with the handoff prompt
    live = len(messages) - 1
    assert live >= 10
    assert messages[:live] == [dict(m) for m in session_item.messages[:live]]
    assert messages[-1] == {"role": "user", "attribution": "agent",
                            "content": [{"type": "text", "text": HANDOFF_PROMPT}]}
    # the agent's own request parts: its system prompt, its tools (one declaration per tool the
    # session calls), no tool call allowed in the reply
    assert isinstance(system, str) and len(system) > 1000
    called = {b["name"] for m in session_item.messages if m["role"] == "assistant"
              and isinstance(m["content"], list) for b in m["content"]
              if b["type"] == "toolCall"}
    tools = keywords["tools"]
    assert sorted(t["function"]["name"] for t in tools) == sorted(called)
    assert keywords["tool_choice"] == "none"
    assert received == [(system, HANDOFF_PROMPT)]  # the stand-in answers the handoff prompt

    conversation = [dict(m) for m in session_item.messages[:live]]
    request = _request_text(system, [*conversation, messages[-1]], tools)
    whole, method = billed_text_tokens(request, SESSION_MODEL)
    # the stand-in summarizer's own line counts it the same (one Claude counter)
    assert billed_text_tokens(request, SUMMARIZER) == (whole, method)
    # the request before it (the live turn) ended at the conversation's last non-assistant
    # message (the assistant replies after it were its output, not cached)
    last_sent = max(i for i, m in enumerate(conversation) if m["role"] != "assistant")
    prefix = billed_text_tokens(_request_text(system, conversation[:last_sent + 1], tools),
                                SESSION_MODEL)[0]
    assert 1024 <= prefix < whole  # over Anthropic's 1,024-token minimum for Sonnet 4.5
    bill = context.compaction_bill
    # paid by the session's model (the stand-in stands for it), counted with its counter
    assert (bill.model, bill.token_method) == (SESSION_MODEL, method)
    assert bill.calls == 1 and bill.input_tokens == whole > 10_000
    # Anthropic reads the whole cached prefix and bills the rest as a cache write
    assert (bill.cache_read_tokens, bill.cache_write_tokens) == (prefix, whole - prefix)
    assert bill.output_tokens == billed_text_tokens(STUB_REPLY, SESSION_MODEL)[0]
    assert bill.billed_tokens == bill.input_tokens + bill.output_tokens
    assert context.compaction_cost_tokens == 12  # what the summarizer reported, kept apart
    assert "stand-in's fixed text as the output" in bill.note  # summarizer=mock is a stand-in


def test_the_calls_are_counted_with_the_summarizer_s_counter_not_the_target_s(
        tmp_path, session_item):
    # Two counters: the target (model=mock) is claude-sonnet-4-5 (claude-v3 through ctok), the
    # summarizer gpt-4.1-mini (OpenAI's exact o200k encoding). The summary request goes to the
    # summarizer, so its text is billed as OpenAI counts it.
    received: list[tuple[str, str]] = []

    def stub(system_prompt: str, user_prompt: str, *, max_tokens: int) -> dict:
        received.append((system_prompt, user_prompt))
        return {"text": STUB_REPLY, "usage": {"input": 7, "output": 5}}

    overrides = [*ONCE[:-1], "summarizer=gpt-4.1-mini"]
    context = build_context(session_item, ArmSpec("handoff"), _spec(tmp_path, overrides),
                            frames=None, contexts=None, complete=stub)
    [(system, user)] = received
    bill = context.compaction_bill
    openai = billed_text_tokens(f"{system}\n{user}", "gpt-4.1-mini")
    claude = billed_text_tokens(f"{system}\n{user}", "claude-sonnet-4-5")
    assert openai[1] != claude[1] and openai[0] != claude[0]  # the two counters differ here
    assert (bill.model, bill.token_method) == ("gpt-4.1-mini", openai[1])
    assert bill.input_tokens == openai[0]
    assert bill.output_tokens == billed_text_tokens(STUB_REPLY, "gpt-4.1-mini")[0]


def test_snapcompact_and_truncate_make_no_call_and_bill_none(tmp_path, session_item):
    # at a window where every snapcompact round compacts to frames (at 16k, counting the
    # agent's prompt and tools, some rounds hand off, and that handoff is a billed call)
    calls = []
    spec = _spec(tmp_path, ["experiment=smoke", FRAMES_ONLY, "model=mock", "summarizer=mock"])
    snapcompact = next(a for a in spec.arms() if a.is_snapcompact)
    for arm in (ArmSpec("truncate"), snapcompact):
        context = build_context(session_item, arm, spec, frames=None, contexts=None,
                                complete=lambda s, u, *, max_tokens: calls.append(u) or "x")
        assert context.compactions >= 1 and context.compaction_bill.billed_tokens == 0
        assert context.compaction_bill.calls == 0
    assert set(context.methods_used) == {"snapcompact"}  # frames in every round, no LLM method
    assert calls == []


def test_an_async_summarizer_is_recorded_when_awaited():
    import asyncio

    async def later(system_prompt, user_prompt, *, max_tokens):
        return "done"

    recorder = CallRecorder(later)
    assert asyncio.run(recorder("s", "u", max_tokens=1)) == "done"
    assert [(c.system_prompt, c.user_prompt, c.reply_text) for c in recorder.calls] == [
        ("s", "u", "done")]


def test_rows_carry_the_sessions_bill_once_and_the_report_shares_it_over_the_questions(
        tmp_path):
    import litellm

    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *ONCE])
    run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    rows = list(iter_records(tmp_path / "run" / "records.jsonl"))
    assert len(rows) == 2  # the smoke session's two questions, one context
    bills = {(r.compaction_calls, r.compaction_input_tokens, r.compaction_output_tokens,
              r.compaction_cache_read_tokens, r.compaction_cache_write_tokens) for r in rows}
    assert len(bills) == 1  # the session's figures, the same on every row of the context
    calls, inputs, outputs, read, written = bills.pop()
    assert calls == 1 and inputs > 10_000
    # the live handoff reads the live turn's cached prefix; Anthropic bills the rest as a write
    assert 0 < read < inputs and written == inputs - read
    price = litellm.model_cost[SESSION_MODEL]
    for r in rows:
        assert r.context_questions == 2
        assert r.compaction_billed_tokens == inputs + outputs
        assert r.compaction_price_model == SESSION_MODEL
        assert r.compaction_cost_usd == pytest.approx(
            read * price["cache_read_input_token_cost"]
            + written * price["cache_creation_input_token_cost"]
            + outputs * price["output_cost_per_token"])
        # cheaper than the same input uncached: the prompt cache is applied, not ignored
        assert r.compaction_cost_usd < (inputs * price["input_cost_per_token"]
                                        + outputs * price["output_cost_per_token"])
    summary = summarize(records_frame(rows, shape_rules()), n_boot=200)
    row = summary.iloc[0]
    questions = sum(r.predicted_prompt_tokens for r in rows) / 2
    # paid once: the session's bill over its 2 questions, not twice, not dropped
    assert row["billed_tokens"] == pytest.approx(questions + (inputs + outputs) / 2)
    assert row["compaction_billed_tokens_per_context"] == inputs + outputs
    assert row["recall_per_1k_tokens"] == pytest.approx(
        1000 * row["recall"] / (questions + (inputs + outputs) / 2))


def _arm(item: str, questions: int, prompt: int, billed: int | None, methods: dict,
         **changes) -> list:
    return [base_record().with_fields(reader="qa", strategy="handoff", policy="", arm="text",
                    shape="text", frame_size=0, context_window=200_000, item_id=item,
                    question_id=f"{item}-q{k}", predicted_prompt_tokens=prompt,
                    correct=k % 2 == 0, compaction_billed_tokens=billed,
                    compaction_calls=1 if billed else 0,
                    compaction_token_method="exact:test-counter" if billed else None,
                    context_questions=questions, methods_used=methods, **changes)
            for k in range(questions)]


def test_the_share_is_per_session_over_its_questions_by_hand():
    # session A: 4 questions of 1,000 prompt tokens after a handoff that billed 6,000;
    # session B: 2 questions of 500 after one that billed 1,000. Paid in all: 4,000 + 6,000 +
    # 1,000 + 1,000 = 12,000 over 6 questions = 2,000 per question. (Counted per question it
    # would be 5,167; dropped, 833.) Recall 3/6 = 0.5 -> 0.25 per 1k billed tokens.
    rows = (_arm("A", 4, 1000, 6000, {"handoff": 1})
            + _arm("B", 2, 500, 1000, {"handoff": 1}))
    assert [r.billed_tokens for r in rows] == [2500.0] * 4 + [1000.0] * 2
    summary = summarize(records_frame(rows, shape_rules()), n_boot=200).iloc[0]
    assert summary["billed_tokens"] == pytest.approx(2000.0)
    assert summary["predicted_prompt_tokens"] == pytest.approx(5000 / 6)
    assert summary["compaction_billed_tokens_per_context"] == pytest.approx(3500.0)
    assert summary["compaction_tokens_per_question"] == pytest.approx(7000 / 6)
    assert summary["recall_per_1k_tokens"] == pytest.approx(0.25)
    table = "\n".join(_summary_lines(summarize(records_frame(rows, shape_rules()),
                                               n_boot=200)))
    # the column, its counter in the header, and the billed total beside it
    assert "compaction calls: tokens/q (per context; exact:test-counter)" in table
    assert "| 1,167 (1 calls, 3,500) | 2,000 |" in table


def test_a_row_written_before_the_bill_is_zero_only_when_no_llm_method_ran():
    old_snap = base_record().with_fields(strategy="snapcompact", methods_used={"snapcompact": 2})
    old_handoff = base_record().with_fields(strategy="snapcompact",
                          methods_used={"snapcompact": 1, "handoff": 1})
    assert old_snap.compaction_billed_tokens is None
    assert old_snap.compaction_tokens_per_question == 0.0
    assert old_snap.billed_tokens == old_snap.predicted_prompt_tokens
    assert math.isnan(old_handoff.compaction_tokens_per_question)
    assert math.isnan(old_handoff.billed_tokens)
    # truncate's replay records the nominal soft method its hook answers with no request
    old_truncate = base_record().with_fields(strategy="truncate", methods_used={"soft": 3})
    assert old_truncate.compaction_tokens_per_question == 0.0


def test_research_comparison_bills_the_compaction_share_and_names_its_counter():
    # production hands over on its one session (10 questions, 1,000 prompt tokens each, a
    # 20,000-token handoff: 3,000 billed per question); the research arm keeps its frames
    # (2,500 per question, no call): it is 500 tokens cheaper, not 1,500 dearer.
    def rows(research, prompt, billed, methods):
        return [base_record().with_fields(strategy="snapcompact", policy="foveated",
                        shape_requested="auto", context_window=200_000, research=research,
                        item_id="i0", question_id=f"q{k}", evidence_round=1,
                        correct=k < 5, predicted_prompt_tokens=prompt,
                        compaction_billed_tokens=billed, compaction_calls=1 if billed else 0,
                        compaction_token_method="exact:test-counter" if billed else None,
                        context_questions=10, methods_used=methods, production_valid=True,
                        fits_window=True) for k in range(10)]

    records = (rows("production", 1000, 20_000, {"handoff": 1})
               + rows("recommended-0a1b2c3d", 2500, 0, {"snapcompact": 1}))
    base, other = compare_research(records, n_boot=200, seed=0)
    assert base.billed_tokens == pytest.approx(3000.0) and base.compaction_tokens == 2000.0
    assert other.billed_tokens == pytest.approx(2500.0) and other.compaction_tokens == 0.0
    assert other.diff_billed_tokens == pytest.approx(-500.0)
    text = format_markdown([base, other], "production")
    assert "of which compaction calls (exact:test-counter)" in text
    assert "| 3,000 | 2,000 |" in text
    # the search's token objective is the same billed figure
    assert objectives_of(records[:10]).billed_tokens == pytest.approx(3000.0)
