"""Wilson score intervals for a proportion: the error bars of recall (and exact match).

Why not the bootstrap here: recall is a mean of 0/1 scores, and a percentile bootstrap of a
sample with no hits (or no misses) resamples only that one value, so 0 of 40 questions came out
as ``[0.000, 0.000]``: certainty where there is least information. Wilson's interval inverts the
score test (E. B. Wilson, JASA 22, 1927) and stays informative at 0/n and n/n (0/40 at 95 %:
``[0, 0.088]``); Newcombe (Statistics in Medicine 17, 1998) recommends it among seven methods.
Differences between shapes keep the paired bootstrap (``evals.analysis.winner``).

When a question was asked under several seeds its scores are averaged first, so the observed
proportion may fall between multiples of 1/n; the formula takes it as it is, with ``n`` the
number of questions (the resampling unit of the whole module).

The formula is a few lines of the standard library (``statistics.NormalDist`` for the quantile),
so no statistics package is added for it.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["wilson_interval"]


def wilson_interval(proportion: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The two-sided ``1 - alpha`` Wilson score interval of an observed ``proportion`` of ``n``.

    ``n == 0`` has no interval: ``(nan, nan)``.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a whole number of questions >= 0, got {n!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    if n == 0:
        return math.nan, math.nan
    if not 0 <= proportion <= 1:
        raise ValueError(f"proportion must be between 0 and 1, got {proportion!r}")
    z = NormalDist().inv_cdf(1 - alpha / 2)
    z2_n = z * z / n
    centre = (proportion + z2_n / 2) / (1 + z2_n)
    half = z * math.sqrt(proportion * (1 - proportion) / n + z2_n / (4 * n)) / (1 + z2_n)
    lo = 0.0 if proportion == 0 else max(0.0, centre - half)  # exact ends, no rounding residue
    hi = 1.0 if proportion == 1 else min(1.0, centre + half)
    return lo, hi
