"""The branch index's caches against a fresh walk, over random sequences of session changes.

The expectation is always recomputed from scratch on a plain list copy of the branch (plain lists
carry no index, so the functions walk them as they did before the index existed): the cached
answers must equal it after every append, compaction, reset boundary, leaf move, branch summary,
in-place replacement (pruning, an assistant message whose tool calls change) and handoff fork.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from snapcompact.compaction import Session, build_session_context, prepare_compaction
from snapcompact.compaction.context import estimate_branch_tokens
from snapcompact.compaction.cut_point import find_cut_point
from snapcompact.compaction.entries import CompactionEntry, MessageEntry, MetadataEntry
from snapcompact.compaction.path_index import BranchList, index_of
from snapcompact.compaction.pruning import (
    _boundary,
    _calls_by_id,
    prune_superseded_tool_results,
    prune_tool_outputs,
)
from snapcompact.compaction.settings import PruneSettings
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator

PATHS = ["a.py", "b.py", "c.py:1-20", "a.py:5-9", "skill://x"]
ESTIMATORS = (DEFAULT_ESTIMATOR, TokenEstimator(image_tokens=7, frame_tokens=9))
PRUNE = (PruneSettings(protect_tokens=60, minimum_savings=10, min_prune_tokens=5,
                       cache_suffix_tokens=120),
         PruneSettings(protect_tokens=200, minimum_savings=0, min_prune_tokens=1,
                       cache_suffix_tokens=40, cache_warm_suffix_tokens=150))


def _walk(session: Session) -> list:
    out = []
    walk = session.leaf_id
    while walk is not None:
        entry = session.get(walk)
        out.append(entry)
        walk = entry.parent_id
    return out[::-1]


class Driver:
    """Random session changes with realistic shapes (tool calls and results that pair up)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        counter = iter(range(1, 10**6))
        self.session = Session(None, id_factory=lambda: f"e{next(counter)}", clock=lambda: 0.0,
                               fsync=False)
        self.calls = 0

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(["ab", "cde", "fghij", "\u4e2d\u6587", "k"])
                        for _ in range(self.rng.randint(lo, hi)))

    def turn(self) -> None:
        s, rng = self.session, self.rng
        s.append_message({"role": "user", "content": self.words(1, 30)})
        for _ in range(rng.randint(0, 2)):
            self.calls += 1
            name = rng.choice(["read", "read", "grep", "bash", "skill"])
            call_id = f"c{self.calls if rng.random() > 0.05 else 1}"  # a few repeated ids
            call = {"type": "toolCall", "id": call_id, "name": name,
                    "arguments": {"path": rng.choice(PATHS)}}
            message = {"role": "assistant", "content": [{"type": "text", "text": self.words(1, 5)},
                                                        call], "stopReason": "toolUse"}
            if rng.random() < 0.3:
                message["usage"] = {"input": rng.randint(10, 900), "output": 5}
            s.append_message(message)
            result = {"role": "toolResult", "toolCallId": call_id, "toolName": name,
                      "content": [{"type": "text", "text": self.words(0, 60)}],
                      "isError": rng.random() < 0.1}
            if name == "grep" and rng.random() < 0.5:
                result["useless"] = True
            s.append_message(result)
        s.append_message({"role": "assistant", "content": [{"type": "text",
                                                            "text": self.words(1, 10)}],
                          "stopReason": rng.choice(["stop", "stop", "error"])})

    def step(self) -> str:
        s, rng = self.session, self.rng
        branch = _walk(s)
        op = rng.choice(["turn"] * 6 + ["compact", "reset", "branch", "summary", "prune",
                                        "recall", "custom", "metadata"])
        if op == "compact" and branch:
            kept = rng.choice(branch + [branch[-1]] * 3)
            s.append_compaction(self.words(1, 20), kept.id, rng.randint(0, 999))
        elif op == "reset" and branch:
            s.append(MetadataEntry("reset_boundary", f"r{len(s.entries)}", s.leaf_id, "t", {}))
        elif op == "branch" and s.entries:
            s.branch(rng.choice([None, *[e.id for e in s.entries]]))
        elif op == "summary" and s.entries:
            target = rng.choice([e.id for e in s.entries])
            s.branch_with_summary(target, s.leaf_id or target, self.words(1, 15))
        elif op == "prune":
            results = [e for e in branch if isinstance(e, MessageEntry) and e.role == "toolResult"]
            picked = rng.sample(results, min(len(results), rng.randint(1, 3)))
            s.replace_messages({e.id: {**e.message, "content": [{"type": "text", "text": "x"}],
                                       "prunedAt": 1} for e in picked})
        elif op == "recall":  # an assistant message rewritten: its tool call, text or usage change
            asked = [e for e in branch if isinstance(e, MessageEntry) and e.role == "assistant"]
            if asked:
                e = rng.choice(asked)
                content = [b if b.get("type") != "toolCall" or rng.random() < 0.5
                           else {**b, "arguments": {"path": rng.choice(PATHS)}}
                           for b in e.message["content"]]
                message = {**e.message, "content": content}
                if rng.random() < 0.5:
                    message.pop("usage", None)
                else:
                    message["usage"] = {"input": 3}
                s.replace_entries({e.id: replace(e, message=message)})
        elif op == "custom":
            s.append_custom_message("note", self.words(1, 10))
        elif op == "metadata":
            s.append_metadata("model_change", provider="p", modelId="m")
        else:
            self.turn()
        return op


def check(session: Session) -> None:
    fresh = _walk(session)
    plain = list(fresh)
    branch = session.get_branch()
    assert isinstance(branch, BranchList) and branch == fresh
    index = index_of(branch)
    assert index is not None
    live = session.branch_index.sync()
    assert index_of(live) is index and live == fresh
    latest = next((e for e in reversed(fresh) if isinstance(e, CompactionEntry)), None)
    assert session.latest_compaction() is latest
    assert index.context_entry_ids() == list(build_session_context(plain).entry_ids)
    assert index.boundary() == _boundary(plain)
    assert index.calls() == _calls_by_id(plain)
    for estimator in ESTIMATORS:
        assert index.context_tokens(estimator) == estimate_branch_tokens(plain, estimator)
        for keep in (1, 50, 400):
            assert (prepare_compaction(branch, keep, estimator=estimator)
                    == prepare_compaction(plain, keep, estimator=estimator))
            n = len(plain)
            for start, end in ((0, n), (n // 3, n), (n // 4, n // 2), (n, n)):
                assert (find_cut_point(branch, start, end, keep, estimator)
                        == find_cut_point(plain, start, end, keep, estimator))
        for settings in PRUNE:
            for source in (branch, live):
                assert (prune_superseded_tool_results(source, settings, estimator=estimator,
                                                      protected_paths=("b.py",), now_ms=1)
                        == prune_superseded_tool_results(plain, settings, estimator=estimator,
                                                         protected_paths=("b.py",), now_ms=1))
                assert (prune_tool_outputs(source, settings, estimator=estimator, now_ms=1)
                        == prune_tool_outputs(plain, settings, estimator=estimator, now_ms=1))


@pytest.mark.parametrize("seed", range(8))
def test_cached_facts_equal_a_fresh_walk_after_every_change(seed: int) -> None:
    driver = Driver(seed)
    ops = set()
    for _ in range(70):
        ops.add(driver.step())
        check(driver.session)
    assert len(ops) >= 8  # the sequence exercised most kinds of change


def test_a_handoff_fork_starts_its_own_index_and_the_parent_keeps_its_own() -> None:
    driver = Driver(99)
    for _ in range(10):
        driver.turn()
    parent = driver.session
    child = parent.fork(None)
    child.append_custom_message("handoff", "the document")
    check(child)
    assert [e.id for e in child.get_branch()] == [child.leaf_id]
    driver.turn()
    check(parent)


def test_a_copy_changed_in_place_or_taken_before_a_change_is_walked_not_trusted() -> None:
    driver = Driver(3)
    for _ in range(6):
        driver.turn()
    session = driver.session
    stale = session.get_branch()
    changed = session.get_branch()
    changed.pop()
    assert index_of(changed) is None  # the caller's own list now: no index behind it
    assert (prepare_compaction(changed, 50) == prepare_compaction(list(changed), 50))
    driver.turn()
    assert index_of(stale) is None  # the session moved on since the copy was taken
    assert estimate_branch_tokens(stale) == estimate_branch_tokens(list(stale))


def test_an_outside_leaf_assignment_and_a_reload_rebuild_the_index(tmp_path) -> None:
    counter = iter(range(1, 10**6))
    session = Session(tmp_path / "s.jsonl", id_factory=lambda: f"e{next(counter)}", fsync=False)
    driver = Driver(5)
    driver.session = session
    for _ in range(40):
        driver.step()
    check(session)
    session.leaf_id = session.entries[len(session.entries) // 2].id
    check(session)
    reloaded = Session.load(tmp_path / "s.jsonl", fsync=False)
    check(reloaded)


@pytest.mark.parametrize("seed", range(3))
def test_a_preparation_of_the_live_branch_reads_the_entries_it_was_made_from(seed: int) -> None:
    """Made from the index's own list, a preparation copies the summarized window only when read;
    read after later changes (prunes swapping entries in place, appends, leaf moves), it must
    hold what a preparation of a plain copy taken at that moment holds."""
    driver = Driver(100 + seed)
    for _ in range(8):
        driver.turn()
    made = []
    for _ in range(40):
        live = driver.session.branch_index.sync()
        prep = prepare_compaction(live, 50)
        if prep is not None:
            made.append((prep, prepare_compaction(list(live), 50)))
        driver.step()
    assert len(made) >= 10
    assert any(not isinstance(prep.summarized_window, tuple) for prep, _ in made)
    for prep, expected in made:
        assert prep.summarized_entries == expected.summarized_entries
        assert prep == expected
