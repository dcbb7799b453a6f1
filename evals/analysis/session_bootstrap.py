"""Session-level (cluster) bootstrap: intervals whose unit of evidence is a session.

Why sessions and not questions: the questions of one session share its compaction history (the
same frames, the same handover, the same kept tail), so their scores move together. Resampling
questions as if they were independent makes an interval as narrow as the number of questions
allows, when what a claim generalises over is sessions: eight sessions of forty questions are
eight observations of "what this setting does to a session", not 320. A cluster bootstrap
resamples whole sessions with replacement and recomputes the statistic over all questions of the
drawn sessions (Davison & Hinkley, *Bootstrap Methods and their Application*, 1997, sec. 3.8;
Field & Welsh, JASA 102, 2007), so the spread between sessions is what the interval measures.

Paired: each question contributes the difference between two arms asked the same question
(``b - a``), so the statistic of a resample is the question-weighted mean difference over the
drawn sessions (the sum of their differences over the number of their questions; a session with
more paired questions weighs more, as it does in the point estimate). A session's sign (the mean
of its own differences) counts as a win for ``b`` (> 0), a loss (< 0) or a tie (== 0): the
per-session record a reader checks beside the interval.

With fewer than two sessions there is no between-session spread to resample: the interval is
``(nan, nan)`` and :attr:`SessionDiff.interval_note` says why, so no table prints a false
certainty. Below :data:`MIN_SESSIONS_FOR_CLAIM` sessions a comparison is reported but
:attr:`SessionDiff.supports_claim` is false.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MIN_SESSIONS_FOR_CLAIM", "SessionDiff", "claim_supported", "interval_excludes_zero",
           "session_draws", "session_mean", "session_paired_bootstrap"]

#: Held-out sessions a comparison needs before it may be stated as a finding (issue 36).
MIN_SESSIONS_FOR_CLAIM = 20


def interval_excludes_zero(lo: float, hi: float) -> bool:
    """True when ``[lo, hi]`` lies wholly on one side of 0 (false when there is none: nan)."""
    return not math.isnan(lo) and (lo > 0 or hi < 0)


def claim_supported(n_sessions: int, lo: float, hi: float) -> bool:
    """The one claim rule: a finding needs :data:`MIN_SESSIONS_FOR_CLAIM` sessions and a
    session-level interval clear of 0 (every table, sentence and gate asks this)."""
    return n_sessions >= MIN_SESSIONS_FOR_CLAIM and interval_excludes_zero(lo, hi)


@dataclass(frozen=True)
class SessionDiff:
    """A statistic over sessions, its session-level interval and the per-session record.

    ``mean`` is the question-weighted mean (of the differences, when paired); ``lo``/``hi`` the
    ``1 - alpha`` percentile interval of a cluster bootstrap over sessions (nan below two
    sessions); ``wins``/``losses``/``ties`` count sessions whose own mean is > 0, < 0, == 0.
    """

    mean: float
    lo: float
    hi: float
    n_sessions: int
    n_questions: int
    wins: int
    losses: int
    ties: int

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies wholly on one side of 0 (false when there is none)."""
        return interval_excludes_zero(self.lo, self.hi)

    @property
    def supports_claim(self) -> bool:
        """Enough sessions for a finding and an interval clear of 0."""
        return claim_supported(self.n_sessions, self.lo, self.hi)

    @property
    def interval_note(self) -> str:
        """Why there is no interval, or how many sessions it rests on."""
        if self.n_sessions < 2:
            return f"{self.n_sessions} session: no session-level interval"
        return f"{self.n_sessions} sessions"

    @property
    def record(self) -> str:
        """Per-session wins/losses/ties as ``W-L-T``."""
        return f"{self.wins}-{self.losses}-{self.ties}"


def _grouped(sessions: Sequence[Hashable],
             values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per-session sums and counts, in first-seen order of the sessions."""
    if len(sessions) != len(values):
        raise ValueError(f"sessions and values differ in length: {len(sessions)} vs {len(values)}")
    index: dict[Hashable, int] = {}
    sums: list[float] = []
    counts: list[int] = []
    for session, value in zip(sessions, values, strict=True):
        v = float(value)
        if math.isnan(v):
            raise ValueError(f"value of session {session!r} is NaN: drop unpaired questions first")
        i = index.setdefault(session, len(index))
        if i == len(sums):
            sums.append(0.0)
            counts.append(0)
        sums[i] += v
        counts[i] += 1
    return np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)


def _check(n_boot: int, alpha: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"bootstrap resamples must be an integer >= 100, got {n_boot!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")


def session_draws(sessions: Sequence[Hashable], values: Sequence[float], *, n_boot: int = 2000,
                  seed: int = 0) -> np.ndarray | None:
    """The ``n_boot`` question-weighted means of session resamples (None below two sessions).

    For callers that need more than the interval (e.g. the share of resamples at or below 0).
    """
    _check(n_boot, 0.05)
    sums, counts = _grouped(sessions, values)
    if len(sums) < 2:
        return None
    draws = np.random.default_rng(seed).integers(0, len(sums), size=(n_boot, len(sums)))
    return sums[draws].sum(axis=1) / counts[draws].sum(axis=1)


def session_mean(sessions: Sequence[Hashable], values: Sequence[float], *, n_boot: int = 2000,
                 seed: int = 0, alpha: float = 0.05) -> SessionDiff:
    """Question-weighted mean of ``values`` (one per question), cluster-bootstrapped by session.

    ``wins``/``losses``/``ties`` count sessions whose mean is above, below or at 0: meaningful
    when ``values`` are differences (use :func:`session_paired_bootstrap` for two arms).
    """
    _check(n_boot, alpha)
    sums, counts = _grouped(sessions, values)
    n = len(sums)
    if n == 0:
        return SessionDiff(math.nan, math.nan, math.nan, 0, 0, 0, 0, 0)
    own = sums / counts
    mean = float(sums.sum() / counts.sum())
    lo = hi = math.nan
    stats = session_draws(sessions, values, n_boot=n_boot, seed=seed)
    if stats is not None:
        lo, hi = (float(q) for q in np.quantile(stats, [alpha / 2, 1 - alpha / 2]))
    return SessionDiff(mean=mean, lo=lo, hi=hi, n_sessions=n, n_questions=int(counts.sum()),
                       wins=int((own > 0).sum()), losses=int((own < 0).sum()),
                       ties=int((own == 0).sum()))


def session_paired_bootstrap(sessions: Sequence[Hashable], a: Sequence[float], b: Sequence[float],
                             *, n_boot: int = 2000, seed: int = 0,
                             alpha: float = 0.05) -> SessionDiff:
    """``b - a`` over questions asked of both arms, with a paired cluster bootstrap over sessions.

    One entry per question: ``sessions[i]`` names its session, ``a[i]`` and ``b[i]`` the two arms'
    values for it (a 0/1 score, billed tokens...). A win is a session where ``b`` is higher.
    """
    if not len(a) == len(b) == len(sessions):
        raise ValueError(f"sessions, a and b differ in length: {len(sessions)}, {len(a)}, {len(b)}")
    diffs = [float(y) - float(x) for x, y in zip(a, b, strict=True)]
    return session_mean(sessions, diffs, n_boot=n_boot, seed=seed, alpha=alpha)
