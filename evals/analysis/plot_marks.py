"""How an arm is marked in a figure: compared (ranked) or drawn apart, and the interval it carries.

Why a module: every figure must tell the same story about an arm as the tables do. Only ranked
arms (production sends their context: ``valid``, or recorded before that verdict existed) are
compared: they are drawn filled and in colour, sorted first, and only they are placed on a
frontier. Bounds (``full`` / ``truncate``), stand-in summaries and contexts production would not
send are drawn hollow and grey, after the ranked ones, so none of them can lead a sorted chart or
read as a contender. Every compared mark carries the interval a comparison rests on: a cluster
bootstrap over sessions (:func:`evals.analysis.summary.session_recall`), widened where it is
narrower than the Wilson interval over the questions (two or three sessions give a bootstrap only
a handful of distinct resamples: 0 of 13 would read as the interval [0, 0]); an arm measured on
one session has no between-session spread, so it carries the Wilson interval over its questions
and says so. And every mark says its n (sessions, questions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.transforms import blended_transform_factory

from evals.analysis.aggregate import (
    PRODUCTION_BOUND,
    PRODUCTION_NOT_SENT,
    PRODUCTION_RANKED,
    PRODUCTION_STAND_IN,
)
from evals.analysis.summary import pareto_mask

__all__ = ["APART_COLOR", "APART_MARKERS", "APART_NOTE", "INTERVAL_NOTE", "Interval",
           "apart_divider", "arm_order", "is_ranked", "joined_interval", "nudges",
           "ranked_frontier", "recall_interval"]

#: The colour of every arm drawn apart (never ranked): hollow marks in it.
APART_COLOR = "0.5"
#: Marker per verdict of an arm drawn apart.
APART_MARKERS = {PRODUCTION_BOUND: "s", PRODUCTION_STAND_IN: "^", PRODUCTION_NOT_SENT: "X"}
#: The words a figure uses for the arms drawn apart.
APART_NOTE = "hollow grey: bounds, stand-in summaries, not sent by production (never ranked)"
#: The words a figure uses for its intervals.
INTERVAL_NOTE = ("95 % intervals over sessions, never narrower than Wilson's over the questions "
                 "(one session: Wilson's)")


def is_ranked(frame: pd.DataFrame) -> pd.Series:
    """Whether each row is a ranked arm (a table without the verdict: every row)."""
    if "production" not in frame:
        return pd.Series(True, index=frame.index)
    return frame["production"].isin(PRODUCTION_RANKED)


def ranked_frontier(part: pd.DataFrame, cost: str = "billed_tokens") -> pd.Series:
    """The Pareto frontier of ``part`` over its ranked arms only (the others are never on it)."""
    ranked = is_ranked(part)
    mask = pd.Series(False, index=part.index)
    if ranked.any():
        rows = part[ranked]
        mask[rows.index] = pareto_mask(rows[cost].to_numpy(float), rows["recall"].to_numpy(float))
    return mask


@dataclass(frozen=True)
class Interval:
    """A recall's 95 % interval, what it is over, and its n."""

    lo: float
    hi: float
    n_sessions: int
    n_questions: int
    over_sessions: bool

    @property
    def text(self) -> str:
        """``n = 23 sessions, 918 q`` (one session: says the interval is over its questions)."""
        sessions = f"{self.n_sessions} session{'s' if self.n_sessions != 1 else ''}"
        if self.n_sessions and not self.over_sessions:
            return f"n = {sessions}, {self.n_questions} q: Wilson over questions"
        return f"n = {sessions}, {self.n_questions} q"


def _count(value: object) -> int:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0
    return int(number) if math.isfinite(number) else 0


def joined_interval(session: tuple[float, float], wilson: tuple[float, float],
                    n_sessions: int) -> tuple[float, float, bool]:
    """The interval drawn: the session bootstrap's widened to Wilson's where narrower (two or
    more sessions), else Wilson's; and whether it is over sessions."""
    if n_sessions >= 2 and all(np.isfinite(session)):
        return min(session[0], wilson[0]), max(session[1], wilson[1]), True
    return wilson[0], wilson[1], False


def recall_interval(row: object) -> Interval:
    """The interval a summary row's recall is compared with (:func:`joined_interval` of
    ``recall_session_lo`` / ``_hi`` and the Wilson ``recall_lo`` / ``_hi``)."""
    sessions = _count(getattr(row, "n_sessions", 0))
    lo, hi, over = joined_interval(
        (float(getattr(row, "recall_session_lo", np.nan)),
         float(getattr(row, "recall_session_hi", np.nan))),
        (float(getattr(row, "recall_lo", np.nan)), float(getattr(row, "recall_hi", np.nan))),
        sessions)
    return Interval(lo, hi, sessions, _count(getattr(row, "n_questions", 0)), over)


def arm_order(part: pd.DataFrame) -> tuple[list[str], int]:
    """Arm labels, the ranked ones first then the ones drawn apart, each fewest billed tokens
    first; and how many are ranked."""
    tokens = part.groupby("label")["predicted_prompt_tokens"].mean()
    ranked = set(part.loc[is_ranked(part), "label"])
    first = [lbl for lbl in tokens.sort_values().index if lbl in ranked]
    return first + [lbl for lbl in tokens.sort_values().index if lbl not in ranked], len(first)


def apart_divider(ax, n_ranked: int, n_all: int) -> None:
    """A line between the ranked rows and the rows drawn apart, with the latter's name."""
    if 0 < n_ranked < n_all or (n_ranked == 0 and n_all):
        at = n_ranked - 0.5
        ax.axhline(at, color="0.3", linewidth=0.8)
        ax.text(0.99, at + 0.08, "not ranked: bounds, stand-ins, not sent", ha="right",
                va="top", fontsize=9, color="0.3", style="italic",
                transform=blended_transform_factory(ax.transAxes, ax.transData))


def nudges(points: list[tuple[float, float]], step: float = 7.0) -> list[float]:
    """A horizontal offset (points) per point, so points drawn on one spot sit side by side:
    each point near an earlier group's first point (tokens within 3 %, recall within 0.06)
    takes the next place in that group."""
    groups: list[list] = []  # [x, y, members so far]
    out: list[float] = []
    for x, y in points:
        group = next((g for g in groups if abs(math.log(x / g[0])) < 0.03
                      and abs(y - g[1]) < 0.06), None)
        if group is None:
            groups.append([x, y, 1])
            out.append(0.0)
        else:
            out.append(step * group[2])
            group[2] += 1
    return out
