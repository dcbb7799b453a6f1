"""The three result guards, at their boundaries (session-maintenance.ts 4686-4744, 18.3.4).

A result is rejected when its frames exceed 3,000,000 B of base64, when its projection is not
strictly below the baseline, or when the projection exceeds ``window - effective reserve``;
payload is tested first, then reduction, then the window.
"""

from __future__ import annotations

import pytest

from snapcompact.agent import snapcompact_rejection

OK = dict(payload_bytes=1_000, projected_tokens=20_000, reduction_baseline=27_300,
          window_budget=27_200)


def test_a_reducing_result_that_fits_is_committed():
    assert snapcompact_rejection(**OK) is None


@pytest.mark.parametrize(("payload", "rejected"), [(3_000_000, False), (3_000_001, True)])
def test_payload_budget(payload, rejected):
    why = snapcompact_rejection(**{**OK, "payload_bytes": payload})
    assert (why is not None and "standing image payload" in why) == rejected


@pytest.mark.parametrize(("projected", "rejected"), [(27_299, False), (27_300, True)])
def test_reduction_is_strict(projected, rejected):
    why = snapcompact_rejection(**{**OK, "projected_tokens": projected,
                                   "window_budget": 10**6})
    assert (why is not None and "would not reduce context" in why) == rejected


@pytest.mark.parametrize(("projected", "rejected"), [(27_200, False), (27_201, True)])
def test_window_fit(projected, rejected):
    why = snapcompact_rejection(**{**OK, "projected_tokens": projected,
                                   "reduction_baseline": 10**6})
    assert (why is not None and "under the limit" in why) == rejected


def test_payload_is_checked_before_reduction_and_window():
    why = snapcompact_rejection(payload_bytes=4_000_000, projected_tokens=10**6,
                                reduction_baseline=1, window_budget=1)
    assert why is not None and "standing image payload" in why
