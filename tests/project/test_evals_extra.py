"""The harness's commands name the ``[evals]`` extra when it is not installed.

A library-only install (``pip install snapcompact``) still gets the ``snapcompact-eval*``
console scripts; before issue 44 they stopped on ``ModuleNotFoundError: No module named
'pandas'``. A module of the extra is hidden here as Python hides a module that failed to import
(``sys.modules[name] = None``), in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys

from locations import REPO

HIDE = "import sys; sys.modules['pandas'] = None; "


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)


def test_a_console_script_says_one_line_naming_the_extra():
    done = _python(HIDE + "sys.argv = ['/venv/bin/snapcompact-eval-table', '--help']; "
                   "from evals.analysis.table import main; main()")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("snapcompact-eval-table: error: the eval harness needs the "
                               "[evals] extra (missing: pandas)")
    assert "pip install 'snapcompact[evals]'" in lines[0]


def test_an_import_elsewhere_raises_the_error_naming_the_extra():
    done = _python(HIDE + "import evals.analysis.table")
    assert done.returncode == 1
    assert ("ModuleNotFoundError: the eval harness needs the [evals] extra (missing: pandas)"
            in done.stderr)


def test_with_the_extra_the_harness_imports():
    assert _python("import evals.analysis.table").returncode == 0
