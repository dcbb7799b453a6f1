"""Aggregation and the winner rule on synthetic records whose right answer is known by construction.

Correctness patterns are written out question by question, so the expected recall, the expected
paired difference and therefore the expected winner follow from the construction, not from
running our code. The builders (``synthetic``, ``shape_rows``) are in tests/record_rows.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from record_rows import BOOT, CLAUDE, decide, frame, misses, shape_rows, synthetic

from evals.analysis.aggregate import OFFLINE_PROVIDER, UNMATCHED_LINE, model_line, records_frame
from evals.analysis.resampling import bootstrap_means, percentile_interval
from evals.analysis.summary import pareto_mask, summarize
from evals.analysis.winner import choose_winners
from evals.store.records import Record
from snapcompact.pricing import resolve_shape, shape_rules

# --- winner rule -----------------------------------------------------------------------------


def test_clear_winner_best_recall_and_cheapest() -> None:
    recs = synthetic(
        shape_rows("8on16-bw", misses(100, range(5)), 1000),
        shape_rows("8on22-bw", misses(100, range(40)), 1500),
        shape_rows("11on16-bw", misses(100, range(50)), 3000),
    )
    d = decide(recs)["claude"]
    assert d.winner.shape == "8on16-bw"
    assert d.winner.recall == pytest.approx(0.95)
    assert d.tie == ()
    assert {c.shape for c in d.candidates if c.significantly_below} == {"8on22-bw", "11on16-bw"}


def test_tie_goes_to_the_cheaper_shape_and_is_reported() -> None:
    # 8on22-bw misses q0..q9 (recall .90, cheap); 11on16-bw misses q5..q13 (recall .91, dearer):
    # they disagree on 9 questions, 5 to 4 -- statistically indistinguishable.
    recs = synthetic(
        shape_rows("8on22-bw", misses(100, range(10)), 1000),
        shape_rows("11on16-bw", misses(100, range(5, 14)), 1400),
    )
    d = decide(recs)["claude"]
    assert d.best_recall.shape == "11on16-bw"
    assert d.winner.shape == "8on22-bw"
    assert set(d.tie) == {"8on22-bw", "11on16-bw"}
    assert any("tie" in n for n in d.notes)
    assert any("chosen over the best-recall shape 11on16-bw" in n for n in d.notes)


def test_cheapest_shape_loses_when_its_recall_is_significantly_worse() -> None:
    # 6x6u-bw: recall .50 at 500 tokens (1.0 per 1k); 11on16-bw: .95 at 1500 (0.63 per 1k).
    recs = synthetic(
        shape_rows("6x6u-bw", misses(100, range(50)), 500),
        shape_rows("11on16-bw", misses(100, range(5)), 1500),
    )
    d = decide(recs)["claude"]
    cheap = next(c for c in d.candidates if c.shape == "6x6u-bw")
    assert cheap.recall_per_1k_tokens > d.winner.recall_per_1k_tokens
    assert cheap.significantly_below and cheap.diff_lo > 0
    assert d.winner.shape == "11on16-bw"
    assert any("6x6u-bw has more recall per token" in n for n in d.notes)


def test_thin_evidence_is_flagged() -> None:
    recs = synthetic(
        shape_rows("8on22-bw", misses(10, {0}), 1000),
        shape_rows("11on16-bw", misses(10, {0, 1}), 1200),
        shape_rows("8on16-bw", misses(10, {3}), 1100, error="RateLimitError") [:1],
    )
    d = decide(recs, min_questions=30)["claude"]
    flags = " | ".join(d.flags)
    assert "few questions" in flags and "10 (< 30)" in flags
    assert "single seed (0)" in flags
    assert "overlaps: 11on16-bw" in flags
    assert "1 errored request(s) excluded" in flags
    assert d.thin


def test_strong_evidence_has_no_flags() -> None:
    recs = synthetic(
        shape_rows("8on22-bw", misses(60, range(3)), 1000, seeds=(0, 1)),
        shape_rows("6x6u-bw", misses(60, range(45)), 400, seeds=(0, 1)),
    )
    d = decide(recs, min_questions=30)["claude"]
    assert d.winner.shape == "8on22-bw"
    assert d.flags == ()
    assert not d.thin


def test_lines_come_from_target_model_and_readers_stay_apart() -> None:
    recs = synthetic(
        shape_rows("8on22-bw", misses(40, {1}), 1100, target="gemini/gemini-3-pro"),
        shape_rows("8on22-bw", misses(40, {1}), 1100, target="openai/gpt-5",
                   model="openai/gpt-5"),
        shape_rows("8on22-bw", misses(40, {1}), 1100, target="mistral/pixtral-large"),
    )
    got = {(d.line, d.reader_id) for d in choose_winners(frame(recs), n_boot=BOOT)}
    assert got == {("gemini", OFFLINE_PROVIDER), ("gpt-codex", "openai/gpt-5"),
                   (UNMATCHED_LINE, OFFLINE_PROVIDER)}


@pytest.mark.parametrize("model_id, line", [
    ("anthropic/claude-sonnet-4-5", "claude"),
    ("openrouter/anthropic/claude-opus-4-7", "claude-high-res"),
    ("claude-fable-latest", "claude-high-res"),
    ("vertex_ai/gemini-3-pro", "gemini"),
    ("moonshot/kimi-k2.5", "kimi"),
    ("zai/glm-4.6", "glm"),
    ("o3", UNMATCHED_LINE),
])
def test_model_line_follows_the_library_resolver(model_id: str, line: str) -> None:
    from snapcompact.pricing import ideal_shape

    ideal = ideal_shape(model_id)
    assert (ideal.rule if ideal else UNMATCHED_LINE) == line
    assert model_line(model_id, shape_rules()) == line


# --- summary ---------------------------------------------------------------------------------


def test_summary_recall_cost_and_compression_vs_text() -> None:
    recs = synthetic(
        shape_rows("8on22-bw", misses(40, range(10)), 2000, reported=2100, model=CLAUDE),
        shape_rows("text", misses(40, range(2)), 10000, frame_size=0, arm="text",
                   reader="text_qa", model=CLAUDE),
    )
    s = summarize(frame(recs), n_boot=BOOT).set_index("arm")
    img = s.loc["image"]
    assert img["recall"] == pytest.approx(0.75)
    assert img["f1"] == pytest.approx(0.75 + 0.25 * 0.25)
    assert img["predicted_prompt_tokens"] == 2000 and img["reported_prompt_tokens"] == 2100
    assert img["recall_per_1k_tokens"] == pytest.approx(0.375)
    assert img["predicted_cost_usd"] == pytest.approx(0.006)
    assert img["compression_vs_text"] == pytest.approx(5.0)
    assert img["text_recall_same_questions"] == pytest.approx(0.95)
    assert img["recall_lo"] < 0.75 < img["recall_hi"]
    assert bool(s.loc["text"]["on_frontier"]) and bool(img["on_frontier"])


def test_offline_reader_usage_is_not_a_provider_report() -> None:
    # snapocr echoes the predicted tokens back as usage and bills $0: neither is a report.
    df = frame(shape_rows("8on22-bw", [True], 2000, reported=2000, reported_cost_usd=0.0))
    assert df["reported_prompt_tokens_by_provider"].isna().all() and df["reported_cost_by_provider_usd"].isna().all()
    assert df["reported_prompt_tokens"].tolist() == [2000]  # the raw field is kept


def test_seeds_average_within_a_question_and_duplicates_count_once() -> None:
    first = shape_rows("8on22-bw", [True, False], 1000, seeds=(0,))
    second = shape_rows("8on22-bw", [True, True], 1000, seeds=(1,))
    again = [r.with_fields(run_id="run-b") for r in first]  # same keys: a repeated run
    df = frame(first + second + again)
    assert df.attrs["duplicates_dropped"] == 2 and len(df) == 4
    s = summarize(df, n_boot=BOOT).iloc[0]
    assert s["n_questions"] == 2 and s["n_seeds"] == 2
    assert s["recall"] == pytest.approx((1.0 + 0.5) / 2)


def test_errored_rows_are_excluded_and_a_later_success_replaces_them() -> None:
    failed = shape_rows("8on22-bw", [False], 1000, error="Timeout", created_at="2026-01-01")
    retried = shape_rows("8on22-bw", [True], 1000, created_at="2026-01-02")
    df = frame(failed + retried)
    assert len(df) == 1 and bool(df.iloc[0]["ok"])
    only_failed = frame(failed + shape_rows("8on22-bw", [True, True], 1000)[1:])
    s = summarize(only_failed, n_boot=BOOT).iloc[0]
    assert s["n_errors"] == 1 and s["n_questions"] == 1 and s["recall"] == 1.0


def test_pareto_frontier() -> None:
    cost = np.array([100, 200, 300, 150, 300])
    recall = np.array([0.5, 0.8, 0.8, 0.4, 0.9])
    # 150 is dominated by 100; 300@0.8 by 200@0.8 (cheaper, equal recall)
    assert pareto_mask(cost, recall).tolist() == [True, True, False, False, True]


# --- bootstrap -------------------------------------------------------------------------------


def test_interval_contains_the_true_rate_in_a_large_sample() -> None:
    rng = np.random.default_rng(1)
    correct = rng.random(3000) < 0.7
    s = summarize(frame(shape_rows("8on22-bw", list(correct), 1000, per_item=10)), n_boot=2000)
    row = s.iloc[0]
    assert row["recall_lo"] < 0.7 < row["recall_hi"]
    half_width_normal = 1.96 * np.sqrt(0.7 * 0.3 / 3000)
    assert (row["recall_hi"] - row["recall_lo"]) / 2 == pytest.approx(half_width_normal, rel=0.15)


def test_interval_coverage_is_near_nominal() -> None:
    rng = np.random.default_rng(2)
    hits = 0
    trials = 300
    for _ in range(trials):
        sample = (rng.random(200) < 0.3).astype(float)
        lo, hi = percentile_interval(bootstrap_means(sample, 500, rng), 0.05)
        hits += bool(lo[0] <= 0.3 <= hi[0])
    assert 0.90 <= hits / trials <= 0.99


def test_results_are_seeded_and_order_independent() -> None:
    recs = synthetic(shape_rows("8on22-bw", misses(50, range(9)), 1000),
                     shape_rows("11on16-bw", misses(50, range(4)), 1500))
    a = summarize(frame(recs), n_boot=BOOT, seed=3)
    b = summarize(frame(list(reversed(recs))), n_boot=BOOT, seed=3)
    pd.testing.assert_frame_equal(a, b)
    # another seed draws other resamples (interval ends are multiples of 1/50 here, so a few
    # other seeds may land on the same ends by chance; sixteen may not)
    cols = ["recall_lo", "recall_hi", "f1_lo", "f1_hi"]
    assert any(not np.allclose(a[cols], summarize(frame(recs), n_boot=BOOT, seed=s)[cols])
               for s in range(4, 20))


@pytest.mark.parametrize("kw, match", [({"n_boot": 10}, "resamples"), ({"alpha": 1.5}, "alpha")])
def test_bad_settings_are_rejected(kw, match) -> None:
    with pytest.raises(ValueError, match=match):
        summarize(frame(shape_rows("8on22-bw", [True], 1000)), **kw)


def test_no_records_is_an_error() -> None:
    with pytest.raises(ValueError, match="no records"):
        records_frame([], shape_rules())


# --- only contexts production would send are ranked (issue 23) --------------------------------


def _arm(requested: str, correct: list[bool], tokens: int, valid: bool | None, *,
         policy: str = "foveated", strategy: str = "snapcompact", window: int = 200_000,
         note: str | None = None, stand_in: bool = False,
         asked: str | None = None) -> list[Record]:
    """Schema-3 rows of one arm: two sessions (items) of the main job, reader qa. Like the
    replay, a snapcompact row records the shape its request resolved to (``shape_asked``: the
    library's pick for the target when ``auto``), unless ``asked`` says otherwise."""
    if asked is None and strategy == "snapcompact":
        asked = resolve_shape(CLAUDE, shape=requested).name
    return shape_rows(
        "11on16-bw+8on16-bw" if strategy == "snapcompact" else "text", correct, tokens,
        reader="qa", per_item=len(correct) // 2, strategy=strategy,
        policy=policy if strategy == "snapcompact" else "",
        shape_requested=requested if strategy == "snapcompact" else "", context_window=window,
        shape_asked=asked or "",
        production_valid=valid, production_note=note, summary_stand_in=stand_in,
        frames_by_shape=({requested if requested != "auto" else "11on16-bw": 6, "8on16-bw": 11}
                         if strategy == "snapcompact" else {}))


def test_winner_rule_ranks_only_production_valid_rows() -> None:
    # The pinned arm reads every question (1.00) at the fewest tokens and would win on any
    # count; production never sends it, so the decision is between the two valid arms:
    # 8on22-bw 30/40 at 60k tokens, auto (11on16-bw for Sonnet 4.5) 20/40 at 60k tokens.
    recs = synthetic(
        _arm("8on22-bw", misses(40, range(10)), 60_000, True),
        _arm("auto", misses(40, range(20)), 60_000, True),
        _arm("auto", [True] * 40, 30_000, False, policy="pinned",
             note="pinned policy: the seed's design, no production version runs it"),
        _arm("", misses(40, range(40)), 150_000, None, strategy="truncate"),
    )
    d = decide(recs)["claude"]
    assert {c.shape for c in d.candidates} == {"8on22-bw", "11on16-bw"}
    assert d.winner.shape == "8on22-bw"
    assert d.winner.recall == pytest.approx(0.75)
    assert d.winner.n_questions == 40
    assert d.winner.measured_on.startswith("8on16-bw 11, 8on22-bw 6 per context (8on16-bw: ")
    assert any("not ranked: snapcompact pinned auto @200k" in n and "pinned policy" in n
               for n in d.notes)
    assert not any(c.recall == 1.0 for c in d.candidates)


def test_an_auto_arm_is_decided_as_the_shape_its_record_carries() -> None:
    # The replay resolved auto to 8on16-bw when it drew these contexts (an older table); the
    # library's table picks another shape for Sonnet 4.5 today. The decision names the shape
    # the contexts were drawn for, read from the record, never a fresh resolution.
    assert resolve_shape(CLAUDE).name != "8on16-bw"
    recs = synthetic(_arm("auto", misses(40, range(20)), 60_000, True, asked="8on16-bw"))
    d = decide(recs)["claude"]
    assert [c.shape for c in d.candidates] == ["8on16-bw"]


def test_an_auto_arm_without_a_recorded_shape_is_not_ranked_and_says_so() -> None:
    # Records written before shape_asked existed: which shape auto stood for is not known.
    recs = synthetic(_arm("8on22-bw", misses(40, range(10)), 60_000, True),
                     _arm("auto", [True] * 40, 30_000, True, asked=""))
    d = decide(recs)["claude"]
    assert [c.shape for c in d.candidates] == ["8on22-bw"]
    assert any("not ranked: snapcompact foveated auto @200k" in n
               and "shape not recorded" in n for n in d.notes)


def test_no_production_valid_row_means_no_winner() -> None:
    recs = synthetic(_arm("auto", [True] * 40, 30_000, False, note="over the window"),
                     _arm("", [True] * 40, 300_000, None, strategy="full"))
    assert choose_winners(frame(recs), n_boot=BOOT) == []


def test_rows_production_would_not_send_are_never_on_the_frontier() -> None:
    recs = synthetic(_arm("auto", misses(40, range(20)), 60_000, True),
                     _arm("8on22-bw", [True] * 40, 10_000, False, note="over the window"))
    s = summarize(frame(recs), n_boot=BOOT).set_index("shape_requested")
    assert list(s["production"][["auto", "8on22-bw"]]) == ["valid", "not sent"]
    assert bool(s.loc["auto", "on_frontier"]) and not bool(s.loc["8on22-bw", "on_frontier"])


def test_stand_in_summary_rows_are_their_own_verdict_never_ranked() -> None:
    # Production's path through a handoff whose summary the offline stand-in wrote: the rows
    # are neither valid (the summary is not production's) nor "not sent" (production takes
    # this path); they form their own group, off the frontier and out of the winner rule,
    # even when they read more at fewer tokens than the valid arm.
    note = ("production's path, but its handoff summary was written by the offline stand-in "
            "(no language model): recall on what that summary would carry is a floor")
    recs = synthetic(_arm("auto", misses(40, range(20)), 60_000, True),
                     _arm("8on22-bw", [True] * 40, 10_000, False, note=note, stand_in=True))
    s = summarize(frame(recs), n_boot=BOOT)
    assert sorted(s["production"]) == ["stand-in", "valid"]
    stand_in = s[s["production"] == "stand-in"].iloc[0]
    assert stand_in["n_questions"] == 40 and not bool(stand_in["on_frontier"])
    d = decide(recs)["claude"]
    assert d.winner.recall == pytest.approx(0.5) and d.winner.n_questions == 40


def test_windows_are_separate_arms_and_decided_at_the_largest() -> None:
    recs = synthetic(_arm("auto", misses(40, range(20)), 60_000, True),
                     _arm("auto", [True] * 40, 20_000, True, window=32_000))
    s = summarize(frame(recs), n_boot=BOOT)
    assert sorted(s["context_window"]) == [32_000, 200_000]
    d = decide(recs)["claude"]
    assert d.winner.recall == pytest.approx(0.5)  # the 200k rows, not the 32k ones
    assert any("decided at the 200,000-token window" in n for n in d.notes)


def test_tables_of_older_runs_read_with_todays_column_names(tmp_path):
    """summary/records tables written before predicted_/reported_ came first still read: the old
    column is renamed (or dropped where it repeated a record column), with a warning."""
    import pandas as pd

    from evals.analysis.aggregate import read_table

    pd.DataFrame({"tokens_predicted": [1000.0], "cost_reported_usd": [0.5],
                  "recall": [0.75]}).to_csv(tmp_path / "summary.csv", index=False)
    with pytest.warns(FutureWarning, match="tokens_predicted, cost_reported_usd"):
        summary = read_table(tmp_path / "summary.csv")
    assert list(summary.columns) == ["predicted_prompt_tokens", "reported_cost_usd", "recall"]
    pd.DataFrame({"predicted_prompt_tokens": [10], "billed_tokens_predicted": [10.0],
                  "billed_tokens_reported": [12.0]}).to_parquet(tmp_path / "records.parquet")
    with pytest.warns(FutureWarning, match="dropped"):
        records = read_table(tmp_path / "records.parquet")
    assert list(records.columns) == ["predicted_prompt_tokens",
                                     "reported_prompt_tokens_by_provider"]
