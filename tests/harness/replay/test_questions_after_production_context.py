"""The harness asks its questions after the context production builds, and bills that context.

Expectations come from outside the harness: the session is replayed here by hand, message by
message, through ``CompactionPipeline`` (``after_turn`` for assistant messages, ``append_message``
for the rest), the next turn is ``llm_messages()``; image bills are worked out here from
Anthropic's published patch rule on sizes decoded by Pillow; prices from litellm's map.
Requests go through litellm's mock path and a loopback OpenAI-compatible server (litellm's real
HTTP client): no key, no network.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import warnings
from pathlib import Path

import pytest
from locations import FIXTURES

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from hydra_compose import compose_eval
from PIL import Image

from evals.items import prompts
from evals.items.datasets import load_dataset
from evals.pipeline.plan import build_plan
from evals.pipeline.run import CONFIG_DIR, run_config
from evals.replay.contexts import build_context
from evals.send.price_map import model_window
from evals.spec.run_spec import ArmSpec, RunSpec, ShapeSpec
from evals.store.records import ContextStore, FrameStore, iter_records

DUMMY_KEY = "sk-test-dummy-0123456789abcdefXYZ"
SMALL = ["experiment=smoke", "max_questions_per_item=2"]


def spec_for(tmp_path: Path, overrides: list[str]) -> RunSpec:
    return RunSpec.from_config(compose_eval([f"results_dir={tmp_path}", "progress=false",
                                            *overrides]), base_dir=tmp_path)


@pytest.fixture(scope="module")
def session_item():
    return load_dataset("agent_session", target_tokens=30000, depths=(0.2, 0.9))[0]


def replay_by_hand(item, spec: RunSpec, arm: ArmSpec, question: str):
    """The coding agent's loop, written out here (not the harness's replay): a user message is
    a prompt (pre-prompt check first), an assistant message after tool results continues the
    run (mid-turn check first), one without tool calls ends it (post-turn check); the question
    is the next prompt."""
    from snapcompact.agent import DEFAULT_METHOD_ORDER, SessionMaintenance
    from snapcompact.compaction import (
        DEFAULT_SETTINGS,
        ModelInfo,
        Session,
        merge_settings,
        user_question,
    )

    settings = merge_settings(DEFAULT_SETTINGS, {
        **dict(spec.settings_overrides),
        "compaction": {**dict(spec.settings_overrides.get("compaction", {})),
                       "methodOrder": list(DEFAULT_METHOD_ORDER)},
        "snapcompact": {"shape": arm.shape.name, "policy": arm.policy,
                        "frameSize": arm.shape.frame_size}})
    model = ModelInfo(id=spec.model.target_model, context_window=spec.context_window,
                      provider=spec.model.provider, api=spec.model.api, include_thinking=False)
    # as the harness replays it: the agent's own system prompt and the tools the session calls
    # are counted with the context (issue 45 item 3, issue 46 item 5)
    from evals.replay.contexts import _session_tools
    from snapcompact.agent import AGENT_PROMPT

    agent = SessionMaintenance(Session(None, fsync=False), model, settings=settings,
                               use_recorded_usage=False, system_prompt=AGENT_PROMPT.text(model),
                               tools=_session_tools(item.messages))
    last_call = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for message in map(dict, item.messages):
            if message["role"] == "user":
                agent.before_prompt([message])
                agent.append(message)
                last_call = None
            elif message["role"] == "assistant":
                if last_call is not None:
                    agent.mid_turn(last_call)
                if any(b.get("type") == "toolCall" for b in message["content"]):
                    agent.append(message)
                    last_call = message
                else:
                    agent.end_turn(message)
                    last_call = None
            else:
                agent.append(message)
        agent.before_prompt([user_question(prompts.question_text(question))])
    return agent


@pytest.mark.parametrize("policy, variant", [("pinned", "11on16-bw"), ("foveated", "auto"),
                                             ("pinned", "6x6u-bw")])
def test_request_is_llm_messages_plus_the_question_byte_for_byte(tmp_path, session_item, policy,
                                                                   variant):
    from snapcompact.compaction import to_chat_messages, user_question

    spec = spec_for(tmp_path, [*SMALL, "strategies=[snapcompact]", f"policies=[{policy}]",
                               f"shapes=[{variant}]"])
    arm = ArmSpec("snapcompact", policy, ShapeSpec(variant, 512))
    assert spec.arms() == (arm,)
    question = max(session_item.questions, key=lambda q: len(q.question))
    pipeline = replay_by_hand(session_item, spec, arm, question.question)
    assert any(e.type == "compaction" for e in pipeline.session.entries), "no compaction fired"
    expected = [*to_chat_messages(pipeline.llm_messages()),
                user_question(prompts.question_text(question.question))]

    store = FrameStore(tmp_path / "frames")
    context = build_context(session_item, arm, spec, frames=store,
                            contexts=ContextStore(tmp_path / "contexts"))
    planned = [p for p in build_plan(spec, tmp_path, log=lambda _: None).planned
               if p.context.arm == arm and p.question == question]
    assert len(planned) == 1 and planned[0].context.frame_hashes == context.frame_hashes

    def data_url(digest: str) -> str:
        return "data:image/png;base64," + base64.b64encode(store.get(digest)).decode()

    request = planned[0].request(data_url)
    assert json.dumps(request.messages, sort_keys=True) == json.dumps(expected, sort_keys=True)
    # providers refuse tool calls without declared tools: every tool the history calls is
    # declared, and the question itself may not call any
    called = {c["function"]["name"] for m in expected for c in m.get("tool_calls") or ()}
    assert {t["function"]["name"] for t in request.params.get("tools", ())} == called
    # tool_choice only beside declared tools (a history that calls none declares none)
    assert request.params.get("tool_choice", "none" if not called else None) == "none"
    images = [p for m in expected if isinstance(m["content"], list) for p in m["content"]
              if p["type"] == "image_url"]
    assert len(images) == len(context.frame_hashes) > 0


def test_context_bill_is_the_documented_bill_of_every_sent_frame_plus_text(tmp_path,
                                                                           session_item):
    from snapcompact.billing import billed_text_tokens

    spec = spec_for(tmp_path, SMALL)
    store = FrameStore(tmp_path / "frames")
    arm = ArmSpec("snapcompact", "pinned", ShapeSpec("11on16-bw", 512))
    context = build_context(session_item, arm, spec, frames=store, contexts=None)
    model = spec.model
    # The smoke run stands for claude-sonnet-4-5. Anthropic's vision page (platform.claude.com/
    # docs/en/build-with-claude/vision, read 2026-11-30): ceil(w/28) * ceil(h/28) visual tokens,
    # no resize below a 1568 px long edge and ~1568 tokens, which a 512 px frame never reaches.
    assert model.target_model == "claude-sonnet-4-5"
    assert context.frame_hashes
    for digest, tokens, seen in zip(context.frame_hashes, context.image_tokens, context.seen_px,
                                    strict=True):
        with Image.open(io.BytesIO(store.get(digest))) as img:
            width, height = img.size
        assert width == 512 and height <= 512
        assert (tokens, seen) == (-(-width // 28) * -(-height // 28), (width, height))
    texts = []
    for message in context.messages:
        content = message["content"]
        parts = [content] if isinstance(content, str) else [
            p["text"] for p in content or () if p["type"] == "text"]
        texts.extend(p for p in parts if p)
        for call in message.get("tool_calls") or ():
            texts += [call["function"]["name"], call["function"]["arguments"]]
    # the declarations of the tools the context calls travel with it and are billed as text
    names = sorted({c["function"]["name"] for m in context.messages
                    for c in m.get("tool_calls") or ()})
    assert sorted(t["function"]["name"] for t in context.tools) == names and names
    joined = "\n".join(texts) + "\n" + json.dumps([dict(t) for t in context.tools],
                                                  separators=(",", ":"))
    assert context.text_tokens_without_question == billed_text_tokens(joined, model.target_model)[0]


def test_strategies_keep_what_they_promise(tmp_path, session_item):
    """full keeps every message; truncate drops exactly the discarded ones and adds no frames;
    evidence_round 0 means the evidence is in the context's text."""
    spec = spec_for(tmp_path, SMALL)
    full = build_context(session_item, ArmSpec("full"), spec, frames=None, contexts=None)
    trunc = build_context(session_item, ArmSpec("truncate"), spec, frames=None, contexts=None)
    assert full.compactions == 0 and set(full.discarded_round) == {0}
    assert trunc.compactions >= 1 and not trunc.frame_hashes and trunc.shape == "text"
    text = json.dumps(trunc.messages)
    for question in session_item.questions:
        where = session_item.evidence_index[question.question_id]
        kept = trunc.discarded_round[where] == 0
        assert (json.dumps(question.evidence)[1:-1] in text) == kept
        assert json.dumps(question.evidence)[1:-1] in json.dumps(full.messages)
    assert trunc.text_tokens_without_question < full.text_tokens_without_question


def test_full_is_skipped_with_a_reason_when_it_exceeds_the_window(tmp_path, session_item):
    spec = spec_for(tmp_path, SMALL)
    context = build_context(session_item, ArmSpec("full"), spec, frames=None, contexts=None,
                            model_window=1000)
    assert context.skipped and "exceeds claude-sonnet-4-5's window of 1,000" in context.skipped
    assert model_window("claude-sonnet-4-5") == 200_000  # litellm's map


def test_llm_strategies_are_refused_without_a_summarizer(tmp_path):
    with pytest.raises(ValueError, match="summarizes the discarded history with an LLM"):
        spec_for(tmp_path, [*SMALL, "strategies=[full,context-full]"])
    with pytest.raises(ValueError, match="offline OCR reader, which cannot write summaries"):
        spec_for(tmp_path, [*SMALL, "strategies=[handoff]", "summarizer=mock",
                            "summarizer.offline_reader=true"])


def test_context_full_arm_summarizes_through_the_client_and_records_its_cost(tmp_path):
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *SMALL, "model=mock",
                       "strategies=[context-full,handoff]", "summarizer=mock"])
    result = run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    rows = list(iter_records(tmp_path / "run" / "records.jsonl"))
    assert result.requests_sent == len(rows) == 4
    by = {r.strategy: r for r in rows}
    assert by["context-full"].compactions >= 1 and by["context-full"].compaction_cost_tokens > 0
    stored = ContextStore(tmp_path / "run" / "contexts").get(by["context-full"].context_hash)
    assert "Mock summary of the earlier conversation" in json.dumps(stored)
    # a handoff is asked of the live conversation, as the agent asks it (issue 46 item 5): with
    # the mock summarizer (a stand-in) no client call reports usage, and the bill counts the
    # live request instead
    assert by["handoff"].compactions >= 1 and by["handoff"].compaction_input_tokens > 0
    # the mock is a stand-in (no language model wrote those summaries): the rows say so and
    # are never production-valid
    for r in rows:
        assert r.summary_stand_in and r.production_valid is False
        assert "written by the offline stand-in" in r.production_note
    # a rerun replays the summaries from the cache: nothing is sent at all
    again = run_config(cfg, tmp_path / "run2", base_dir=tmp_path)
    assert again.requests_sent == 0


def test_rows_say_where_the_evidence_was_and_what_the_context_cost(tmp_path):
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *SMALL, "model=mock"])
    result = run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    rows = list(iter_records(tmp_path / "run" / "records.jsonl"))
    spec = RunSpec.from_config(cfg, base_dir=tmp_path)
    assert result.requests_sent == len(rows) == 2 * len(spec.arms())
    for r in rows:
        assert r.strategy in ("full", "truncate", "snapcompact") and r.reader == "qa"
        assert r.predicted_prompt_tokens == r.text_tokens + r.predicted_image_tokens
        assert r.frames == len(r.frame_hashes) == len(r.frame_px)
        assert r.evidence_round is not None and r.evidence_round <= r.compactions
        assert (r.policy == "foveated") == (r.strategy == "snapcompact")
        assert ContextStore(tmp_path / "run" / "contexts").path(r.context_hash).is_file()
        assert r.answer == "mock answer" and r.error is None
    snap = [r for r in rows if r.strategy == "snapcompact"]
    assert {r.shape_requested for r in snap} == {"11on16-bw", "6x6u-bw"}
    assert all(r.frames > 0 and r.compaction_cost_tokens == 0 for r in snap)
    # the shape is what was drawn: the foveated middle is the dense companion for 11on16-bw
    assert {r.shape for r in snap if r.shape_requested == "11on16-bw"} <= {
        "11on16-bw", "8on16-bw", "11on16-bw+8on16-bw"}
    full = [r for r in rows if r.strategy == "full"]
    assert all(r.compactions == 0 and r.evidence_round == 0 for r in full)


def test_offline_reader_reads_text_and_frames_at_their_seen_size(tmp_path, session_item):
    # 1024 px: with the agent's prompt counted, 1568 px frames no longer fit the smoke window
    spec = spec_for(tmp_path, [*SMALL, "model=ocr-gpt-5", "frame_size=1024"])
    plan = build_plan(spec, tmp_path, log=lambda _: None)
    snap = next(p for p in plan.planned if p.context.arm.is_snapcompact and p.context.frame_hashes)
    meta = snap.metadata["snapocr"]
    assert meta["evidence"] == snap.question.evidence
    assert [tuple(s) for s in meta["seen_sizes"]] == list(snap.context.seen_px)
    # the model config's documented override: gpt-5 gets detail high, not the family default
    assert all(p["image_url"]["detail"] == "high" for m in snap.context.messages
               if isinstance(m["content"], list) for p in m["content"]
               if p["type"] == "image_url")
    # what changes the reader's answer but not the prompt is part of the cache key
    assert snap.params["reader_view"]["seen_px"] == [list(s) for s in snap.context.seen_px]


def test_loopback_server_through_litellms_http_client(tmp_path, monkeypatch):
    from evals.twins.fake_server import FakeChatServer, count_usage

    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    with FakeChatServer() as server:
        monkeypatch.setenv("SNAPCOMPACT_FAKE_API_BASE", server.api_base)
        cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", "model=fake", *SMALL])
        result = run_config(cfg, tmp_path / "run", base_dir=tmp_path)
        bodies = list(server.bodies)
    rows = list(iter_records(tmp_path / "run" / "records.jsonl"))
    assert server.requests == result.requests_sent == len(rows) == result.planned
    usages = []
    for body in bodies:
        last = body["messages"][-1]
        question = last["content"][0]["text"] if isinstance(last["content"], list) else \
            last["content"]
        assert question.startswith("A question about our conversation so far")
        images = [p for m in body["messages"] if isinstance(m.get("content"), list)
                  for p in m["content"] if p.get("type") == "image_url"]
        assert all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in images)
        usages.append(count_usage(body, "echo: " + question[:200]))
    assert all(r.error is None for r in rows)
    assert sorted((r.reported_prompt_tokens, r.reported_completion_tokens) for r in rows) == \
        sorted(usages)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert DUMMY_KEY.encode() not in path.read_bytes(), path


EXPERIMENTS = sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_plans_in_fast_mode(tmp_path, experiment):
    """Every experiment composes, replays and plans (dry run) on a small session."""
    overrides = [f"experiment={experiment}", "dry_run=true", "max_items=1",
                 "max_questions_per_item=1", "context_window=3000",
                 "++settings.compaction.keepRecentTokens=600",
                 "++settings.compaction.reserveTokens=512"]
    if experiment == "squad":
        fixture = FIXTURES / "datasets" / "squad_tiny.jsonl"
        overrides += [f"dataset.params.data_file={fixture}", "dataset.params.target_tokens=1500"]
    elif experiment in ("needles", "tool_output"):
        overrides += ["dataset.params.target_tokens=3000"]
    else:
        overrides += ["dataset.params.target_tokens=4000"]
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *overrides])
    result = run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    spec = RunSpec.from_config(cfg, base_dir=tmp_path)
    assert result.dry_run and result.planned == len(spec.arms())


def test_budget_refuses_before_sending(tmp_path):
    from evals.send.dollar_budget import BudgetExceeded

    calls = []

    async def never(**kwargs):
        calls.append(kwargs)
        raise AssertionError("nothing may be sent past the budget")

    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *SMALL, "model=mock",
                       "budget_usd=0.0001"])
    with pytest.raises(BudgetExceeded, match=r"exceeds the budget \$0\.0001"):
        run_config(cfg, tmp_path / "run", completion_fn=never, base_dir=tmp_path)
    assert calls == [] and not (tmp_path / "run" / "records.jsonl").exists()


def test_dry_run_prints_the_prediction_and_sends_nothing(tmp_path, capsys):
    calls = []

    async def never(**kwargs):
        calls.append(kwargs)
        raise AssertionError("a dry run sends nothing")

    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *SMALL,
                       "model=claude-opus-4-7", "dry_run=true"])
    result = run_config(cfg, tmp_path / "run", completion_fn=never, base_dir=tmp_path)
    out = capsys.readouterr().out
    assert calls == [] and result.dry_run
    assert not (tmp_path / "run" / "records.jsonl").exists()
    assert not (tmp_path / "run" / "frames").exists()
    assert "dry run (predicted, nothing sent)" in out
    assert re.search(rf"requests\s+{result.summary.requests}\n", out)
    assert "claude-opus-4-7 via anthropic-messages" in out
    # 2 questions x 4 arms (full, truncate, two snapcompact shapes), none cached
    assert result.summary.requests == 8 and result.summary.predicted_cache_hits == 0
    assert result.summary.predicted_cost_to_send_usd > 0


def test_a_dry_run_never_asks_a_real_summarizer(tmp_path, capsys, monkeypatch):
    # The replay of an LLM method asks for a summary mid-replay; a dry run sends nothing, so
    # a real summarizer (a key would pay for it) is replaced by a counted placeholder.
    calls = []

    async def never(**kwargs):
        calls.append(kwargs)
        raise AssertionError("a dry run sends nothing")

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *SMALL, "model=mock",
                       "strategies=[context-full,handoff]", "summarizer=claude-haiku-4-5",
                       "dry_run=true"])
    result = run_config(cfg, tmp_path / "run", completion_fn=never, base_dir=tmp_path)
    out = capsys.readouterr().out
    assert calls == [] and result.dry_run and result.summary.requests == 4
    assert re.search(r"claude-haiku-4-5: \d+ summaries the replay asks for were not sent "
                     r"\(dry run\)", out)
    assert not (tmp_path / "run" / "contexts").exists()


def test_missing_keys_stop_a_real_run_but_not_a_dry_run(tmp_path, monkeypatch):
    from evals.pipeline.run_loop import MissingCredentials

    monkeypatch.delenv("MOONSHOT_API_KEY", raising=False)
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *SMALL, "model=kimi"])
    with pytest.raises(MissingCredentials, match="MOONSHOT_API_KEY"):
        run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false", *SMALL, "model=kimi",
                       "dry_run=true"])
    assert run_config(cfg, tmp_path / "run", base_dir=tmp_path).dry_run
