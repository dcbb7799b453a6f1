"""The objectives one search trial returns to Hydra's optuna sweeper.

Why a module of its own: a sweeper ranks trials by what the task function returns, and a run's
measurements live in its ``records.jsonl``. This reads them back and reduces them to the two
numbers the search trades off (``configs/experiment/search.yaml``):

* **recall on discarded evidence** (maximize): the share of questions answered correctly among
  those whose evidence a compaction discarded (``evidence_round >= 1``), over the run's
  snapcompact rows that were asked (no error, not skipped);
* **billed context tokens** (minimize): the mean predicted prompt tokens of those rows (context
  plus question, as the target model bills it).

A trial is infeasible when any snapcompact context is one production would not send
(``production_valid`` false: an LLM method this offline run could not run) or does not fit the
window (``fits_window`` false), or when no discarded question was asked. Infeasible trials
return :data:`INFEASIBLE` (recall -1, tokens 1e12): every feasible trial dominates them, and
the run's ``search_objectives.json`` says why.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from evals.store.records import RECORDS_FILE, Record, iter_records

__all__ = [
    "INFEASIBLE", "OBJECTIVES_FILE", "SearchObjectives", "objectives_of", "search_objectives",
]

#: The values an infeasible trial returns: recall below any real one, tokens above any window.
INFEASIBLE = (-1.0, 1e12)
OBJECTIVES_FILE = "search_objectives.json"


@dataclass(frozen=True)
class SearchObjectives:
    """A trial's two objectives, whether it is feasible, and what they rest on."""

    recall_discarded: float
    billed_tokens: float
    feasible: bool
    reason: str | None
    n_rows: int
    n_discarded: int
    research: str

    def values(self) -> tuple[float, float]:
        """What the sweeper is given: (recall, tokens), or :data:`INFEASIBLE`."""
        if not self.feasible:
            return INFEASIBLE
        return (self.recall_discarded, self.billed_tokens)


def search_objectives(run_dir: str | os.PathLike[str], *, write: bool = True
                      ) -> SearchObjectives:
    """The objectives of the run recorded in ``run_dir`` (written beside its records)."""
    path = Path(run_dir) / RECORDS_FILE
    rows = ([r for r in iter_records(path) if r.strategy == "snapcompact"]
            if path.exists() else [])
    result = objectives_of(rows)
    if write:
        out = {**asdict(result), "values": list(result.values())}
        (Path(run_dir) / OBJECTIVES_FILE).write_text(
            json.dumps(out, indent=2, allow_nan=True) + "\n", encoding="utf-8")
    return result


def objectives_of(rows: Iterable[Record]) -> SearchObjectives:
    """The two objectives of a set of snapcompact rows (one trial, or one arm of a run).

    Feasible only when every asked context is one production would send and fits the window,
    and at least one question about discarded evidence was asked.
    """
    rows = list(rows)
    asked = [r for r in rows if r.error is None and r.skipped is None]
    discarded = [r for r in asked if (r.evidence_round or 0) >= 1]
    research = sorted({r.research for r in rows})
    reasons = []
    not_sent = sum(1 for r in asked if r.production_valid is False)
    over = sum(1 for r in asked if r.fits_window is False)
    if not_sent:
        reasons.append(f"{not_sent} context(s) production would not send")
    if over:
        reasons.append(f"{over} context(s) over the window")
    if not discarded:
        reasons.append("no question about discarded evidence was asked")
    recall = (sum(r.correct for r in discarded) / len(discarded)) if discarded else math.nan
    # billed: the question requests plus their share of the compaction calls (Record.billed_tokens)
    tokens = (sum(r.billed_tokens for r in asked) / len(asked)) if asked else math.nan
    return SearchObjectives(
        recall_discarded=recall, billed_tokens=tokens, feasible=not reasons,
        reason="; ".join(reasons) or None, n_rows=len(asked), n_discarded=len(discarded),
        research=",".join(research))
