"""The pipeline sends production's frames, predicts production's bill, and records what came back.

Expectations are computed here independently, straight from the library (serializer, renderer,
resolver, billing, text tokens) and litellm's price map, and compared with what the pipeline
planned and recorded. Requests go through litellm's mock path and a loopback OpenAI-compatible
server (litellm's real HTTP client): no key, no network.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hydra import compose, initialize_config_dir

from evals import prompts
from evals.client import Response
from evals.datasets import load_dataset
from evals.pipeline import (
    OCR_NOTE,
    archive_text,
    build_plan,
    make_record,
    offline_reader_version,
    prepare_image_arm,
    summarize,
    versions,
)
from evals.records import FrameStore, Record, iter_records
from evals.run import CONFIG_DIR, run_config
from evals.spec import RunSpec, ShapeSpec

REPO = Path(__file__).resolve().parents[1]
SQUAD_FIXTURE = REPO / "tests" / "fixtures" / "datasets" / "squad_tiny.jsonl"
DUMMY_KEY = "sk-test-dummy-0123456789abcdefXYZ"


def compose_cfg(overrides: list[str]):
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        return compose("eval", overrides=overrides)


def spec_for(tmp_path: Path, overrides: list[str]) -> RunSpec:
    return RunSpec.from_config(compose_cfg([f"results_dir={tmp_path}", "progress=false",
                                            *overrides]))


@pytest.fixture(scope="module")
def tiny_item():
    return load_dataset("tiny", n_items=1)[0]


# --------------------------------------------------------------------------------------------
# archive text, frames, bills


def test_archive_text_is_one_serialized_user_message(tiny_item):
    text = archive_text(tiny_item, "user_message")
    assert text.startswith("¶user:")  # the serializer's role tag
    assert tiny_item.history in text
    assert archive_text(tiny_item, "raw") == tiny_item.history


@pytest.mark.parametrize("model, variant, size", [
    ("ocr", "11on16-bw", None), ("ocr", "8on22-bw", None), ("ocr", "6x6u-bw", None),
    ("ocr", "doc-8on16-sent", 768), ("ocr", "silver16-bw", 640), ("ocr-gpt-5", "8on22-bw", None),
    ("gpt-4.1", "5x8-bw", 1024), ("gemini-3-flash", "8on16-bw", None),
])
def test_arm_frames_and_bills_are_production_frames_and_bills(tmp_path, tiny_item, model,
                                                              variant, size):
    """Frames are render_many's bytes for the serialized history; bills are bill_image's."""
    from snapcompact.billing import bill_image
    from snapcompact.render import render_many
    from snapcompact.serialize import serialize_conversation
    from snapcompact.shapes import get_shape

    spec = spec_for(tmp_path, [f"model={model}"])
    store = FrameStore(tmp_path / "frames")
    text = serialize_conversation([{"role": "user", "content": tiny_item.history}])
    arm = prepare_image_arm(text, ShapeSpec(variant, size), spec, store)

    expected = render_many(text, get_shape(variant, size))
    assert arm.frame_hashes == tuple(hashlib.sha256(f.png).hexdigest() for f in expected)
    assert [store.get(h) for h in arm.frame_hashes] == [f.png for f in expected]
    assert arm.frame_px == tuple((f.width, f.height) for f in expected)
    m = spec.model
    bills = [bill_image(m.target_model, f.width, f.height, arm.detail, api=m.api,
                        provider=m.provider) for f in expected]
    assert arm.image_tokens == tuple(b.tokens for b in bills)
    assert arm.seen_px == tuple((b.seen_width, b.seen_height) for b in bills)
    assert arm.label == variant and arm.frame_size == (size or get_shape(variant).frame_size)


def test_auto_shape_is_what_production_resolves_for_the_target(tmp_path, tiny_item):
    # the seed's table: Claude Opus 4.7 is high-res -> 11on16-bw at 1932 px
    spec = spec_for(tmp_path, ["model=ocr-opus-4-7"])
    arm = prepare_image_arm(archive_text(tiny_item, "user_message"), ShapeSpec("auto"), spec,
                            None)
    assert (arm.label, arm.frame_size, arm.choice) == ("11on16-bw", 1932, "auto")
    assert all(w == 1932 for w, _ in arm.frame_px)


def test_gpt5_target_sees_frames_shrunk_to_768_short_side(tmp_path, tiny_item):
    """OpenAI's documented high-detail rule: fit 2048, then shortest side 768 (if larger)."""
    spec = spec_for(tmp_path, ["model=ocr-gpt-5", "dataset.params.target_tokens=3000",
                               "max_items=1"])
    arm = prepare_image_arm(archive_text(load_dataset("tiny", target_tokens=3000)[0],
                                         "user_message"), ShapeSpec("8on22-bw"), spec, None)
    for (w, h), (sw, sh) in zip(arm.frame_px, arm.seen_px):
        if min(w, h) > 768:
            assert min(sw, sh) == 768
        else:
            assert (sw, sh) == (w, h)


# --------------------------------------------------------------------------------------------
# planned requests


def _plan(tmp_path, overrides):
    spec = spec_for(tmp_path, overrides)
    from evals.readers.provider import register

    register()
    return spec, build_plan(spec, tmp_path / "run", log=lambda _: None)


def test_requests_layout_tokens_and_dollars(tmp_path):
    from evals.costs import price_of
    from snapcompact.text_tokens import count_text_tokens

    spec, plan = _plan(tmp_path, ["model=gpt-4.1", "dataset=tiny", "max_items=1",
                                  "dry_run=true"])
    assert plan.planned
    price = price_of("gpt-4.1")
    for p in plan.planned:
        parts = p.request().messages[0]["content"]
        texts = [x["text"] for x in parts if x["type"] == "text"]
        images = [x for x in parts if x["type"] == "image_url"]
        assert parts[-1]["type"] == "text"
        assert parts[-1]["text"] == prompts.question_text(p.question.question)
        if p.arm.is_text:
            assert images == [] and texts[0] == prompts.TEXT_QA_INSTRUCTION
            assert archive_text(p.item, "user_message") in texts
        else:
            assert parts[0]["text"] == prompts.IMAGE_QA_INSTRUCTION
            assert len(images) == len(p.arm.frame_hashes) >= 1
            assert all(x["image_url"]["detail"] == "high" for x in images)  # model config
        text_tokens = count_text_tokens("\n".join(texts), "gpt-4.1").tokens
        assert p.text_tokens == text_tokens
        assert p.predicted_prompt_tokens == text_tokens + sum(p.arm.image_tokens)
        expected = (p.predicted_prompt_tokens * price.input_per_token
                    + spec.reader.answer_max_tokens * price.output_per_token)
        assert p.predicted_cost_usd == pytest.approx(expected)
        assert p.spend_predicted_usd == pytest.approx(expected)  # a billed model spends it
        assert p.request().params["max_tokens"] == spec.reader.answer_max_tokens


def test_anthropic_requests_carry_no_detail(tmp_path):
    _, plan = _plan(tmp_path, ["model=claude-sonnet-4-5", "dataset=tiny", "max_items=1",
                               "dry_run=true", "shapes=[11on16-bw]"])
    for p in plan.planned:
        for part in p.request().messages[0]["content"]:
            if part["type"] == "image_url":
                assert "detail" not in part["image_url"]


def test_offline_reader_gets_seen_sizes_and_they_enter_the_cache_key(tmp_path):
    from evals.client import EvalClient

    keys = {}
    for model in ("ocr", "ocr-gpt-5"):
        _, plan = _plan(tmp_path / model, [f"model={model}", "dataset=tiny", "max_items=1",
                                              "dry_run=true", "shapes=[8on22-bw]",
                                              "frame_size=1568"])
        client = EvalClient(cache=None, renderer_version="1")
        for p in plan.planned:
            body = p.metadata["snapocr"]
            assert body["seen_sizes"] == [list(s) for s in p.arm.seen_px]
            assert body["evidence"] == p.question.evidence
            assert body["billed_prompt_tokens"] == p.predicted_prompt_tokens
            assert p.spend_predicted_usd == 0.0 and p.predicted_cost_usd > 0
            # the reader's code and engine are part of the key: a reader fix invalidates answers
            assert p.params["reader_view"]["reader"] == offline_reader_version()
            assert "tesseract" in p.params["reader_view"]["reader"]
        keys[model] = {client.key_for(p.request()) for p in plan.planned}
    # same frames and prompt, another target (its resize decides what the reader sees):
    # the cache must not hand one target's answer to the other
    assert keys["ocr"].isdisjoint(keys["ocr-gpt-5"])


def test_questions_of_one_frame_set_are_spread_out(tmp_path):
    _, plan = _plan(tmp_path, ["dataset=tiny", "dry_run=true"])
    groups = [(p.item.item_id, p.arm.label) for p in plan.planned]
    assert all(a != b for a, b in itertools.pairwise(groups))


# --------------------------------------------------------------------------------------------
# rows


def _response(answer, error=None):
    return Response(key="0" * 64, model="m", answer=answer, prompt_tokens=11,
                    completion_tokens=2, cost_usd=0.5, latency_s=0.1, cached=False,
                    error=error, attempts=1)


def test_rows_score_answers_and_carry_versions(tmp_path):
    from snapcompact.billing import pricing_table_sha256
    from snapcompact.render import RENDERER_VERSION
    from snapcompact.shapes import shape_table_sha256

    spec, plan = _plan(tmp_path, ["dataset=tiny", "max_items=1", "dry_run=true",
                                  "shapes=[11on16-bw]", "reader=all"])
    qa = next(p for p in plan.planned if p.reader == "image_qa")
    gold = qa.question.answers[0]
    v = versions()
    right = make_record(qa, _response(f"The {gold}."), spec, "run", v)
    assert (right.em, right.f1, right.correct, right.abstained) == (1.0, 1.0, True, False)
    wrong = make_record(qa, _response(prompts.ABSTAIN_WORD), spec, "run", v)
    assert wrong.abstained and not wrong.correct and wrong.em == 0.0
    failed = make_record(qa, _response(None, error="RateLimitError: x"), spec, "run", v)
    assert failed.error and not failed.correct and failed.answer == ""
    assert right.shape_table_sha256 == shape_table_sha256()
    assert right.pricing_table_sha256 == pricing_table_sha256()
    assert right.renderer_version == RENDERER_VERSION
    assert right.extra["note"] == OCR_NOTE
    assert right.frame_hashes == qa.arm.frame_hashes and right.frames == len(qa.arm.frame_hashes)
    assert Record.from_json(right.to_json()) == right

    tr = next(p for p in plan.planned if p.reader == "transcribe")
    perfect = make_record(tr, _response(tr.arm.printed_text), spec, "run", v)
    assert perfect.cer == 0.0 and perfect.question_id == "transcript"


def test_summary_keeps_the_last_row_of_a_key(tmp_path):
    spec, plan = _plan(tmp_path, ["dataset=tiny", "max_items=1", "dry_run=true",
                                  "shapes=[11on16-bw]"])
    p = plan.planned[0]
    v = versions()
    rows = [make_record(p, _response(None, error="Timeout"), spec, "r", v),
            make_record(p, _response(p.question.answers[0]), spec, "r", v)]
    (table,) = summarize(rows)
    assert table["n"] == 1 and table["errors"] == 0 and table["recall"] == 1.0


# --------------------------------------------------------------------------------------------
# end to end through litellm: mock path, loopback server


def fast(experiment: str) -> list[str]:
    overrides = [f"experiment={experiment}", "model=mock", "max_items=1",
                 "max_questions_per_item=1", "frame_size=384"]
    if experiment == "squad":
        overrides += [f"dataset.params.data_file={SQUAD_FIXTURE}", "dataset.params.n_items=1",
                      "dataset.params.target_tokens=300"]
    elif experiment in ("needles", "tool_output"):
        overrides += ["dataset.params.target_tokens=400"]
    return overrides


EXPERIMENTS = sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_runs_in_fast_mode_through_litellm_mock(tmp_path, experiment):
    cfg = compose_cfg([f"results_dir={tmp_path}", "progress=false", *fast(experiment)])
    result = run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    rows = list(iter_records(tmp_path / "run" / "records.jsonl"))
    assert result.planned == len(rows) == result.requests_sent > 0
    assert all(r.error is None and r.answer == "mock answer" for r in rows)
    assert all(r.experiment == experiment and r.model == "anthropic/claude-sonnet-4-5"
               for r in rows)
    # litellm's mock usage is fixed (10 prompt, 20 completion tokens), priced from its map
    assert all((r.reported_prompt_tokens, r.reported_completion_tokens) == (10, 20) for r in rows)
    assert all(r.reported_cost_usd and r.reported_cost_usd > 0 for r in rows)
    spec = RunSpec.from_config(cfg, base_dir=tmp_path)
    assert {r.shape for r in rows} <= {s.variant for s in spec.shapes} | {"11on16-bw"}
    assert (tmp_path / "run" / "run_config.yaml").is_file()


def test_loopback_server_through_litellms_http_client(tmp_path, monkeypatch):
    from evals.fake_server import FakeChatServer, count_usage

    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    with FakeChatServer() as server:
        monkeypatch.setenv("SNAPCOMPACT_FAKE_API_BASE", server.api_base)
        cfg = compose_cfg([f"results_dir={tmp_path}", "progress=false", "model=fake",
                           "experiment=smoke", "frame_size=384"])
        result = run_config(cfg, tmp_path / "run", base_dir=tmp_path)
        bodies = list(server.bodies)
    rows = list(iter_records(tmp_path / "run" / "records.jsonl"))
    assert server.requests == result.requests_sent == len(rows) == result.planned
    usages = []
    for body in bodies:
        parts = body["messages"][0]["content"]
        images = [p for p in parts if p["type"] == "image_url"]
        assert all(p["image_url"]["detail"] == "high" for p in images)
        assert all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in images)
        answer = "echo: " + [p for p in parts if p["type"] == "text"][-1]["text"][:200]
        usages.append(count_usage(body, answer))
    # what the server computed for each body is what the rows report
    assert all(r.error is None for r in rows)
    assert sorted((r.reported_prompt_tokens, r.reported_completion_tokens) for r in rows) == \
        sorted(usages)
    _assert_no_secret(tmp_path, DUMMY_KEY)


def _assert_no_secret(root: Path, secret: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_budget_refuses_before_sending(tmp_path):
    from evals.budget import BudgetExceeded

    calls = []

    async def never(**kwargs):
        calls.append(kwargs)
        raise AssertionError("nothing may be sent past the budget")

    cfg = compose_cfg([f"results_dir={tmp_path}", "progress=false", "model=mock",
                       "dataset=tiny", "budget_usd=0.0001"])
    with pytest.raises(BudgetExceeded, match=r"exceeds the budget \$0\.0001"):
        run_config(cfg, tmp_path / "run", completion_fn=never, base_dir=tmp_path)
    assert calls == [] and not (tmp_path / "run" / "records.jsonl").exists()


def test_dry_run_prints_the_prediction_and_sends_nothing(tmp_path, capsys):
    calls = []

    async def never(**kwargs):
        calls.append(kwargs)
        raise AssertionError("a dry run sends nothing")

    cfg = compose_cfg([f"results_dir={tmp_path}", "progress=false", "model=claude-opus-4-7",
                       "dataset=tiny", "dry_run=true"])
    result = run_config(cfg, tmp_path / "run", completion_fn=never, base_dir=tmp_path)
    out = capsys.readouterr().out
    assert calls == [] and result.dry_run
    assert not (tmp_path / "run" / "records.jsonl").exists()
    assert not (tmp_path / "run" / "frames").exists()
    assert "dry run (predicted, nothing sent)" in out
    assert re.search(rf"requests\s+{result.summary.requests}\n", out)
    assert "cache hits expected" in out and "cost to spend" in out
    assert "claude-opus-4-7 via anthropic-messages" in out
    # 2 items x 2 questions x 4 arms, none cached; dollars at Opus 4.7's list price
    assert result.summary.requests == 16 and result.summary.cache_hits_expected == 0
    assert result.summary.predicted_cost_to_send_usd > 0


def test_missing_keys_stop_a_real_run_but_not_a_dry_run(tmp_path, monkeypatch):
    from evals.pipeline import MissingCredentials

    monkeypatch.delenv("MOONSHOT_API_KEY", raising=False)
    cfg = compose_cfg([f"results_dir={tmp_path}", "progress=false", "model=kimi",
                       "dataset=tiny", "max_items=1"])
    with pytest.raises(MissingCredentials, match="MOONSHOT_API_KEY"):
        run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    cfg = compose_cfg([f"results_dir={tmp_path}", "progress=false", "model=kimi",
                       "dataset=tiny", "max_items=1", "dry_run=true"])
    assert run_config(cfg, tmp_path / "run", base_dir=tmp_path).dry_run
