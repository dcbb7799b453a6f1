"""Real text every machine has: the Python standard library's sources and docstrings.

Why the stdlib: no registry ships a reading-comprehension corpus we may redistribute, while every
machine that runs the harness has the interpreter's own library -- megabytes of English prose
(docstrings) and real code (for tool-output questions). Docstrings are read with `ast`, never
by importing: importing all of the stdlib is slow, has side effects (turtle, antigravity) and
fails on missing optional C modules.

Which files: the top-level public names of `sys.stdlib_module_names`, in sorted order; packages
are walked with sorted directory listings. Private modules (leading underscore, except package
`__init__.py`), test suites (`test*`, `tests`, `idle_test`) and non-UTF-8 files are skipped.
Order is deterministic on one interpreter; content differs across Python versions, which is
why every item records the Python version.

The filter keeps about 840k characters on CPython 3.11 (enough for one 200k-token history);
newer versions (distutils removed in 3.12) hold less, and packing then wraps around the corpus.

Extracting the prose costs about 3-4 s (parsing ~650 files), so it is cached in-process and, when
possible, on disk under ~/.cache/snapcompact-evals/ (override with SNAPCOMPACT_EVALS_CACHE_DIR;
set it to an empty string to disable), keyed by Python version, stdlib path and EXTRACTOR_VERSION.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

EXTRACTOR_VERSION = 1  # bump when the paragraph filter changes: invalidates the disk cache
CACHE_ENV = "SNAPCOMPACT_EVALS_CACHE_DIR"

_SKIP_DIRS = {"tests", "idle_test", "__pycache__", "site-packages"}
_SKIP_TOP = {"test", "this", "antigravity", "__future__", "__main__"}

MIN_PARAGRAPH_CHARS = 60
MIN_PARAGRAPH_WORDS = 10
MIN_LETTER_SHARE = 0.85


@dataclass(frozen=True)
class SourceFile:
    """A stdlib source file: `rel` is the path relative to the stdlib root, with '/' separators."""

    rel: str
    path: Path


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _is_public_name(name: str) -> bool:
    return not name.startswith(("_", "test")) or name == "__init__.py"


@functools.lru_cache(maxsize=None)
def stdlib_source_files() -> tuple[SourceFile, ...]:
    """Public stdlib .py files in a deterministic order."""
    root = stdlib_root()
    files: list[SourceFile] = []
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in _SKIP_TOP:
            continue
        module_file = root / f"{name}.py"
        package_dir = root / name
        if module_file.is_file():
            files.append(SourceFile(module_file.relative_to(root).as_posix(), module_file))
        elif package_dir.is_dir():
            for dirpath, dirnames, filenames in os.walk(package_dir):
                dirnames[:] = sorted(
                    d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(("_", "test"))
                )
                for fn in sorted(filenames):
                    if fn.endswith(".py") and _is_public_name(fn):
                        path = Path(dirpath) / fn
                        files.append(SourceFile(path.relative_to(root).as_posix(), path))
    return tuple(files)


def read_source(source: SourceFile) -> str | None:
    """The file's text, or None if it is not UTF-8."""
    try:
        return source.path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _prose_paragraphs(docstring: str) -> list[str]:
    """Paragraphs of a cleaned docstring that read as prose, each reflowed to one line."""
    kept = []
    for block in _BLANK_LINE.split(docstring):
        lines = block.splitlines()
        if not lines or any(line.startswith((" ", "\t")) for line in lines[1:]):
            continue  # indented continuation: a code sample, a parameter list, a table
        text = " ".join(line.strip() for line in lines)
        if (
            len(text) < MIN_PARAGRAPH_CHARS
            or not text.isascii()
            or not text.isprintable()
            or ">>>" in text
            or "::" in text
            or text.rstrip()[-1] not in ".!?)"
            or len(text.split()) < MIN_PARAGRAPH_WORDS
        ):
            continue
        letters = sum(ch.isalpha() or ch == " " for ch in text)
        if letters / len(text) < MIN_LETTER_SHARE:
            continue
        kept.append(text)
    return kept


def _extract_paragraphs() -> list[str]:
    seen: set[str] = set()
    paragraphs: list[str] = []
    for source in stdlib_source_files():
        text = read_source(source)
        if text is None:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, _DOC_NODES):
                doc = ast.get_docstring(node, clean=True)
                if not doc:
                    continue
                for para in _prose_paragraphs(doc):
                    if para not in seen:
                        seen.add(para)
                        paragraphs.append(para)
    return paragraphs


def _cache_file() -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured == "":
        return None
    base = Path(configured) if configured else Path.home() / ".cache" / "snapcompact-evals"
    key = hashlib.sha256(
        f"{sys.version}|{stdlib_root()}|{EXTRACTOR_VERSION}".encode()
    ).hexdigest()[:16]
    version = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    return base / f"stdlib-docstrings-py{version}-{key}.json"


def _load_cached(path: Path) -> list[str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("extractor_version") != EXTRACTOR_VERSION or not isinstance(
        data.get("paragraphs"), list
    ):
        return None
    return data["paragraphs"]


def _store_cached(path: Path, paragraphs: list[str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "extractor_version": EXTRACTOR_VERSION,
            "python": sys.version,
            "stdlib": str(stdlib_root()),
            "paragraphs": paragraphs,
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home is fine: we only lose the speed-up


@functools.lru_cache(maxsize=None)
def docstring_paragraphs() -> tuple[str, ...]:
    """Distinct prose paragraphs from stdlib docstrings, one line each, deterministic order."""
    cache = _cache_file()
    if cache is not None:
        cached = _load_cached(cache)
        if cached is not None:
            return tuple(cached)
    paragraphs = _extract_paragraphs()
    if cache is not None:
        _store_cached(cache, paragraphs)
    return tuple(paragraphs)
