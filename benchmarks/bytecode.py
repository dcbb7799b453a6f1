"""Compile a checkout's modules to bytecode before timing it, as an installed wheel has them.

Why: pip byte-compiles a wheel's modules when it installs them; an editable checkout has no
bytecode until a process writes it, and with ``PYTHONDONTWRITEBYTECODE`` set (as on this
project's shared machines) none is ever written, so every timed process would compile every
module from source again (about 0.1 s per process), a cost no installed user pays.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def compile_tree(tree: Path, python: str = sys.executable) -> None:
    """Write bytecode for ``tree``'s library (``snapcompact/``) with ``python``."""
    subprocess.run([python, "-m", "compileall", "-q", "-j", "0", str(tree / "snapcompact")],
                   check=True, stdout=subprocess.DEVNULL)
