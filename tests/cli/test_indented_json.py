"""The indented JSON writer the compact command uses gives ``json.dumps``'s exact text.

The expectation is ``json.dumps(value, indent=n, ensure_ascii=False)`` itself, on seeded random
values (nested dicts, lists and tuples, empty ones, every scalar type, non-string keys, non-ASCII,
astral and control characters, lone surrogates, huge and negative numbers, int and float
subclasses) and on the values it cannot write itself (NaN, cycles, other types), which must
behave as ``json.dumps`` does.
"""

from __future__ import annotations

import enum
import json
import random

import pytest

from snapcompact.core import indented_json


class _Int(int):
    pass


class _Color(enum.IntEnum):
    RED = 3


_STRINGS = ("", "a", "naïve", "東京", "😀", "\U0001f469\u200d\U0001f467", "\ud800", "\x00\x1f",
            '"quoted" \\ back', "\n\t\r", "\u2028", "█")


def _value(rng: random.Random, depth: int):  # noqa: ANN202 - any JSON value
    kind = rng.randrange(11 if depth < 4 else 7)
    if kind == 0:
        return rng.choice(_STRINGS)
    if kind == 1:
        return rng.choice([None, True, False])
    if kind == 2:
        return rng.choice([0, -1, 7, 10**30, -(2**63), _Int(5), _Color.RED])
    if kind == 3:
        return rng.choice([0.0, -0.0, 1.5, 1e300, -2.5e-8, 0.1 + 0.2, 1e16])
    if kind in (4, 5, 6):
        return rng.choice(_STRINGS) * rng.randint(1, 3)
    if kind in (7, 8):
        items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        return tuple(items) if rng.random() < 0.3 else items
    keys = [rng.choice([*_STRINGS, 1, -2, 2.5, True, False, None]) for _ in range(rng.randint(0, 4))]
    return {k: _value(rng, depth + 1) for k in keys}


@pytest.mark.parametrize("indent", [1, 2])
def test_indented_json_equals_json_dumps(indent: int) -> None:
    rng = random.Random(26)
    for _ in range(1500):
        value = _value(rng, 0)
        assert indented_json(value, indent) == json.dumps(value, indent=indent,
                                                          ensure_ascii=False)


def test_values_it_leaves_to_json_dumps_behave_as_there() -> None:
    for value in (float("nan"), [1, float("inf")], {"a": float("-inf")}, {2.5: 1}):
        assert indented_json(value) == json.dumps(value, indent=1, ensure_ascii=False)
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        indented_json(cycle)
    with pytest.raises(TypeError, match="not JSON serializable"):
        indented_json({"a": object()})
    with pytest.raises(TypeError, match="keys must be"):
        indented_json({(1, 2): 3})


@pytest.mark.parametrize("container", [list, tuple])
def test_nesting_up_to_the_depth_limit_is_written_without_running_out_of_stack(container) -> None:
    # 800 levels (under the writer's 900 and Python's default limit of 1000 frames) only fit
    # when each level costs one stack frame; the expected text is built line by line here.
    depth = 800
    value: object = 1
    for _ in range(depth):
        value = container([value])
    lines = [" " * i + "[" for i in range(depth)] + [" " * depth + "1"]
    lines += [" " * i + "]" for i in reversed(range(depth))]
    assert indented_json(value) == "\n".join(lines)
    assert indented_json({"a": value}, 2).startswith('{\n  "a": [\n    [\n')
