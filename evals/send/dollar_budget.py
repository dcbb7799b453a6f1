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

Shared by processes (``ledger_dir``): every job of a sweep that writes the same results folder
(joblib, submitit, Slurm, several shells) draws on one budget, kept in a ledger file
(:class:`BudgetLedger`): ``budget.json`` in the folder holds the dollars spent and the
reservations in flight, read and rewritten (atomically, by rename) under an exclusive ``flock``
of ``budget.lock``, as the tokens-per-minute state is (``evals.send.token_rate``). A reservation
names its process's *holder* file, which that process keeps ``flock``-ed while it lives; the kernel
drops the lock when the process dies, however it dies. A reservation whose holder is no longer
locked belongs to a dead process: it is settled at its prediction (the request may have reached the
provider and been billed, so counting it is the safe guess) and never blocks anyone. The ledger
accumulates: ``budget_usd`` bounds what this results folder has spent, over every run and rerun
(answers from the response cache cost nothing, so a rerun adds nothing). To start a new budget
in the same folder, delete ``budget.json`` (or point ``limits_dir`` elsewhere).
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import tempfile
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LEDGER_FILE", "Budget", "BudgetExceeded", "BudgetLedger", "DryRunSummary",
           "format_dry_run"]

LEDGER_FILE = "budget.json"
LEDGER_LOCK = "budget.lock"
HOLDERS_DIR = "budget-holders"


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
    predicted_cache_hits: int
    predicted_prompt_tokens: int
    predicted_prompt_tokens_to_send: int
    predicted_cost_usd: float
    predicted_cost_to_send_usd: float

    @property
    def requests_to_send(self) -> int:
        return self.requests - self.predicted_cache_hits


def format_dry_run(summary: DryRunSummary, limit_usd: float | None = None,
                   unpriced: str | None = None) -> str:
    """Human-readable dry-run report (what ``--dry-run`` prints).

    ``unpriced`` names a model whose requests have no price (``allow_unpriced=true``): the
    dollars are then printed as unknown and the budget as unable to guard them, never as $0.
    """
    lines = [
        "dry run (predicted, nothing sent)",
        f"  requests             {summary.requests:>12,}",
        f"  cache hits predicted {summary.predicted_cache_hits:>12,}",
        f"  requests to send     {summary.requests_to_send:>12,}",
        f"  prompt tokens        {summary.predicted_prompt_tokens:>12,}"
        f"   ({summary.predicted_prompt_tokens_to_send:,} to send)",
    ]
    if unpriced is not None:
        lines += [f"  cost, no answer kept      unknown   ({unpriced} has no price)",
                  f"  cost to spend             unknown   ({unpriced} has no price)"]
        if limit_usd is not None:
            lines.append(f"  budget               ${limit_usd:>11,.4f}   (cannot guard an "
                         "unknown cost)")
        return "\n".join(lines)
    lines += [
        f"  cost, no answer kept ${summary.predicted_cost_usd:>11,.4f}",
        f"  cost to spend        ${summary.predicted_cost_to_send_usd:>11,.4f}",
    ]
    if limit_usd is not None:
        verdict = "fits" if summary.predicted_cost_to_send_usd <= limit_usd else "EXCEEDS"
        lines.append(f"  budget               ${limit_usd:>11,.4f}   ({verdict})")
    return "\n".join(lines)


class BudgetLedger:
    """The shared account of one results folder: dollars spent and reservations in flight.

    Every method takes the folder's lock, reads ``budget.json``, changes it and writes it back
    by rename before unlocking, so processes (and threads: one ``threading.Lock`` as well) never
    lose an update. See the module docstring for the rule on dead processes' reservations.
    """

    def __init__(self, ledger_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(ledger_dir)
        self.path = self.dir / LEDGER_FILE
        self._lock = threading.RLock()
        self._holder: str | None = None
        self._holder_fd: int | None = None
        self._holder_pid = -1
        self._pending = 0  # this process's reservations not yet settled or released
        try:
            (self.dir / HOLDERS_DIR).mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.dir / LEDGER_LOCK, os.O_RDWR | os.O_CREAT, 0o644))
        except OSError as exc:
            raise ValueError(f"budget ledger {self.dir} cannot be used: "
                             f"{exc.strerror or exc}") from None

    # -- this process's holder file -------------------------------------------------------
    def _own_holder(self) -> str:
        """The holder name this process's reservations carry (its file stays locked while the
        process has reservations open; made on demand, after any fork)."""
        if self._holder is None or self._holder_pid != os.getpid():
            name = f"{os.getpid()}-{uuid.uuid4().hex}"
            fd = os.open(self.dir / HOLDERS_DIR / name, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._holder, self._holder_fd, self._holder_pid = name, fd, os.getpid()
        return self._holder

    def _holder_alive(self, name: str) -> bool:
        if name == self._holder and self._holder_pid == os.getpid():
            return True
        if not name or "/" in name or name.startswith("."):
            return False
        try:
            fd = os.open(self.dir / HOLDERS_DIR / name, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return True
            raise
        finally:
            os.close(fd)  # also drops the lock just taken on a dead holder's file
        return False

    # -- the account ----------------------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"spent_usd": 0.0, "reservations": {}}
        try:
            state = json.loads(raw)
            spent = float(state["spent_usd"])
            reservations = state["reservations"]
            if not isinstance(reservations, dict) or not math.isfinite(spent):
                raise ValueError("bad fields")
            for value in reservations.values():
                float(value["usd"])
                str(value["holder"])
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"budget ledger {self.path} is unreadable ({exc}); it holds what "
                             "this results folder has spent: fix it, or delete it to start a "
                             "new budget") from None
        return state

    def _write(self, state: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=LEDGER_FILE, suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(state, fh, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def update(self, change: Callable[[dict[str, Any]], Any]) -> Any:
        """Apply ``change`` to the ledger state atomically; its return value. Reservations of
        dead processes are settled at their prediction first."""
        with self._lock:
            lock_fd = os.open(self.dir / LEDGER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            try:
                state = self._read()
                reservations = state["reservations"]
                dead = [rid for rid, r in reservations.items()
                        if not self._holder_alive(str(r["holder"]))]
                for rid in dead:
                    gone = reservations.pop(rid)
                    state["spent_usd"] = float(state["spent_usd"]) + float(gone["usd"])
                    try:
                        os.unlink(self.dir / HOLDERS_DIR / str(gone["holder"]))
                    except (OSError, ValueError):
                        pass
                before = json.dumps(state, sort_keys=True)
                result = change(state)
                if dead or json.dumps(state, sort_keys=True) != before:
                    self._write(state)
                return result
            finally:
                os.close(lock_fd)  # drops the flock

    def reserve(self, usd: float, limit_usd: float | None) -> str:
        """Add a reservation of ``usd`` unless spent + in flight + ``usd`` passes the limit;
        its id, or ``BudgetExceeded``."""
        def change(state: dict[str, Any]) -> str:
            spent = float(state["spent_usd"])
            flight = sum(float(r["usd"]) for r in state["reservations"].values())
            if limit_usd is not None and spent + flight + usd > limit_usd:
                raise BudgetExceeded(
                    f"budget ${limit_usd:.4f} reached: spent ${spent:.4f}, in flight "
                    f"${flight:.4f}, next request ${usd:.4f} (shared by every job writing "
                    f"{self.dir}; delete {self.path} to start a new budget)")
            rid = uuid.uuid4().hex
            state["reservations"][rid] = {"usd": usd, "holder": holder}
            return rid

        with self._lock:
            holder = self._own_holder()
            self._pending += 1
            try:
                return str(self.update(change))
            except BaseException:
                self._done()
                raise

    def settle(self, rid: str, actual_usd: float) -> float:
        """Replace reservation ``rid`` by ``actual_usd`` spent; the new total spent. A
        reservation already settled (as dead) is not charged twice."""

        def change(state: dict[str, Any]) -> float:
            if state["reservations"].pop(rid, None) is not None:
                state["spent_usd"] = float(state["spent_usd"]) + actual_usd
            return float(state["spent_usd"])

        with self._lock:
            try:
                return float(self.update(change))
            finally:
                self._done()

    def release(self, rid: str) -> None:
        """Drop reservation ``rid`` (its request was not billed)."""
        with self._lock:
            try:
                self.update(lambda state: state["reservations"].pop(rid, None))
            finally:
                self._done()

    def _done(self) -> None:
        """One reservation of this process closed; the last one lets go of the holder file."""
        self._pending = max(0, self._pending - 1)
        if self._pending == 0:
            self.close()

    def totals(self) -> tuple[float, float]:
        """(spent, in flight) in dollars, over every process."""
        return self.update(lambda state: (
            float(state["spent_usd"]),
            sum(float(r["usd"]) for r in state["reservations"].values())))

    def close(self) -> None:
        """Let go of this process's holder file (open reservations then count as dead)."""
        mine = self._holder_pid == os.getpid()
        if self._holder is not None and mine:
            try:
                os.unlink(self.dir / HOLDERS_DIR / self._holder)
            except OSError:
                pass
        if self._holder_fd is not None and mine:
            try:
                os.close(self._holder_fd)
            except OSError:
                pass
        self._holder, self._holder_fd = None, None


class Budget:
    """Spending limit in dollars; ``None`` means unlimited (still tracks spend).

    With ``ledger_dir`` the spend and the reservations live in that folder's ledger, shared by
    every process pointed at it (:class:`BudgetLedger`); without it, in this object.
    """

    def __init__(self, limit_usd: float | None, *,
                 ledger_dir: str | os.PathLike[str] | None = None) -> None:
        self.limit_usd = None if limit_usd is None else _check_dollars(limit_usd, "limit_usd")
        self._lock = threading.Lock()
        self._spent = 0.0
        self._reserved = 0.0
        self._exhausted = False
        self.ledger = BudgetLedger(ledger_dir) if ledger_dir is not None else None
        #: This process's open ledger reservations: amount -> ids (equal amounts of one
        #: process are interchangeable, so the caller keeps handing back the amount).
        self._open: dict[float, list[str]] = {}

    # -- before the run -------------------------------------------------------------------
    def check(self, plan: DryRunSummary | float) -> None:
        """Raise ``BudgetExceeded`` if the predicted cost to send exceeds the limit."""
        predicted = plan.predicted_cost_to_send_usd if isinstance(plan, DryRunSummary) else plan
        predicted = _check_dollars(predicted, "predicted cost")
        if self.limit_usd is not None and self.ledger is not None:
            spent = self.ledger.totals()[0]
            if spent > 0 and predicted + spent > self.limit_usd:
                raise BudgetExceeded(
                    f"predicted cost ${predicted:.4f} does not fit in the budget "
                    f"${self.limit_usd:.4f}: this results folder has already spent "
                    f"${spent:.4f} (its ledger {self.ledger.path}); raise budget_usd, shrink "
                    "the sweep, or delete the ledger to start a new budget")
        if self.limit_usd is not None and predicted > self.limit_usd:
            detail = ""
            if isinstance(plan, DryRunSummary):
                detail = (
                    f" ({plan.requests_to_send:,} requests to send, "
                    f"{plan.predicted_prompt_tokens_to_send:,} predicted prompt tokens, "
                    f"{plan.predicted_cache_hits:,} cache hits)"
                )
            raise BudgetExceeded(
                f"predicted cost ${predicted:.4f} exceeds the budget ${self.limit_usd:.4f}"
                f"{detail}; raise budget_usd or shrink the sweep"
            )

    # -- during the run -------------------------------------------------------------------
    def reserve(self, predicted_usd: float) -> float:
        """Claim ``predicted_usd`` for one request about to be sent, or raise BudgetExceeded."""
        predicted = _check_dollars(predicted_usd, "predicted_cost_usd")
        if self.ledger is not None:
            with self._lock:
                exhausted = self._exhausted
            if exhausted and self.limit_usd is not None:
                raise BudgetExceeded(f"budget ${self.limit_usd:.4f} reached (shared ledger "
                                     f"{self.ledger.path})")
            try:
                rid = self.ledger.reserve(predicted, self.limit_usd)
            except BudgetExceeded:
                with self._lock:
                    self._exhausted = True
                raise
            with self._lock:
                self._open.setdefault(predicted, []).append(rid)
            return predicted
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
        if self.ledger is not None:
            rid = self._take(reserved_usd)
            if rid is not None:
                spent = self.ledger.settle(rid, actual)
                if self.limit_usd is not None and spent >= self.limit_usd:
                    with self._lock:
                        self._exhausted = True
            return
        with self._lock:
            self._reserved = max(0.0, self._reserved - reserved_usd)
            self._spent += actual
            if self.limit_usd is not None and self._spent >= self.limit_usd:
                self._exhausted = True

    def release(self, reserved_usd: float) -> None:
        """Drop a reservation whose request was not billed (it failed before an answer)."""
        if self.ledger is not None:
            rid = self._take(reserved_usd)
            if rid is not None:
                self.ledger.release(rid)
            return
        with self._lock:
            self._reserved = max(0.0, self._reserved - reserved_usd)

    def _take(self, amount: float) -> str | None:
        with self._lock:
            ids = self._open.get(amount)
            if not ids:
                return None
            rid = ids.pop()
            if not ids:
                del self._open[amount]
            return rid

    @property
    def spent_usd(self) -> float:
        """Dollars spent (with a ledger: by every process sharing it)."""
        if self.ledger is not None:
            return self.ledger.totals()[0]
        with self._lock:
            return self._spent

    @property
    def in_flight_usd(self) -> float:
        """Dollars reserved by requests not yet answered (with a ledger: every process's)."""
        if self.ledger is not None:
            return self.ledger.totals()[1]
        with self._lock:
            return self._reserved

    def close(self) -> None:
        """Let go of the ledger (this process's open reservations then count as dead)."""
        if self.ledger is not None:
            self.ledger.close()

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self._exhausted

    def __repr__(self) -> str:
        limit = "unlimited" if self.limit_usd is None else f"${self.limit_usd:.4f}"
        return f"Budget({limit}, spent=${self.spent_usd:.4f})"
