"""Data-URL elision: parity with the reference in both contexts, plus documented cases.

Golden data: ``tests/golden/serialize/dataurl.json.gz`` (from ``make_golden.py``). "source"
outputs come from the reference serializer with caps off, "archive" outputs from its
``archiveSourceText``. The example tests restate the digest's section k, items 85-97.
"""

from __future__ import annotations

import gzip
import json
import re
import time

import pytest
from locations import GOLDEN

from snapcompact.archive import elide_data_urls, serialize_conversation

GOLDEN_FILE = GOLDEN / "serialize" / "dataurl.json.gz"
with gzip.open(GOLDEN_FILE, "rt", encoding="ascii") as _fh:
    GOLDEN = json.load(_fh)

PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
LEAKED_RUN = re.compile(r"[A-Za-z0-9+/=]{40,}")


@pytest.mark.parametrize("context", ["source", "archive"])
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_matches_reference(name: str, context: str) -> None:
    entry = GOLDEN[name]
    assert elide_data_urls(entry["input"], context) == entry[context]


def _tool_output(text: str, **options) -> str:
    messages = [
        {"role": "assistant", "content": [{"type": "toolCall", "id": "a", "name": "t", "arguments": {}}]},
        {"role": "toolResult", "toolCallId": "a", "toolName": "t", "content": [{"type": "text", "text": text}],
         "isError": False},
    ]
    return serialize_conversation(messages, options)


def test_markdown_svg_in_tool_result() -> None:  # 85
    svg = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="
    out = _tool_output(f"see ![d](data:image/svg+xml;base64,{svg}) trailing words")
    assert f"see [data URL omitted: image/svg+xml, {len(svg)} base64 chars] trailing words" in out
    assert LEAKED_RUN.search(out) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"x data:image/png;base64,{PNG_1PX} y", f"x [data URL omitted: image/png, {len(PNG_1PX)} base64 chars] y"),
        ("data:image/png;base64,abc", "data:image/png;base64,abc"),  # 90: prose mention
        (f"data:text/plain;charset=utf-8;base64,{PNG_1PX}",  # 91: parameters kept
         f"[data URL omitted: text/plain;charset=utf-8, {len(PNG_1PX)} base64 chars]"),
        (f"DATA:IMAGE/PNG;BASE64,{PNG_1PX}", f"[data URL omitted: IMAGE/PNG, {len(PNG_1PX)} base64 chars]"),  # 92
        ("data:image/png;base64,AB [\u2026900ch elided\u2026] CD",  # marker: remaining + elided
         "[data URL omitted: image/png, 904 base64 chars]"),
    ],
)
def test_source_context_examples(text: str, expected: str) -> None:  # 86, 90-92
    assert elide_data_urls(text) == expected


@pytest.mark.parametrize("cut", [0, 1, 39])
def test_archive_heals_cut_prefixes(cut: int) -> None:  # 95
    fragment = f"head data:image/png;base64,{PNG_1PX[:cut]}"
    assert elide_data_urls(fragment, "archive") == f"head [data URL omitted: image/png, {cut} base64 chars]"
    # In source context a short fragment counts as prose.
    assert elide_data_urls(fragment, "source") == fragment


@pytest.mark.parametrize("pad", [0, 600, 1150, 1199, 4000, 6500, 7400])
def test_cut_sweep_never_leaks(pad: int) -> None:  # 87
    url = f"![c](data:image/png;base64,{PNG_1PX * 30})"
    out = _tool_output("p" * pad + url + "q" * 8000)
    assert LEAKED_RUN.search(out.replace("p" * 40, "").replace("q" * 40, "")) is None
    assert "base64," not in out


def test_arguments_are_elided() -> None:  # 88
    out = serialize_conversation([{"role": "assistant", "content": [
        {"type": "toolCall", "id": "a", "name": "put", "arguments": {"img": f"data:image/png;base64,{PNG_1PX}"}}]}])
    assert out == f'¶call:put(img="[data URL omitted: image/png, {len(PNG_1PX)} base64 chars]")'


def test_bracket_flood_is_fast_and_capped() -> None:  # 97
    start = time.perf_counter()
    out = _tool_output("[" * 80_000 + ";base64,", dimToolResults=False)
    assert time.perf_counter() - start < 2
    body = out.split("<out>\n", 1)[1].removesuffix("\n</out>")
    assert body == "[" * 1200 + " [\u202678008ch elided\u2026] " + "[" * 792 + ";base64,"


def test_rejects_unknown_context() -> None:
    with pytest.raises(ValueError, match="context"):
        elide_data_urls("x", "middle")  # type: ignore[arg-type]
