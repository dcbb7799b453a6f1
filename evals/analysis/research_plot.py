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
from matplotlib.transforms import blended_transform_factory

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


def _compare_rows(compare: pd.DataFrame, baseline: str, ceiling: str) -> pd.DataFrame:
    """The rows drawn: not the bracket's (differences from the ceiling); where the table has
    per-verdict subsets, those alone (a pooled row never stands beside its subsets); ordered by
    subset, then the baseline, the research labels, the ceiling."""
    compare = compare.reset_index(drop=True)
    subsets = (compare["subset"].astype(str) if "subset" in compare
               else pd.Series(["all"] * len(compare)))
    compare = compare.assign(subset=subsets)
    compare = compare[~compare["subset"].str.startswith("vs ")]
    if (compare["subset"] != "all").any():
        compare = compare[compare["subset"] != "all"]
    rank = {baseline: 0, ceiling: 2}
    order = sorted(compare.index, key=lambda i: (
        compare.at[i, "subset"] != f"{baseline} valid", compare.at[i, "subset"],
        rank.get(compare.at[i, "research"], 1), compare.at[i, "research"]))
    return compare.loc[order].reset_index(drop=True)


def _n_text(row) -> str:
    sessions = row.sessions if "sessions" in row._fields else float("nan")
    questions = row.discarded if "discarded" in row._fields else float("nan")
    if isinstance(sessions, (int, float)) and not math.isnan(sessions):
        return f"n = {int(sessions)} sessions, {int(questions)} q discarded"
    return ""


def plot_research_compare(compare: pd.DataFrame, baseline: str = "production") -> plt.Figure:
    """Held-out comparison, one row per research label and session subset: recall on discarded
    evidence with its interval and n (left), the paired recall difference from the baseline
    (middle) and the paired billed-token difference (right), each with its session-level
    interval. Pooled rows are left to the table when it has per-verdict subsets; the
    perfect-summarizer ceiling (an oracle) is drawn hollow grey in the left panel only and is
    never placed on a "difference from the baseline" axis; the bracket's rows (differences
    from the ceiling) are left to the table."""
    ceiling = f"{baseline} ({CEILING})"
    with plt.rc_context(STYLE):
        rows = _compare_rows(compare, baseline, ceiling)
        labels = [f"{r.research}\n{r.arm}" + ("" if r.subset == "all"
                                               else f"\nsessions: {r.subset}")
                  + (f"\n{_n_text(r)}" if _n_text(r) else "") for r in rows.itertuples()]
        fig, (left, middle, right) = plt.subplots(
            1, 3, figsize=(16, 2.0 + 1.1 * len(rows)), sharey=True)
        _recall_bars(left, rows, baseline, ceiling)
        left.set_yticks(range(len(rows)), labels)
        left.set_ylim(len(rows) - 0.5, -0.5)
        _difference_panels(middle, right, rows, baseline, ceiling)
        for k in range(1, len(rows)):  # a line between session subsets
            if rows.at[k, "subset"] != rows.at[k - 1, "subset"]:
                for ax in (left, middle, right):
                    ax.axhline(k - 0.5, color="0.3", linewidth=0.8)
        kinds = [(Patch(color="tab:red"), f"{baseline} (its knobs)"),
                 (Patch(color="tab:blue"), "research setting")]
        if (rows["research"] == ceiling).any():
            kinds.append((Patch(facecolor="none", edgecolor="0.5", hatch="//"),
                          f"{ceiling}: oracle ceiling, never ranked, not a difference from "
                          f"{baseline}"))
        fig.legend([k[0] for k in kinds], [k[1] for k in kinds], loc="upper center",
                   bbox_to_anchor=(0.5, 0.0), ncol=len(kinds), frameon=False)
        readers = (sorted(set(rows["answered_by"].dropna()) - {""})
                   if "answered_by" in rows else [])
        title = "Research settings against production on held-out sessions"
        if (rows["subset"] != "all").any():
            title += " (per production verdict; the pooled rows are in the table)"
        title += ("\nexploratory: no pre-registered study plan fixed these sessions before their "
                  "run (configs/study/)")
        if readers:
            title += "\nanswers by " + "; ".join(readers)
        fig.suptitle(title, fontsize=13)
        fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def _recall_bars(ax, rows: pd.DataFrame, baseline: str, ceiling: str) -> None:
    """Left panel: recall on discarded evidence with its interval; the ceiling hollow grey."""
    for i, row in enumerate(rows.itertuples()):
        oracle = row.research == ceiling
        color = "tab:red" if row.research == baseline else "tab:blue"
        ax.barh(i, row.recall_discarded, color="none" if oracle else color,
                edgecolor="0.5" if oracle else color, hatch="//" if oracle else None,
                xerr=[[row.recall_discarded - row.recall_discarded_lo],
                      [row.recall_discarded_hi - row.recall_discarded]], capsize=4)
        ax.text(row.recall_discarded_hi, i, f"  {row.recall_discarded:.3f}", va="center",
                fontsize=9)
    how = (sorted(set(rows["recall_interval"].dropna()) - {""})
           if "recall_interval" in rows else [])
    ax.set_xlabel("recall on discarded evidence\n[95 %: " + (", ".join(how) if how else "Wilson")
                  + "]")
    ax.set_xlim(0, 1)
    ax.grid(True, axis="x", alpha=0.3)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not math.isnan(float(value))


def _difference_panels(middle, right, rows: pd.DataFrame, baseline: str, ceiling: str) -> None:
    """Middle: paired recall differences from the baseline (all shared questions, and those the
    baseline discarded); right: the paired billed-token difference. Only research labels are
    drawn there; the baseline and the oracle say in words why they have no point."""
    base_tokens = {r.subset: r.billed_tokens for r in rows.itertuples() if r.research == baseline}
    for i, row in enumerate(rows.itertuples()):
        if row.research in (baseline, ceiling):
            why = ("the baseline" if row.research == baseline
                   else "oracle: not a difference from " + baseline)
            middle.text(0.02, i, why, va="center", fontsize=9, color="0.35", style="italic",
                        transform=blended_transform_factory(middle.transAxes, middle.transData))
            right.text(0.02, i, f"{why}: {row.billed_tokens:,.0f} tok/q", va="center",
                       fontsize=9, color="0.35", style="italic",
                       transform=blended_transform_factory(right.transAxes, right.transData))
            continue
        if _finite(row.diff_recall):
            middle.errorbar(row.diff_recall, i - 0.12, fmt="o", color="tab:blue", capsize=4,
                            xerr=[[row.diff_recall - row.diff_recall_lo],
                                  [row.diff_recall_hi - row.diff_recall]],
                            label="all shared questions")
        d = row.diff_on_baseline_discarded
        if _finite(d):
            middle.errorbar(d, i + 0.12, fmt="s", color="tab:green", capsize=4,
                            xerr=[[d - row.diff_on_baseline_discarded_lo],
                                  [row.diff_on_baseline_discarded_hi - d]],
                            label=f"facts {baseline} discarded")
        t = getattr(row, "diff_billed_tokens", float("nan"))
        if _finite(t):
            right.errorbar(t, i, fmt="D", color="tab:blue", capsize=4,
                           xerr=[[t - row.diff_billed_tokens_lo], [row.diff_billed_tokens_hi - t]])
            base = base_tokens.get(row.subset, float("nan"))
            right.annotate(f"{t:+,.0f} ({row.billed_tokens:,.0f} vs {base:,.0f} tok/q)",
                           (t, i), xytext=(0, 9), textcoords="offset points", ha="center",
                           fontsize=9)
    for ax in (middle, right):
        ax.axvline(0, color="0.3", linewidth=1)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.grid(True, axis="x", alpha=0.3)
    middle.set_xlabel(f"paired recall difference from {baseline}\n"
                      "[95 %, bootstrap over sessions]")
    right.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:+,.0f}" if v else "0"))
    right.set_xlabel(f"paired billed-token difference from {baseline} per question\n"
                     "[95 %, bootstrap over sessions]")
    handles, names = middle.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    if unique:
        middle.legend(unique.values(), unique.keys(), loc="lower right", frameon=False)
