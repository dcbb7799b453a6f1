"""Abort and events: an abort cancels a compaction, auto runs emit start and end, a manual
compaction aborts a running one, escape cancels a branch summary; summary model candidates
with transient retries.
"""

from __future__ import annotations

from compaction_synth import FakeLLM
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.compaction import (
    CompactionEntry,
    CompactionPipeline,
    Session,
    navigate_tree,
)


def test_abort_compaction_cancels_and_auto_runs_emit_start_and_end():
    holder = {}

    def complete(system_prompt, prompt, *, max_tokens):
        holder["p"].abort_compaction()  # the user aborts while the summary call is in flight
        return "## Goal\nlate"

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=complete)
    holder["p"] = p
    events = []
    p.listeners.append(events.append)
    _fill(p, 19, 12)
    before = list(p.session.entries)
    outcome = p.compact(reason="threshold")
    assert outcome.cancelled and outcome.skipped == "aborted" and outcome.entry is None
    assert p.session.entries == before  # nothing written
    assert [e["type"] for e in events] == ["auto_compaction_start", "auto_compaction_end"]
    assert events[0]["reason"] == "threshold" and events[1]["aborted"] is True
    manual = p.compact()  # aborted too, and no events for a manual run
    assert manual.skipped == "aborted" and len(events) == 2


def test_manual_compaction_aborts_a_running_one():
    import threading

    started, release = threading.Event(), threading.Event()
    calls = []

    def complete(system_prompt, prompt, *, max_tokens):
        calls.append(threading.current_thread().name)
        if threading.current_thread().name == "auto":
            started.set()
            release.wait(10)
        return FakeLLM()(system_prompt, prompt, max_tokens=max_tokens)

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=complete)
    _fill(p, 20, 12)
    results = {}
    auto = threading.Thread(target=lambda: results.update(auto=p.compact(reason="threshold")), name="auto")
    auto.start()
    assert started.wait(10)
    manual = threading.Thread(target=lambda: results.update(manual=p.compact()), name="manual")
    manual.start()
    while not p.abort_signal.aborted:  # the manual request aborts the running one ...
        threading.Event().wait(0.01)
    release.set()  # ... which stops after its call in flight
    auto.join(10), manual.join(10)
    assert results["auto"].skipped == "aborted" and results["auto"].entry is None
    assert results["manual"].entry is not None
    assert sum(isinstance(e, CompactionEntry) for e in p.session.entries) == 1
    assert calls.count("auto") == 1


def test_escape_cancels_a_branch_summary():
    holder = {}

    def complete(system_prompt, prompt, *, max_tokens):
        holder["p"].abort_compaction()
        return "summary"

    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=complete)
    holder["p"] = p
    _fill(p, 21, 3)
    target = p.session.get_branch()[3].id
    leaf, count = p.session.leaf_id, len(p.session.entries)
    nav = navigate_tree(p, target, summarize=True)
    assert nav.cancelled and nav.aborted and nav.new_leaf_id == leaf
    assert p.session.leaf_id == leaf and len(p.session.entries) == count


def test_model_candidates_with_transient_retries():
    from snapcompact.compaction import TransientError, with_candidates

    log, sleeps = [], []

    def flaky(name, failures, retry_after=None):
        state = {"left": failures}

        def complete(system_prompt, prompt, *, max_tokens):
            log.append(name)
            if state["left"]:
                state["left"] -= 1
                raise TransientError("overloaded", retry_after)
            return f"from {name}"
        return complete

    # Backoff from retry.baseDelayMs 500 (coding agent session/settings.ts:687).
    call = with_candidates([flaky("a", 2), flaky("b", 0)], sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from a" and log == ["a", "a", "a"] and sleeps == [0.5, 1.0]
    log.clear(), sleeps.clear()
    call = with_candidates([flaky("a", 1, retry_after=120), flaky("b", 0)], sleep=sleeps.append)
    assert call("s", "p", max_tokens=1) == "from b" and log == ["a", "b"] and sleeps == []  # long wait: next
    log.clear()
    call = with_candidates([flaky("a", 5), flaky("b", 5)], sleep=sleeps.append, retries=1)
    try:
        call("s", "p", max_tokens=1)
    except TransientError:
        assert log == ["a", "a", "b", "b"]
    else:
        raise AssertionError("every candidate failed: the last failure is raised")

    def broken(system_prompt, prompt, *, max_tokens):
        raise ValueError("bad request")

    # A failure that is not retried goes to the next model (session-maintenance.ts:4908-4915).
    log.clear()
    assert with_candidates([broken, flaky("b", 0)])("s", "p", max_tokens=1) == "from b" and log == ["b"]
    # The pipeline takes a list of completion functions as candidates.
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(),
                           complete=[flaky("x", 1, retry_after=0), FakeLLM()])
    _fill(p, 22, 12)
    assert p.compact().entry is not None and log[-1] == "x"
