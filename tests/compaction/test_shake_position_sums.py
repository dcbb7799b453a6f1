"""The shake scan's range sums (what a pass below ``min_savings`` reads instead of listing the
regions) equal plain sums over the values set, after every set, as the branch grows."""

from __future__ import annotations

import random

from snapcompact.compaction.shake import _PositionSums


def test_range_sums_equal_plain_sums_as_positions_grow_and_change() -> None:
    rng = random.Random(26)
    sums, plain = _PositionSums(), []
    for _ in range(600):
        p = rng.randrange(len(plain) + 3)
        value = rng.choice([0, 0, rng.randint(1, 500)])
        sums.set(p, value)
        plain.extend([0] * (p + 1 - len(plain)))
        plain[p] = value
        lo, hi = sorted(rng.randrange(len(plain) + 2) for _ in range(2))
        assert sums.between(lo, hi) == sum(plain[lo:hi])
        assert sums.between(hi, lo) == 0
