"""The figures of issue 25's before/after table, counted on a checkout (ast and grep only).

Why: "the harness is a house a newcomer sees whole" is checked by numbers anyone can recount on
any commit: top-level harness modules, import circles (modules, and packages/rooms, counting
imports inside functions, skipping ``if TYPE_CHECKING``), ``variant`` in configs and code,
function-local imports of the project's own modules, test files at the top of tests/ and test
folders, and the largest function.

    python scripts/house_counts.py [CHECKOUT]      # default: the current folder
"""
import ast, subprocess, sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
OWN = ("snapcompact", "evals")

def pyfiles(pkg):
    return sorted((root / pkg).rglob("*.py"))

def modname(p):
    parts = list(p.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__": parts.pop()
    return ".".join(parts)

local_own = local_all = 0
largest = (0, "")
edges = {}
mods = {modname(p): p for pkg in OWN for p in pyfiles(pkg)}
for name, p in mods.items():
    tree = ast.parse(p.read_text())
    pkg = name if p.name == "__init__.py" else name.rpartition(".")[0]
    fn_nodes = set()
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for st in node.body for n in ast.walk(st))
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = fn.end_lineno - fn.lineno + 1
            if n > largest[0]: largest = (n, f"{p.relative_to(root)}::{fn.name}")
            fn_nodes.update(id(x) for x in ast.walk(fn))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            own = any(t.split(".")[0] in OWN for t in targets)
            if id(node) in fn_nodes:
                local_all += 1
                local_own += own
            for t in targets:
                if t in mods and t != name and mods[t].name != "__init__.py" and p.name != "__init__.py":
                    edges.setdefault(name, set()).add(t)

def sccs(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in sorted(edges):
        if v not in index: visit(v)
    return out

def room(m):
    parts = m.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (root / "/".join(parts)).is_dir() else parts[0] + ".<top>"
room_edges = {}
for a, bs in edges.items():
    for b in bs:
        if a.split(".")[0] == b.split(".")[0] and room(a) != room(b):
            room_edges.setdefault(room(a), set()).add(room(b))

top_evals = [p.name for p in (root / "evals").glob("*.py") if p.name != "__init__.py"]
print("top-level evals modules:", len(top_evals))
print("module import circles (incl. function-local):", len(sccs(edges)), sccs(edges))
print("package/room import circles (incl. function-local):", len(sccs(room_edges)), sccs(room_edges))
g = lambda args: int(subprocess.run(f"grep -rwo {args} | wc -l", shell=True, cwd=root, capture_output=True, text=True).stdout)
print("'variant' words in configs/:", g("variant configs/"))
print("'variant[s]' words in configs/ + *.toml:", g("-e variant -e variants configs/ snapcompact/core/shapes.toml snapcompact/pricing/model_shapes.toml"))
print("'variant' words in snapcompact/ evals/ *.py:", g("variant --include=*.py snapcompact evals"))
print("function-local imports: own modules", local_own, "/ all", local_all)
tests = root / "tests"
print("top-level test files:", len(list(tests.glob("test_*.py"))),
      "| test folders:", len({p.parent for p in tests.rglob("test_*.py") if p.parent != tests}))
print("largest function:", largest)
