"""A study plan, read from ``configs/study/NAME.yaml`` and checked key by key.

Why a typed, closed schema: a plan is a promise made before the data exists. A misspelt key
that silently fell back to a default would change the design without anyone deciding it, so
every section is read into a frozen dataclass and an unknown or missing key is refused with its
path (``power.alpha: missing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Arms", "Endpoint", "PlanError", "PowerFigures", "PowerSection", "RunSection",
           "SessionDraw", "Secondary", "StudyPlan", "load_plan"]

#: The statistics the analysis (:mod:`evals.analysis.study.endpoints`) can compute, treatment minus
#: baseline, paired by session.
STATISTICS = ("paired_recall_on_baseline_discarded", "paired_recall",
              "paired_billed_tokens_per_question", "paired_session_cost_usd",
              "paired_silent_wrong_rate", "paired_confabulation_rate")
#: The session subsets an endpoint may be computed on (production's verdict of the baseline).
SUBSETS = ("baseline_valid", "baseline_stand_in")
#: The readers a study may ask (``reader=`` config names): told its evidence, or blind.
READERS = ("qa", "blind")


class PlanError(ValueError):
    """A plan file that is not a valid study plan; the message names the key."""


@dataclass(frozen=True)
class SessionDraw:
    """Which sessions the study runs: one generated session per seed, its length fixed."""

    dataset: str
    first_seed: int
    count: int
    first_tokens: int
    step_tokens: int
    #: the probe kinds the dataset asks (``dataset.params.probes``)
    probes: tuple[str, ...]

    def seeds(self) -> tuple[int, ...]:
        """Every seed of the draw, in order."""
        return tuple(range(self.first_seed, self.first_seed + self.count))

    def target_tokens(self, seed: int) -> int:
        """The session length the plan fixed for ``seed``."""
        if seed not in self.seeds():
            raise PlanError(f"seed {seed} is not in the plan's draw "
                            f"({self.first_seed}..{self.first_seed + self.count - 1})")
        return self.first_tokens + self.step_tokens * (seed - self.first_seed)


@dataclass(frozen=True)
class RunSection:
    """What every run of the study shares (harness overrides)."""

    model: str
    #: every reader asked, in order (``reader=`` config names); the first reads the OCR cache
    #: cold, the later ones reuse it
    readers: tuple[str, ...]
    context_window: int
    summarizer: str
    strategies: tuple[str, ...]
    policies: tuple[str, ...]
    shapes: tuple[str, ...]


@dataclass(frozen=True)
class Arms:
    """The two ``research=`` settings compared: treatment minus baseline."""

    baseline: str
    treatment: str


@dataclass(frozen=True)
class Endpoint:
    """The primary endpoint and its decision rule."""

    name: str
    statistic: str
    subset: str
    reader: str
    #: the probe kinds whose questions the statistic pools
    probes: tuple[str, ...]
    interval: str
    confidence: float
    bootstrap: int
    seed: int
    min_sessions: int


@dataclass(frozen=True)
class Secondary:
    """A secondary endpoint: reported with its interval, never called a finding."""

    name: str
    statistic: str
    subset: str
    reader: str
    probes: tuple[str, ...]


@dataclass(frozen=True)
class PowerFigures:
    """The six figures a power analysis gives: a plan states them, and
    :func:`evals.analysis.study.power.power_analysis` derives them again from the pilot."""

    pilot_sessions: int
    pilot_valid_sessions: int
    pilot_sd: float
    sessions_for_difference: int
    detectable_at_min_sessions: float
    sessions_planned: int


@dataclass(frozen=True)
class PowerSection(PowerFigures):
    """The power analysis as the plan states it: its pilot and targets, and the figures
    (:class:`PowerFigures`) the check derives again."""

    pilot: str
    pilot_column: str
    alpha: float
    power: float
    smallest_difference: float


@dataclass(frozen=True)
class StudyPlan:
    """A whole plan: the draw, the runs, the arms, the endpoints and the power analysis."""

    name: str
    question: str
    sessions: SessionDraw
    run: RunSection
    arms: Arms
    primary: Endpoint
    secondary: tuple[Secondary, ...]
    power: PowerSection
    path: Path

    def is_primary(self, endpoint: str, arms: Arms, seeds: frozenset[int],
                   reader: str | None = None, subset: str | None = None) -> bool:
        """True only for the plan's primary endpoint on its arms, reader and whole draw.

        Anything else a run prints (another endpoint, reader or subset, a part of the seeds, a
        third arm) is secondary or exploratory, whatever its interval.
        """
        return (endpoint == self.primary.statistic and arms == self.arms
                and seeds == frozenset(self.sessions.seeds())
                and (reader is None or reader == self.primary.reader)
                and (subset is None or subset == self.primary.subset))


_SECTIONS: dict[str, type] = {"sessions": SessionDraw, "run": RunSection, "arms": Arms,
                              "primary": Endpoint, "power": PowerSection}
_TOP = {"name", "question", "secondary", *_SECTIONS}


def _typed(value: Any, kind: str, where: str) -> Any:
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise PlanError(f"{where}: expected an integer, got {value!r}")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise PlanError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise PlanError(f"{where}: expected a non-empty string, got {value!r}")
        return value
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{where}: expected a non-empty list of strings, got {value!r}")
    return tuple(value)


def _section(raw: Any, cls: type, name: str) -> Any:
    if not isinstance(raw, Mapping):
        raise PlanError(f"{name}: expected a mapping, got {type(raw).__name__}")
    fields = cls.__dataclass_fields__
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise PlanError(f"{name}.{unknown[0]}: unknown key (known: {', '.join(fields)})")
    values = {}
    for key, field in fields.items():
        if key not in raw:
            raise PlanError(f"{name}.{key}: missing")
        kind = str(field.type).replace("tuple[str, ...]", "list")
        values[key] = _typed(raw[key], kind, f"{name}.{key}")
    return cls(**values)


def _checked(plan: StudyPlan) -> StudyPlan:
    if plan.sessions.count < 2:
        raise PlanError("sessions.count: a session-level interval needs at least 2 sessions")
    if plan.arms.baseline == plan.arms.treatment:
        raise PlanError(f"arms: baseline and treatment are both {plan.arms.baseline!r}")
    for key in ("alpha", "power"):
        if not 0 < getattr(plan.power, key) < 1:
            raise PlanError(f"power.{key}: must lie between 0 and 1")
    if not 0 < plan.primary.confidence < 1:
        raise PlanError("primary.confidence: must lie between 0 and 1")
    if plan.primary.bootstrap < 100:
        raise PlanError("primary.bootstrap: at least 100 resamples")
    endpoints = [("primary", plan.primary)] + [(f"secondary[{i}]", e)
                                               for i, e in enumerate(plan.secondary)]
    for where, e in endpoints:
        if e.statistic not in STATISTICS:
            raise PlanError(f"{where}.statistic: {e.statistic!r} is not one the analysis "
                            f"computes ({', '.join(STATISTICS)})")
        if e.subset not in SUBSETS:
            raise PlanError(f"{where}.subset: {e.subset!r} (known: {', '.join(SUBSETS)})")
        if e.reader not in plan.run.readers:
            raise PlanError(f"{where}.reader: {e.reader!r} is not among run.readers "
                            f"({', '.join(plan.run.readers)})")
        unknown = sorted(set(e.probes) - set(plan.sessions.probes))
        if unknown:
            raise PlanError(f"{where}.probes: {unknown[0]!r} is not asked (sessions.probes: "
                            f"{', '.join(plan.sessions.probes)})")
    for reader in plan.run.readers:
        if reader not in READERS:
            raise PlanError(f"run.readers: {reader!r} (known: {', '.join(READERS)})")
    if plan.power.sessions_planned != plan.sessions.count:
        raise PlanError(f"sessions.count: {plan.sessions.count} but power.sessions_planned says "
                        f"{plan.power.sessions_planned}")
    return plan


def load_plan(path: Path | str) -> StudyPlan:
    """Read and check a plan file; :class:`PlanError` names the first bad key."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the plan ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise PlanError(f"{path}: not YAML ({exc})") from None
    if not isinstance(raw, Mapping):
        raise PlanError(f"{path}: a plan is a mapping of sections")
    unknown = sorted(set(raw) - _TOP)
    if unknown:
        raise PlanError(f"{unknown[0]}: unknown section (known: {', '.join(sorted(_TOP))})")
    for key in sorted(_TOP):
        if key not in raw:
            raise PlanError(f"{key}: missing")
    sections = {name: _section(raw[name], cls, name) for name, cls in _SECTIONS.items()}
    if not isinstance(raw["secondary"], list):
        raise PlanError("secondary: expected a list of endpoints")
    secondary = tuple(_section(item, Secondary, f"secondary[{i}]")
                      for i, item in enumerate(raw["secondary"]))
    plan = StudyPlan(name=_typed(raw["name"], "str", "name"),
                     question=_typed(raw["question"], "str", "question"),
                     secondary=secondary, path=path, **sections)
    return _checked(plan)
