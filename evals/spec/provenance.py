"""What produced a row: package, git commit, tables and renderer versions, the offline reader's.

Why recorded per row: a number is only comparable to another made with the same tables, prompts,
renderer and reader; analysis groups and filters on these instead of trusting a folder name.
"""


from __future__ import annotations

import functools
import hashlib
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import evals.readers as readers_pkg
from evals.readers.ocr import engine_version
from evals.spec.dependency_versions import dependency_versions
from snapcompact.core import shape_table_sha256
from snapcompact.pricing import model_shapes_sha256, pricing_table_sha256
from snapcompact.render import RENDERER_VERSION

# --------------------------------------------------------------------------------------------
# versions


@dataclass(frozen=True)
class Versions:
    """What produced a row: code, tables, renderer (design §5) and the packages that change
    answers or prices (``evals.spec.dependency_versions``)."""

    package_version: str
    git_sha: str
    shape_table_sha256: str
    pricing_table_sha256: str
    model_shapes_sha256: str
    renderer_version: str
    dependency_versions: Mapping[str, str] = field(default_factory=dict)
    #: content hash of the code (see :func:`code_sha256`): equal for any checkout or wheel of
    #: the same code, unlike the commit, which also moves when only results change
    code_sha256: str = ""


@functools.lru_cache(maxsize=1)
def versions() -> Versions:
    from importlib.metadata import PackageNotFoundError, version

    try:
        package = version("snapcompact-evals")
    except PackageNotFoundError:
        package = "unknown"
    return Versions(package, _git_sha(), shape_table_sha256(), pricing_table_sha256(),
                    model_shapes_sha256(), RENDERER_VERSION, dependency_versions(),
                    code_sha256())


_CODE_SUFFIXES = (".py", ".toml", ".yaml", ".json", ".bdf", ".txt")


@functools.lru_cache(maxsize=1)
def code_sha256() -> str:
    """sha256 over the library's and the harness's files (path and bytes, sorted; bytecode
    caches left out), configs included (``evals/configs`` links to them)."""
    import evals
    import snapcompact

    digest = hashlib.sha256()
    for package in (Path(snapcompact.__file__).parent, Path(evals.__file__).parent):
        files = sorted(p for p in package.rglob("*")
                       if p.is_file() and p.suffix in _CODE_SUFFIXES
                       and "__pycache__" not in p.parts)
        for path in files:
            digest.update(f"{package.name}/{path.relative_to(package).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _git_sha() -> str:
    """HEAD of the checkout the code runs from, with ``-dirty`` for uncommitted changes."""
    root = Path(__file__).resolve().parents[2]  # evals/spec/provenance.py -> the checkout
    if not (root / ".git").exists():
        # an installed wheel: site-packages may sit inside some other checkout (a venv in a
        # repository), whose HEAD says nothing about this code
        return "unknown"
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=20, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


@functools.lru_cache(maxsize=1)
def offline_reader_version() -> str:
    """Hash of the offline reader's code plus the OCR engine and its language data.

    The response cache keys on the prompt, not on the reader's code: without this, a fix to
    the OCR reader would keep serving answers from the reader before the fix.
    """
    digest = hashlib.sha256()
    for path in sorted(Path(readers_pkg.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    try:  # the OCR engine is optional (ImportError / OSError when absent)
        engine = engine_version()
    except (ImportError, OSError, RuntimeError, ValueError):
        engine = "engine unavailable"
    return f"{digest.hexdigest()[:16]}; {engine}"
