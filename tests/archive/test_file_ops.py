"""File-operation lists: collection from tool calls, the read/modified split, the grouped tree,
and the ``<files>`` upsert, against the reference (``computeFileLists``, ``upsertFileOperations``)
with the seed's overflow line."""

from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache

import pytest
from locations import GOLDEN

from snapcompact.archive import (
    FILE_LIST_LIMIT,
    FileOperations,
    compute_file_lists,
    file_ops_from_messages,
    format_file_list,
    format_grouped_paths,
    is_url_scheme_path,
    strip_read_selector,
    upsert_file_operations,
)

GOLDEN = GOLDEN / "archive" / "reference.json.gz"


@lru_cache(maxsize=1)
def golden() -> dict:
    return json.loads(gzip.decompress(GOLDEN.read_bytes()))


def _ops(raw: dict) -> FileOperations:
    return FileOperations(frozenset(raw["read"]), frozenset(raw["written"]), frozenset(raw["edited"]))


CASES = range(len(golden()["inputs"]["fileCases"]))


@pytest.mark.parametrize("case", CASES)
def test_compute_file_lists_matches_reference(case: int) -> None:
    raw = golden()["inputs"]["fileCases"][case]
    assert compute_file_lists(_ops(raw)).to_json() == golden()["outputs"]["fileLists"][case]


@pytest.mark.parametrize("case", CASES)
def test_upsert_matches_reference_except_the_seed_overflow_line(case: int) -> None:
    raw = golden()["inputs"]["fileCases"][case]
    summaries = golden()["inputs"]["upsertSummaries"]
    expected = golden()["outputs"]["upserts"][case * len(summaries):(case + 1) * len(summaries)]
    lists = compute_file_lists(_ops(raw))
    for summary, ref in zip(summaries, expected):
        ours = upsert_file_operations(summary, lists, raw["read"])
        m = re.search(r"\n\[…(\d+) files elided…\]\n</files>$", ref)
        if m:
            ref = ref[: m.start()] + f"\n… ({m.group(1)} more files omitted)\n</files>"
        assert ours == ref


def test_digest_example() -> None:
    ops = FileOperations(read=frozenset({"src/auth.ts"}), written=frozenset({"src/login.ts"}))
    assert format_file_list(compute_file_lists(ops), ops.read) == "# src/\nauth.ts (Read)\nlogin.ts (Write)"


def test_grouped_tree_folds_chains_and_lists_own_files_first() -> None:
    paths = ["packages/agent/src/compaction/compaction.ts", "packages/agent/src/compaction/utils.ts",
             "packages/agent/src/compaction/prompts/file-operations.md"]
    marks = {paths[0]: " (Read)", paths[1]: " (RW)", paths[2]: " (Write)"}
    assert format_grouped_paths(paths, marks) == (
        "# packages/agent/src/compaction/\ncompaction.ts (Read)\nutils.ts (RW)\n## prompts/\n"
        "file-operations.md (Write)")


def test_limit_and_overflow_line() -> None:
    ops = FileOperations(read=frozenset(f"f{i:02d}.py" for i in range(FILE_LIST_LIMIT + 3)))
    text = format_file_list(compute_file_lists(ops), ops.read)
    lines = text.split("\n")
    assert len(lines) == FILE_LIST_LIMIT + 1
    assert lines[-1] == "… (3 more files omitted)"


def test_collects_paths_from_tool_calls() -> None:
    def call(name: str, path: object) -> dict:
        return {"type": "toolCall", "id": name, "name": name, "arguments": {"path": path}}

    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [call("read", "src/a.ts:10-20"), call("read", "src/b.ts:raw"),
                                          call("write", "out/c.ts"), call("edit", "src/a.ts"),
                                          call("read", "artifact://3"), call("read", 7), call("bash", "x")]},
    ]
    ops = file_ops_from_messages(messages)
    assert ops.read == {"src/a.ts", "src/b.ts"}
    assert ops.written == {"out/c.ts"} and ops.edited == {"src/a.ts"}
    lists = compute_file_lists(ops)
    assert lists.read_files == ("src/b.ts",) and lists.modified_files == ("out/c.ts", "src/a.ts")
    assert format_file_list(lists, ops.read) == "# out/\nc.ts (Write)\n# src/\na.ts (RW)\nb.ts (Read)"


@pytest.mark.parametrize(("raw", "path"), [("a.ts:50-200", "a.ts"), ("a.ts:1-50:raw", "a.ts"),
                                            ("a.ts:conflicts", "a.ts"), ("a.ts:L12", "a.ts"),
                                            ("a.ts:3..9", "a.ts"), ("dir/a.ts", "dir/a.ts")])
def test_strip_read_selector(raw: str, path: str) -> None:
    assert strip_read_selector(raw) == path


def test_url_scheme_and_bad_input() -> None:
    assert is_url_scheme_path("local://ctx.md") and not is_url_scheme_path("src/a.ts")
    with pytest.raises(ValueError, match="single string"):
        FileOperations(read="src/a.ts")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="strings"):
        FileOperations(read=frozenset({1}))  # type: ignore[arg-type]
    assert FileOperations.from_details({"readFiles": ["a"], "modifiedFiles": ["b"]}) == FileOperations(
        read=frozenset({"a"}), edited=frozenset({"b"}))
