"""One dollar budget shared by processes through the results folder's ledger (evals.send.dollar_budget).

Real processes (multiprocessing, fork) draw on one ledger: together they never pass the limit,
no update is lost, a dead process's reservation is charged at its prediction and never blocks,
and a rerun answered from the response cache adds nothing. Amounts are binary fractions, so
sums are exact and a lost update would show.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
from types import SimpleNamespace

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from evals.send.dollar_budget import LEDGER_FILE, Budget, BudgetExceeded  # noqa: E402

STEP = 1 / 64
CTX = multiprocessing.get_context("fork")


def _spend_until_refused(ledger_dir: str, limit: float, out) -> None:
    budget = Budget(limit, ledger_dir=ledger_dir)
    accepted = 0
    while True:
        try:
            first = budget.reserve(STEP)
        except BudgetExceeded:
            break
        # Two in flight at once from this process: reservations of equal amounts interleave.
        try:
            second = budget.reserve(STEP)
        except BudgetExceeded:
            budget.settle(first, STEP)
            accepted += 1
            break
        budget.settle(first, STEP)
        budget.release(second)  # failed, not billed
        accepted += 1
    out.put(accepted)


def test_processes_together_never_pass_the_limit(tmp_path):
    out = CTX.Queue()
    procs = [CTX.Process(target=_spend_until_refused, args=(str(tmp_path), 1.0, out))
             for _ in range(4)]
    for p in procs:
        p.start()
    counts = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert sum(counts) == 64  # exactly $1.00 of $1/64 requests over 4 processes, none past it
    state = json.loads((tmp_path / LEDGER_FILE).read_text())
    assert state == {"reservations": {}, "spent_usd": 1.0}
    assert Budget(1.0, ledger_dir=tmp_path).spent_usd == 1.0


def _reserve_and(ledger_dir: str, usd: float, then: str, ready, go) -> None:
    budget = Budget(10.0, ledger_dir=ledger_dir)
    amount = budget.reserve(usd)
    ready.set()
    if then == "crash":
        os._exit(1)  # no settle, no release, no cleanup: a killed job
    go.wait(60)
    budget.settle(amount, usd / 2)


def test_a_dead_process_reservation_is_charged_once_and_never_blocks(tmp_path):
    events = [(CTX.Event(), CTX.Event()) for _ in range(2)]
    crashed = CTX.Process(target=_reserve_and, args=(str(tmp_path), 0.5, "crash", *events[0]))
    alive = CTX.Process(target=_reserve_and, args=(str(tmp_path), 0.25, "wait", *events[1]))
    crashed.start()
    alive.start()
    assert events[0][0].wait(60) and events[1][0].wait(60)
    crashed.join(60)
    budget = Budget(1.0, ledger_dir=tmp_path)
    # The dead job's $0.50 is spent (it may have been billed); the live job's $0.25 in flight.
    assert (budget.spent_usd, budget.in_flight_usd) == (0.5, 0.25)
    with pytest.raises(BudgetExceeded, match=r"spent \$0\.5000, in flight \$0\.2500"):
        budget.reserve(0.375)
    events[1][1].set()
    alive.join(60)
    assert (budget.spent_usd, budget.in_flight_usd) == (0.625, 0.0)  # settled at its actual
    assert Budget(0.75, ledger_dir=tmp_path).reserve(0.125) == 0.125  # fits: nothing blocks


def _fake_completion(cost: float):
    async def completion(model, messages, **kwargs):
        usage = SimpleNamespace(prompt_tokens=100, completion_tokens=5, cost=cost)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="ok"))],
                               usage=usage, model=model)

    return completion


def _run_client(results: str, questions: list[str], limit: float, out) -> None:
    from evals.send.client import EvalClient, Request
    from evals.send.response_cache import ResponseCache

    client = EvalClient(cache=ResponseCache(os.path.join(results, "cache")),
                        renderer_version="test",
                        budget=Budget(limit, ledger_dir=os.path.join(results, "limits")),
                        completion_fn=_fake_completion(STEP))
    requests = [Request(model="openai/fake-model",
                        messages=[{"role": "user", "content": q}], params={},
                        predicted_prompt_tokens=100, predicted_cost_usd=STEP)
                for q in questions]
    responses = asyncio.run(client.complete_all(requests))
    out.put((client.progress.requests_sent, sum(r.ok for r in responses)))


def test_jobs_sending_through_the_client_share_the_budget_and_reruns_add_nothing(tmp_path):
    # 3 jobs x 8 distinct questions at $1/64 each against $0.25 together: 16 may be sent.
    jobs = [[f"job{j} q{i}" for i in range(8)] for j in range(3)]

    def sweep() -> list[tuple[int, int]]:
        out = CTX.Queue()
        procs = [CTX.Process(target=_run_client, args=(str(tmp_path), qs, 0.25, out))
                 for qs in jobs]
        for p in procs:
            p.start()
        got = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(60)
        return got

    first = sweep()
    assert sum(sent for sent, _ in first) == 16 == sum(ok for _, ok in first)
    ledger = tmp_path / "limits" / LEDGER_FILE
    assert json.loads(ledger.read_text()) == {"reservations": {}, "spent_usd": 0.25}
    rerun = sweep()
    assert sum(sent for sent, _ in rerun) == 0  # the 16 answers come from the cache
    assert sum(ok for _, ok in rerun) == 16  # ... and the rest are still refused
    assert json.loads(ledger.read_text())["spent_usd"] == 0.25  # not billed twice


def test_the_plan_check_counts_what_the_folder_already_spent(tmp_path):
    earlier = Budget(1.0, ledger_dir=tmp_path)  # an earlier run into the same folder
    earlier.settle(earlier.reserve(0.5), 0.5)
    budget = Budget(1.0, ledger_dir=tmp_path)
    budget.check(0.5)
    with pytest.raises(BudgetExceeded, match=r"already spent \$0\.5000 .*budget\.json"):
        budget.check(0.625)


def test_an_unreadable_ledger_is_a_clear_error(tmp_path):
    (tmp_path / LEDGER_FILE).write_text("{torn")
    with pytest.raises(ValueError, match=r"budget ledger .*budget\.json is unreadable"):
        Budget(1.0, ledger_dir=tmp_path).reserve(0.25)
