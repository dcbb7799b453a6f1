"""Figures from the summary table: recall versus billed tokens, recall by arm, recall by the
compaction round that discarded the evidence, recall per 1k context tokens, billing drift.

Why from the summary table (and not from records): the notebooks and the table command draw the
same pictures from the same committed numbers, so a figure can always be traced to a row.
Every figure names the reader that produced its answers in its title: the offline OCR reader
measures legibility, not how well a model reads.

The backend is left to the caller: the table command selects Agg (headless PNGs) before
importing this module, while a notebook keeps its inline backend and shows the same figures.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator

from evals.analysis.aggregate import (
    PRODUCTION_BOUND,
    PRODUCTION_NOT_SENT,
    PRODUCTION_STAND_IN,
    PRODUCTION_UNCHECKED,
    PRODUCTION_UNSENT,
    arm_labels,
    reader_label,
    recall_by_round,
    same_context_groups,
)

STYLE = {"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "legend.fontsize": 9,
         "xtick.labelsize": 10, "ytick.labelsize": 10, "figure.dpi": 110}


def _panels(n: int, width: float, height: float, max_cols: int = 2):
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _readers_title(frame: pd.DataFrame) -> str:
    return "; ".join(reader_label(r) for r in sorted(frame["reader_id"].unique()))


#: How a label says what the arm is to production (valid arms carry no tag).
_TAGS = {PRODUCTION_BOUND: " [bound]", PRODUCTION_NOT_SENT: " [not sent by production]",
         PRODUCTION_STAND_IN: " [stand-in summary]",
         PRODUCTION_UNCHECKED: ""}


def _labels(frame: pd.DataFrame) -> list[str]:
    statuses = frame["production"] if "production" in frame else [""] * len(frame)
    return [label + _TAGS.get(status, "") for label, status in zip(arm_labels(frame), statuses)]


def _plain_log_axis(axis) -> None:
    """Log scale with tick labels as plain numbers (1,500 rather than 1.5x10^3)."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(1, 10))))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


#: Distinct, dark-enough colours (tab10 without its grey, then the darker half of tab20b).
_PALETTE = [c for i, c in enumerate(plt.cm.tab10.colors) if i != 7] + \
    [plt.cm.tab20b.colors[i] for i in (0, 4, 8, 12, 16, 1, 5, 9, 13, 17)]


def _shape_colors(labels: list[str]) -> dict[str, tuple]:
    """One colour per shape label, the same in every panel; the text arm is black."""
    names = sorted(set(labels) - {"text-only"})
    colors = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(names)}
    colors["text-only"] = (0.0, 0.0, 0.0)
    return colors


def _with_billed(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with ``billed_tokens`` (the question's prompt tokens plus its share of the
    compaction calls); a table written before the compaction bill reads its prompt tokens."""
    if "billed_tokens" in summary:
        return summary
    return summary.assign(billed_tokens=summary["predicted_prompt_tokens"])


def plot_recall_vs_tokens(summary: pd.DataFrame) -> plt.Figure:
    """Recall against billed tokens per question (compaction calls included), one panel per
    model, with frontier."""
    summary = _with_billed(summary)
    with plt.rc_context(STYLE):
        groups = list(summary.groupby(["reader_id", "target_model"], sort=True))
        one_reader = summary["reader_id"].nunique() == 1
        fig, axes = _panels(len(groups), 6.2, 4.6)
        all_labels = _labels(summary)
        colors = _shape_colors(all_labels)
        handles: dict[str, object] = {}
        for ax, ((reader, target), part) in zip(axes, groups):
            part = part.sort_values("billed_tokens")
            labels = dict(zip(part.index, _labels(part)))
            for idx in same_context_groups(part):  # one point for arms that sent one context
                labels[idx[0]] = " = ".join(labels[i] for i in idx)
                for i in idx[1:]:
                    labels.pop(i)
            part = part.loc[[i for i in part.index if i in labels]]
            for label, row in zip((labels[i] for i in part.index), part.itertuples()):
                colors.setdefault(label, colors[label.split(" = ")[0]])
                err = [[row.recall - row.recall_lo], [row.recall_hi - row.recall]]
                not_sent = getattr(row, "production", "") in PRODUCTION_UNSENT
                handles[label] = ax.errorbar(
                    row.billed_tokens, row.recall, yerr=err,
                    fmt="x" if not_sent else "s" if row.strategy != "snapcompact" else "o",
                    color=colors[label], markersize=7, alpha=0.55 if not_sent else 1.0,
                    capsize=3, elinewidth=1.2, label=label)
            front = part[part["on_frontier"]].sort_values("billed_tokens")
            handles["Pareto frontier"] = ax.step(
                front["billed_tokens"], front["recall"], where="post", color="0.35",
                linestyle="--", linewidth=1.2, zorder=0, label="Pareto frontier")[0]
            ax.set_xscale("log")
            _plain_log_axis(ax.xaxis)
            ax.set_xlabel("billed tokens per question: the whole compacted context plus "
                          "its share of the compaction calls (log scale)")
            ax.set_ylabel("recall (share of questions correct)")
            ax.set_ylim(-0.03, 1.03)
            ax.grid(True, which="major", alpha=0.3)
            ax.set_title(target if one_reader else f"{target}\nanswers by {reader_label(reader)}")
        mean_tokens = (summary.assign(label=all_labels).groupby("label")
                       ["billed_tokens"].mean()).to_dict()
        for merged in handles:
            if " = " in merged:
                mean_tokens[merged] = mean_tokens[merged.split(" = ")[0]]
        order = sorted((k for k in handles if k not in ("text-only", "Pareto frontier")),
                       key=lambda k: mean_tokens[k])
        order += [k for k in ("text-only", "Pareto frontier") if k in handles]
        fig.legend([handles[k] for k in order], order, loc="upper left",
                   bbox_to_anchor=(1.0, 0.93), frameon=False, title="arm (fewest tokens first)")
        title = ("Recall versus billed tokens per question, 95 % Wilson intervals "
                 "(x: not sent by production, never ranked)")
        if one_reader:
            title += f"\nanswers by {_readers_title(summary)}"
        fig.suptitle(title, fontsize=13)
        fig.tight_layout()
    return fig


def plot_recall_by_shape(summary: pd.DataFrame) -> plt.Figure:
    """Recall with intervals per shape (rows), one marker per target model, one panel per reader."""
    with plt.rc_context(STYLE):
        readers = sorted(summary["reader_id"].unique())
        height = max(4.0, 1.4 + 0.42 * len(set(_labels(summary))))
        fig, axes = _panels(len(readers), 8.0, height, max_cols=1)
        for ax, reader in zip(axes, readers):
            part = summary[summary["reader_id"] == reader].copy()
            part["label"] = _labels(part)
            order = (part.groupby("label")["predicted_prompt_tokens"].mean().sort_values()
                     .index.tolist())
            targets = sorted(part["target_model"].unique())
            step = 0.7 / max(len(targets), 1)
            for k, target in enumerate(targets):
                rows = part[part["target_model"] == target]
                offset = (k - (len(targets) - 1) / 2) * step
                y = np.array([order.index(lbl) for lbl in rows["label"]]) + offset
                xerr = np.vstack([rows["recall"] - rows["recall_lo"],
                                  rows["recall_hi"] - rows["recall"]])
                ax.errorbar(rows["recall"], y, xerr=xerr, fmt="o", capsize=3, markersize=6,
                            label=target)
            ax.set_yticks(range(len(order)))
            ax.set_yticklabels(order)
            ax.invert_yaxis()
            ax.set_xlim(-0.02, 1.02)
            ax.set_xlabel("recall (share of questions correct)")
            ax.set_ylabel("arm (fewest billed tokens first)")
            ax.grid(True, axis="x", alpha=0.3)
            ax.set_title("Recall by arm, 95 % Wilson intervals\n"
                         f"answers by {reader_label(reader)}")
            ax.legend(title="target model", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                      borderaxespad=0, frameon=False)
        fig.tight_layout()
    return fig


def plot_billing_drift(records: pd.DataFrame) -> plt.Figure:
    """Provider-reported minus predicted prompt tokens per request, relative to the prediction."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.5, 5.0))
        ok = records[records["ok"]]
        have = ok[ok["reported_prompt_tokens_by_provider"].notna()]
        if have.empty:
            ax.text(0.5, 0.5, "no provider-reported prompt tokens in these records\n"
                    f"({len(ok):,} requests)", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        else:
            markers = "osD^vP*X"
            several = have["reader_id"].nunique() > 1
            groups = have.groupby(["reader_id", "target_model"], sort=True)
            for k, ((reader, target), part) in enumerate(groups):
                drift = 100 * (part["reported_prompt_tokens_by_provider"]
                               / part["predicted_prompt_tokens"] - 1)
                name = f"{target} via {reader}" if several else target
                ax.scatter(part["predicted_prompt_tokens"], drift, s=36, marker=markers[k % 8],
                           facecolors="none", edgecolors=_PALETTE[k % len(_PALETTE)],
                           linewidths=1.3, label=f"{name} (median {drift.median():+.1f} %)")
            ax.axhline(0, color="0.3", linestyle="--", linewidth=1, label="reported = predicted")
            ax.set_xscale("log")
            _plain_log_axis(ax.xaxis)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(title="target model", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                      borderaxespad=0, frameon=False)
        ax.set_xlabel("predicted prompt tokens per request (log scale)")
        ax.set_ylabel("reported / predicted - 1 (%)")
        ax.set_title(f"Billing drift: provider-reported versus predicted prompt tokens\n"
                     f"answers by {_readers_title(have if len(have) else ok)}")
        fig.tight_layout()
    return fig


def plot_recall_by_round(records: pd.DataFrame) -> plt.Figure:
    """Recall per arm against the compaction round that discarded the evidence (0 = kept)."""
    with plt.rc_context(STYLE):
        table = recall_by_round(records)
        table = table.assign(arm_label=[label + _TAGS.get(status, "") for label, status in
                                        zip(table["arm_label"], table["production"])])
        groups = list(table.groupby(["reader_id", "target_model"], sort=True))
        fig, axes = _panels(max(len(groups), 1), 7.0, 4.6)
        colors = _shape_colors(sorted(table["arm_label"].unique()))
        for ax, ((reader, target), part) in zip(axes, groups):
            buckets = (part[["round_lo", "evidence_rounds"]].drop_duplicates()
                       .sort_values("round_lo"))
            position = {b: i for i, b in enumerate(buckets["evidence_rounds"])}
            for label, rows in part.groupby("arm_label", sort=True):
                rows = rows.sort_values("round_lo")
                ax.plot([position[b] for b in rows["evidence_rounds"]], rows["recall"],
                        marker="o", color=colors[label], label=label)
            ax.set_xticks(range(len(position)))
            ax.set_xticklabels(list(position))
            ax.set_xlabel("evidence_round: compaction that discarded the evidence (0 = kept "
                          "tail; doubling buckets)")
            ax.set_ylabel("recall")
            ax.set_ylim(-0.03, 1.03)
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{target}\nanswers by {reader_label(reader)}")
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, title="arm")
        if not groups:
            axes[0].text(0.5, 0.5, "no question-answering records", ha="center", va="center")
        fig.suptitle("Recall by where the answer was", fontsize=13)
        fig.tight_layout()
    return fig


def plot_recall_per_1k(summary: pd.DataFrame) -> plt.Figure:
    """Recall per 1k billed tokens (compaction calls included), one bar per arm, per target
    model."""
    summary = _with_billed(summary)
    with plt.rc_context(STYLE):
        groups = list(summary.groupby(["reader_id", "target_model"], sort=True))
        height = max(3.5, 1.2 + 0.4 * len(set(_labels(summary))))
        fig, axes = _panels(max(len(groups), 1), 8.0, height, max_cols=1)
        for ax, ((reader, target), part) in zip(axes, groups):
            part = part.assign(label=_labels(part)).sort_values("recall_per_1k_tokens")
            colors = ["0.2" if s != "snapcompact" else _PALETTE[0] for s in part["strategy"]]
            ax.barh(part["label"], part["recall_per_1k_tokens"], color=colors)
            for y, (value, tokens) in enumerate(zip(part["recall_per_1k_tokens"],
                                                    part["billed_tokens"])):
                if np.isfinite(value):
                    ax.text(value, y, f"  {value:.3f} ({tokens:,.0f} tok)", va="center",
                            fontsize=9)
            ax.set_xlabel("recall per 1k billed tokens (context + share of compaction calls)")
            ax.grid(True, axis="x", alpha=0.3)
            ax.set_title(f"Recall per 1k context tokens: {target}\n"
                         f"answers by {reader_label(reader)}")
        fig.tight_layout()
    return fig


def write_plots(summary: pd.DataFrame, records: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Draw every figure to ``out_dir`` as PNG; returns the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = {
        "recall_vs_tokens.png": plot_recall_vs_tokens(summary),
        "recall_by_shape.png": plot_recall_by_shape(summary),
        "recall_by_round.png": plot_recall_by_round(records),
        "recall_per_1k_tokens.png": plot_recall_per_1k(summary),
        "billing_drift.png": plot_billing_drift(records),
    }
    paths = []
    for name, fig in figures.items():
        path = out_dir / name
        fig.savefig(path, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths
