"""The picture of the house is checked against the house: names in the docs, rooms in docstrings.

Why: docs/architecture.md drew a data flow (``replay_session → CompactionPipeline``) that the
harness had stopped following, and package docstrings listed half their modules. Prose cannot
be made true by a test, but the names in it can: every dotted ``snapcompact.*`` / ``evals.*``
name the page writes must import; each step of its ``flow`` block must be called by the step
before it (the callee's name appears in the caller's source); and every module of a package is
named in that package's docstring. Renaming or moving a function without redrawing the picture
fails here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest
from locations import REPO

DOC = REPO / "docs" / "architecture.md"
DOTTED = re.compile(r"(?<![\w./-])((?:snapcompact|evals)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def _fenced(kind: str) -> list[str]:
    """The lines of the fenced blocks of ``kind`` (```kind) in the architecture page."""
    lines, inside, out = DOC.read_text().splitlines(), False, []
    for line in lines:
        if line.startswith("```"):
            inside = not inside and line[3:].strip() == kind
            continue
        if inside:
            out.append(line)
    return out


def _resolve(dotted: str) -> object:
    """The module, or the attribute path inside the longest importable module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)  # AttributeError names the stale part
        return obj
    raise ModuleNotFoundError(dotted)


def _pairs() -> list[tuple[str, str]]:
    """The flow block's arrows: each line ``caller ──▶ callee`` (two dotted names) is one call."""
    pairs = []
    for line in _fenced("flow"):
        names = DOTTED.findall(line)
        if len(names) == 2:
            pairs.append((names[0], names[1]))
    return pairs


def test_the_page_draws_a_flow_from_the_harness_into_the_library():
    pairs = _pairs()
    assert len(pairs) >= 8, f"docs/architecture.md's flow block draws only {pairs}"
    names = {n for pair in pairs for n in pair}
    assert any(n.startswith("evals.") for n in names)
    assert any(n.startswith("snapcompact.agent") for n in names)
    assert any(n.startswith("snapcompact.compaction") for n in names)


@pytest.mark.parametrize("dotted", sorted(set(DOTTED.findall(DOC.read_text()))))
def test_every_dotted_name_on_the_page_exists(dotted):
    try:
        _resolve(dotted)
    except (ModuleNotFoundError, AttributeError) as exc:
        pytest.fail(f"docs/architecture.md names {dotted}, which no longer exists ({exc})")


@pytest.mark.parametrize(("caller", "callee"), _pairs(), ids=lambda s: s.rsplit(".", 1)[-1])
def test_each_flow_step_is_called_by_the_one_before(caller, callee):
    source = inspect.getsource(_resolve(caller))  # type: ignore[arg-type]
    name = callee.rsplit(".", 1)[-1]
    assert re.search(rf"\b{re.escape(name)}\b", source), (
        f"the flow says {caller} calls {callee}, but {name} does not appear in its source")


def _packages() -> list[Path]:
    inits = sorted((REPO / "snapcompact").rglob("__init__.py")) + sorted(
        (REPO / "evals").rglob("__init__.py"))
    return [p.parent for p in inits]


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(REPO)))
def test_each_package_docstring_names_its_rooms(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    rooms = [p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")]
    rooms += [d.name for d in package.iterdir() if (d / "__init__.py").is_file()]
    missing = sorted(r for r in rooms if not re.search(rf"\b{re.escape(r)}\b", doc))
    where = package.relative_to(REPO)
    assert not missing, f"{where}/__init__.py's docstring does not name {missing}"


def _module_qualified(text: str) -> set[str]:
    """Dotted names that go through a real package or module (``snapcompact.billing.X``,
    ``evals.send.client.Y``). Two-part names such as ``snapcompact.frameCharge`` are settings
    keys in prose, not code, and are left alone."""
    out = set()
    for dotted in DOTTED.findall(text):
        parts = dotted.split(".")
        package, module = REPO.joinpath(*parts[:2]), REPO.joinpath(parts[0], parts[1] + ".py")
        if len(parts) > 2 and (package.is_dir() or module.is_file()):
            out.add(dotted)
    return out


PAGES = [REPO / "README.md", REPO / "results" / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_module_qualified_name_in_the_docs_exists(page):
    stale = []
    for dotted in sorted(_module_qualified(page.read_text())):
        try:
            _resolve(dotted)
        except (ModuleNotFoundError, AttributeError):
            stale.append(dotted)
    assert not stale, f"{page.relative_to(REPO)} names {stale}, which no longer exist"
