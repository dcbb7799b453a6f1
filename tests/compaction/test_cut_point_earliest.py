"""The cut keeps as much recent history as the budget allows: the earliest cut point that fits.

Why a test of its own: the rule-checking property in ``test_compaction_cut_prune.py`` adds up its
budgets with ``entry_tokens`` (the estimator under test) and only checks that the kept side fits,
so an implementation that always cut at the newest message passed it. Here every entry's token
count is fixed by construction from the documented estimate (agent core ``countMessage`` without a
native tokenizer: each text fragment counts ``ceil(UTF-8 bytes / 4)``; see
``../shared/spec/seeds/pi-compact-guide.md`` step 1 and ``snapcompact/compaction/tokens.py``):
bodies are ASCII of 4*n bytes, so a body is exactly n tokens, written down by the test, never
asked of the code. The expected cut is then worked out independently: walking back from the
newest entry, the cut moves to each valid cut point (not a tool result, not metadata) while the
tokens at and after it stay within ``keepRecentTokens``; the newest cut point is taken however
big; metadata just before the cut moves to the kept side.
"""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from snapcompact.compaction import Session, find_cut_point, prepare_compaction

KINDS = ("user", "assistant", "call", "meta", "custom", "bash")


def body(tokens: int) -> str:
    """ASCII text of exactly ``tokens`` estimated tokens (4 bytes per token)."""
    return "abcd" * tokens


def build(items: list[tuple[str, int]]) -> tuple[Session, list[tuple[bool, bool, int]]]:
    """The session, and per branch entry: (valid cut point, is metadata, tokens by construction)."""
    s = Session()
    expected: list[tuple[bool, bool, int]] = []
    calls = 0
    for kind, n in items:
        if kind == "user":
            s.append_message({"role": "user", "content": body(n)})
            expected.append((True, False, n))
        elif kind == "assistant":
            s.append_message({"role": "assistant", "content": [{"type": "text", "text": body(n)}]})
            expected.append((True, False, n))
        elif kind == "call":
            calls += 1
            args = {"path": f"f{calls}.py"}
            s.append_message({"role": "assistant", "content": [
                {"type": "toolCall", "id": f"c{calls}", "name": "read", "arguments": args}]})
            # fragments: the name "read" (4 bytes) and the arguments as compact JSON
            arg_tokens = math.ceil(len(json.dumps(args, separators=(",", ":"))) / 4)
            expected.append((True, False, 1 + arg_tokens))
            s.append_message({"role": "toolResult", "toolCallId": f"c{calls}", "toolName": "read",
                              "content": [{"type": "text", "text": body(n)}], "isError": False})
            expected.append((False, False, n))  # a tool result is never a cut point
        elif kind == "meta":
            s.append_metadata("thinking_level_change", thinkingLevel="high")
            expected.append((False, True, 0))
        elif kind == "custom":
            s.append_custom_message("note", body(n))
            expected.append((True, False, n))
        else:  # bash: the command "ls" (2 bytes -> 1 token) and the output
            s.append_message({"role": "bashExecution", "command": "ls", "output": body(n),
                              "exitCode": 0})
            expected.append((True, False, 1 + n))
    return s, expected


def expected_cut(entries: list[tuple[bool, bool, int]], keep: int) -> int | None:
    """First kept index by the documented rule, from the constructed token counts."""
    valid = [i for i, (is_cut, _, _) in enumerate(entries) if is_cut]
    if not valid:
        return None
    fitting = [i for i in valid if sum(t for _, _, t in entries[i:]) <= keep]
    cut = min(fitting) if fitting else max(valid)
    while cut > 0 and entries[cut - 1][1]:
        cut -= 1
    return cut


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 800)), min_size=1, max_size=30),
       st.integers(1, 6000))
def test_cut_is_the_earliest_cut_point_within_the_budget(items, keep):
    s, entries = build(items)
    path = s.get_branch()
    assert len(path) == len(entries)
    cut = find_cut_point(path, 0, len(path), keep)
    want = expected_cut(entries, keep)
    assert (cut.first_kept_index if cut is not None else None) == want


def test_five_equal_turns_keep_the_two_that_fit():
    # 5 user messages of 100 tokens; a 250-token budget keeps the last two (200 tokens), not
    # only the newest one and not three (300 > 250).
    s, _ = build([("user", 100)] * 5)
    path = s.get_branch()
    assert find_cut_point(path, 0, 5, 250).first_kept_index == 3
    assert find_cut_point(path, 0, 5, 300).first_kept_index == 2  # exactly at the budget: kept
    assert find_cut_point(path, 0, 5, 299).first_kept_index == 3
    assert find_cut_point(path, 0, 5, 50).first_kept_index == 4  # newest is kept however big
    prep = prepare_compaction(path, 250)
    assert prep.first_kept_index == 3 and len(prep.summarize_entry_ids) == 3


def test_a_tool_result_is_counted_with_its_call_and_never_kept_alone():
    # user 100 | call (1 + 4 tokens) | result 300 | user 50: with 400 tokens the call is the
    # earliest point that fits (5 + 300 + 50 = 355), never the result.
    s, _ = build([("user", 100), ("call", 300), ("user", 50)])
    path = s.get_branch()
    assert find_cut_point(path, 0, 4, 400).first_kept_index == 1
    assert find_cut_point(path, 0, 4, 354).first_kept_index == 3
