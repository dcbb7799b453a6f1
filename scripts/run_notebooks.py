"""Execute every notebook headless and write the figures it draws as PNG files.

    python scripts/run_notebooks.py [--results DIR] [--out DIR]

Why a script and not ``jupyter nbconvert``: the notebooks read the result tables from
``$SNAPCOMPACT_RESULTS`` and draw inline; nbclient (already a test dependency) runs them in this
venv's python3 kernel without Jupyter's server or a browser, and the PNG outputs of each cell
are written as ``OUT/<notebook>-<k>.png`` (k counts figures in order), so a figure can be
looked at, diffed and committed. The notebooks themselves are not rewritten. Exit status 1 when
a notebook raises (its cell and error are printed).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]


def run_notebook(path: Path, results: Path, out: Path) -> list[Path]:
    """Execute ``path`` against ``results`` and write its figures under ``out``."""
    os.environ["SNAPCOMPACT_RESULTS"] = str(results)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # the kernel imports this checkout's code, whatever the venv's editable install points to
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    written = []
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            png = output.get("data", {}).get("image/png")
            if png:
                target = out / f"{path.stem}-{len(written) + 1}.png"
                target.write_bytes(base64.b64decode(png))
                written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "figures")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.png"):
        old.unlink()
    failed = 0
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        started = time.perf_counter()
        try:
            figures = run_notebook(path, args.results, args.out)
        except CellExecutionError as exc:
            failed += 1
            print(f"{path.name}: failed\n{exc}", file=sys.stderr)
            continue
        print(f"{path.name}: {len(figures)} figures in {time.perf_counter() - started:.1f} s")
        for figure in figures:
            print(f"  {figure.relative_to(ROOT) if figure.is_relative_to(ROOT) else figure}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
