"""The harness runs a study plan asks for: one ``snapcompact-eval`` per session and arm.

Why one run per session and arm, each in its own folder: a run resumes from its own records and
the response cache, so an interrupted study is resumed by running the same list again, and a
session's two arms never share a folder that could mix their rows. The overrides are written
out in full (no experiment file), so the list is the design: nothing outside the plan decides a
session's length or an arm's settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals.study.plan import StudyPlan

__all__ = ["StudyRun", "study_runs"]


def _listed(values: tuple[str, ...]) -> str:
    return "[" + ",".join(values) + "]"


@dataclass(frozen=True)
class StudyRun:
    """One harness invocation: the session (seed, length), the arm and its overrides."""

    seed: int
    target_tokens: int
    arm: str
    results_dir: Path
    overrides: tuple[str, ...]

    def command(self) -> str:
        """The run as a user types it."""
        return "snapcompact-eval " + " ".join(f"'{o}'" if "[" in o else o for o in self.overrides)


def study_runs(plan: StudyPlan, runs_root: Path) -> list[StudyRun]:
    """Every run of the plan, seed by seed, the baseline before the treatment."""
    out = []
    r = plan.run
    for seed in plan.sessions.seeds():
        tokens = plan.sessions.target_tokens(seed)
        for arm in (plan.arms.baseline, plan.arms.treatment):
            folder = runs_root / f"s{seed}" / arm
            overrides = (
                f"dataset={plan.sessions.dataset}", f"seed={seed}", "dataset.params.n_items=1",
                f"dataset.params.target_tokens={tokens}", f"research={arm}", f"model={r.model}",
                f"summarizer={r.summarizer}", f"context_window={r.context_window}",
                f"strategies={_listed(r.strategies)}", f"policies={_listed(r.policies)}",
                f"shapes={_listed(r.shapes)}", f"experiment_name=study-{plan.name}",
                f"results_dir={folder}")
            out.append(StudyRun(seed, tokens, arm, folder, overrides))
    return out
