"""The table gate's bars, each against a decision built by hand (evals.analysis.apply_gate).

Why unit tests beside test_table's end-to-end ones: there every refused row fails several bars
at once (two questions, one session), so a bar checked against the wrong figure, or a current
entry matched at the wrong frame size, still refuses. Here each decision fails one bar alone.
"""

from __future__ import annotations

from evals.analysis.apply_gate import MIN_QUESTIONS, MIN_SESSIONS, judge_changes
from evals.analysis.winner import Candidate, Decision
from evals.analysis.write_model_shapes import RowChange, TableProposal

CLAUDE = ("claude-sonnet-4-5",)  # production draws 1568 px frames for it (reference table)


def _candidate(shape: str, size: int, recall: float, *, below: bool,
               questions: int = 40) -> Candidate:
    return Candidate(shape=shape, frame_size=size, n_questions=questions, recall=recall,
                     recall_lo=recall - 0.1, recall_hi=recall + 0.1,
                     predicted_prompt_tokens=1000.0, billed_tokens=1000.0,
                     recall_per_1k_tokens=recall, shared_questions=questions,
                     significantly_below=below)


def _verdict(candidates: tuple[Candidate, ...], *, sessions: int,
             old: tuple[str, int | None] = ("8on22-bw", None)):
    winner = candidates[0]
    decision = Decision(line="claude", reader_id="offline", target_models=CLAUDE,
                        winner=winner, best_recall=winner, candidates=candidates, tie=(),
                        flags=(), seeds=(0,), sessions=sessions, rows=80)
    change = RowChange(line="claude", reader_id="offline", old_shape=old[0],
                       old_frame_size=old[1], shape=winner.shape,
                       frame_size=winner.frame_size, evidence="")
    (verdict,) = judge_changes(TableProposal("", "", (change,), (), ()), [decision])
    return verdict


def test_the_bars_are_thirty_questions_and_twenty_sessions():
    assert (MIN_QUESTIONS, MIN_SESSIONS) == (30, 20)


def test_a_winner_that_beats_the_current_entry_on_twenty_sessions_is_written():
    # 11on16-bw at 1568 px (40 questions, recall 0.6) against the current 8on22-bw at its named
    # 1568 px, significantly below: every bar clears.
    verdict = _verdict((_candidate("11on16-bw", 1568, 0.6, below=False),
                        _candidate("8on22-bw", 1568, 0.3, below=True)), sessions=20)
    assert verdict.accepted and verdict.refused == ()


def test_the_session_bar_counts_sessions_not_questions():
    # 40 questions (>= 30, and >= 20) over 19 sessions: only the session bar fails.
    verdict = _verdict((_candidate("11on16-bw", 1568, 0.6, below=False),
                        _candidate("8on22-bw", 1568, 0.3, below=True)), sessions=19)
    assert verdict.refused == ("19 session(s) (< 20)",)


def test_thirty_questions_clear_the_question_bar_twenty_nine_do_not():
    def verdict(questions: int):
        return _verdict((_candidate("11on16-bw", 1568, 0.6, below=False, questions=questions),
                         _candidate("8on22-bw", 1568, 0.3, below=True)), sessions=20)
    assert verdict(30).accepted
    assert verdict(29).refused == ("29 questions (< 30)",)


def test_the_current_entry_is_matched_at_its_own_frame_size():
    # The current entry is 8on22-bw at its named 1568 px. It was measured only at 1024 px
    # (significantly below there): that is another entry, so the 1568 px one was never
    # measured beside the winner and keeps its row.
    verdict = _verdict((_candidate("11on16-bw", 1568, 0.6, below=False),
                        _candidate("8on22-bw", 1024, 0.3, below=True)), sessions=20)
    assert verdict.refused == ("no evidence to change: the current entry 8on22-bw was not "
                               "measured beside the winner",)
    # and an entry pinned at 1024 px is that measurement: beaten, written
    pinned = _verdict((_candidate("11on16-bw", 1568, 0.6, below=False),
                       _candidate("8on22-bw", 1024, 0.3, below=True)), sessions=20,
                      old=("8on22-bw", 1024))
    assert pinned.accepted
