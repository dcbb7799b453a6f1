"""Figures stay readable on agent-shaped results: tick labels never collide, long arm labels do
not squeeze the panel, every legend entry has something drawn, a skipped ``full`` says why, and
the context window is drawn where it is (issue 35).

The rows (``record_rows.agent_run_records``) mimic the committed default run with two model
lines, so panels sit side by side.
"""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.lines import Line2D
from record_rows import AGENT_TARGETS as TARGETS
from record_rows import FULL_TOKENS, agent_run_records

from evals.analysis.aggregate import records_frame
from evals.analysis.plot import (
    plot_recall_by_round,
    plot_recall_by_shape,
    plot_recall_per_1k,
    plot_recall_vs_tokens,
)
from evals.analysis.summary import summarize
from snapcompact.pricing import shape_rules


@pytest.fixture(scope="module")
def agent_tables():
    df = records_frame(agent_run_records(), shape_rules())
    return df, summarize(df, n_boot=200)


def _draw(name, tables):
    df, summary = tables
    return {"recall_vs_tokens": lambda: plot_recall_vs_tokens(summary),
            "recall_by_shape": lambda: plot_recall_by_shape(summary),
            "recall_by_round": lambda: plot_recall_by_round(df),
            "recall_per_1k": lambda: plot_recall_per_1k(summary)}[name]()


def _shown_tick_labels(ax, axis):
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    k = 0 if axis == "x" else 1
    return [t for t in labels if t.get_visible() and t.get_text()
            and lo <= t.get_position()[k] <= hi]


def _intersect(a, b) -> bool:
    """Strictly overlapping boxes (touching edges do not count)."""
    return min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)


@pytest.mark.parametrize("name", ["recall_vs_tokens", "recall_by_shape", "recall_by_round",
                                  "recall_per_1k"])
def test_no_two_tick_labels_overlap(agent_tables, name) -> None:
    fig = _draw(name, agent_tables)
    fig.canvas.draw()
    for ax in (a for a in fig.axes if a.get_visible()):
        for axis in "xy":
            boxes = [(t.get_text(), t.get_window_extent())
                     for t in _shown_tick_labels(ax, axis)]
            clashes = [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2)
                       if _intersect(ba, bb)]
            assert not clashes, f"{name}: {axis} tick labels overlap: {clashes}"
    plt.close(fig)


def test_axis_labels_of_side_by_side_panels_do_not_overlap(agent_tables) -> None:
    fig = _draw("recall_vs_tokens", agent_tables)
    fig.canvas.draw()
    boxes = [ax.xaxis.label.get_window_extent() for ax in fig.axes if ax.get_visible()]
    assert len(boxes) == 2
    assert not _intersect(*boxes)
    plt.close(fig)


@pytest.mark.parametrize("name", ["recall_by_shape", "recall_per_1k"])
def test_long_arm_labels_leave_the_panel_its_width(agent_tables, name) -> None:
    fig = _draw(name, agent_tables)
    fig.canvas.draw()
    for ax in (a for a in fig.axes if a.get_visible()):
        width = ax.get_position().width * fig.get_figwidth()
        assert width >= 4.5, f"{name}: the data panel is {width:.1f} in wide"
        longest = max(t.get_window_extent().width for t in ax.get_yticklabels())
        assert longest < ax.get_window_extent().width  # the labels are not wider than the data
    plt.close(fig)


def _has_drawn_data(artist, fig) -> bool:
    """The artist (a line, or an errorbar's data line) draws a finite point inside a panel."""
    line = artist if isinstance(artist, Line2D) else artist.lines[0]
    for x, y in zip(line.get_xdata(), line.get_ydata()):
        if not (math.isfinite(float(x)) and math.isfinite(float(y))):
            continue
        for ax in fig.axes:
            (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
            if x0 <= x <= x1 and y0 <= y <= y1:
                return True
    return False


def test_every_legend_entry_has_a_point_and_skipped_full_says_why(agent_tables) -> None:
    fig = _draw("recall_vs_tokens", agent_tables)
    fig.canvas.draw()
    names = [t.get_text().replace("\n", " ") for t in fig.legends[0].get_texts()]
    for name in names:
        artists = [a for ax in fig.axes for a in ax.containers + ax.lines
                   if a.get_label() == name]
        assert any(_has_drawn_data(a, fig) for a in artists), \
            f"legend entry without a point: {name!r}"
    assert "Pareto frontier (ranked arms only)" in names
    assert not any(n.startswith("full") for n in names)
    texts = " ".join(t.get_text().replace("\n", " ") for t in fig.findobj(matplotlib.text.Text))
    assert f"full @200k [bound] not plotted: not sent ({FULL_TOKENS:,} tokens per question, " \
           "over the 200k window)" in texts
    plt.close(fig)


def test_skipped_full_says_why_in_its_row(agent_tables) -> None:
    fig = _draw("recall_by_shape", agent_tables)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum("over the 200k window" in t for t in texts) == len(TARGETS)
    plt.close(fig)


def test_the_context_windows_are_drawn_and_labelled(agent_tables) -> None:
    fig = _draw("recall_vs_tokens", agent_tables)
    for ax in fig.axes:
        lines = {line.get_xdata()[0]: line for line in ax.lines
                 if len(set(line.get_xdata())) == 1 and line.get_linestyle() == ":"}
        assert sorted(lines) == [32_000, 200_000]
        x0, x1 = ax.get_xlim()
        assert x0 < 32_000 and 200_000 < x1
        labels = [t.get_text() for t in ax.texts]
        assert "32k context window " in labels and "200k context window " in labels
    plt.close(fig)
