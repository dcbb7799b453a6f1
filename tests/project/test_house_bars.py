"""The house's bars, counted on the source: module, class and function sizes, one word per thing.

Why a test: issue 38 carved two god classes and a dozen long modules and functions so a reader
can follow one decision to one place. Sizes creep back one reasonable commit at a time; these
bars make the creep fail where it happens. The numbers are the issue's (no module over 600
lines, no class over 25 methods, no function over 80 lines, the orchestrating pipeline class
showing at most 15 names to its callers, 0 names spelled "variant"), not measurements of today's
code. A table of data may be long; none is today, so the exemption list is empty.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from locations import REPO

MAX_MODULE_LINES = 600
MAX_CLASS_METHODS = 25
MAX_FUNCTION_LINES = 80
MAX_ORCHESTRATOR_NAMES = 15
#: module::function -> why it may be longer (tables of data only).
DATA_TABLES: dict[str, str] = {}

SOURCES = sorted(p for pkg in ("snapcompact", "evals") for p in (REPO / pkg).rglob("*.py"))


def _where(path: Path) -> str:
    return str(path.relative_to(REPO))


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text())) for p in SOURCES]


TREES = _trees()


def test_no_module_is_over_the_bar():
    sizes = {_where(p): len(p.read_text().splitlines()) for p in SOURCES}
    long = {where: n for where, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_class_has_more_methods_than_the_bar():
    big = {}
    for path, tree in TREES:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = [b for b in node.body
                           if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))]
                if len(methods) > MAX_CLASS_METHODS:
                    big[f"{_where(path)}::{node.name}"] = len(methods)
    assert not big, f"classes over {MAX_CLASS_METHODS} methods: {big}"


def test_no_function_is_over_the_bar():
    long = {}
    for path, tree in TREES:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{_where(path)}::{node.name}"
                size = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if size > MAX_FUNCTION_LINES and name not in DATA_TABLES:
                    long[name] = size
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


@pytest.mark.parametrize("qualified", ["snapcompact.compaction.CompactionPipeline",
                                       "snapcompact.agent.SessionMaintenance"])
def test_the_orchestrator_shows_its_callers_few_names(qualified):
    import importlib

    module, _, name = qualified.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    names = [n for n in dir(cls) if not n.startswith("__")]
    assert len(names) <= MAX_ORCHESTRATOR_NAMES, f"{qualified} shows {len(names)}: {names}"


def _spelled_names(tree: ast.Module) -> list[str]:
    """Every name the code spells: definitions, arguments, attributes, imports, keywords."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, ast.Name):
            out.append(node.id)
        elif isinstance(node, ast.Attribute):
            out.append(node.attr)
        elif isinstance(node, ast.arg):
            out.append(node.arg)
        elif isinstance(node, ast.alias):
            out.extend(filter(None, (node.name, node.asname)))
        elif isinstance(node, ast.keyword) and node.arg:
            out.append(node.arg)
    return out


def test_the_word_variant_is_retired_from_code():
    # The project's word is "shape"; data in the old spelling is read through the one converter
    # (snapcompact/core/old_spellings.toml), which is data, not code.
    found = sorted({f"{_where(p)}: {n}" for p, tree in TREES for n in _spelled_names(tree)
                    if "variant" in n.lower()})
    assert not found, f"names spelled 'variant': {found}"
