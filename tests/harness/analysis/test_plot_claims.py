"""Every figure drawn for its claim (issue 43): only ranked arms are ranked or on a frontier, the
others drawn hollow grey and never first; compared marks carry their interval and n; an oracle
is never on a "difference from production" axis; a pooled row never stands beside its subsets.

Expected values are worked by hand from the fixtures' definitions (``record_rows``): per target,
``auto`` 200k 7/40 correct at 59,508 tokens, ``8on22-bw`` 200k 7/40 at 59,699, ``auto`` 32k 0/40 at
16,626 (all valid), pinned 15/40 at 118,452 (not sent), ``truncate`` 6/40 at 48,775 (bound); four
questions per item, so 40 questions are 10 sessions.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from record_rows import agent_run_records, base_record, frame  # noqa: E402

from evals.analysis.plot import (  # noqa: E402
    plot_recall_by_round,
    plot_recall_by_shape,
    plot_recall_per_1k,
    plot_recall_vs_tokens,
)
from evals.analysis.plot_marks import joined_interval, nudges  # noqa: E402
from evals.analysis.recall_breakdown import recall_by_round  # noqa: E402
from evals.analysis.research_plot import plot_research_compare  # noqa: E402
from evals.analysis.summary import (  # noqa: E402
    SESSION_COLUMNS,
    session_recall,
    summarize,
    with_session_intervals,
)

CLAUDE = "anthropic/claude-sonnet-4-5"


@pytest.fixture(scope="module")
def agent():
    df = frame(agent_run_records())
    return df, summarize(df, n_boot=200)


def _claude(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["target_model"] == CLAUDE]


def test_the_frontier_runs_through_ranked_arms_only(agent) -> None:
    _, summary = agent
    # ranked: (16,626, 0.0), (59,508, 0.175), (59,699, 0.175, dominated): the bound truncate
    # (48,775, 0.15) would sit on a frontier of every arm, and is not on this one
    part = _claude(summary).set_index("billed_tokens")
    assert sorted(part.index[part["on_frontier"]]) == [16_626, 59_508]
    fig = plot_recall_vs_tokens(_claude(summary))
    steps = [line for ax in fig.axes for line in ax.lines
             if str(line.get_label()).startswith("Pareto frontier")]
    assert len(steps) == 1
    assert sorted(set(steps[0].get_xdata())) == [16_626, 59_508]
    plt.close(fig)


def test_arms_never_ranked_are_hollow_grey_points_with_their_n(agent) -> None:
    _, summary = agent
    fig = plot_recall_vs_tokens(_claude(summary))
    points = {c.get_label(): c.lines[0] for ax in fig.axes for c in ax.containers}
    pinned = next(v for k, v in points.items() if k.startswith("snapcompact pinned auto"))
    truncate = next(v for k, v in points.items() if k.startswith("truncate"))
    valid = next(v for k, v in points.items() if k.startswith("snapcompact foveated auto @200k"))
    for apart in (pinned, truncate):
        assert to_rgba(apart.get_markerfacecolor())[3] == 0  # hollow
        assert to_rgba(apart.get_markeredgecolor())[:3] == pytest.approx((0.5, 0.5, 0.5))
    assert to_rgba(valid.get_markerfacecolor())[3] == 1
    # every compared point says its n: 40 questions, four per item
    assert all("(n = 10 sessions, 40 q)" in label for label in points)
    plt.close(fig)


def test_recall_by_arm_lists_the_ranked_arms_first(agent) -> None:
    _, summary = agent
    fig = plot_recall_by_shape(_claude(summary))
    ax = fig.axes[0]
    labels = [t.get_text().replace("\n", " ") for t in ax.get_yticklabels()]
    # ranked by billed tokens (16,626; 59,508; 59,699), then the others by theirs (truncate
    # 48,775, pinned 118,452, full 352,110): truncate no longer sits among the ranked arms
    assert labels == ["snapcompact foveated auto @32k", "snapcompact foveated auto @200k",
                      "snapcompact foveated 8on22-bw @200k", "truncate @200k [bound]",
                      "snapcompact pinned auto @200k [not sent by production]",
                      "full @200k [bound]"]
    colours = [to_rgba(t.get_color())[:3] for t in ax.get_yticklabels()]
    assert colours[3:] == [pytest.approx((0.5, 0.5, 0.5))] * 3
    notes = [t.get_text() for t in ax.texts]
    assert notes.count("n = 10 sessions, 40 q") == 5  # every drawn point; full has none
    plt.close(fig)


def test_a_summary_written_before_the_session_intervals_gets_them_from_records(agent) -> None:
    df, summary = agent
    old = summary.drop(columns=SESSION_COLUMNS)
    again = with_session_intervals(old, df, n_boot=200)
    assert list(again.index) == list(summary.index)
    # 40 questions, four per item; full (skipped over the window) answered none
    answered = again["n_questions"] > 0
    assert (again.loc[answered, "n_sessions"] == 10).all()
    assert (again.loc[~answered, "n_sessions"] == 0).all() and (~answered).sum() == 2
    pd.testing.assert_frame_equal(again[SESSION_COLUMNS], summary[SESSION_COLUMNS])


def _top_label(ax) -> str:
    """The category label drawn highest on the panel (whatever the axis direction)."""
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    return max(labels, key=lambda t: t.get_window_extent().y0).get_text().replace("\n", " ")


def test_the_ratio_chart_is_led_by_a_ranked_arm_and_its_labels_differ(agent) -> None:
    _, summary = agent
    # by recall per 1k tokens the not-sent pinned arm (15/40 over 118,452: 0.00317) beats every
    # valid arm (7/40 over 59,508: 0.00294); it must still come after them
    fig = plot_recall_per_1k(_claude(summary))
    ax = fig.axes[0]
    fig.canvas.draw()
    assert _top_label(ax) == "snapcompact foveated auto @200k"
    apart = [p for p in ax.patches if to_rgba(p.get_facecolor())[3] == 0]
    assert len(apart) == 2  # truncate and pinned; full has no bar
    texts = [t.get_text() for t in ax.texts if "= recall" in t.get_text()]
    ratios = sorted(t.split("=")[0].strip() for t in texts)
    assert ratios == ["0", "0.00293", "0.00294", "0.00308", "0.00317"]
    title = ax.get_title()
    assert "low recall at low cost scores high" in title and "compaction calls" in title
    plt.close(fig)


def test_recall_by_round_sets_the_unranked_arms_apart_with_n_and_intervals() -> None:
    rows = [base_record().with_fields(item_id="s1", question_id=f"q{k}", correct=k == 0,
                                      evidence_round=1, production_valid=True,
                                      strategy="snapcompact", policy="foveated",
                                      shape_requested="auto", context_window=200_000)
            for k in range(4)]
    rows += [r.with_fields(policy="pinned", production_valid=False) for r in rows]
    table = recall_by_round(frame(rows))
    # one session, 1 of 4 correct: Wilson's 95 % interval, worked by hand
    valid = table[table["production"] == "valid"].iloc[0]
    assert (valid["n"], valid["n_sessions"]) == (4, 1)
    assert valid["recall_lo"] == pytest.approx(0.0456, abs=1e-3)
    assert valid["recall_hi"] == pytest.approx(0.6994, abs=1e-3)
    fig = plot_recall_by_round(frame(rows))
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert len(titles) == 2 and "ranked arms" in titles[0] and "not ranked" in titles[1]
    ranked_legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(ranked_legend) == 1 and "pinned" not in ranked_legend[0]
    assert "n per bucket" in ranked_legend[0] and "1: 4" in ranked_legend[0]
    plt.close(fig)


def test_a_session_interval_is_never_narrower_than_wilson_and_one_session_has_none() -> None:
    assert joined_interval((0.0, 0.0), (0.0, 0.2277), 2) == (0.0, 0.2277, True)
    assert joined_interval((0.1, 0.5), (0.15, 0.4), 9) == (0.1, 0.5, True)
    assert joined_interval((math.nan, math.nan), (0.05, 0.7), 1) == (0.05, 0.7, False)
    # unequal sessions: one question right in s1, three wrong in s2 -> 1/4, two sessions
    scores = pd.DataFrame({"correct": [1.0, 0.0, 0.0, 0.0]}, index=pd.MultiIndex.from_tuples(
        [("d", "s1", "q0"), ("d", "s2", "q1"), ("d", "s2", "q2"), ("d", "s2", "q3")],
        names=["dataset", "item_id", "question_id"]))
    got = session_recall(scores, 200, 0, 0.05)
    assert (got.mean, got.n_sessions, got.n_questions) == (0.25, 2, 4)


def test_points_on_one_spot_are_set_side_by_side() -> None:
    # the second and fourth are near the first (tokens within 3 %, recall within 0.06), the
    # third is far above it: the first group takes places 0, 1, 2; the third stays put
    points = [(100_000, 0.20), (101_000, 0.21), (100_000, 0.50), (102_000, 0.25)]
    assert nudges(points, step=7.0) == [0.0, 7.0, 0.0, 14.0]


def _compare_row(research, subset, sessions, recall, diff, tokens, diff_tokens):
    return {"research": research, "arm": "foveated auto @200k", "subset": subset,
            "sessions": sessions, "discarded": 10 * sessions, "recall_discarded": recall,
            "recall_discarded_lo": recall - 0.02, "recall_discarded_hi": recall + 0.02,
            "recall_interval": "session bootstrap", "diff_recall": diff,
            "diff_recall_lo": diff - 0.01, "diff_recall_hi": diff + 0.01,
            "diff_on_baseline_discarded": diff, "diff_on_baseline_discarded_lo": diff - 0.01,
            "diff_on_baseline_discarded_hi": diff + 0.01, "billed_tokens": tokens,
            "diff_billed_tokens": diff_tokens, "diff_billed_tokens_lo": diff_tokens - 500,
            "diff_billed_tokens_hi": diff_tokens + 500, "answered_by": "snapocr"}


def test_the_held_out_figure_draws_subsets_not_pools_and_no_oracle_difference() -> None:
    nan, top = math.nan, "production (perfect summarizer)"
    compare = pd.DataFrame([
        _compare_row("production", "all", 40, 0.10, nan, 90_000, nan),
        _compare_row(top, "all", 17, 0.26, 0.23, 103_668, 160),
        _compare_row("recommended", "all", 40, 0.22, 0.07, 88_640, -1_390),
        _compare_row("production", "production stand-in", 17, 0.03, nan, 103_509, nan),
        _compare_row("production", "production valid", 23, 0.14, nan, 80_046, nan),
        _compare_row(top, "production stand-in", 17, 0.26, 0.23, 103_668, 160),
        _compare_row("recommended", "production stand-in", 17, 0.20, 0.03, 90_737, -12_772),
        _compare_row("recommended", "production valid", 23, 0.23, 0.09, 87_087, 7_041),
        _compare_row("production", f"vs {top}", 17, 0.03, -0.23, 103_509, -160),
    ])
    fig = plot_research_compare(compare)
    left, middle, right = fig.axes[:3]
    labels = [t.get_text().split("\n") for t in left.get_yticklabels()]
    # the valid sessions first (the claim's), the pooled "all" rows and the bracket left out
    assert [(lbl[0], lbl[2]) for lbl in labels] == [
        ("production", "sessions: production valid"),
        ("recommended", "sessions: production valid"),
        ("production", "sessions: production stand-in"),
        ("recommended", "sessions: production stand-in"),
        (top, "sessions: production stand-in")]
    assert labels[4][3] == "n = 17 sessions, 170 q discarded"
    # differences from production: the research label's only, never the oracle's +0.23
    middle_x = sorted({round(float(x), 3) for c in middle.containers
                       for x in c.lines[0].get_xdata()})
    assert middle_x == [0.03, 0.09]
    right_x = sorted(float(x) for c in right.containers for x in c.lines[0].get_xdata())
    assert right_x == [-12_772, 7_041]
    assert to_rgba(left.patches[4].get_facecolor())[3] == 0  # the oracle's bar is hollow
    plt.close(fig)


def test_two_rows_of_one_arm_say_which_drew_frames_and_which_sent_text_only():
    # the main job at 32k: one session's contexts carried no frame (arm "text"), the other's one
    # 8on16-bw frame (arm "image"); both stand-ins of "snapcompact foveated auto @32k". Their
    # labels must differ and say which is which (before: both read "(frames: 8on16-bw)").
    from evals.analysis.plot import _labels

    rows = pd.DataFrame([
        {"reader_id": "snapocr", "target_model": "claude-sonnet-4-5", "strategy": "snapcompact",
         "policy": "foveated", "shape": "8on16-bw", "frame_size": 1568,
         "shape_requested": "auto", "context_window": 32000, "research": "production",
         "production": "stand-in", "arm": arm} for arm in ("text", "image")])
    assert _labels(rows) == [
        "snapcompact foveated auto @32k [stand-in summary] (text-only context)",
        "snapcompact foveated auto @32k [stand-in summary] (frames: 8on16-bw)"]
