"""The house rules, checked on the source: layers, no cycles, public names across packages.

Expected values come from ``docs/architecture.md`` (its ``layers`` block is the order the packages
may import in), not from the code: moving an import against the arrows, hiding a cycle inside a
function, or reaching past a package's ``__all__`` fails here.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from locations import REPO

ROOT = REPO  # the checkout (tests/locations.py)
LIBRARY = "snapcompact"
HARNESS_ONLY = ("evals", "hydra", "omegaconf", "litellm")


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (resolved through the packages' lazy name maps)
    name: str | None  # the imported name, for `from X import name`
    via: str  # the module path written in the statement
    local: bool  # inside a function


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}


MODULES = {**_modules(LIBRARY), **_modules("evals")}
PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def _lazy_names(package: str) -> dict[str, str]:
    """The ``_WHERE`` map of a package ``__init__`` (public name -> submodule), if it has one."""
    tree = ast.parse(MODULES[package].read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "_WHERE":
            return ast.literal_eval(node.value)
    return {}


LAZY = {package: _lazy_names(package) for package in PACKAGES}


def _resolve(module: str, name: str | None) -> str:
    """The module that really provides ``name`` when written as ``from module import name``."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    if name is not None and name in LAZY.get(module, {}):
        return _resolve(f"{module}.{LAZY[module][name]}", name)
    return module


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _imports(module: str, type_only: bool = False) -> list[Import]:
    """The module's imports; ``type_only``: those under ``if TYPE_CHECKING:`` too."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    skip = set() if type_only else _type_checking_nodes(tree)
    local = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(fn)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(Import(module, alias.name, None, alias.name, id(node) in local))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                out.append(Import(module, _resolve(base, alias.name), alias.name, base,
                                  id(node) in local))
    return out


IMPORTS = {module: _imports(module) for module in MODULES}
IMPORTS_WITH_TYPES = {module: _imports(module, type_only=True) for module in MODULES}


def _layers(which: str = "") -> list[str]:
    """The first word of each line of docs/architecture.md's ```layers block (```layers evals for
    the harness's rooms), top first; an indented line continues the one above."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(rf"```layers{' ' + which if which else ''}\n(.*?)```", text, re.S)
    assert block, f"docs/architecture.md has no ```layers {which} block"
    return [line.split()[0] for line in block.group(1).splitlines()
            if line.strip() and not line[0].isspace()]


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == LIBRARY and len(parts) > 1 and f"{LIBRARY}.{parts[1]}" in PACKAGES \
        else None


def test_the_layers_block_names_every_stage_package_once():
    stages = {m.split(".")[1] for m in PACKAGES if m.startswith(LIBRARY + ".") and m.count(".") == 1}
    layers = _layers()
    assert sorted(layers) == sorted(stages) and len(set(layers)) == len(layers)


def test_stage_packages_import_only_their_own_stage_or_lower_ones():
    order = {stage: rank for rank, stage in enumerate(reversed(_layers()))}
    wrong = []
    for module, imports in IMPORTS.items():
        own = _stage(module)
        if own is None:
            continue
        for imp in imports:
            other = _stage(imp.target)
            if other is not None and order[other] > order[own]:
                wrong.append(f"{module} -> {imp.target}")
    assert wrong == []


HARNESS = "evals"
ROOMS = {m.split(".")[1] for m in PACKAGES if m.startswith(HARNESS + ".") and m.count(".") == 1}
#: Top-level harness modules: old paths the offline reader still imports (its source is hashed
#: into every OCR cache key), each re-exporting one room's names.
ALIASES = {m for m, p in MODULES.items() if m.startswith(HARNESS + ".") and m.count(".") == 1
           and p.name != "__init__.py"}


def _alias_room(module: str) -> str | None:
    rooms = {imp.target.split(".")[1] for imp in IMPORTS[module]
             if imp.target.startswith(HARNESS + ".") and imp.target.count(".") >= 2}
    return rooms.pop() if len(rooms) == 1 else None


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != HARNESS or len(parts) < 2:
        return None
    if module in ALIASES:
        return _alias_room(module)
    return parts[1] if parts[1] in ROOMS else None


def test_the_evals_layers_block_names_every_room_once():
    layers = _layers(HARNESS)
    assert sorted(layers) == sorted(ROOMS) and len(set(layers)) == len(layers)


def test_rooms_import_only_their_own_room_or_lower_ones_even_inside_functions():
    order = {room: rank for rank, room in enumerate(reversed(_layers(HARNESS)))}
    wrong = []
    for module, imports in IMPORTS.items():
        own = _room(module)
        if own is None:
            continue
        for imp in imports:
            other = _room(imp.target)
            if other is not None and order[other] > order[own]:
                wrong.append(f"{module} -> {imp.target}")
    assert wrong == []


def test_top_level_harness_modules_are_aliases_the_offline_reader_alone_imports():
    """Nothing but the readers may keep an old path; an alias holds one room's names, no code."""
    for alias in ALIASES:
        tree = ast.parse(MODULES[alias].read_text())
        body = [n for n in tree.body if not (isinstance(n, ast.Expr)
                                             and isinstance(n.value, ast.Constant))]
        assert all(isinstance(n, ast.ImportFrom) or (isinstance(n, ast.Assign)
                   and ast.unparse(n.targets[0]) == "__all__") for n in body), alias
        assert _alias_room(alias) is not None, alias
    importers = {m for m, imports in IMPORTS.items() for imp in imports if imp.via in ALIASES}
    assert importers <= {m for m in MODULES if m.startswith(f"{HARNESS}.readers")}


def test_no_import_cycle_between_rooms():
    edges: dict[str, set[str]] = {}
    for module, imports in IMPORTS.items():
        own = _room(module)
        if own is None:
            continue
        edges.setdefault(own, set()).update(
            other for imp in imports if (other := _room(imp.target)) not in (None, own))
    assert _cycles(edges) == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("imports_of", [IMPORTS, IMPORTS_WITH_TYPES],
                         ids=["runtime", "type-only-included"])
@pytest.mark.parametrize("package", [LIBRARY, "evals"])
def test_no_import_cycle_even_through_function_local_imports(package, imports_of):
    # with type-only imports as well: a cycle hidden under TYPE_CHECKING is still two modules
    # that cannot be read (or moved) one without the other
    edges: dict[str, set[str]] = {}
    for module, imports in imports_of.items():
        if module.split(".")[0] != package or module in PACKAGES:
            continue
        edges[module] = {imp.target for imp in imports
                         if imp.target in MODULES and imp.target not in PACKAGES
                         and imp.target != module}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _public(package: str) -> set[str]:
    return set(importlib.import_module(package).__all__)


def test_across_packages_only_public_names_of_the_stage_package():
    wrong = []
    for module, imports in IMPORTS.items():
        for imp in imports:
            if not imp.via.startswith(LIBRARY + "."):
                continue
            own, other = _stage(module), _stage(imp.via)
            if own is None or other is None or own == other:
                continue
            stage_package = f"{LIBRARY}.{other}"
            if imp.via != stage_package or imp.name not in _public(stage_package):
                wrong.append(f"{module}: from {imp.via} import {imp.name}")
    assert wrong == []


def test_evals_imports_the_library_through_public_names_only():
    wrong = [f"{m}: from {imp.via} import {imp.name}" for m, imports in IMPORTS.items()
             if m.startswith("evals") for imp in imports
             if imp.via.split(".")[0] == LIBRARY and imp.name is not None
             and (imp.via not in PACKAGES or imp.name not in _public(imp.via))]
    assert wrong == []


def test_the_library_never_imports_the_harness_at_module_level():
    wrong = [f"{m} -> {imp.via}" for m, imports in IMPORTS.items() if m.startswith(LIBRARY)
             for imp in imports if not imp.local and imp.via.split(".")[0] in HARNESS_ONLY]
    assert wrong == []


@pytest.mark.parametrize("package", sorted(p for p in PACKAGES if p.startswith(LIBRARY)))
def test_every_public_name_resolves_and_the_static_imports_agree(package):
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(LAZY[package]) or not LAZY[package]
    for name in module.__all__:
        assert getattr(module, name) is not None
    tree = ast.parse(MODULES[package].read_text())
    declared = {alias.asname or alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and id(node) in _type_checking_nodes(tree)
                for alias in node.names}
    assert declared == set(module.__all__)


@pytest.mark.parametrize("package", sorted(p for p in PACKAGES if LAZY.get(p) and p != LIBRARY))
def test_no_public_name_is_also_the_name_of_a_submodule(package):
    """Importing a submodule binds it on its package under its own name, so a public name that
    is also a submodule's name resolves to the function or to the module depending on what was
    imported first (cache_breakpoint's module was once named cache_breakpoint). The top-level
    package is left out: its ``render`` is both the function and the stage package."""
    submodules = {m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == package}
    assert sorted(set(LAZY[package]) & submodules) == []
