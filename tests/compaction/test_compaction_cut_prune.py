"""Cut points (hypothesis over random branches) and tool-output pruning (exact placeholders)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from snapcompact.compaction import (
    SUPERSEDED_NOTICE,
    USELESS_NOTICE,
    PruneSettings,
    Session,
    adapted_keep_tokens,
    entry_tokens,
    find_cut_point,
    prepare_compaction,
    prune_superseded_tool_results,
    prune_tool_outputs,
)

KINDS = ["user", "assistant_call", "assistant", "meta", "custom", "bash"]


def build(kinds, sizes) -> Session:
    s = Session()
    n = 0
    for kind, size in zip(kinds, sizes):
        body = "w " * size
        if kind == "user":
            s.append_message({"role": "user", "content": body})
        elif kind == "assistant":
            s.append_message({"role": "assistant", "content": [{"type": "text", "text": body}]})
        elif kind == "assistant_call":
            n += 1
            s.append_message({"role": "assistant", "content": [
                {"type": "toolCall", "id": f"c{n}", "name": "read", "arguments": {"path": f"f{n}.py"}}]})
            s.append_message({"role": "toolResult", "toolCallId": f"c{n}", "toolName": "read",
                              "content": [{"type": "text", "text": body}], "isError": False})
        elif kind == "meta":
            s.append_metadata("thinking_level_change", thinkingLevel="high")
        elif kind == "custom":
            s.append_custom_message("note", body)
        else:
            s.append_message({"role": "bashExecution", "command": "ls", "output": body, "exitCode": 0})
    return s


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 3000)), min_size=1, max_size=40),
       st.integers(1, 6000))
def test_cut_point_rules(items, keep):
    s = build([k for k, _ in items], [n for _, n in items])
    path = s.get_branch()
    cut = find_cut_point(path, 0, len(path), keep)
    if cut is None:
        assert all(e.type != "message" or e.role == "toolResult" for e in path if e.type in ("message",)) and \
            not any(e.type in ("custom_message", "branch_summary") for e in path)
        return
    first = path[cut.first_kept_index]
    # Never at a tool result; the kept side starts with a message or with metadata pulled in before one.
    assert not (first.type == "message" and first.role == "toolResult")
    k = cut.first_kept_index
    while path[k].type not in ("message", "custom_message", "branch_summary"):
        k += 1
    assert path[k].type != "message" or path[k].role != "toolResult"
    # Metadata right before the cut is pulled into the kept side.
    assert cut.first_kept_index == 0 or path[cut.first_kept_index - 1].type != "thinking_level_change"
    # Within budget, unless only the newest cut point is kept.
    kept = sum(entry_tokens(e) for e in path[cut.first_kept_index:])
    cut_points = [i for i, e in enumerate(path) if (e.type == "message" and e.role != "toolResult")
                  or e.type in ("custom_message", "branch_summary")]
    if kept > keep:
        assert k == cut_points[-1]
    # Split turn iff the kept side does not open a turn; the turn start is the nearest earlier one.
    opens = (path[k].type != "message") or path[k].role in ("user", "bashExecution")
    if cut.is_split_turn:
        assert not opens and cut.turn_start_index is not None
        ts = path[cut.turn_start_index]
        assert ts.type == "custom_message" or ts.role in ("user", "bashExecution")
        between = path[cut.turn_start_index + 1:k]
        assert not any(e.type == "custom_message" or (e.type == "message" and e.role in ("user", "bashExecution"))
                       for e in between)


def test_seed_diagram_cut_lands_on_entry_4():
    from test_compaction_session import seed_diagram_session

    s, ids = seed_diagram_session()
    path = s.get_branch()
    tail = sum(entry_tokens(e) for e in path[3:])
    prep = prepare_compaction(path, tail)
    assert prep.first_kept_entry_id == ids[3] and not prep.is_split_turn
    assert prep.summarize_entry_ids == tuple(ids[:3]) and prep.kept_entry_ids == tuple(ids[3:])
    # One token less and the cut moves inside the turn: a split turn, prefix = the turn's start.
    prep = prepare_compaction(path, tail - 1)
    assert prep.is_split_turn and prep.turn_prefix_entry_ids[0] == ids[3]
    assert prep.summarize_entry_ids == tuple(ids[:3])


def test_repeat_compaction_repartitions_from_previous_kept_entry():
    from test_compaction_session import seed_diagram_session

    s, ids = seed_diagram_session()
    s.append_compaction("S1", ids[3], 10)
    for i in range(3):
        s.append_message({"role": "user", "content": f"more {i} " * 50})
    prep = prepare_compaction(s.get_branch(), 60)
    assert prep.previous_summary == "S1" and prep.summarize_entry_ids[0] == ids[3]


def test_adaptive_keep():
    assert adapted_keep_tokens(20000, None, 1000) == 20000
    assert adapted_keep_tokens(20000, 900, 1000) == 20000
    assert adapted_keep_tokens(20000, 2000, 1000) == 10000
    assert adapted_keep_tokens(20000, 3000, 1000) == 6666


# ---------------------------------------------------------------------------------- pruning


def tool_session(results, protected_plan=None) -> Session:
    """results: (tool, path_or_None, tokens, useless) oldest first; each its own call/result pair."""
    s = Session()
    s.append_message({"role": "user", "content": "go"})
    for n, (tool, path, tokens, useless) in enumerate(results):
        args = {"path": path} if path else {"command": "x"}
        s.append_message({"role": "assistant", "content": [
            {"type": "toolCall", "id": f"c{n}", "name": tool, "arguments": args}]})
        msg = {"role": "toolResult", "toolCallId": f"c{n}", "toolName": tool,
               "content": [{"type": "text", "text": "x" * (tokens * 4)}], "isError": False}
        if useless:
            msg["useless"] = True
        s.append_message(msg)
    return s


def _texts(session, result):
    return {session.get(i).message["toolCallId"]: m["content"][0]["text"] for i, m in result.replacements.items()}


def test_age_pruning_protects_newest_and_needs_minimum_savings():
    cfg = PruneSettings()
    s = tool_session([("bash", None, 15_000, False)] * 2 + [("bash", None, 40_000, False)])
    # Newest 40,000 protected; older two = 30,000 tokens of savings >= 20,000.
    r = prune_tool_outputs(s.get_branch(), cfg)
    assert _texts(s, r) == {"c0": "[Output truncated - 15000 tokens]", "c1": "[Output truncated - 15000 tokens]"}
    assert r.tokens_saved == 2 * (15000 - 9)
    # Below the minimum savings nothing is blanked.
    s = tool_session([("bash", None, 9_000, False)] * 2 + [("bash", None, 40_000, False)])
    assert not prune_tool_outputs(s.get_branch(), cfg).changed
    # Never a result under 50 tokens.
    s = tool_session([("bash", None, 49, False)] * 500 + [("bash", None, 40_000, False)])
    assert not prune_tool_outputs(s.get_branch(), PruneSettings(minimum_savings=0)).changed


def test_protected_tools_and_paths():
    s = tool_session([("skill", None, 30_000, False), ("read", "skill://x", 30_000, False),
                      ("read", "PLAN.md", 30_000, False), ("bash", None, 30_000, False),
                      ("bash", None, 40_000, False)])
    r = prune_tool_outputs(s.get_branch(), PruneSettings(), protected_paths={"PLAN.md"})
    assert set(_texts(s, r)) == {"c3"}


def test_superseded_and_useless_bypass_protect_window():
    s = tool_session([("read", "a.py:1-20", 10, False), ("read", "a.py", 10, False), ("read", "b.py", 10, False),
                      ("read", "a.py:1-20", 10, False), ("grep", None, 100, True), ("grep", None, 1, True)])
    # The minimum saving (20,000 by default, as the seed says) gates superseded and useless
    # results too: these few hundred tokens are not worth a rewrite.
    assert not prune_tool_outputs(s.get_branch(), PruneSettings()).changed
    r = prune_tool_outputs(s.get_branch(), PruneSettings(minimum_savings=0))
    # a.py:1-20 (oldest) is superseded by the whole-file read; the newest sliced read is not stale.
    assert _texts(s, r) == {"c0": SUPERSEDED_NOTICE, "c4": USELESS_NOTICE}


def test_entries_before_compaction_boundary_are_never_touched():
    s = tool_session([("read", "a.py", 10, False)] * 3)
    path = s.get_branch()
    s.append_compaction("S", path[5].id, 1)  # keeps the last call/result pair
    r = prune_tool_outputs(s.get_branch(), PruneSettings())
    assert r.changed is False  # the stale reads c0/c1 are behind the boundary


def test_cache_aware_stale_pass():
    s = tool_session([("read", "a.py", 5000, False), ("read", "a.py", 10, False)] + [("bash", None, 3000, False)] * 3)
    path = s.get_branch()
    assert not prune_superseded_tool_results(path).changed  # 9,000+ tokens after it: cache kept
    r = prune_superseded_tool_results(path, idle_seconds=1800)
    assert _texts(s, r) == {"c0": SUPERSEDED_NOTICE}
    s = tool_session([("read", "a.py", 5000, False), ("read", "a.py", 10, False)])
    assert _texts(s, prune_superseded_tool_results(s.get_branch())) == {"c0": SUPERSEDED_NOTICE}
