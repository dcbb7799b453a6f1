"""The held-out comparison figure (evals.analysis.research_plot): an oracle is not drawn as a
research setting, and differences from the ceiling are not drawn as differences from
production (more in test_plot_claims)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from evals.analysis.research_plot import plot_research_compare  # noqa: E402

NAN = math.nan


def _row(research, subset, recall, diff):
    return {"research": research, "arm": "foveated auto @200k", "subset": subset,
            "recall_discarded": recall, "recall_discarded_lo": recall - 0.02,
            "recall_discarded_hi": recall + 0.02, "recall_interval": "session bootstrap",
            "diff_recall": diff, "diff_recall_lo": diff - 0.01, "diff_recall_hi": diff + 0.01,
            "diff_on_baseline_discarded": diff, "diff_on_baseline_discarded_lo": diff - 0.01,
            "diff_on_baseline_discarded_hi": diff + 0.01, "billed_tokens": 90_000.0,
            "answered_by": "snapocr"}


def test_the_ceiling_is_grey_and_the_bracket_rows_are_left_to_the_table():
    top = "production (perfect summarizer)"
    compare = pd.DataFrame([
        _row("production", "all", 0.03, NAN),
        _row(top, "all", 0.26, 0.23),
        _row("recommended", "all", 0.20, 0.11),
        _row("production", f"vs {top}", 0.03, -0.23),  # bracket: differences from the ceiling
        _row("recommended", f"vs {top}", 0.20, -0.12),
    ])
    fig = plot_research_compare(compare)
    left = fig.axes[0]
    bars = left.patches
    assert len(bars) == 3  # the two bracket rows are not drawn
    labels = [t.get_text().split("\n")[0] for t in left.get_yticklabels()]
    assert labels == ["production", "recommended", top]  # baseline, research, the ceiling
    colours = {label: bar.get_facecolor() for label, bar in zip(labels, bars)}
    assert colours[top][3] == 0 and bars[2].get_edgecolor() == to_rgba("0.5")  # hollow grey
    assert colours["recommended"] == to_rgba("tab:blue")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert f"{top}: oracle ceiling, never ranked, not a difference from production" in legend
