"""Serializer parity with the reference, plus its documented examples.

Golden data (``tests/golden/serialize/*.json.gz``) comes from the reference's
``serializeConversation`` via ``make_golden.py``; the example tests restate the upstream
test cases listed in the spec digest (section k, items 36-53).
"""

from __future__ import annotations

import gzip
import json
import math

import pytest
from locations import GOLDEN

from snapcompact.archive import (
    AssistantMessage,
    SerializeOptions,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    js_json_stringify,
    messages_from_json,
    messages_to_json,
    serialize_conversation,
    truncate_middle,
)
from snapcompact.core import DIM_OFF, DIM_ON, js_number_to_string, utf16_len

GOLDEN = GOLDEN / "serialize"


def _load(name: str):
    with gzip.open(GOLDEN / name, "rt", encoding="ascii") as fh:
        return json.load(fh)


CORPUS = _load("corpus.json.gz")
EXPECTED = _load("expected.json.gz")
OPTION_SETS = CORPUS["option_sets"]
CASES = CORPUS["cases"]


# --- parity with the reference -----------------------------------------------------------

@pytest.mark.parametrize("option_set", sorted(OPTION_SETS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_reference(case: str, option_set: str) -> None:
    options = json.loads(OPTION_SETS[option_set])  # "1e400" parses to inf, as in JS
    assert serialize_conversation(CASES[case], options) == EXPECTED[case][option_set]


@pytest.mark.parametrize("case", sorted(c for c in CASES if not c.startswith("random_")))
def test_parsed_dataclasses_serialize_like_json(case: str) -> None:
    parsed = messages_from_json(CASES[case])
    assert serialize_conversation(parsed) == EXPECTED[case]["default"]
    assert serialize_conversation(messages_to_json(parsed)) == EXPECTED[case]["default"]


def test_corpus_is_broad() -> None:
    assert len(CASES) >= 100 and len(OPTION_SETS) >= 8


# --- documented upstream examples (digest section k, 36-53) ------------------------------

def _ai(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def _call(cid, name, args, **extra):
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args, **extra}


def _result(cid, text, **extra):
    return {"role": "toolResult", "toolCallId": cid, "toolName": "t",
            "content": [{"type": "text", "text": text}], "isError": False, **extra}


def test_long_result_keeps_head_and_tail() -> None:  # 36
    out = serialize_conversation([_ai(_call("a", "cat", {})), _result("a", "HEAD-" + "x" * 5000 + "-TAIL")])
    assert "[\u20263010ch elided\u2026]" in out
    assert out.endswith("-TAIL" + DIM_OFF + "\n</out>")


def test_truncate_middle_cap_and_infinity() -> None:  # 37
    text = "a" * 100
    assert "[\u202690ch elided\u2026]" in truncate_middle(text, 10, 0.5)
    assert truncate_middle(text, math.inf, 0.5) == text


def test_write_body_capped_per_argument() -> None:  # 38
    out = serialize_conversation([_ai(_call("a", "write", {"path": "a.ts", "content": "y" * 3000}))])
    assert 'write(path="a.ts", content=' in out
    assert "[\u20262502ch elided\u2026]" in out


def test_whole_call_capped() -> None:  # 39
    out = serialize_conversation([_ai(_call("a", "multi", {f"k{i}": "z" * 400 for i in range(10)}))])
    assert len(out) < 2200 and "ch elided" in out


@pytest.mark.parametrize(
    ("messages", "options", "expected"),
    [
        pytest.param([{"role": "user", "content": "do the thing"}, _ai({"type": "text", "text": "done"})],
                     None, "¶user:do the thing\n\n¶ai:done", id="40-user-ai"),
        pytest.param([_ai(_call("a", "bash", {"command": "bun test", "i": "Running tests"})), _result("a", "3 pass")],
                     {"dimToolResults": False},
                     '¶call:bash(command="bun test")//Running tests\n<out>\n3 pass\n</out>', id="41-intent"),
        pytest.param([_ai(_call("a", "bash", {"command": "ls", "i": "raw"}, intent=" harness \n  says "))],
                     None, '¶call:bash(command="ls")//harness says', id="42-harness-intent"),
        pytest.param([_ai({"type": "thinking", "thinking": "weigh options"}, {"type": "text", "text": "the answer"})],
                     None, "¶think:weigh options\n\n¶ai:the answer", id="43-think"),
        pytest.param([_ai({"type": "thinking", "thinking": "weigh options"}, {"type": "text", "text": "the answer"})],
                     {"includeThinking": False}, "¶ai:the answer", id="44-no-think"),
        pytest.param([_ai({"type": "thinking", "thinking": "plan first"}, _call("a", "read", {"path": "a.ts"}))],
                     None, '¶think:plan first\n\n¶call:read(path="a.ts")', id="45-think-call"),
        pytest.param([_result("gone", "ok")], {"dimToolResults": False}, "¶call:\n<out>\nok\n</out>", id="46-orphan"),
        pytest.param([_ai({"type": "text", "text": "before"}, _call("a", "r", {}), {"type": "text", "text": "after"}),
                      _result("a", "x")], {"dimToolResults": False},
                     "¶ai:before\n\n¶call:r()\n<out>\nx\n</out>\n\n¶ai:after", id="47-order"),
        pytest.param([_ai({"type": "text", "text": "before"}, _call("a", "grep", {}), {"type": "text", "text": "after"}),
                      _result("a", "none", useless=True)], None, "¶ai:before\nafter", id="48-useless-in-prose"),
        pytest.param([_ai({"type": "thinking", "thinking": "  "}, {"type": "text", "text": "\n"}, _call("a", "r", {}))],
                     None, "¶call:r()", id="49-blank"),
        pytest.param([{"role": "user", "content": f"a{DIM_ON}b{DIM_OFF}"}, _ai(_call("a", "r", {})), _result("a", "x")],
                     None, f"¶user:ab\n\n¶call:r()\n<out>\n{DIM_ON}x{DIM_OFF}\n</out>", id="50-dim"),
        pytest.param([_ai(_call("a", "grep", {})), _result("a", "none", useless=True)], None, "", id="51-useless"),
        pytest.param([{"role": "user", "content": "hello"}, {"role": "user", "content": "world"},
                      _ai({"type": "text", "text": "hi"}), _ai({"type": "text", "text": "there"})],
                     None, "¶user:hello\nworld\n\n¶ai:hi\nthere", id="52-merge"),
        pytest.param([_ai(_call("a", "r", {"p": 1}), _call("b", "r", {"p": 2}))], None,
                     "¶call:r(p=1)\nr(p=2)", id="53-consecutive-calls"),
    ],
)
def test_documented_examples(messages, options, expected) -> None:
    assert serialize_conversation(messages, options) == expected


# --- JavaScript semantics ----------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "expected"),  # ECMAScript Number::toString examples
    [(1e21, "1e+21"), (1e20, "100000000000000000000"), (1.5e-7, "1.5e-7"), (1e-6, "0.000001"),
     (123e-20, "1.23e-18"), (-0.0, "0"), (100.0, "100"), (0.1, "0.1"), (-2.5, "-2.5"),
     (2**53 + 1, "9007199254740992"), (5e-324, "5e-324"), (math.inf, "Infinity"), (10**400, "Infinity")],
)
def test_js_number_to_string(value, expected) -> None:
    assert js_number_to_string(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [({"b": 1, "2": 0, "a": [1, None], "1": True}, '{"1":true,"2":0,"b":1,"a":[1,null]}'),
     ("\x00\x1f\b\n\"\\\u2028é\ud800😀", '"\\u0000\\u001f\\b\\n\\"\\\\\u2028é\\ud800😀"'),
     (float("nan"), "null"), (-0.0, "0"), ((1, 2), "[1,2]")],
)
def test_js_json_stringify(value, expected) -> None:
    assert js_json_stringify(value) == expected


def test_js_json_stringify_rejects_non_json() -> None:
    with pytest.raises(ValueError, match="bytes"):
        js_json_stringify(b"raw")


def test_round_half_up_and_utf16_units() -> None:
    # Math.round(2.5) == 3 (Python's round gives 2).
    assert truncate_middle("abcdefghij", 5, 0.5) == "abc [\u20265ch elided\u2026] ij"
    # 10 emoji = 20 UTF-16 units; a 3-unit head ends in half a surrogate pair.
    assert utf16_len("😀" * 10) == 20
    assert truncate_middle("😀" * 10, 5, 0.6) == "😀\ud83d [\u202615ch elided\u2026] 😀"
    assert truncate_middle("😀" * 10, 20, 0.6) == "😀" * 10


# --- options -----------------------------------------------------------------------------

def test_options_defaults_and_spellings() -> None:
    assert SerializeOptions() == SerializeOptions.from_mapping({}) == SerializeOptions.from_mapping(None)
    camel = SerializeOptions.from_mapping({"toolResultMaxChars": 10, "includeThinking": False, "shape": "x"})
    snake = SerializeOptions.from_mapping({"tool_result_max_chars": 10, "include_thinking": False})
    assert camel == snake == SerializeOptions(tool_result_max_chars=10, include_thinking=False)
    assert SerializeOptions.from_mapping({"toolArgMaxChars": None}).tool_arg_max_chars == 500


@pytest.mark.parametrize(
    "mapping",
    [{"toolResultMaxChars": "10"}, {"toolArgMaxChars": -1}, {"toolCallMaxChars": float("nan")},
     {"truncateHeadRatio": True}, {"dimToolResults": 0}, {"tool_arg_max_chars": 5, "toolArgMaxChars": 6}],
)
def test_bad_options_raise(mapping) -> None:
    with pytest.raises(ValueError):
        SerializeOptions.from_mapping(mapping)


# --- message model -----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ({"role": "user"}, "must be a list"),
        ([{"role": "assistant", "content": [_call("a", "t", None)]}], "arguments"),
        ([{"role": "assistant", "content": [_call("a", "t", ["x"])]}], "arguments"),
        ([{"role": "assistant", "content": "text"}], "content"),
        ([{"role": "user", "content": 5}], "content"),
        ([{"role": "toolResult", "toolCallId": "a", "content": "hi"}], "content"),
        ([{"role": "toolResult", "toolCallId": 3, "content": []}], "toolCallId"),
        ([{"role": "toolResult", "toolCallId": "a", "content": [], "useless": "yes"}], "useless"),
        ([{"role": "system", "content": "x"}], "role"),
        ([{"role": "assistant", "content": [{"type": "text"}]}], "text"),
        ([{"role": "assistant", "content": [None]}], "block"),
        (["hello"], "JSON object"),
    ],
)
def test_malformed_messages_raise(messages, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        serialize_conversation(messages)


def test_dataclass_messages_and_round_trip() -> None:
    messages = [
        UserMessage("hi"),
        AssistantMessage((TextBlock("ok"), ToolCallBlock("a", "read", {"path": "x", "i": "look"}))),
        ToolResultMessage("a", (TextBlock("body"),), tool_name="read"),
    ]
    assert serialize_conversation(messages, SerializeOptions(dim_tool_results=False)) == (
        '¶user:hi\n\n¶ai:ok\n\n¶call:read(path="x")//look\n<out>\nbody\n</out>'
    )
    raw = messages_to_json(messages)
    assert messages_from_json(raw) == messages
    assert raw[2] == {"role": "toolResult", "toolCallId": "a", "toolName": "read",
                      "content": [{"type": "text", "text": "body"}], "isError": False}


@pytest.mark.parametrize("depth", [400, 1000, 5000])
def test_stringify_and_serialize_deeply_nested_arguments_without_recursion(depth):
    """Tool-call arguments nested hundreds deep reach the serializer through compaction."""
    from snapcompact.archive import js_json_stringify

    nested: object = {"leaf": [1, "x"]}
    for _ in range(depth):
        nested = {"k": [nested]}
    expected = '{"k":[' * depth + '{"leaf":[1,"x"]}' + "]}" * depth
    assert js_json_stringify(nested) == expected
    messages = [{"role": "assistant", "content": [
        {"type": "toolCall", "id": "c1", "name": "probe", "arguments": {"deep": nested}}]}]
    text = serialize_conversation(messages)
    assert text.startswith('¶call:probe(deep={"k":[{"k":[') and "elided" in text


def test_stringify_refuses_a_cycle():
    from snapcompact.archive import js_json_stringify

    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        js_json_stringify(loop)
    shared = [1]
    assert js_json_stringify([shared, shared]) == "[[1],[1]]"  # shared, not a cycle
