"""How many sessions a study needs, from the session-level spread of a committed pilot.

Why the normal approximation of a paired two-sided test on session means: the study's unit of
evidence is a session (its questions share its compactions, see
:mod:`evals.analysis.session_bootstrap`), so what decides the width of its interval is the
standard deviation of the per-session differences, ``sd``. For a two-sided level ``alpha`` and
power ``1 - beta``, the sessions needed to detect a difference ``delta`` are
``n = ((z(1 - alpha/2) + z(1 - beta)) * sd / delta) ** 2`` and, turned round, ``n`` sessions
detect ``delta = (z(1 - alpha/2) + z(1 - beta)) * sd / sqrt(n)`` (e.g. Chow, Shao & Wang,
*Sample Size Calculations in Clinical Research*, 2nd ed., sec. 3.1). The sessions to *run*
divide the sessions to *rank* by the share of the pilot's sessions whose baseline context was
valid, since only those are ranked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import pandas as pd

from evals.analysis.study.plan import PowerFigures, StudyPlan

__all__ = ["PilotSpread", "PowerAnalysis", "detectable_difference", "pilot_spread",
           "power_analysis", "sessions_needed"]


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie between 0 and 1, got {alpha!r}, {power!r}")
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


def sessions_needed(sd: float, delta: float, *, alpha: float = 0.05, power: float = 0.80) -> int:
    """Sessions a paired comparison needs to detect ``delta`` (rounded up)."""
    if sd < 0 or delta <= 0:
        raise ValueError(f"sd must be >= 0 and delta > 0, got {sd!r}, {delta!r}")
    return max(2, math.ceil((_z_sum(alpha, power) * sd / delta) ** 2))


def detectable_difference(sd: float, sessions: int, *, alpha: float = 0.05,
                          power: float = 0.80) -> float:
    """The smallest difference ``sessions`` paired sessions detect at the given power."""
    if sessions < 2:
        raise ValueError(f"a session-level interval needs at least 2 sessions, got {sessions}")
    return _z_sum(alpha, power) * sd / math.sqrt(sessions)


@dataclass(frozen=True)
class PilotSpread:
    """The pilot's per-session differences of one column, on its baseline-valid sessions."""

    sessions: int
    valid_sessions: int
    sd: float
    mean: float


def pilot_spread(path: Path, column: str, *, baseline: str, treatment: str) -> PilotSpread:
    """Per-session ``treatment - baseline`` of ``column`` in a research_sessions table.

    The table has one row per session and research label (``research``: the baseline's exact
    name; the treatment's name, with or without its ``-<hash>`` suffix), a ``verdict`` per row and
    ``seed``/``item_id`` naming the session.
    """
    table = pd.read_csv(path)
    for needed in ("research", "seed", "item_id", "verdict", column):
        if needed not in table.columns:
            raise ValueError(f"{path}: no column {needed!r}")
    label = table["research"].astype(str)
    base = table[label == baseline]
    treat = table[(label == treatment) | label.str.startswith(treatment + "-")]
    if base.empty or treat.empty:
        raise ValueError(f"{path}: no rows for {baseline!r} and {treatment!r}")
    both = base.merge(treat, on=["seed", "item_id"], suffixes=("_b", "_t"))
    valid = both[both["verdict_b"] == "valid"]
    if len(valid) < 2:
        raise ValueError(f"{path}: fewer than 2 sessions where {baseline!r} was valid")
    diff = valid[f"{column}_t"] - valid[f"{column}_b"]
    return PilotSpread(sessions=len(both), valid_sessions=len(valid),
                       sd=float(diff.std(ddof=1)), mean=float(diff.mean()))


@dataclass(frozen=True)
class PowerAnalysis(PowerFigures):
    """The numbers a plan's ``power`` section states, re-derived."""

    def differences(self, plan: StudyPlan) -> list[str]:
        """Each stated figure the re-derivation does not give, as ``key: stated vs derived``."""
        stated = plan.power
        out = []
        for key in ("pilot_sessions", "pilot_valid_sessions", "sessions_for_difference",
                    "sessions_planned"):
            if getattr(stated, key) != getattr(self, key):
                out.append(f"power.{key}: plan says {getattr(stated, key)}, "
                           f"derived {getattr(self, key)}")
        for key, digits in (("pilot_sd", 4), ("detectable_at_min_sessions", 4)):
            derived = round(getattr(self, key), digits)
            if round(getattr(stated, key), digits) != derived:
                out.append(f"power.{key}: plan says {getattr(stated, key)}, derived {derived}")
        return out


def power_analysis(plan: StudyPlan, root: Path) -> PowerAnalysis:
    """The plan's power analysis from its pilot file (a path relative to ``root``)."""
    p = plan.power
    spread = pilot_spread(root / p.pilot, p.pilot_column, baseline=plan.arms.baseline,
                          treatment=plan.arms.treatment)
    needed = sessions_needed(spread.sd, p.smallest_difference, alpha=p.alpha, power=p.power)
    ranked = max(needed, plan.primary.min_sessions)
    valid_share = spread.valid_sessions / spread.sessions
    return PowerAnalysis(
        pilot_sessions=spread.sessions, pilot_valid_sessions=spread.valid_sessions,
        pilot_sd=spread.sd, sessions_for_difference=needed,
        detectable_at_min_sessions=detectable_difference(
            spread.sd, plan.primary.min_sessions, alpha=p.alpha, power=p.power),
        sessions_planned=math.ceil(ranked / valid_share))
