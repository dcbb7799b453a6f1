"""Dollar budget: predicted before a run starts, enforced while it runs.

Every dollar must be predicted before it is spent. The caller prices each request from its own
token prediction (the library's billing formulas times the model's prices) and hands the
predictions here before anything is sent:

* ``Budget.check(plan)`` refuses to start a run whose predicted cost of the requests that will
  actually be sent (cache hits are free) exceeds ``limit_usd``, with both numbers in the message;
* during the run ``reserve()`` is called before each request with its predicted cost and
  ``settle()`` after it with the cost the provider reported. A request is refused when spent
  dollars + the predictions of requests still in flight + its own prediction would pass the
  limit, so that concurrent requests cannot together overshoot it. Once refused, the budget stays
  exhausted and refuses every later request: the sweep drains instead of spending more.

When a provider reports no cost (a model litellm has no price for), the prediction is counted as
spent: the only safe guess. All state sits behind one ``threading.Lock``: the critical sections
are a few additions, cheap enough to take from asyncio code, and safe from threads.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

__all__ = ["Budget", "BudgetExceeded", "DryRunSummary", "format_dry_run"]


class BudgetExceeded(RuntimeError):
    """A run (or one more request) would spend more than the budget allows."""


def _check_dollars(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number of dollars, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite, non-negative number of dollars, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class DryRunSummary:
    """What a run would do, before it does it (all predicted; cache hits cost nothing)."""

    requests: int
    cache_hits_expected: int
    predicted_prompt_tokens: int
    predicted_prompt_tokens_to_send: int
    predicted_cost_usd: float
    predicted_cost_to_send_usd: float

    @property
    def requests_to_send(self) -> int:
        return self.requests - self.cache_hits_expected


def format_dry_run(summary: DryRunSummary, limit_usd: float | None = None) -> str:
    """Human-readable dry-run report (what ``--dry-run`` prints)."""
    lines = [
        "dry run (predicted, nothing sent)",
        f"  requests             {summary.requests:>12,}",
        f"  cache hits expected  {summary.cache_hits_expected:>12,}",
        f"  requests to send     {summary.requests_to_send:>12,}",
        f"  prompt tokens        {summary.predicted_prompt_tokens:>12,}"
        f"   ({summary.predicted_prompt_tokens_to_send:,} to send)",
        f"  cost, no answer kept ${summary.predicted_cost_usd:>11,.4f}",
        f"  cost to spend        ${summary.predicted_cost_to_send_usd:>11,.4f}",
    ]
    if limit_usd is not None:
        verdict = "fits" if summary.predicted_cost_to_send_usd <= limit_usd else "EXCEEDS"
        lines.append(f"  budget               ${limit_usd:>11,.4f}   ({verdict})")
    return "\n".join(lines)


class Budget:
    """Spending limit in dollars; ``None`` means unlimited (still tracks spend)."""

    def __init__(self, limit_usd: float | None) -> None:
        self.limit_usd = None if limit_usd is None else _check_dollars(limit_usd, "limit_usd")
        self._lock = threading.Lock()
        self._spent = 0.0
        self._reserved = 0.0
        self._exhausted = False

    # -- before the run -------------------------------------------------------------------
    def check(self, plan: DryRunSummary | float) -> None:
        """Raise ``BudgetExceeded`` if the predicted cost to send exceeds the limit."""
        predicted = plan.predicted_cost_to_send_usd if isinstance(plan, DryRunSummary) else plan
        predicted = _check_dollars(predicted, "predicted cost")
        if self.limit_usd is not None and predicted > self.limit_usd:
            detail = ""
            if isinstance(plan, DryRunSummary):
                detail = (
                    f" ({plan.requests_to_send:,} requests to send, "
                    f"{plan.predicted_prompt_tokens_to_send:,} predicted prompt tokens, "
                    f"{plan.cache_hits_expected:,} cache hits)"
                )
            raise BudgetExceeded(
                f"predicted cost ${predicted:.4f} exceeds the budget ${self.limit_usd:.4f}"
                f"{detail}; raise budget_usd or shrink the sweep"
            )

    # -- during the run -------------------------------------------------------------------
    def reserve(self, predicted_usd: float) -> float:
        """Claim ``predicted_usd`` for one request about to be sent, or raise BudgetExceeded."""
        predicted = _check_dollars(predicted_usd, "predicted_cost_usd")
        with self._lock:
            if self.limit_usd is not None:
                committed = self._spent + self._reserved
                if self._exhausted or committed + predicted > self.limit_usd:
                    self._exhausted = True
                    raise BudgetExceeded(
                        f"budget ${self.limit_usd:.4f} reached: spent ${self._spent:.4f}, "
                        f"in flight ${self._reserved:.4f}, next request ${predicted:.4f}"
                    )
            self._reserved += predicted
        return predicted

    def settle(self, reserved_usd: float, actual_usd: float | None) -> None:
        """Replace a reservation by the provider-reported cost (the prediction if none)."""
        actual = reserved_usd if actual_usd is None else _check_dollars(actual_usd, "actual cost")
        with self._lock:
            self._reserved = max(0.0, self._reserved - reserved_usd)
            self._spent += actual
            if self.limit_usd is not None and self._spent >= self.limit_usd:
                self._exhausted = True

    def release(self, reserved_usd: float) -> None:
        """Drop a reservation whose request was not billed (it failed before an answer)."""
        with self._lock:
            self._reserved = max(0.0, self._reserved - reserved_usd)

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    @property
    def in_flight_usd(self) -> float:
        with self._lock:
            return self._reserved

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self._exhausted

    def __repr__(self) -> str:
        limit = "unlimited" if self.limit_usd is None else f"${self.limit_usd:.4f}"
        return f"Budget({limit}, spent=${self.spent_usd:.4f})"
