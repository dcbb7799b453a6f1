"""Count imports inside function bodies (function-local imports), for issue 25's table.

Why: an import inside a function hides a dependency from the top of the file. This walks every
module under ``snapcompact/`` and ``evals/`` (ast only, nothing imported) and counts ``import`` /
``from ... import`` nodes nested in a function, split into the project's own modules
(``snapcompact``, ``evals``, relative imports) and the rest.

    python scripts/count_local_imports.py            # totals
    python scripts/count_local_imports.py --list     # ... and every own-module local import
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

OWN = ("snapcompact", "evals")


def _module_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return ["." * node.level + (node.module or "")]
    return [alias.name for alias in node.names]


def _is_own(name: str) -> bool:
    return name.startswith(".") or name.split(".", 1)[0] in OWN


def local_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import nested in a function of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.extend((child.lineno, name) for name in _module_names(child))
            walk(child, inside)

    walk(tree, False)
    return found


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[1]
    own = other = 0
    for path in sorted(p for d in OWN for p in (root / d).rglob("*.py")):
        for line, name in local_imports(path):
            if _is_own(name):
                own += 1
                if "--list" in argv:
                    print(f"{path.relative_to(root)}:{line}: {name}")
            else:
                other += 1
    print(f"function-local imports: {own} of own modules (snapcompact, evals), "
          f"{other} of others, {own + other} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
