"""The research comparison states what a session costs beside the cost it ranks on (issue 46
item 6): worked by hand on two sessions of two labels."""

from __future__ import annotations

import math

import pytest
from record_rows import base_record

from evals.analysis.research_compare import TABLE_NOTE, compare_research, format_markdown


def _rows(research: str, item: str, cost: float | None) -> list:
    return [base_record().with_fields(
        strategy="snapcompact", policy="foveated", shape_requested="auto",
        context_window=200_000, research=research, item_id=item, question_id=f"{item}-q{k}",
        evidence_round=1, correct=k < 2, predicted_prompt_tokens=1000,
        compaction_billed_tokens=0, compaction_calls=0, context_questions=4,
        methods_used={"snapcompact": 1}, production_valid=True, fits_window=True,
        session_cost_usd=cost) for k in range(4)]


def test_the_session_cost_difference_is_stated_beside_the_ranked_cost() -> None:
    # session s1: production $3.00, recommended $3.50; s2: $5.00 and $4.00. Differences +0.50
    # and -1.00 over 4 questions each: a mean of -0.25, one session dearer, one cheaper
    records = (_rows("production", "s1", 3.0) + _rows("production", "s2", 5.0)
               + _rows("recommended", "s1", 3.5) + _rows("recommended", "s2", 4.0))
    base, other = compare_research(records, n_boot=200)
    assert base.session_cost_usd == pytest.approx(4.0)
    assert other.session_cost_usd == pytest.approx(3.75)
    assert other.diff_session_cost_usd == pytest.approx(-0.25)
    assert other.diff_session_cost_usd_record == "1-1-0"
    assert "Cost is ranked on billed tokens/q" in TABLE_NOTE
    text = format_markdown([base, other], "production")
    assert "dollars per session from its first compaction on (beside the ranking)" in text
    assert "-0.25" in text


def test_records_without_a_session_bill_state_none() -> None:
    records = (_rows("production", "s1", None) + _rows("production", "s2", None)
               + _rows("recommended", "s1", None) + _rows("recommended", "s2", None))
    base, other = compare_research(records, n_boot=200)
    assert math.isnan(base.session_cost_usd) and math.isnan(other.diff_session_cost_usd)
    assert "dollars per session" not in format_markdown([base, other], "production")
