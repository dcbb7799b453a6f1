"""The research comparison rebuilt from its committed per-session figures.

Why: the held-out comparison (``results/research/research_compare.md``) was made from runs that
lived outside the repository; their per-question rows were never committed, only
``research_sessions.csv`` (each session's own figures per label). Everything the comparison
states that is a sum over a session's questions (recall, recall on the label's *own* discarded
facts, billed tokens, the compaction share, and the paired differences of recall and tokens over
the questions both labels were asked, when they were asked the same questions) is a function of
those per-session sums, and the session-level (cluster) bootstrap
(:mod:`evals.analysis.session_bootstrap`) only reads per-session sums and counts: so it is
re-derived here to the digit. What pairs *questions* across labels (a label's recall on the
facts the *baseline* lost) is not: those cells are left empty (NaN) and the table says why,
instead of quoting a figure nothing committed can reproduce.

Per question 0/1 scores are rebuilt as ``hits`` ones and ``n - hits`` zeros per session (their
sum and count are all the bootstrap reads), and a per-session difference of sums as one value
per question whose sum is that difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from evals.analysis.intervals import wilson_interval
from evals.analysis.research_rows import ResearchRow, ceiling_label
from evals.analysis.session_bootstrap import session_mean

__all__ = ["WITHHELD", "rows_from_sessions"]

#: what the markdown says about the cells this module cannot re-derive
WITHHELD = ("Built from `research_sessions.csv` (per-session figures): the per-question rows of "
            "these runs were not committed, so a label's recall on the facts the other label "
            "lost (which pairs questions) cannot be re-derived and is left empty; so is `fits` "
            "(not in the per-session table).")

Session = tuple[str, int, str]


def _key(r: pd.Series) -> Session:
    return (str(r["dataset"]), int(r["seed"]), str(r["item_id"]))


def _count(share: float, n: int) -> int:
    """The integer count behind a per-session share (``hits / n``)."""
    return 0 if n == 0 or math.isnan(share) else int(round(share * n))


def _expand(counts: Sequence[tuple[Session, int, float]]) -> tuple[list[Session], list[float]]:
    """(session, n, sum) -> one value per question whose per-session sum and count are those."""
    keys: list[Session] = []
    values: list[float] = []
    for session, n, total in counts:
        if n == 0:
            continue
        keys += [session] * n
        values += [total] + [0.0] * (n - 1)
    return keys, values


def _ones(counts: Sequence[tuple[Session, int, int]]) -> tuple[list[Session], list[float]]:
    """(session, n, hits) -> ``hits`` ones and ``n - hits`` zeros per session."""
    keys: list[Session] = []
    values: list[float] = []
    for session, n, hits in counts:
        keys += [session] * n
        values += [1.0] * hits + [0.0] * (n - hits)
    return keys, values


def _own_row(label: str, arm: str, part: pd.DataFrame, subset: str, n_boot: int,
             seed: int) -> ResearchRow:
    """A label's own figures over its sessions in ``part`` (one row per session)."""
    n = part["questions"].astype(int)
    disc = part["discarded"].fillna(0).astype(int)
    hits = [_count(s, d) for s, d in zip(part["recall_discarded"], disc, strict=True)]
    sessions = [_key(r) for _, r in part.iterrows()]
    total_disc = int(disc.sum())
    disc_sessions = [(s, d, h) for s, d, h in zip(sessions, disc, hits, strict=True) if d]
    if len(disc_sessions) >= 2:
        spread = session_mean(*_ones(disc_sessions), n_boot=n_boot, seed=seed)
        lo, hi, how = spread.lo, spread.hi, "session bootstrap"
    else:
        lo, hi = wilson_interval(sum(hits) / total_disc if total_disc else 0.0, total_disc)
        how = "Wilson (1 session)" if total_disc else ""
    verdicts: dict[str, int] = {}
    for v, q in zip(part["verdict"], n, strict=True):
        verdicts[str(v)] = verdicts.get(str(v), 0) + int(q)
    methods = sorted({m for cell in part["compaction_token_method"].dropna()
                      for m in str(cell).split(", ") if m})
    return ResearchRow(
        research=label, arm=arm, questions=int(n.sum()),
        recall=float((part["recall"] * n).sum() / n.sum()), discarded=total_disc,
        recall_discarded=sum(hits) / total_disc if total_disc else float("nan"),
        recall_discarded_lo=lo, recall_discarded_hi=hi,
        billed_tokens=float((part["billed_tokens"] * n).sum() / n.sum()),
        compaction_tokens=float((part["compaction_tokens_per_question"] * n).sum() / n.sum()),
        compaction_token_method=", ".join(methods), fits_window_share=float("nan"),
        verdicts=", ".join(f"{k} {q}" for k, q in sorted(verdicts.items())), subset=subset,
        sessions=len(part), recall_interval=how)


def _paired(row: ResearchRow, part: pd.DataFrame, base: pd.DataFrame, n_boot: int,
            seed: int) -> ResearchRow:
    """``row`` with its recall and token differences from ``base`` on the shared sessions."""
    own = {_key(r): r for _, r in part.iterrows()}
    other = {_key(r): r for _, r in base.iterrows()}
    shared = sorted(set(own) & set(other))
    for s in shared:
        if int(own[s]["questions"]) != int(other[s]["questions"]):
            raise ValueError(f"session {s}: {own[s]['questions']} vs {other[s]['questions']} "
                             "questions: their pairing needs the per-question rows")
    n = [int(own[s]["questions"]) for s in shared]
    recall = [(s, q, _count(own[s]["recall"], q) - _count(other[s]["recall"], q))
              for s, q in zip(shared, n, strict=True)]
    tokens = [(s, q, q * (float(own[s]["billed_tokens"]) - float(other[s]["billed_tokens"])))
              for s, q in zip(shared, n, strict=True)]
    d_all = session_mean(*_expand(recall), n_boot=n_boot, seed=seed)
    d_tok = session_mean(*_expand(tokens), n_boot=n_boot, seed=seed)
    return replace(row, shared=sum(n), shared_sessions=d_all.n_sessions,
                   diff_recall=d_all.mean, diff_recall_lo=d_all.lo, diff_recall_hi=d_all.hi,
                   diff_recall_record=d_all.record if shared else "",
                   diff_billed_tokens=d_tok.mean, diff_billed_tokens_lo=d_tok.lo,
                   diff_billed_tokens_hi=d_tok.hi,
                   diff_billed_tokens_record=d_tok.record if shared else "")


def rows_from_sessions(sessions: pd.DataFrame, *, baseline: str = "production",
                       n_boot: int = 2000, seed: int = 0
                       ) -> tuple[list[ResearchRow], list[ResearchRow]]:
    """The comparison's rows and its bracket rows (as
    :func:`evals.analysis.research_compare.compare_research` and ``bracket_rows`` order them),
    from ``research_sessions.csv``; the cells that pair questions are NaN."""
    sessions = sessions.sort_values(["dataset", "seed", "item_id"], kind="stable")
    labels = sorted(sessions[["research", "arm"]].drop_duplicates().itertuples(index=False),
                    key=lambda a: (a[0] != baseline, tuple(a)))
    if not labels:
        raise ValueError("research_sessions.csv holds no session")
    of = {(lab, arm): sessions[(sessions["research"] == lab) & (sessions["arm"] == arm)]
          for lab, arm in labels}
    rows, bracket = [], []
    for label, arm in labels:
        base = of.get((baseline, arm))
        row = _own_row(label, arm, of[(label, arm)], "all", n_boot, seed)
        rows.append(row if base is None or label == baseline
                    else _paired(row, of[(label, arm)], base, n_boot, seed))
    for label, arm in labels:
        base = of.get((baseline, arm))
        if base is None or base["verdict"].nunique() < 2:
            continue
        for verdict in sorted(base["verdict"].unique()):
            keys = {_key(r) for _, r in base[base["verdict"] == verdict].iterrows()}
            part = of[(label, arm)][[_key(r) in keys for _, r in
                                     of[(label, arm)].iterrows()]]
            if not len(part):
                continue
            sub = base[base["verdict"] == verdict]
            row = _own_row(label, arm, part, f"{baseline} {verdict}", n_boot, seed)
            rows.append(row if label == baseline else _paired(row, part, sub, n_boot, seed))
    top = ceiling_label(baseline)
    for label, arm in labels:
        ceiling = of.get((top, arm))
        if ceiling is None or label == top:
            continue
        keys = {_key(r) for _, r in ceiling.iterrows()}
        part = of[(label, arm)][[_key(r) in keys for _, r in of[(label, arm)].iterrows()]]
        if len(part):
            row = _own_row(label, arm, part, f"vs {top}", n_boot, seed)
            bracket.append(_paired(row, part, ceiling, n_boot, seed))
    return rows, bracket
