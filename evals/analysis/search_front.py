"""The search's Pareto front, with production's default and the seed's shapes placed on it.

Why a module of its own: a study (``configs/experiment/search*.yaml``) leaves one run folder
per trial, and reference runs (production's knobs with the shape production picks, and with
each shape the seed's model table names) are ordinary runs beside them. Reading a front off
those folders by hand mixes trials of different sessions or windows and lets a context
production would not send slip onto it. This collects every snapcompact arm of the given runs
as one point, with the objectives the sweeper saw
(:func:`evals.analysis.search_objectives.objectives_of`: recall on discarded evidence, mean
billed prompt tokens), a Wilson interval on that recall, the knobs that made it, and whether it
is on the front:

* only **feasible** points rank (every context one production would send, within the window,
  at least one question about discarded evidence); the others are listed with the reason;
* a point is on the front when no other feasible point of the same session set (dataset, seed,
  window, model) has at least its recall at no more tokens, one of them strictly better;
* ``kind`` says what the point is: ``production`` (production's knobs and the shape production
  resolves for the model: ``auto``), ``seed shape`` (production's knobs, a named shape the
  seed's table uses), ``trial`` (anything else).

    python -m evals.analysis.search_front RESULTS_DIR... [--out DIR]

prints the table and, with ``--out``, writes ``search_front.csv`` and ``search_front.md``
(the notebook ``notebooks/research_front.ipynb`` plots them).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evals.analysis.aggregate import model_line, reader_id, reader_label
from evals.analysis.intervals import wilson_interval
from evals.analysis.search_objectives import objectives_of
from evals.store.records import RECORDS_FILE, Record, iter_records
from snapcompact.pricing import shape_rules

__all__ = ["FrontPoint", "collect_points", "format_markdown", "main", "mark_front"]

PRODUCTION_LABEL = "production"
#: The shapes the seed's model table (``snapcompact/pricing/model_shapes.toml``) assigns.
SEED_SHAPES = ("11on16-bw", "8on16-bw", "8on22-bw")
#: A session set: points are only compared with points measured on the same sessions, window,
#: target model and reader (dataset, seed, window, target model, answered by).
SetKey = tuple[str, int, int, str, str]


@dataclass(frozen=True)
class FrontPoint:
    """One snapcompact arm of one run, as the search ranks it."""

    kind: str  # production | seed shape | trial
    research: str  # the research label rows carry (production, or name-hash)
    shape: str  # the shape asked for (auto, a name, a px- name)
    frame_size: int  # px; 0: the shape's default size for the model (the run named none)
    knobs: str  # the settings that differ from production's, as key=value; ...
    dataset: str
    seed: int
    context_window: int
    target_model: str  # whose window and bill the contexts were built for
    line: str  # the model line of the shipped model table that decides its shape
    answered_by: str  # the reader (the offline OCR reader: a legibility floor)
    recall_discarded: float
    recall_low: float
    recall_high: float
    n_discarded: int
    billed_tokens: float
    n_rows: int
    frames: float  # mean frames per asked context
    feasible: bool
    reason: str
    on_front: bool
    run: str  # the run folder, relative to the results directory given


def _knobs(settings: Mapping[str, Any] | None) -> str:
    parts = []
    for section, values in sorted((settings or {}).items()):
        for key, value in sorted(values.items()):
            parts.append(f"{section}.{key}={value}")
    return "; ".join(parts)


def _kind(research: str, shape: str) -> str:
    if research != PRODUCTION_LABEL:
        return "trial"
    if shape == "auto":
        return "production"
    return "seed shape" if shape in SEED_SHAPES else "trial"


def _run_dirs(results_dir: Path) -> list[Path]:
    return sorted(p.parent for p in results_dir.rglob(RECORDS_FILE))


def collect_points(results_dirs: Iterable[str | Path]) -> list[FrontPoint]:
    """Every snapcompact arm recorded under the given results directories, front marked."""
    points: list[FrontPoint] = []
    table = shape_rules()
    for root in map(Path, results_dirs):
        if not root.is_dir():
            raise FileNotFoundError(f"search_front: {root} is not a directory")
        for run_dir in _run_dirs(root):
            arms: dict[tuple, list[Record]] = defaultdict(list)
            for record in iter_records(run_dir / RECORDS_FILE):
                if record.strategy != "snapcompact":
                    continue
                arms[(record.research, record.shape_requested, record.frame_size,
                      record.dataset, record.seed, record.context_window,
                      record.target_model or record.model,
                      reader_label(reader_id(record.model)))].append(record)
            for (research, shape, frame_size, dataset, seed, window, target, reader), rows in \
                    sorted(arms.items(), key=lambda kv: tuple(map(str, kv[0]))):
                got = objectives_of(rows)
                asked = [r for r in rows if r.error is None and r.skipped is None]
                low, high = (wilson_interval(got.recall_discarded, got.n_discarded)
                             if got.n_discarded else (math.nan, math.nan))
                points.append(FrontPoint(
                    kind=_kind(research, shape), research=research, shape=shape,
                    frame_size=int(frame_size or 0), knobs=_knobs(rows[0].settings),
                    dataset=dataset, seed=int(seed), context_window=int(window),
                    target_model=str(target), line=model_line(str(target), table),
                    answered_by=reader, recall_discarded=got.recall_discarded,
                    recall_low=low, recall_high=high, n_discarded=got.n_discarded,
                    billed_tokens=got.billed_tokens, n_rows=got.n_rows,
                    frames=(sum(r.frames for r in asked) / len(asked)) if asked else math.nan,
                    feasible=got.feasible, reason=got.reason or "", on_front=False,
                    run=str(run_dir.relative_to(root))))
    return mark_front(points)


def mark_front(points: Sequence[FrontPoint]) -> list[FrontPoint]:
    """The points with ``on_front`` set: feasible and not dominated within their session set."""
    by_set: dict[SetKey, list[FrontPoint]] = defaultdict(list)
    for point in points:
        if point.feasible:
            by_set[_set_key(point)].append(point)
    out = []
    for point in points:
        rivals = by_set.get(_set_key(point), [])
        dominated = any(
            other is not point
            and other.recall_discarded >= point.recall_discarded
            and other.billed_tokens <= point.billed_tokens
            and (other.recall_discarded > point.recall_discarded
                 or other.billed_tokens < point.billed_tokens)
            for other in rivals)
        out.append(_replace(point, on_front=point.feasible and not dominated))
    return out


def _set_key(point: FrontPoint) -> SetKey:
    return (point.dataset, point.seed, point.context_window, point.target_model,
            point.answered_by)


def _replace(point: FrontPoint, **changes) -> FrontPoint:
    return FrontPoint(**{**asdict(point), **changes})


def to_frame(points: Sequence[FrontPoint]) -> pd.DataFrame:
    frame = pd.DataFrame([asdict(p) for p in points], columns=list(FrontPoint.__annotations__))
    return frame.sort_values(["dataset", "seed", "context_window", "target_model",
                              "billed_tokens"],
                             kind="stable").reset_index(drop=True)


def format_markdown(points: Sequence[FrontPoint]) -> str:
    """The points as a markdown table, front first within each session set."""
    lines = ["| on front | kind | research | shape @px | knobs | recall, discarded [95 % CI] (n) "
             "| billed tokens/q | frames/q | feasible |",
             "| --- | --- | --- | --- | --- | --- | ---: | ---: | --- |"]
    frame = to_frame(points)
    frame = frame.sort_values(["dataset", "seed", "context_window", "target_model", "on_front",
                               "billed_tokens"], ascending=[True, True, True, True, False, True],
                              kind="stable")
    sets = frame[["dataset", "seed", "context_window", "target_model", "line",
                  "answered_by"]].drop_duplicates()
    header = [f"Sessions {s.dataset} seed {s.seed}, window {s.context_window:,}, "
              f"{s.target_model} (line {s.line}), answers by {s.answered_by}"
              for s in sets.itertuples()]
    lines = [*(f"- {h}" for h in header), "", *lines]
    for p in frame.itertuples():
        recall = ("n/a" if math.isnan(p.recall_discarded) else
                  f"{p.recall_discarded:.3f} [{p.recall_low:.3f}, {p.recall_high:.3f}] "
                  f"({p.n_discarded})")
        feasible = "yes" if p.feasible else f"no: {p.reason}"
        lines.append(f"| {'**yes**' if p.on_front else ''} | {p.kind} | {p.research} | "
                     f"{p.shape} @{p.frame_size or 'default'} | {p.knobs or '(production)'} | "
                     f"{recall} | "
                     f"{p.billed_tokens:,.0f} | {p.frames:.1f} | {feasible} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.analysis.search_front",
        description="The search's Pareto front (recall on discarded evidence vs billed tokens) "
                    "over the runs under the given results directories.")
    parser.add_argument("results_dirs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="write search_front.csv and .md here")
    args = parser.parse_args(argv)
    try:
        points = collect_points(args.results_dirs)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not points:
        print("error: no snapcompact rows under " + ", ".join(map(str, args.results_dirs)),
              file=sys.stderr)
        return 2
    text = format_markdown(points)
    print(text, end="")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        to_frame(points).to_csv(args.out / "search_front.csv", index=False)
        (args.out / "search_front.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
