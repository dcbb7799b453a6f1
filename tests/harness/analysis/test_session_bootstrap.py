"""The session-level bootstrap against hand-worked resampling distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals.analysis.session_bootstrap import (
    MIN_SESSIONS_FOR_CLAIM,
    session_draws,
    session_mean,
    session_paired_bootstrap,
)


def test_two_sessions_interval_spans_their_means() -> None:
    # Two sessions of two questions each, differences -1 and +3. A resample draws two sessions:
    # (A, A) -> -1 with p 1/4, (A, B) or (B, A) -> +1 with p 1/2, (B, B) -> +3 with p 1/4; the
    # 2.5 % and 97.5 % quantiles are therefore -1 and +3, the point estimate +1.
    diff = session_mean(["A", "A", "B", "B"], [-1, -1, 3, 3], n_boot=4000, seed=1)
    assert diff.mean == pytest.approx(1.0)
    assert (diff.lo, diff.hi) == (pytest.approx(-1.0), pytest.approx(3.0))
    assert (diff.n_sessions, diff.n_questions) == (2, 4)
    assert (diff.wins, diff.losses, diff.ties) == (1, 1, 0)
    assert diff.record == "1-1-0"


def test_point_estimate_weighs_questions_not_sessions() -> None:
    # One question differing by 1 in session A, three differing by 0 in B: 1/4, not (1 + 0) / 2.
    diff = session_paired_bootstrap(["A", "B", "B", "B"], [0, 1, 1, 1], [1, 1, 1, 1])
    assert diff.mean == pytest.approx(0.25)
    assert (diff.wins, diff.losses, diff.ties) == (1, 0, 1)


def test_pairing_is_b_minus_a() -> None:
    diff = session_paired_bootstrap(["s1", "s2"], a=[10.0, 20.0], b=[12.0, 22.0])
    assert diff.mean == pytest.approx(2.0)
    assert diff.wins == 2 and diff.excludes_zero


def test_a_resample_weighs_its_questions_not_its_sessions() -> None:
    # Session A: one question at 1; session B: three questions at 0. A resample of two sessions
    # pools its questions: (A, A) -> 2/2 = 1, (A, B) or (B, A) -> 1/4 = 0.25, (B, B) -> 0. The
    # mean of the two session means would put (A, B) at 0.5, a value no resample can take.
    draws = session_draws(["A", "B", "B", "B"], [1.0, 0.0, 0.0, 0.0], n_boot=4000, seed=2)
    assert draws is not None and len(draws) == 4000
    assert set(np.round(draws, 12)) == {0.0, 0.25, 1.0}
    assert np.mean(draws == 0.25) == pytest.approx(0.5, abs=0.03)  # p(A, B) + p(B, A)
    assert np.mean(draws == 1.0) == pytest.approx(0.25, abs=0.03)


def test_one_session_has_no_interval() -> None:
    diff = session_mean(["only"] * 40, [1.0] * 40)
    assert math.isnan(diff.lo) and math.isnan(diff.hi)
    assert diff.interval_note == "1 session: no session-level interval"
    assert not diff.excludes_zero and not diff.supports_claim


def test_clustered_questions_widen_the_interval() -> None:
    # Ten sessions of 40 identical differences, five at +1 and five at -1. Questions as independent
    # units would give about 0 +- 1.96 * 1 / sqrt(400) = +-0.1; the sessions are ten observations,
    # so the normal approximation of the cluster interval is 0 +- 1.96 / sqrt(10) = +-0.62.
    sessions = [s for s in range(10) for _ in range(40)]
    values = [1.0 if s < 5 else -1.0 for s in sessions]
    diff = session_mean(sessions, values, n_boot=4000, seed=3)
    assert diff.mean == pytest.approx(0.0)
    assert -0.8 < diff.lo < -0.45 and 0.45 < diff.hi < 0.8
    assert diff.record == "5-5-0"


def test_a_claim_needs_twenty_sessions() -> None:
    assert MIN_SESSIONS_FOR_CLAIM == 20
    few = session_mean(list(range(19)), [0.5] * 19)
    enough = session_mean(list(range(20)), [0.5] * 20)
    assert few.excludes_zero and not few.supports_claim
    assert enough.supports_claim


@pytest.mark.parametrize(("call", "message"), [
    (lambda: session_mean(["a"], [1.0, 2.0]), "differ in length"),
    (lambda: session_paired_bootstrap(["a"], [1.0], [1.0, 2.0]), "differ in length"),
    (lambda: session_mean(["a", "b"], [1.0, math.nan]), "NaN"),
    (lambda: session_mean(["a"], [1.0], n_boot=10), "resamples"),
    (lambda: session_mean(["a"], [1.0], alpha=1.5), "alpha"),
])
def test_bad_input_is_named(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_empty_input_is_nan_not_an_error() -> None:
    diff = session_mean([], [])
    assert diff.n_sessions == 0 and math.isnan(diff.mean)
