"""The auto-continue prompt after threshold maintenance, and the pre-prompt check that runs
maintenance inline (handoff included), LLM mocked.
"""

from __future__ import annotations

from compaction_synth import FakeLLM, Turns
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.compaction import (
    CompactionPipeline,
    Session,
    merge_settings,
)


def _until_compaction(p: CompactionPipeline, seed: int):
    t = Turns(seed, result_words=(300, 500))
    for turn in range(200):
        p.session.append_message({"role": "user", "content": f"turn {turn}"})
        calls = [t.call()]
        p.session.append_message(t.assistant(calls))
        for call in calls:
            p.session.append_message(t.result(call))
        outcome = p.after_turn(t.assistant([]))
        if outcome is not None and outcome.entry is not None:
            return outcome
    raise AssertionError("never compacted")


def test_auto_continue_prompt_is_injected_after_threshold_maintenance():
    from snapcompact.compaction import prompt

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=FakeLLM())
    outcome = _until_compaction(p, 14)
    last = p.session.get_branch()[-1]
    assert outcome.auto_continue_prompt == prompt("auto-continue")
    assert last.message == {"role": "developer", "attribution": "agent", "timestamp": last.message["timestamp"],
                            "content": [{"type": "text", "text": prompt("auto-continue")}]}
    assert p.llm_messages()[-1].role == "developer"
    off = CompactionPipeline(Session(), CLAUDE, complete=FakeLLM(),
                             settings=merge_settings(_settings(), {"compaction": {"autoContinue": False}}))
    outcome = _until_compaction(off, 14)
    assert outcome.auto_continue_prompt is None
    assert off.session.get_branch()[-1].type == "compaction"


def test_pre_prompt_check_runs_maintenance_inline_handoff_included(tmp_path):
    for strategy in ("context-full", "handoff"):
        p = CompactionPipeline(Session(tmp_path / f"{strategy}.jsonl", fsync=False), CLAUDE,
                               settings=_settings(strategy), complete=FakeLLM())
        _fill(p, 15, 4)
        assert p.before_prompt() is None  # under the threshold: nothing to do
        _fill(p, 15, 70)  # appended without after_turn: over the threshold now
        assert p.estimate_tokens() > p.threshold()
        old_session = p.session
        outcome = p.before_prompt()
        assert outcome.reason == "threshold" and outcome.strategy == strategy
        assert outcome.auto_continue_prompt is None  # the user's prompt is the next turn
        if strategy == "handoff":
            assert outcome.handoff_session is p.session and p.session is not old_session
            assert p.session.entries[0].custom_type == "handoff"
        else:
            assert outcome.entry is not None and p.estimate_tokens() < p.threshold()
