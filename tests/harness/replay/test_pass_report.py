"""The report's maintenance passes: an arm whose sessions production treated differently (one
valid, one handed over to the stand-in summary) says so, whichever row comes first."""

from __future__ import annotations

import pandas as pd
import pytest

from evals.replay.passes import pass_lines


def _passes(order: list[str]) -> pd.DataFrame:
    verdict = {"aaaaaaaa": "valid", "bbbbbbbb": "stand-in"}
    rows = [{"arm_label": "snapcompact foveated auto @200k", "production": verdict[item],
             "item_id": f"session-{item}", "context_window": 200_000, "pass_index": 1,
             "check": "mid_turn", "tokens_before": 170_000, "tokens_after": 110_000,
             "method": "snapcompact" if verdict[item] == "valid" else "handoff", "frames": 17,
             "frames_by_shape": "{}", "attempts": "", "rescues": "", "dead_end": False}
            for item in order]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("order", [["aaaaaaaa", "bbbbbbbb"], ["bbbbbbbb", "aaaaaaaa"]])
def test_a_mixed_arm_names_each_sessions_verdict(order) -> None:
    table = _passes(order)
    lines = pass_lines(table, table)
    assert lines[0] == ("### snapcompact foveated auto @200k "
                        "(stand-in: 1 session, valid: 1 session)")
    rows = [line for line in lines if line.startswith("| ")][2:]
    assert rows[0].startswith("| aaaaaaaa (valid) | 1 |")
    assert rows[1].startswith("| bbbbbbbb (stand-in) | 1 |")


def test_an_arm_of_one_verdict_keeps_the_plain_heading() -> None:
    table = _passes(["aaaaaaaa"])
    lines = pass_lines(table, table)
    assert lines[0] == "### snapcompact foveated auto @200k (valid)"
    assert lines[4].startswith("| aaaaaaaa | 1 |")
