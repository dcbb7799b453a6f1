"""Figures: drawn from the summary table, labelled (reader, units), legends clear of the data."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from PIL import Image
from record_rows import misses, shape_rows, synthetic

from evals.analysis.aggregate import records_frame
from evals.analysis.plot import (
    plot_billing_drift,
    plot_recall_by_shape,
    plot_recall_vs_tokens,
    write_plots,
)
from evals.analysis.summary import summarize
from snapcompact.pricing import shape_rules


@pytest.fixture(scope="module")
def tables():
    recs = synthetic(
        shape_rows("6x6u-bw", misses(30, range(25)), 600),
        shape_rows("11on16-bw", misses(30, range(2)), 1600),
        shape_rows("8on22-bw", misses(30, range(3)), 1500, target="openai/gpt-5",
                   model="openai/gpt-5", reported=1580),
        shape_rows("8on22-bw", misses(30, range(3)), 1500, frame_size=2048,
                   target="openai/gpt-5", model="openai/gpt-5", reported=1490),
        shape_rows("text", misses(30, range(1)), 9000, frame_size=0, arm="text",
                   reader="text_qa", model="snapocr/text-qa"),
    )
    df = records_frame(recs, shape_rules())
    return df, summarize(df, n_boot=300)


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def _no_overlap(fig, legend) -> bool:
    fig.canvas.draw()
    box = legend.get_window_extent()
    return not any(box.overlaps(ax.get_window_extent()) for ax in fig.axes if ax.get_visible())


@pytest.mark.parametrize("draw", ["recall_vs_tokens", "recall_by_shape", "billing_drift"])
def test_figures_name_the_reader_units_and_keep_legends_off_the_data(tables, draw) -> None:
    df, summary = tables
    fig = {"recall_vs_tokens": lambda: plot_recall_vs_tokens(summary),
           "recall_by_shape": lambda: plot_recall_by_shape(summary),
           "billing_drift": lambda: plot_billing_drift(df)}[draw]()
    texts = " | ".join(_texts(fig))
    assert "answers by" in texts and "openai/gpt-5" in texts
    if draw != "billing_drift":  # the drift plot shows only readers that report usage
        assert "offline OCR reader" in texts
    for ax in [a for a in fig.axes if a.get_visible()]:
        assert ax.get_xlabel() and ax.get_ylabel()
        assert ax.xaxis.label.get_fontsize() >= 10 and ax.title.get_fontsize() >= 10
    assert "tokens" in texts and ("recall" in texts or "%" in texts)
    legends = fig.legends or [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends
    for legend in legends:
        assert _no_overlap(fig, legend)
        assert min(t.get_fontsize() for t in legend.get_texts()) >= 9
    plt.close(fig)


def test_frontier_and_text_arm_appear_in_the_tokens_plot(tables) -> None:
    _, summary = tables
    fig = plot_recall_vs_tokens(summary)
    labels = [t.get_text().split("\n")[0] for t in fig.legends[0].get_texts()]
    assert "Pareto frontier (ranked arms only)" in labels and "text-only" in labels
    assert "8on22-bw@2048" in labels  # a non-research frame size is labelled as such
    ocr = "snapocr (offline OCR reader: a legibility floor, not a model ranking)"
    assert sorted(ax.get_title() for ax in fig.axes) == [
        f"anthropic/claude-sonnet-4-5\nanswers by {ocr}", "openai/gpt-5\nanswers by openai/gpt-5"]
    plt.close(fig)


def test_drift_plot_is_not_drawn_when_nothing_was_reported(tables, tmp_path) -> None:
    df, summary = tables
    nothing = df.assign(reported_prompt_tokens_by_provider=float("nan"))
    assert plot_billing_drift(nothing) is None
    stale = tmp_path / "billing_drift.png"
    stale.write_bytes(b"an empty figure of an earlier run")
    written = write_plots(summary, nothing, tmp_path)
    assert "billing_drift.png" not in [p.name for p in written] and not stale.exists()


def test_write_plots_writes_readable_pngs(tables, tmp_path) -> None:
    df, summary = tables
    paths = write_plots(summary, df, tmp_path)
    assert sorted(p.name for p in paths) == ["billing_drift.png", "recall_by_round.png",
                                             "recall_by_shape.png", "recall_per_1k_tokens.png",
                                             "recall_vs_tokens.png"]
    for path in paths:
        with Image.open(path) as im:
            assert im.format == "PNG" and im.width >= 700 and im.height >= 400
