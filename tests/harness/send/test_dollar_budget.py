"""Budget: refusal before a run, enforcement during it, dry-run summary."""

from __future__ import annotations

import threading

import pytest

from evals.send.dollar_budget import Budget, BudgetExceeded, DryRunSummary, format_dry_run


def plan(cost_to_send: float, hits: int = 2) -> DryRunSummary:
    return DryRunSummary(
        requests=10,
        predicted_cache_hits=hits,
        predicted_prompt_tokens=15_000,
        predicted_prompt_tokens_to_send=12_000,
        predicted_cost_usd=cost_to_send * 1.25,
        predicted_cost_to_send_usd=cost_to_send,
    )


def test_refuses_a_run_predicted_past_the_limit_with_the_numbers():
    budget = Budget(1.00)
    with pytest.raises(BudgetExceeded) as raised:
        budget.check(plan(1.2345))
    message = str(raised.value)
    for number in ("$1.2345", "$1.0000", "8 requests to send", "12,000", "2 cache hits"):
        assert number in message
    budget.check(plan(1.00))  # exactly the limit fits
    budget.check(0.5)  # a bare prediction works too
    Budget(None).check(plan(1e9))  # unlimited


def test_cache_hits_are_free():
    # 10 requests at $0.25 would exceed $2, but 8 of them are cached: only $0.50 to send.
    summary = DryRunSummary(requests=10, predicted_cache_hits=8, predicted_prompt_tokens=10_000,
                            predicted_prompt_tokens_to_send=2_000, predicted_cost_usd=2.5,
                            predicted_cost_to_send_usd=0.5)
    Budget(2.0).check(summary)
    assert summary.requests_to_send == 2


def test_stops_new_requests_once_the_limit_is_reached():
    budget = Budget(1.0)
    first = budget.reserve(0.4)
    second = budget.reserve(0.4)
    # 0.8 in flight: a third 0.4 would pass the limit even though nothing is spent yet.
    with pytest.raises(BudgetExceeded, match=r"in flight \$0\.8000"):
        budget.reserve(0.4)
    assert budget.exhausted
    budget.settle(first, 0.1)
    budget.release(second)  # failed, not billed
    assert budget.spent_usd == pytest.approx(0.1)
    assert budget.in_flight_usd == 0
    with pytest.raises(BudgetExceeded):  # once exhausted, the sweep drains
        budget.reserve(0.01)


def test_unpriced_answers_count_their_prediction():
    budget = Budget(None)
    budget.settle(budget.reserve(0.25), None)
    budget.settle(budget.reserve(0.5), 0.125)
    assert budget.spent_usd == 0.375
    assert not budget.exhausted


def test_reaching_the_limit_by_actual_spend_exhausts():
    budget = Budget(0.5)
    budget.settle(budget.reserve(0.1), 0.5)  # the provider charged more than predicted
    assert budget.exhausted
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.0)


def test_thread_safe_accounting():
    step = 1 / 1024  # exact in binary: the sum is exact if no update is lost
    budget = Budget(4.0)
    accepted = []

    def spend() -> None:
        count = 0
        for _ in range(1000):
            try:
                budget.settle(budget.reserve(step), step)
                count += 1
            except BudgetExceeded:
                break
        accepted.append(count)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accepted) == 4 * 1024  # exactly the limit, never past it
    assert budget.spent_usd == 4.0


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "5", True])
def test_bad_amounts_are_rejected(bad):
    with pytest.raises(ValueError, match="dollars"):
        Budget(bad)
    with pytest.raises(ValueError, match="dollars"):
        Budget(1.0).reserve(bad)


def test_dry_run_summary_text():
    text = format_dry_run(plan(0.75), limit_usd=0.5)
    assert "requests                       10" in text
    assert "cache hits predicted            2" in text
    assert "requests to send                8" in text
    assert "15,000" in text and "12,000 to send" in text
    assert "$     0.7500" in text and "EXCEEDS" in text
    assert "fits" in format_dry_run(plan(0.25), limit_usd=0.5)


def test_dry_run_of_an_unpriced_model_says_unknown_never_zero():
    from evals.send.dollar_budget import DryRunSummary, format_dry_run

    summary = DryRunSummary(requests=3, predicted_cache_hits=0,
                            predicted_prompt_tokens=300, predicted_prompt_tokens_to_send=300,
                            predicted_cost_usd=0.0, predicted_cost_to_send_usd=0.0)
    text = format_dry_run(summary, 5.0, unpriced="claude-sonet-4-5")
    assert "$" not in text.replace("$     5.0000", "")  # only the budget itself is in dollars
    assert "unknown   (claude-sonet-4-5 has no price)" in text
    assert "fits" not in text
