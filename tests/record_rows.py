"""Synthetic records for the harness's tests: one complete row, and rows built question by question.

Why a module: the store, analysis, pipeline and spec tests all need rows whose right answer is
known by construction (``shape_rows`` writes correctness out per question); the builders live here
so that no test module imports another.
"""

from __future__ import annotations

import pandas as pd

from evals.analysis.aggregate import records_frame
from evals.analysis.winner import choose_winners
from evals.store.records import Record
from snapcompact.pricing import resolve_shape, shape_rules


def make_record(**changes) -> Record:
    base = Record.from_fields(
        run_id="r1", experiment="default", dataset="tiny", item_id="i1", question_id="q1",
        model="snapocr/ocr-qa", target_model="anthropic/claude-sonnet-4-5", arm="image",
        shape="11on16-bw", frame_size=1568, reader="image_qa", seed=0,
        package_version="0.1.0", git_sha="abc", shape_table_sha256="s", pricing_table_sha256="p",
        renderer_version="1", frames=1, frame_px=((1568, 736),), frame_hashes=("ff",),
        history_chars=1200, text_tokens=40, text_token_method="estimate:chars/4",
        predicted_image_tokens=1521, predicted_prompt_tokens=1561, predicted_cost_usd=0.0047,
        answer="7342", reported_prompt_tokens=None, reported_completion_tokens=3,
        reported_cost_usd=0.0, latency_s=0.5, cached=False, error=None, attempts=1,
        em=1.0, f1=1.0, correct=True, abstained=False, question="What is the code?",
        gold_answers=("7342",),
    )
    return base.with_fields(**changes)


CLAUDE = "anthropic/claude-sonnet-4-5"
OCR = "snapocr/ocr-qa"
BOOT = 1000


def base_record() -> Record:
    return Record.from_fields(
        run_id="run-a", experiment="synthetic", dataset="needles", item_id="i0", question_id="q0",
        model=OCR, target_model=CLAUDE, arm="image", shape="11on16-bw", frame_size=1568,
        reader="image_qa", seed=0, package_version="0.1.0", git_sha="abc1234",
        shape_table_sha256="s", pricing_table_sha256="p", renderer_version="1", frames=1,
        frame_px=((1568, 1568),), frame_hashes=("ff",), history_chars=12000, text_tokens=40,
        text_token_method="estimate:chars/4", predicted_image_tokens=1000,
        predicted_prompt_tokens=1040, predicted_cost_usd=0.003, answer="x",
        reported_prompt_tokens=None, reported_completion_tokens=None, reported_cost_usd=None,
        latency_s=0.1, cached=False, error=None, attempts=1, em=1.0, f1=1.0, correct=True,
        abstained=False, created_at="2026-12-01T00:00:00Z")


def shape_rows(shape: str, correct: list[bool], tokens: int, *, frame_size: int = 1568,
               target: str = CLAUDE, model: str = OCR, seeds: tuple[int, ...] = (0,),
               arm: str = "image", reader: str = "image_qa", reported: int | None = None,
               per_item: int = 4, **changes) -> list[Record]:
    """One record per (question, seed); question k belongs to item k // per_item."""
    rows = []
    for seed in seeds:
        for k, ok in enumerate(correct):
            rows.append(base_record().with_fields(
                item_id=f"i{k // per_item}", question_id=f"q{k}", model=model,
                target_model=target, arm=arm, reader=reader, shape=shape, frame_size=frame_size,
                seed=seed, predicted_prompt_tokens=tokens,
                predicted_image_tokens=max(tokens - 40, 0),
                predicted_cost_usd=tokens * 3e-6, reported_prompt_tokens=reported,
                em=float(ok), f1=1.0 if ok else 0.25, correct=bool(ok), **changes))
    return rows


def misses(n: int, missed: set[int] | range) -> list[bool]:
    missed = set(missed)
    return [k not in missed for k in range(n)]


def synthetic(*groups: list[Record]) -> list[Record]:
    return [r for g in groups for r in g]


def frame(records: list[Record]) -> pd.DataFrame:
    return records_frame(records, shape_rules())


def decide(records: list[Record], **kw):
    decisions = choose_winners(frame(records), n_boot=BOOT, seed=7, **kw)
    return {d.line: d for d in decisions}


def research_arm(run, research, shape, recalls, tokens, *, seed=100, frame_size=1568, **changes):
    """Snapcompact rows of one research arm (the search's front, research comparisons): a
    question per entry of ``recalls`` (None: its evidence was kept, else discarded)."""
    rows = []
    changes = {"production_valid": True, "fits_window": True, **changes}
    for i, correct in enumerate(recalls):
        rows.append(make_record(
            question_id=f"q{i}", run_id=run, strategy="snapcompact", policy="foveated",
            research=research, shape_requested=shape, frame_size=frame_size, seed=seed,
            context_window=200_000, correct=bool(correct), evidence_round=0 if correct is None
            else 1, predicted_prompt_tokens=tokens, **changes))
    return rows


AGENT_TARGETS = (CLAUDE, "openai/gpt-5")
FULL_TOKENS = 352_110


def _agent_arm(target, shape, asked, tokens, missed, *, window=200_000, policy="foveated",
               valid=True, rounds=6, n=40, **kw):
    # like the replay, each row records the shape its request resolved to (auto: the table's)
    rows = shape_rows(shape, misses(n, missed), tokens, target=target, strategy="snapcompact",
                      policy=policy, shape_requested=asked, context_window=window,
                      shape_asked=resolve_shape(target, shape=asked).name,
                      production_valid=valid, fits_window=True, **kw)
    return [r.with_fields(evidence_round=k % rounds) for k, r in enumerate(rows)]


def agent_run_records() -> list[Record]:
    """Rows shaped like the default run, for two model lines (``AGENT_TARGETS``): production
    arms at 200k and 32k, a pinned arm production would not send, ``truncate``, and ``full``
    skipped over the 200k window (``FULL_TOKENS`` per question)."""
    out = []
    for target in AGENT_TARGETS:
        out += _agent_arm(target, "11on16-bw", "auto", 59_508, range(33))
        out += _agent_arm(target, "8on22-bw", "8on22-bw", 59_699, range(33))
        out += _agent_arm(target, "8on16-bw", "auto", 16_626, range(75), window=32_000, rounds=60)
        out += _agent_arm(target, "11on16-bw", "auto", 118_452, range(25), policy="pinned",
                          valid=False)
        out += shape_rows("text", misses(40, range(34)), 48_775, target=target, frame_size=0,
                          arm="text", reader="text_qa", model="snapocr/text-qa",
                          strategy="truncate", context_window=200_000, production_valid=False,
                          fits_window=True)
        out += shape_rows("text", misses(40, []), FULL_TOKENS, target=target, frame_size=0,
                          arm="text", reader="text_qa", model="snapocr/text-qa",
                          strategy="full", context_window=200_000, fits_window=False,
                          production_valid=False, skipped="exceeds the context window")
    return synthetic(out)
