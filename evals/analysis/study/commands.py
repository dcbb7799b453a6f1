"""The harness runs a study plan asks for: one ``snapcompact-eval`` per session, arm and reader.

Why one run per session, arm and reader, each in its own folder: a run resumes from its own
records and the response cache, so an interrupted study is resumed by running the same list
again, and a session's arms and readers never share a folder that could mix their rows. The
overrides are written out in full (no experiment file), so the list is the design: nothing
outside the plan decides a session's length or an arm's settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals.analysis.study.plan import StudyPlan

__all__ = ["StudyRun", "study_runs"]


def _listed(values: tuple[str, ...]) -> str:
    return "[" + ",".join(values) + "]"


@dataclass(frozen=True)
class StudyRun:
    """One harness invocation: the session (seed, length), the arm, the reader, its overrides."""

    seed: int
    target_tokens: int
    arm: str
    reader: str
    results_dir: Path
    overrides: tuple[str, ...]

    def command(self) -> str:
        """The run as a user types it."""
        return "snapcompact-eval " + " ".join(f"'{o}'" if "[" in o else o for o in self.overrides)


def study_runs(plan: StudyPlan, runs_root: Path) -> list[StudyRun]:
    """Every run of the plan, seed by seed, the baseline before the treatment, and for each arm
    its readers in the plan's order. The caches are the study's (``RUNS/cache``), shared by its
    runs: the first reader OCRs a frame, the later ones read its transcript.
    """
    out = []
    r = plan.run
    for seed in plan.sessions.seeds():
        tokens = plan.sessions.target_tokens(seed)
        for arm in (plan.arms.baseline, plan.arms.treatment):
            for reader in r.readers:
                folder = runs_root / f"s{seed}" / f"{arm}-{reader}"
                overrides = (
                    f"dataset={plan.sessions.dataset}", f"seed={seed}",
                    "dataset.params.n_items=1", f"dataset.params.target_tokens={tokens}",
                    f"dataset.params.probes={_listed(plan.sessions.probes)}",
                    f"research={arm}", f"model={r.model}", f"reader={reader}",
                    f"summarizer={r.summarizer}", f"context_window={r.context_window}",
                    f"strategies={_listed(r.strategies)}", f"policies={_listed(r.policies)}",
                    f"shapes={_listed(r.shapes)}", f"experiment_name=study-{plan.name}",
                    f"results_dir={folder}", f"cache_dir={runs_root / 'cache' / 'responses'}",
                    f"ocr_cache_dir={runs_root / 'cache' / 'ocr'}")
                out.append(StudyRun(seed, tokens, arm, reader, folder, overrides))
    return out
