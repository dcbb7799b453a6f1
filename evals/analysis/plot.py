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

import itertools
import math
import re
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator
from matplotlib.transforms import ScaledTranslation, blended_transform_factory

from evals.analysis.aggregate import (
    PRODUCTION_BOUND,
    PRODUCTION_NOT_SENT,
    PRODUCTION_STAND_IN,
    PRODUCTION_UNCHECKED,
    arm_labels,
    reader_label,
)
from evals.analysis.plot_marks import (
    APART_COLOR,
    APART_MARKERS,
    APART_NOTE,
    INTERVAL_NOTE,
    apart_divider,
    arm_order,
    is_ranked,
    nudges,
    ranked_frontier,
    recall_interval,
)
from evals.analysis.recall_breakdown import recall_by_round
from evals.analysis.summary import same_context_groups, with_session_intervals

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
    """Arm labels with their verdict's tag; two rows of one model that would share a label (one
    arm whose sessions drew different frames, split by verdict, or whose contexts carried no
    frame in one session: ``arm`` text) say which frames they drew, or that they drew none."""
    statuses = frame["production"] if "production" in frame else [""] * len(frame)
    labels = [label + _TAGS.get(status, "") for label, status in zip(arm_labels(frame), statuses)]
    keys = list(zip(*(frame[c] if c in frame else [""] * len(frame)
                      for c in ("reader_id", "target_model")), labels))
    kinds = frame["arm"] if "arm" in frame else [""] * len(frame)
    return [label if keys.count(key) == 1 else
            f"{label} (text-only context)" if kind == "text" else
            f"{label} (frames: {shape})"
            for key, label, shape, kind in zip(keys, labels, frame["shape"], kinds)]


#: Major tick multiples per decade on a log axis, densest first: a narrow panel falls back to
#: fewer until its labels stop colliding.
_LOG_SUBS = ((1.0, 2.0, 3.0, 5.0), (1.0, 2.0, 5.0), (1.0, 3.0), (1.0,))


def _plain_log_axis(axis, subs: tuple[float, ...] = _LOG_SUBS[0]) -> None:
    """Log scale with tick labels as plain numbers (1,500 rather than 1.5x10^3)."""
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(1, 10))))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _labels_collide(ax, which: str = "x", gap_px: float = 3.0) -> bool:
    """Whether two tick labels drawn on ``ax`` (inside its limits) touch or overlap."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
    boxes = [t.get_window_extent() for t in axis.get_ticklabels()
             if t.get_visible() and t.get_text()
             and lo <= t.get_position()[0 if which == "x" else 1] <= hi]
    return any(a.x0 < b.x1 + gap_px and b.x0 < a.x1 + gap_px
               and a.y0 < b.y1 + gap_px and b.y0 < a.y1 + gap_px
               for a, b in itertools.combinations(boxes, 2))


def _fit_log_ticks(fig: plt.Figure, ax) -> None:
    """The densest major ticks whose labels do not collide at the panel's drawn width."""
    for subs in _LOG_SUBS:
        _plain_log_axis(ax.xaxis, subs)
        fig.canvas.draw()
        if not _labels_collide(ax):
            return


def _fit_category_ticks(fig: plt.Figure, ax) -> None:
    """Category labels upright while they fit, slanted when they would collide."""
    for rotation in (0, 35, 90):
        for label in ax.get_xticklabels():
            label.set_rotation(rotation)
            label.set_horizontalalignment("center" if rotation in (0, 90) else "right")
        fig.canvas.draw()
        if not _labels_collide(ax):
            return


def _widen(fig: plt.Figure, min_axes_inches: float, **layout) -> None:
    """Lay out, then widen the figure until every visible panel is at least
    ``min_axes_inches`` wide: long arm labels take their room from the figure, not the data."""
    for _ in range(4):
        fig.tight_layout(**layout)
        narrowest = min(ax.get_position().width * fig.get_figwidth()
                        for ax in fig.axes if ax.get_visible())
        if narrowest >= min_axes_inches - 0.05:
            return
        columns = len({round(ax.get_position().x0, 3) for ax in fig.axes if ax.get_visible()})
        fig.set_figwidth(fig.get_figwidth() + (min_axes_inches - narrowest) * columns + 0.1)


def _wrap(label: str, width: int = 46) -> str:
    """A long arm label on several lines (legends and category axes stay narrow), broken
    before a ``[tag]`` or an ``=`` first, so a tag stays whole."""
    pieces = [p for p in re.split(r" (?=\[|= )", label) if p]
    lines: list[str] = []
    for piece in pieces:
        if lines and len(lines[-1]) + 1 + len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines += textwrap.wrap(piece, width, break_on_hyphens=False) or [piece]
    return "\n".join(lines)


def _window_text(window: object) -> str:
    w = int(window)  # type: ignore[call-overload]
    return f"{w // 1000}k" if w % 1000 == 0 else f"{w:,}"


def _not_plotted(row) -> str:
    """Why an arm has no point: skipped (over its window: production would not send it), or
    no answered question."""
    n_skipped = getattr(row, "n_skipped", 0) or 0
    window = getattr(row, "context_window", None)
    if n_skipped and window is not None and np.isfinite(window):
        tokens = getattr(row, "tokens_skipped_context", float("nan"))
        size = f"{tokens:,.0f} tokens per question, " if np.isfinite(tokens) else ""
        return f"not sent ({size}over the {_window_text(window)} window)"
    if n_skipped:
        return f"skipped ({n_skipped} questions), no answer"
    return "no answered question"


def _has_point(frame: pd.DataFrame) -> pd.Series:
    return np.isfinite(frame["recall"].astype(float)) & \
        np.isfinite(frame["predicted_prompt_tokens"].astype(float))


def _draw_windows(ax, windows) -> None:
    """A labelled dotted vertical line at each context window the panel's arms were run at
    (the x axis is widened to show it)."""
    known = sorted({int(w) for w in windows if w is not None and np.isfinite(w)})
    top = blended_transform_factory(ax.transData, ax.transAxes)
    for window in known:
        ax.axvline(window, color="0.25", linestyle=":", linewidth=1.4, zorder=0,
                   label=f"context window {window:,}")
        ax.text(window, 0.985, f"{_window_text(window)} context window ", rotation=90, ha="right",
                va="top", fontsize=9, color="0.25", transform=top)
    if known:
        lo, hi = ax.get_xlim()
        ax.set_xlim(lo, max(hi, known[-1] * 1.25))


#: Distinct, dark-enough colours (tab10 without its grey, then the darker half of tab20b).
_PALETTE = [c for i, c in enumerate(plt.cm.tab10.colors) if i != 7] + \
    [plt.cm.tab20b.colors[i] for i in (0, 4, 8, 12, 16, 1, 5, 9, 13, 17)]


#: Marker per arm in line plots, so arms drawn on top of each other stay apart.
_MARKERS = "osD^vPX<>h"


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
    model, with the ranked arms' frontier.

    Ranked arms are filled and coloured, the others hollow grey (:mod:`evals.analysis.plot_marks`);
    each point carries its session-level interval and n. Each context window the arms ran at is
    a labelled dotted line; an arm with no point (``full`` skipped over the window) is named
    under the panel's title with the reason. The legend sits under the panels, clear of the
    title and the data.
    """
    summary = _with_billed(summary)
    with plt.rc_context(STYLE):
        groups = list(summary.groupby(["reader_id", "target_model"], sort=True))
        one_reader = summary["reader_id"].nunique() == 1
        fig, axes = _panels(len(groups), 6.4, 4.9)
        all_labels = _labels(summary)
        colors = _shape_colors(all_labels)
        handles: dict[str, tuple[object, tuple]] = {}
        for ax, ((reader, target), part) in zip(axes, groups):
            windows = (summary.loc[summary["target_model"] == target,
                                   "context_window"].astype(float)
                       if "context_window" in part else None)
            missing = _tokens_panel(fig, ax, part.sort_values("billed_tokens"), windows, colors,
                                    handles)
            title = target if one_reader else f"{target}\nanswers by {reader_label(reader)}"
            if missing:
                title += "\n" + "\n".join(textwrap.fill(m, 64) for m in missing)
            ax.set_title(title, fontsize=11)
        title = ("Recall versus billed tokens per question (the context plus its share of the "
                 "compaction calls)\nfilled: ranked arms, dashed: their Pareto frontier; "
                 f"{APART_NOTE}\nbars: {INTERVAL_NOTE}; dotted: the context window")
        if one_reader:
            title += f"\nanswers by {_readers_title(summary)}"
        fig.suptitle(title, fontsize=12)
        _widen(fig, 4.8)
        for ax in axes:
            _fit_log_ticks(fig, ax)
        fig.tight_layout()
        _legend_by_tokens(fig, handles)
    return fig


def _tokens_panel(fig: plt.Figure, ax, part: pd.DataFrame, windows: pd.Series | None,
                  colors: dict[str, tuple],
                  handles: dict[str, tuple[object, tuple]]) -> list[str]:
    """One model's panel of :func:`plot_recall_vs_tokens`: a point per arm (arms that sent one
    context share a point and a label), the ranked arms' Pareto frontier, the context windows
    (``windows``; None: not recorded), the axes. Returns the arms with no point, with why."""
    missing = [f"{label} not plotted: {_not_plotted(row)}" for label, row, drawn in
               zip(_labels(part), part.itertuples(), _has_point(part)) if not drawn]
    part = part[_has_point(part)]
    labels = dict(zip(part.index, _labels(part)))
    for idx in same_context_groups(part):  # one point for arms that sent one context
        labels[idx[0]] = " = ".join(labels[i] for i in idx)
        for i in idx[1:]:
            labels.pop(i)
    part = part.loc[[i for i in part.index if i in labels]]
    ranked = is_ranked(part)
    offsets = nudges(list(zip(part["billed_tokens"], part["recall"])))
    for (i, row), dx in zip(part.iterrows(), offsets):
        label, interval = labels[i], recall_interval(row)
        shift = ax.transData + ScaledTranslation(dx / 72, 0, fig.dpi_scale_trans)
        err = [[row.recall - interval.lo], [interval.hi - row.recall]]
        if ranked[i]:
            colors.setdefault(label, colors[label.split(" = ")[0]])
            style = dict(fmt="s" if row.strategy != "snapcompact" else "o",
                         color=colors[label], markersize=8)
        else:
            style = dict(fmt=APART_MARKERS.get(row.production, "D"), color=APART_COLOR,
                         markerfacecolor="none", markersize=8)
        key = f"{_wrap(label, 60)}\n({interval.text})"
        ax.update_datalim([(row.billed_tokens, interval.lo), (row.billed_tokens, interval.hi)])
        handles[key] = (ax.errorbar(row.billed_tokens, row.recall, yerr=err, capsize=3,
                                    elinewidth=1.2, transform=shift,
                                    label=key.replace("\n", " "), **style),
                        (0 if ranked[i] else 1, row.billed_tokens))
    front = part[ranked_frontier(part)].sort_values("billed_tokens")
    if len(front) > 1:  # one point is no line: nothing to name in the legend
        handles["Pareto frontier (ranked arms only)"] = (ax.step(
            front["billed_tokens"], front["recall"], where="post",
            color="0.35", linestyle="--", linewidth=1.2, zorder=0,
            label="Pareto frontier (ranked arms only)")[0], (2, 0.0))
    ax.set_xscale("log")
    ax.autoscale_view()  # the nudged points' transform leaves autoscaling to us
    _plain_log_axis(ax.xaxis)
    if windows is not None:
        _draw_windows(ax, windows)
    ax.set_xlabel("billed tokens per question: the whole compacted context\n"
                  "plus its share of the compaction calls (log scale)")
    ax.set_ylabel("recall (share of questions correct)")
    ax.set_ylim(-0.03, 1.03)
    ax.grid(True, which="major", alpha=0.3)
    return missing


def _legend_by_tokens(fig, handles: dict[str, tuple[object, tuple]]) -> None:
    """The figure's legend under the panels (clear of the title and the data): the ranked arms
    by their billed tokens (fewest first), then the arms drawn apart, then the frontier."""
    order = sorted(handles, key=lambda k: handles[k][1])
    top = min(ax.get_position().y0 for ax in fig.axes if ax.get_visible())
    fig.legend([handles[k][0] for k in order], order,
               loc="upper center", bbox_to_anchor=(0.5, max(top - 0.16, 0.0)), ncol=2,
               frameon=False, title="arm (ranked first, fewest tokens first)")


def plot_recall_by_shape(summary: pd.DataFrame) -> plt.Figure:
    """Recall with intervals per arm (rows), one marker per target model, one panel per reader.

    The ranked arms come first (fewest billed tokens first), then, under a line, the arms drawn
    apart (hollow grey); every point carries its session-level interval and n. Long arm labels
    wrap and widen the figure; an arm with no point says why in its row.
    """
    with plt.rc_context(STYLE):
        readers = sorted(summary["reader_id"].unique())
        height = max(4.0, 1.8 + 0.62 * len(set(_labels(summary))))
        fig, axes = _panels(len(readers), 9.0, height, max_cols=1)
        for ax, reader in zip(axes, readers):
            part = summary[summary["reader_id"] == reader].copy()
            part["label"] = _labels(part)
            order, n_ranked = arm_order(part)
            targets = sorted(part["target_model"].unique())
            step = 0.7 / max(len(targets), 1)
            named: set[str] = set()
            for k, target in enumerate(targets):
                rows = part[part["target_model"] == target]
                offset = (k - (len(targets) - 1) / 2) * step
                color = _PALETTE[k % len(_PALETTE)]
                for i, row in rows[_has_point(rows)].iterrows():
                    interval, ranked = recall_interval(row), bool(is_ranked(rows)[i])
                    y = order.index(row["label"]) + offset
                    ax.errorbar(row["recall"], y, capsize=3, markersize=6,
                                xerr=[[row["recall"] - interval.lo], [interval.hi - row["recall"]]],
                                fmt="o" if ranked else APART_MARKERS.get(row["production"], "D"),
                                color=color if ranked else APART_COLOR,
                                markerfacecolor=color if ranked else "none",
                                label=target if ranked and target not in named else None)
                    if ranked:
                        named.add(target)
                    ax.text(max(interval.hi, row["recall"]) + 0.015, y, interval.text,
                            va="center", fontsize=8.5, color="0.25")
                for row in rows[~_has_point(rows)].itertuples():
                    note = _not_plotted(row) + (f" ({target})" if len(targets) > 1 else "")
                    ax.text(0.01, order.index(row.label) + offset, note, va="center",
                            fontsize=9, color="0.3", style="italic")
            ax.set_yticks(range(len(order)))
            ax.set_yticklabels([_wrap(label, 40) for label in order])
            for tick in ax.get_yticklabels()[n_ranked:]:
                tick.set_color(APART_COLOR)
            apart_divider(ax, n_ranked, len(order))
            ax.set_ylim(len(order) - 0.5, -0.5)
            ax.set_xlim(-0.02, 1.02)
            ax.set_xlabel("recall (share of questions correct)")
            ax.set_ylabel("arm (ranked first; fewest billed tokens first)")
            ax.grid(True, axis="x", alpha=0.3)
            ax.set_title(f"Recall by arm: {INTERVAL_NOTE}\n{APART_NOTE}\n"
                         f"answers by {reader_label(reader)}")
            ax.legend(title="target model (ranked arms)", loc="upper left",
                      bbox_to_anchor=(1.02, 1.0), borderaxespad=0, frameon=False)
        _widen(fig, 5.0)
    return fig


def plot_billing_drift(records: pd.DataFrame) -> plt.Figure | None:
    """Provider-reported minus predicted prompt tokens per request, relative to the prediction.

    None when no request carries provider-reported tokens (the offline reader reports none):
    an empty figure is not drawn.
    """
    ok = records[records["ok"]]
    have = ok[ok["reported_prompt_tokens_by_provider"].notna()]
    if have.empty:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.5, 5.0))
        markers = "osD^vP*X"
        several = have["reader_id"].nunique() > 1
        groups = have.groupby(["reader_id", "target_model"], sort=True)
        for k, ((reader, target), part) in enumerate(groups):
            drift = 100 * (part["reported_prompt_tokens_by_provider"]
                           / part["predicted_prompt_tokens"] - 1)
            name = f"{target} via {reader}" if several else target
            ax.scatter(part["predicted_prompt_tokens"], drift, s=36, marker=markers[k % 8],
                       facecolors="none", edgecolors=_PALETTE[k % len(_PALETTE)],
                       linewidths=1.3, label=f"{name} (median {drift.median():+.1f} %, "
                       f"n = {len(part):,} requests)")
        ax.axhline(0, color="0.3", linestyle="--", linewidth=1, label="reported = predicted")
        ax.set_xscale("log")
        _plain_log_axis(ax.xaxis)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(title="target model", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0, frameon=False)
        ax.set_xlabel("predicted prompt tokens per request (log scale)")
        ax.set_ylabel("reported / predicted - 1 (%)")
        ax.set_title(f"Billing drift: provider-reported versus predicted prompt tokens\n"
                     f"answers by {_readers_title(have)}")
        fig.tight_layout()
    return fig


def plot_recall_by_round(records: pd.DataFrame) -> plt.Figure:
    """Recall per arm against the compaction round that discarded the evidence (0 = kept).

    Two panels per reader and target: the ranked arms, then the arms drawn apart (bounds,
    stand-ins, not sent); every point carries its interval (over sessions; one session: Wilson
    over its questions) and each legend entry the n of every bucket.
    """
    with plt.rc_context(STYLE):
        table = recall_by_round(records)
        table = table.assign(arm_label=[label + _TAGS.get(status, "") for label, status in
                                        zip(table["arm_label"], table["production"])])
        groups = [(key, part, ranked) for key, part in
                  table.groupby(["reader_id", "target_model"], sort=True)
                  for ranked in (True, False) if (is_ranked(part) == ranked).any()]
        fig, axes = _panels(max(len(groups), 1), 7.5, 4.4, max_cols=1)
        colors = _shape_colors(sorted(table["arm_label"].unique()))
        for ax, ((reader, target), part, ranked) in zip(axes, groups):
            buckets = (part[["round_lo", "evidence_rounds"]].drop_duplicates()
                       .sort_values("round_lo"))
            _round_panel(ax, part[is_ranked(part) == ranked], list(buckets["evidence_rounds"]),
                         colors, ranked)
            what = ("ranked arms" if ranked else "not ranked: bounds, stand-in summaries, "
                    "not sent by production (hollow, dashed)")
            ax.set_title(f"{target}: {what}\nanswers by {reader_label(reader)}", fontsize=11)
        if not groups:
            axes[0].text(0.5, 0.5, "no question-answering records", ha="center", va="center")
        fig.suptitle(f"Recall by where the answer was\n{INTERVAL_NOTE}", fontsize=12)
        _widen(fig, 5.5)
        for ax in axes:
            _fit_category_ticks(fig, ax)
        fig.tight_layout()
    return fig


def _round_panel(ax, part: pd.DataFrame, buckets: list[str], colors: dict[str, tuple],
                 ranked: bool) -> None:
    """One panel of :func:`plot_recall_by_round`: a line per arm, nudged apart so equal
    recalls stay visible, each point with its interval; the legend names each bucket's n."""
    position = {b: i for i, b in enumerate(buckets)}
    arms = sorted(part["arm_label"].unique())
    for k, label in enumerate(arms):
        rows = part[part["arm_label"] == label].sort_values("round_lo")
        nudge = 0.24 * (k - (len(arms) - 1) / 2) / max(len(arms) - 1, 1)
        x = [position[b] + nudge for b in rows["evidence_rounds"]]
        ns = ", ".join(f"{b}: {n}" for b, n in zip(rows["evidence_rounds"], rows["n"]))
        sessions = int(rows["n_sessions"].max()) if "n_sessions" in rows else 0
        color = colors[label]  # the panel sets the arms apart: they keep their colours
        ax.errorbar(x, rows["recall"], yerr=[rows["recall"] - rows["recall_lo"],
                                             rows["recall_hi"] - rows["recall"]],
                    marker=_MARKERS[k % len(_MARKERS)], markersize=6, capsize=2.5,
                    color=color, markerfacecolor=color if ranked else "none",
                    linestyle="-" if ranked else "--", linewidth=1.3, elinewidth=0.9,
                    label=f"{_wrap(label, 52)}\n({sessions} session{'s' if sessions != 1 else ''}; "
                          f"n per bucket:\n{textwrap.fill(ns, 52)})")
    ax.set_xticks(range(len(position)))
    ax.set_xticklabels(list(position))
    ax.set_xlabel("compaction that discarded the evidence (evidence_round)\n"
                  "0 = still in the kept tail; rounds in doubling buckets")
    ax.set_ylabel("recall")
    ax.set_ylim(-0.03, 1.03)
    ax.grid(True, alpha=0.3)
    handles, names = ax.get_legend_handles_labels()
    ax.legend(handles, names, loc="upper left", fontsize=9,
              bbox_to_anchor=(1.02, 1.0), borderaxespad=0, frameon=False)


def plot_recall_per_1k(summary: pd.DataFrame) -> plt.Figure:
    """Recall per 1k billed tokens (compaction calls included), one bar per arm, per target
    model: the ranked arms sorted first (most per token on top), the others apart under a line
    as hollow grey bars; each bar with its interval (the recall's, over the billed tokens) and a
    label giving the ratio, the recall, the tokens and n. The title says what a ratio rewards:
    low recall at low cost scores high."""
    summary = _with_billed(summary)
    with plt.rc_context(STYLE):
        groups = list(summary.groupby(["reader_id", "target_model"], sort=True))
        height = max(3.5, 2.2 + 0.7 * len(set(_labels(summary))))
        fig, axes = _panels(max(len(groups), 1), 9.0, height, max_cols=1)
        for ax, ((reader, target), part) in zip(axes, groups):
            _ratio_panel(ax, part.assign(label=_labels(part)))
            ax.set_title(f"Recall per 1k billed tokens (the question's context plus its share "
                         f"of the compaction calls): {target}\n"
                         "a ratio: low recall at low cost scores high; read it beside recall "
                         "versus billed tokens\n(the winner rule ranks it only among arms whose "
                         f"recall is not significantly below the best)\n{APART_NOTE}\n"
                         f"answers by {reader_label(reader)}", fontsize=11)
        _widen(fig, 5.0)
    return fig


def _ratio_panel(ax, part: pd.DataFrame) -> None:
    """The bars of one :func:`plot_recall_per_1k` panel (``part`` carries ``label``)."""
    ranked = is_ranked(part)
    ordered = pd.concat([part[ranked].sort_values("recall_per_1k_tokens", ascending=False),
                         part[~ranked].sort_values("billed_tokens")])
    top = 0.0
    for k, (i, row) in enumerate(ordered.iterrows()):
        value = row["recall_per_1k_tokens"]
        if not np.isfinite(value):
            ax.text(0, k, f"  {_not_plotted(row)}", va="center", fontsize=9)
            continue
        interval = recall_interval(row)
        scale = 1000 / row["billed_tokens"]
        ax.barh(k, value, xerr=[[value - interval.lo * scale], [interval.hi * scale - value]],
                capsize=3, color=_PALETTE[0] if ranked[i] else "none",
                edgecolor=_PALETTE[0] if ranked[i] else APART_COLOR,
                hatch=None if ranked[i] else "//", error_kw={"ecolor": "0.2"})
        top = max(top, interval.hi * scale, value)
        ax.text(max(interval.hi * scale, value), k,
                f"  {value:.3g} = recall {row['recall']:.3f} / "
                f"{row['billed_tokens'] / 1000:,.1f}k tok\n  ({interval.text})",
                va="center", fontsize=9)
    ax.set_yticks(range(len(ordered)), [_wrap(label, 40) for label in ordered["label"]])
    for tick in ax.get_yticklabels()[int(ranked.sum()):]:
        tick.set_color(APART_COLOR)
    apart_divider(ax, int(ranked.sum()), len(ordered))
    ax.set_ylim(len(ordered) - 0.5, -0.5)
    ax.set_xlim(0, 2.1 * max(top, 1e-3))
    ax.set_xlabel("recall per 1k billed tokens (context + share of compaction calls)")
    ax.grid(True, axis="x", alpha=0.3)


def write_plots(summary: pd.DataFrame, records: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Draw every figure to ``out_dir`` as PNG; returns the paths written. A figure with nothing
    to show (billing drift without provider-reported tokens) is not written, and a stale file of
    that name is removed."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = with_session_intervals(summary, records)
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
        if fig is None:
            path.unlink(missing_ok=True)
            continue
        fig.savefig(path, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    """``python -m evals.analysis.plot RESULTS_DIR...``: redraw ``RESULTS_DIR/plots`` from the
    committed ``summary.parquet`` and ``records.parquet`` (no run folder needed)."""
    import argparse

    from evals.analysis.aggregate import read_table

    parser = argparse.ArgumentParser(prog="python -m evals.analysis.plot",
                                     description=main.__doc__)
    parser.add_argument("results", nargs="+", type=Path,
                        help="folders holding summary.parquet and records.parquet")
    for folder in parser.parse_args(argv).results:
        paths = write_plots(read_table(folder / "summary.parquet"),
                            read_table(folder / "records.parquet"), folder / "plots")
        print("\n".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    raise SystemExit(main())
