"""Figures of the research study: the search's Pareto front, and research settings against
production on held-out sessions.

Why apart from :mod:`evals.plot`: those figures come from the summary table of one run set and
rank shapes; these come from the two research tables (``search_front.csv`` written by
:mod:`evals.analysis.search_front`, ``research_compare.csv`` by
:mod:`evals.analysis.research_compare`) and
answer a different question: do knobs other than production's read back more of what the
compactions discarded, and at what billed cost. Every figure names who answered: the offline
OCR reader measures legibility (a floor), not how well a model reads.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from evals.analysis.plot import STYLE
from evals.analysis.research_compare import CEILING

__all__ = ["plot_research_compare", "plot_search_front"]

#: Token counts as 80,000 rather than 80000.
_THOUSANDS = FuncFormatter(lambda v, _: f"{v:,.0f}")

_KIND_STYLE = {  # marker, colour, label
    "production": ("*", "tab:red", "production (its knobs, the shape it resolves)"),
    "seed shape": ("D", "tab:orange", "production's knobs, a seed-table shape"),
    "trial": ("o", "tab:blue", "search trial"),
}


def plot_search_front(front: pd.DataFrame) -> plt.Figure:
    """Recall on discarded evidence against billed tokens, one panel per session set.

    Feasible points with their 95 % Wilson intervals, the front as a dashed step through its
    points; points production would not send (or over the window) as grey crosses at their
    measured values, never on the front.
    """
    keys = ["dataset", "seed", "context_window", "target_model", "answered_by"]
    with plt.rc_context(STYLE):
        groups = list(front.groupby(keys, sort=True))
        fig, axes = plt.subplots(len(groups), 1, figsize=(8.5, 5.0 * max(len(groups), 1)),
                                 squeeze=False)
        for ax, ((dataset, seed, window, target, reader), part) in zip(axes.flat, groups):
            handles = {}
            for row in part.itertuples():
                if math.isnan(row.recall_discarded):
                    continue
                if not row.feasible:
                    handles["not sent by production / over the window (never ranked)"] = \
                        ax.plot(row.billed_tokens, row.recall_discarded, "x", color="0.55",
                                markersize=8)[0]
                    continue
                marker, color, label = _KIND_STYLE.get(row.kind, _KIND_STYLE["trial"])
                err = [[row.recall_discarded - row.recall_low],
                       [row.recall_high - row.recall_discarded]]
                handles[label] = ax.errorbar(
                    row.billed_tokens, row.recall_discarded, yerr=err, fmt=marker, color=color,
                    markersize=12 if marker == "*" else 7, capsize=3, elinewidth=1.0,
                    alpha=1.0 if row.on_front or row.kind != "trial" else 0.6)
            on_front = part[part["on_front"].astype(bool)].sort_values("billed_tokens")
            if len(on_front):
                handles["Pareto front"] = ax.step(
                    on_front["billed_tokens"], on_front["recall_discarded"], where="post",
                    linestyle="--", color="0.3", linewidth=1.2, zorder=0)[0]
            ax.xaxis.set_major_formatter(_THOUSANDS)
            ax.set_xlabel("mean billed prompt tokens per question (the compacted context)")
            ax.set_ylabel("recall on discarded evidence")
            ax.set_ylim(-0.03, 1.03)
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{dataset} seed {seed}, {target} at {int(window):,} tokens\n"
                         f"answers by {reader}", fontsize=11)
            ax.legend(list(handles.values()), list(handles), loc="upper left", frameon=False)
        fig.suptitle("The search's Pareto front (95 % Wilson intervals)", fontsize=13)
        fig.tight_layout()
    return fig


def plot_research_compare(compare: pd.DataFrame, baseline: str = "production") -> plt.Figure:
    """Held-out comparison: recall on discarded evidence and billed tokens per research label
    (left, right), and each label's paired recall difference from the baseline (middle); one
    bar per row of the table, so the per-verdict subsets (``subset``) get bars of their own.
    The perfect-summarizer ceiling is drawn grey and named as an oracle; the bracket's rows
    (differences from the ceiling, ``subset`` "vs ...") are left to the table."""
    with plt.rc_context(STYLE):
        compare = compare.reset_index(drop=True)
        if "subset" in compare:  # the bracket's rows are differences from the ceiling, not
            compare = compare[~compare["subset"].astype(str).str.startswith("vs ")]  # baseline
            compare = compare.reset_index(drop=True)
        ceiling = f"{baseline} ({CEILING})"
        subsets = (compare["subset"] if "subset" in compare else pd.Series(["all"] * len(compare)))
        labels = [f"{r.research}\n{r.arm}" + ("" if subset == "all" else f"\nsessions: {subset}")
                  for r, subset in zip(compare.itertuples(), subsets)]
        fig, (left, middle, right) = plt.subplots(
            1, 3, figsize=(15, 1.6 + 0.9 * len(compare)), sharey=True)
        y = list(range(len(compare)))
        colors = ["tab:red" if r == baseline else "0.6" if r == ceiling else "tab:blue"
                  for r in compare["research"]]
        err = [compare["recall_discarded"] - compare["recall_discarded_lo"],
               compare["recall_discarded_hi"] - compare["recall_discarded"]]
        left.barh(y, compare["recall_discarded"], xerr=err, color=colors, capsize=4)
        left.set_yticks(y, labels)
        how = (sorted(set(compare["recall_interval"].dropna()) - {""})
               if "recall_interval" in compare else [])
        left.set_xlabel("recall on discarded evidence\n[95 %: "
                        + (", ".join(how) if how else "Wilson") + "]")
        left.set_xlim(0, 1)
        for i, row in enumerate(compare.itertuples()):
            if isinstance(row.diff_recall, float) and not math.isnan(row.diff_recall):
                middle.errorbar(row.diff_recall, i, xerr=[[row.diff_recall - row.diff_recall_lo],
                                                         [row.diff_recall_hi - row.diff_recall]],
                                fmt="o", color="tab:blue", capsize=4, label="all shared questions")
                d = row.diff_on_baseline_discarded
                if isinstance(d, float) and not math.isnan(d):
                    middle.errorbar(d, i + 0.2, xerr=[[d - row.diff_on_baseline_discarded_lo],
                                                      [row.diff_on_baseline_discarded_hi - d]],
                                    fmt="s", color="tab:green", capsize=4,
                                    label=f"facts {baseline} discarded")
        middle.axvline(0, color="0.3", linewidth=1)
        middle.xaxis.set_major_locator(MaxNLocator(nbins=5))
        middle.set_xlabel(f"paired recall difference from {baseline}\n"
                          "[95 %, bootstrap over sessions]")
        handles, names = middle.get_legend_handles_labels()
        unique = dict(zip(names, handles))
        if unique:
            middle.legend(unique.values(), unique.keys(), loc="lower right", frameon=False)
        right.barh(y, compare["billed_tokens"], color=colors)
        for i, tokens in enumerate(compare["billed_tokens"]):
            right.text(tokens, i, f" {tokens:,.0f}", va="center", fontsize=9)
        right.xaxis.set_major_formatter(_THOUSANDS)
        right.xaxis.set_major_locator(MaxNLocator(nbins=5))
        right.set_xlabel("mean billed prompt tokens per question")
        for ax in (left, middle, right):
            ax.grid(True, axis="x", alpha=0.3)
        kinds = [(Patch(color="tab:red"), f"{baseline} (its knobs)"),
                 (Patch(color="tab:blue"), "research setting")]
        if (compare["research"] == ceiling).any():
            kinds.append((Patch(color="0.6"), f"{ceiling}: oracle ceiling, never ranked"))
        fig.legend([k[0] for k in kinds], [k[1] for k in kinds], loc="upper center",
                   bbox_to_anchor=(0.5, 0.0), ncol=len(kinds), frameon=False)
        readers = (sorted(set(compare["answered_by"].dropna()) - {""})
                   if "answered_by" in compare else [])
        title = "Research settings against production on held-out sessions"
        if readers:
            title += "\nanswers by " + "; ".join(readers)
        fig.suptitle(title, fontsize=13)
        fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig
