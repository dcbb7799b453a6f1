"""The row a research comparison prints: one label's figures and its paired differences.

Why a module of its own: two builders make these rows, from per-question records
(:mod:`evals.analysis.research_compare`) and from the committed per-session figures
(:mod:`evals.analysis.research_rederive`), and both format through the same markdown.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CEILING", "ResearchRow", "ceiling_label"]


@dataclass(frozen=True)
class ResearchRow:
    """One research label's figures, and its paired difference from the baseline label."""

    research: str
    arm: str  # "policy shape @window" (snapcompact)
    questions: int
    recall: float
    discarded: int
    recall_discarded: float
    recall_discarded_lo: float
    recall_discarded_hi: float
    #: billed tokens per question: the question's prompt tokens plus its share of its session's
    #: compaction calls (evals.store.records.Record.billed_tokens)
    billed_tokens: float
    fits_window_share: float  # of the rows that say whether they fit (nan: none says)
    verdicts: str
    #: "all", or "<baseline> <verdict>": only the sessions where the baseline had that verdict
    subset: str = "all"
    sessions: int = 0
    #: how recall_discarded's interval was made: "session bootstrap" or "Wilson (1 session)"
    recall_interval: str = ""
    fits_window_unknown: int = 0  # rows that do not say whether their context fits
    shared: int = 0
    shared_sessions: int = 0
    diff_recall: float = float("nan")
    diff_recall_lo: float = float("nan")
    diff_recall_hi: float = float("nan")
    diff_recall_record: str = ""  # sessions where the label recalls more-less-same
    baseline_discarded: int = 0
    baseline_discarded_sessions: int = 0
    diff_on_baseline_discarded: float = float("nan")
    diff_on_baseline_discarded_lo: float = float("nan")
    diff_on_baseline_discarded_hi: float = float("nan")
    diff_on_baseline_discarded_record: str = ""
    diff_billed_tokens: float = float("nan")
    diff_billed_tokens_lo: float = float("nan")
    diff_billed_tokens_hi: float = float("nan")
    diff_billed_tokens_record: str = ""  # sessions where the label bills more-less-same
    answered_by: str = ""  # the reader(s) of the rows (evals.analysis.aggregate.reader_label)
    #: the share of billed_tokens that pays the session's compaction calls (summary / handoff
    #: requests, input + output, once per session over the questions asked after the context)
    compaction_tokens: float = float("nan")
    compaction_token_method: str = ""  # the counter of the compaction calls ("" when none)
    #: what a session costs from its first compaction on (Record.session_cost_usd: its turn
    #: requests with the prompt cache, their replies, the compaction calls), the mean over the
    #: label's questions; nan where the records predate it. Shown beside, never ranked on.
    session_cost_usd: float = float("nan")
    diff_session_cost_usd: float = float("nan")
    diff_session_cost_usd_lo: float = float("nan")
    diff_session_cost_usd_hi: float = float("nan")
    diff_session_cost_usd_record: str = ""


#: what the rows of a label whose summaries the oracle wrote are called (``<label> (...)``)
CEILING = "perfect summarizer"


def ceiling_label(baseline: str) -> str:
    return f"{baseline} ({CEILING})"
