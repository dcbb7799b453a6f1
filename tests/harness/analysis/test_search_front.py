"""The search's Pareto front: every snapcompact arm of every run is a point; only feasible
points rank; a point is on the front when no other point of the same session set has at least
its recall at no more tokens; production's default and the seed's shapes are labelled."""

from __future__ import annotations

import math

import pytest
from record_rows import research_arm as _arm

from evals.analysis.search_front import collect_points, main
from evals.store.records import append_records


def _write(root, name, rows):
    append_records(root / "runs" / name / "records.jsonl", rows)


def _by(points):
    return {(p.research, p.shape): p for p in points}


def test_dominated_and_infeasible_points_are_off_the_front(tmp_path) -> None:
    _write(tmp_path, "reference", [
        *_arm("ref", "production", "auto", [1, 0, 0, 0, None], 90_000),      # 0.25 at 90k
        *_arm("ref", "production", "8on22-bw", [1, 1, 0, 0], 95_000),        # 0.50 at 95k
    ])
    _write(tmp_path, "multirun/s/t1", _arm("t1", "s-1", "px-a", [1, 1, 1, 0], 80_000))  # 0.75
    _write(tmp_path, "multirun/s/t2", _arm("t2", "s-2", "px-b", [1, 1, 1, 1], 120_000))  # 1.0
    _write(tmp_path, "multirun/s/t3", _arm("t3", "s-3", "px-c", [1, 1, 1, 1], 70_000,
                                           production_valid=False))  # not sent: never ranks
    points = _by(collect_points([tmp_path]))
    front = {key for key, p in points.items() if p.on_front}
    # t1 beats both references (more recall, fewer tokens); t2 has the most recall; t3 would
    # dominate everything but production would not send it.
    assert front == {("s-1", "px-a"), ("s-2", "px-b")}
    assert points[("production", "auto")].kind == "production"
    assert points[("production", "8on22-bw")].kind == "seed shape"
    assert points[("s-1", "px-a")].kind == "trial"
    t3 = points[("s-3", "px-c")]
    assert not t3.feasible and "would not send" in t3.reason and not t3.on_front
    production = points[("production", "auto")]
    assert (production.recall_discarded, production.n_discarded, production.n_rows) == (
        0.25, 4, 5)


def test_an_equal_point_does_not_push_its_twin_off_the_front(tmp_path) -> None:
    _write(tmp_path, "a", _arm("a", "s-1", "px-a", [1, 0], 50_000))
    _write(tmp_path, "b", _arm("b", "s-2", "px-b", [0, 1], 50_000))
    assert all(p.on_front for p in collect_points([tmp_path]))


def test_points_of_other_sessions_are_not_compared(tmp_path) -> None:
    _write(tmp_path, "a", _arm("a", "s-1", "px-a", [1, 1], 50_000, seed=100))
    _write(tmp_path, "b", _arm("b", "s-2", "px-b", [0, 1], 90_000, seed=1))
    assert all(p.on_front for p in collect_points([tmp_path]))


def test_the_recall_interval_is_wilsons(tmp_path) -> None:
    # 3 of 4: Wilson 95 % interval [0.3006, 0.9544] (score interval, z = 1.96).
    _write(tmp_path, "a", _arm("a", "s-1", "px-a", [1, 1, 1, 0], 50_000))
    (point,) = collect_points([tmp_path])
    assert point.recall_low == pytest.approx(0.3006, abs=5e-4)
    assert point.recall_high == pytest.approx(0.9544, abs=5e-4)


def test_no_discarded_question_is_infeasible_with_no_interval(tmp_path) -> None:
    _write(tmp_path, "a", _arm("a", "s-1", "px-a", [None, None], 50_000))
    (point,) = collect_points([tmp_path])
    assert not point.feasible and math.isnan(point.recall_low) and not point.on_front


def test_the_command_writes_the_tables_and_names_a_missing_folder(tmp_path, capsys) -> None:
    _write(tmp_path, "a", _arm("a", "production", "auto", [1, 0], 50_000))
    assert main([str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "search_front.csv").read_text().count("\n") == 2
    assert "production" in (tmp_path / "out" / "search_front.md").read_text()
    assert main([str(tmp_path / "missing")]) == 2
    assert "missing is not a directory" in capsys.readouterr().err
