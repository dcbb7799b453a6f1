"""Wilson score intervals against a published worked example, and in the summary tables.

Expected values: Newcombe, "Two-sided confidence intervals for the single proportion:
comparison of seven methods", Statistics in Medicine 17:857-872 (1998), Table II, method 3
(score interval without continuity correction), 95 %, four decimals, for his four examples.
"""

from __future__ import annotations

import math

import pytest
from record_rows import BOOT, decide, frame, misses, shape_rows

from evals.analysis.intervals import wilson_interval
from evals.analysis.summary import summarize

NEWCOMBE_TABLE_II_SCORE = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize("successes, n, lo, hi", NEWCOMBE_TABLE_II_SCORE)
def test_matches_newcombe_table_ii(successes, n, lo, hi) -> None:
    got_lo, got_hi = wilson_interval(successes / n, n, 0.05)
    assert round(got_lo, 4) == lo and round(got_hi, 4) == hi


@pytest.mark.parametrize("n", [1, 10, 40, 1000])
def test_zero_of_n_and_n_of_n_are_not_degenerate(n) -> None:
    lo, hi = wilson_interval(0.0, n)
    assert lo == 0.0 and 0.0 < hi < 1.0
    lo, hi = wilson_interval(1.0, n)
    assert 0.0 < lo < 1.0 and hi == 1.0
    # the upper end of 0/n is z^2 / (n + z^2) (solve the score equation at p-hat = 0)
    z2 = 1.959963984540054 ** 2
    assert wilson_interval(0.0, n)[1] == pytest.approx(z2 / (n + z2), rel=1e-12)


def test_wider_at_higher_confidence_and_empty_has_none() -> None:
    lo95, hi95 = wilson_interval(0.3, 50, 0.05)
    lo99, hi99 = wilson_interval(0.3, 50, 0.01)
    assert lo99 < lo95 < 0.3 < hi95 < hi99
    assert all(math.isnan(v) for v in wilson_interval(0.0, 0))


@pytest.mark.parametrize("args, match", [((0.5, -1), "n must be"), ((0.5, 2.0), "n must be"),
                                         ((1.5, 10), "proportion"), ((0.5, 10, 0.0), "alpha")])
def test_bad_input_is_one_clear_error(args, match) -> None:
    with pytest.raises(ValueError, match=match):
        wilson_interval(*args)


def test_summary_zero_of_forty_gets_a_real_interval() -> None:
    # the case: 0 of 40 questions right printed [0.000, 0.000] with the bootstrap
    s = summarize(frame(shape_rows("6x6u-bw", [False] * 40, 1000)), n_boot=BOOT)
    row = s.iloc[0]
    assert row["recall"] == 0.0
    assert row["recall_lo"] == 0.0 and row["recall_hi"] == pytest.approx(0.0876, abs=5e-5)
    assert row["em_lo"] == 0.0 and row["em_hi"] == pytest.approx(0.0876, abs=5e-5)


def test_summary_and_winner_use_the_same_wilson_interval() -> None:
    # 15 of 148 right: Newcombe's second example, through the whole table and the winner rule
    rows = shape_rows("8on22-bw", misses(148, range(133)), 1000)
    s = summarize(frame(rows), n_boot=BOOT).iloc[0]
    assert (round(s["recall_lo"], 4), round(s["recall_hi"], 4)) == (0.0624, 0.1605)
    winner = decide(rows)["claude"].winner
    assert (round(winner.recall_lo, 4), round(winner.recall_hi, 4)) == (0.0624, 0.1605)
