"""The figure "where snapcompact pays": characters per billed token, text vs frames, by content.

Why a figure beside the table (``evals.analysis.frame_pay``): the table has one row per session,
model line and content type; the question it answers -- on which content do frames carry more
characters per billed token than text? -- reads at a glance as bars. One panel per model line;
per content type a bar for text and one per shape, each pooled over the sessions as their total
characters over their total billed tokens (:func:`pooled`, not a mean of ratios: a short session
weighs what its characters weigh). A shape's bar above the text bar pays on that content.

``python -m evals.analysis.frame_pay SESSION... --out DIR`` draws it as
``DIR/where_snapcompact_pays.png``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The rows are ``evals.analysis.frame_pay.PayRow`` (not imported: frame_pay draws this figure)
PayRow = Any

#: (model line, content type) -> ("text" or a shape -> pooled characters per billed token)
Pooled = dict[tuple[str, str], dict[str, float]]


def pooled(rows: Sequence[PayRow], shapes: Sequence[str]) -> Pooled:
    """Characters per billed token pooled over sessions: sum of characters over sum of tokens
    (each row's tokens are its characters over its ratio)."""
    sums: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in rows:
        cell = sums.setdefault((r.line, r.content), {})
        for name, ratio in (("text", r.text_chars_per_token),
                            *((s, r.frame_chars_per_token[s]) for s in shapes)):
            chars_tokens = cell.setdefault(name, [0.0, 0.0])
            chars_tokens[0] += r.chars
            chars_tokens[1] += r.chars / ratio
    return {key: {name: c / t for name, (c, t) in cell.items()} for key, cell in sums.items()}


def write_figure(rows: Sequence[PayRow], path: Path, shapes: Sequence[str]) -> Pooled:
    """Draw the figure into ``path`` (PNG); return the pooled values it plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = pooled(rows, shapes)
    lines = list(dict.fromkeys(r.line for r in rows))
    contents = list(dict.fromkeys(r.content for r in rows))
    names = ["text", *shapes]
    fig, axes = plt.subplots(1, len(lines), figsize=(4.5 * len(lines), 4), squeeze=False,
                             sharey=True)
    width = 0.8 / len(names)
    for ax, line in zip(axes[0], lines):
        for i, name in enumerate(names):
            heights = [values.get((line, c), {}).get(name, 0.0) for c in contents]
            ax.bar([x + i * width for x in range(len(contents))], heights, width,
                   label=name, color="black" if name == "text" else None)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(contents))], contents)
        ax.set_title(line)
    axes[0][0].set_yscale("log")  # text ~3, dense resized frames ~100: one axis for both
    axes[0][0].set_ylabel("characters per billed token (log)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(names), fontsize="small")
    fig.suptitle("Where snapcompact pays: a shape's bar above the black text bar carries more "
                 "characters per billed token", fontsize="medium")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return values
