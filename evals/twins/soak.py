"""Soak: a whole run against a flaky loopback provider, and the counts that show nothing was
lost or paid twice.

Why a module (not only a benchmark script): the same measurement runs at full size in
``benchmarks/bench_soak.py`` (2,000 requests at concurrency 32) and small in the test suite, so
the figures quoted for the harness and the assertions that guard it come from one place.

The provider is ``evals.twins.fake_server`` with a fault rate: 429 with ``Retry-After``, 500, 503,
answers slower than the client's timeout, connections reset before a response, and 200 bodies
cut halfway. The run is the real pipeline (``evals.pipeline.run.run_config``: plan, cache, client,
records) on the `full` strategy of the tiny dataset (text only), so the only thing measured is
the transport.

Figures (``SoakResult``): questions planned, HTTP requests the server received, rows in
``records.jsonl``, duplicate rows (a key recorded twice), lost questions (no successful row),
re-billed questions (a complete answer delivered more than once for the same request),
truncated answers (delivered in part) and abandoned answers (finished after the client's
timeout): a real provider may bill those two kinds, the client cannot use them, so they are
reported apart from re-billing, which the harness controls.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra import compose, initialize_config_dir

from evals.pipeline.run import CONFIG_DIR, run_config
from evals.store.records import iter_records
from evals.twins.fake_server import FakeChatServer, FakeReply

__all__ = ["SOAK_FAULTS", "SoakResult", "run_soak"]

#: The fault mix, drawn uniformly when a request is chosen to fail.
SOAK_FAULTS = (
    FakeReply.rate_limited(retry_after=0.2),
    FakeReply.server_error(500),
    FakeReply.server_error(503),
    FakeReply.slow(10.0),  # the soak client times out after 3 s, far before this answers
    FakeReply.reset(),
    FakeReply.truncated(),
)
#: The client's timeout. An answer the server completes but a CPU-starved client reads after its
#: timeout is sent again and counted as re-billed: at 1 s that happened once in 80 questions in
#: a CI run with four test workers on two cores (2026-12-02); 3 s leaves the starved client
#: room while the slow fault (10 s) still always times out.
SOAK_TIMEOUT_S = 3


@dataclass(frozen=True)
class SoakResult:
    questions: int
    requests_sent: int
    rows: int
    duplicate_rows: int
    lost: int
    rebilled: int
    truncated: int
    abandoned: int
    outcomes: dict[str, int]
    wall_s: float

    def lines(self) -> list[str]:
        outcomes = dict(self.outcomes)
        unanswered = self.requests_sent - sum(outcomes.values())
        if unanswered:  # handlers cancelled when the client timed out and hung up
            outcomes["timed out"] = unanswered
        faults = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        return [
            f"questions            {self.questions}",
            f"requests sent        {self.requests_sent}  ({faults})",
            f"rows                 {self.rows}",
            f"duplicate rows       {self.duplicate_rows}",
            f"lost questions       {self.lost}",
            f"re-billed questions  {self.rebilled}  (complete answers delivered twice)",
            f"truncated answers    {self.truncated}  (cut mid-body; resent by necessity)",
            f"abandoned answers    {self.abandoned}  (finished after the client's timeout)",
            f"wall                 {self.wall_s:.1f} s",
        ]


def run_soak(work_dir: str | os.PathLike[str], *, questions: int, concurrency: int,
             fault_rate: float = 0.2, seed: int = 0, latency_s: float = 0.02,
             extra_overrides: Sequence[str] = ()) -> SoakResult:
    """Run ``questions`` text-arm questions through the pipeline against a flaky server."""
    if questions < 2 or questions % 2:
        raise ValueError("questions must be an even number >= 2 (the tiny items ask two each)")
    work = Path(work_dir)
    overrides = [
        "model=fake", "dataset=tiny", f"dataset.params.n_items={questions // 2}",
        "strategies=[full]", "reader=qa", f"model.concurrency={concurrency}", "progress=false",
        "budget_usd=null", f"timeout_s={SOAK_TIMEOUT_S}", "max_attempts=10", f"results_dir={work}",
        *extra_overrides,
    ]
    with FakeChatServer(latency_s=latency_s, fault_rate=fault_rate, faults=SOAK_FAULTS,
                        seed=seed) as server:
        os.environ["SNAPCOMPACT_FAKE_API_BASE"] = server.api_base
        os.environ.setdefault("OPENAI_API_KEY", "sk-soak-" + "dummy-not-a-key-00000")
        with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
            cfg = compose("eval", overrides=overrides)
        started = time.perf_counter()
        run_config(cfg, work / "run", base_dir=work)
        wall = time.perf_counter() - started
        rows = list(iter_records(work / "run" / "records.jsonl"))
        keys = [r.key() for r in rows]
        answered = {r.key() for r in rows if r.error is None}
        return SoakResult(
            questions=questions,
            requests_sent=server.requests,
            rows=len(rows),
            duplicate_rows=len(keys) - len(set(keys)),
            lost=questions - len(answered),
            rebilled=sum(n - 1 for n in server.answered.values() if n > 1),
            truncated=server.outcomes.get("truncated", 0),
            abandoned=server.outcomes.get("abandoned", 0),
            outcomes=dict(server.outcomes),
            wall_s=wall,
        )
