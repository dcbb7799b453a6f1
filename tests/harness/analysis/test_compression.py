"""Compression is taken against the same session's own full history, never another arm.

A shape sweep runs no ``full`` arm. Before issue 44 the summary then fell back to any text-only
arm as the baseline: a snapcompact arm compressing 5.92x against the history printed 0.80x
against ``truncate`` (itself compacted). The expected ratios below are the constructed token
counts divided by hand.
"""

from __future__ import annotations

import math

import pytest
from record_rows import frame, misses, shape_rows, synthetic

from evals.analysis.report import compression_cell
from evals.analysis.summary import BASELINE_COMPUTED, BASELINE_NONE, summarize

HISTORY = 352_110  # the session's whole history + the question, as ``full`` would send it


def _sweep(full_history: int | None) -> list:
    snap = shape_rows("8on22-bw", misses(8, {0}), 59_508, strategy="snapcompact",
                      policy="foveated", shape_requested="8on22-bw", context_window=200_000,
                      full_history_prompt_tokens=full_history)
    truncate = shape_rows("text", misses(8, {0, 1}), 74_000, frame_size=0, arm="text",
                          reader="text_qa", strategy="truncate", context_window=200_000,
                          full_history_prompt_tokens=full_history)
    return synthetic(snap, truncate)


def _by_strategy(records) -> dict:
    summary = summarize(frame(records), n_boot=200)
    return {row.strategy: row for row in summary.itertuples()}


def test_a_sweep_without_full_compresses_against_the_sessions_history() -> None:
    rows = _by_strategy(_sweep(HISTORY))
    assert rows["snapcompact"].compression_vs_text == pytest.approx(352_110 / 59_508)
    assert rows["truncate"].compression_vs_text == pytest.approx(352_110 / 74_000)
    assert rows["snapcompact"].compression_baseline == BASELINE_COMPUTED
    assert compression_cell(rows["snapcompact"]) == "5.92x (vs uncompacted)"
    assert compression_cell(rows["truncate"]) == "4.76x (vs uncompacted)"
    assert math.isnan(rows["snapcompact"].text_recall_same_questions)  # full was not asked


def test_without_a_recorded_history_compression_is_a_dash_with_its_reason() -> None:
    rows = _by_strategy(_sweep(None))
    assert math.isnan(rows["snapcompact"].compression_vs_text)  # never 59,508 / 74,000
    assert rows["snapcompact"].compression_baseline == BASELINE_NONE
    assert compression_cell(rows["snapcompact"]) == (
        "– (no full arm, and the rows predate full_history_prompt_tokens: rerun to record it)")


def test_an_answered_full_arm_is_still_the_baseline() -> None:
    records = synthetic(
        shape_rows("8on22-bw", misses(8, {0}), 20_000, strategy="snapcompact",
                   policy="foveated", shape_requested="8on22-bw", full_history_prompt_tokens=None),
        shape_rows("text", misses(8, set()), 100_000, frame_size=0, arm="text",
                   reader="text_qa", strategy="full"))
    rows = _by_strategy(records)
    assert rows["snapcompact"].compression_vs_text == pytest.approx(5.0)
    assert compression_cell(rows["snapcompact"]) == "5.00x"
    assert rows["snapcompact"].text_recall_same_questions == pytest.approx(1.0)
    assert rows["full"].compression_vs_text == pytest.approx(1.0)


def test_a_run_without_full_records_the_same_history_bill_as_full_sends(tmp_path) -> None:
    """The smoke session run twice: once with ``full`` alone, once without it. Every question
    row of the second carries exactly the prompt tokens ``full`` predicted for that question."""
    from hydra_compose import compose_eval
    from mock_runs import Counting, rows_of

    from evals.pipeline.run import run_config

    base = [f"results_dir={tmp_path}", "experiment=smoke", "model=mock", "progress=false",
            "dataset.params.depths=[0.1,0.9]", "context_window=200000"]
    for name, strategies in (("full", "[full]"), ("sweep", "[truncate,snapcompact]")):
        run_config(compose_eval([*base, f"strategies={strategies}", "shapes=[11on16-bw]"]),
                   tmp_path / name, base_dir=tmp_path, completion_fn=Counting())
    full = {r.question_id: r.predicted_prompt_tokens for r in rows_of(tmp_path / "full")}
    sweep = rows_of(tmp_path / "sweep")
    assert len(full) == 2 and len(sweep) == 4
    assert {(r.question_id, r.full_history_prompt_tokens) for r in sweep} == set(full.items())
