"""Every notebook runs top to bottom (python3 kernel from this venv) on result tables only.

The notebooks are executed against tables the table command wrote from synthetic records, and,
once the default run's tables are committed under ``results/``, against those too.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from locations import REPO
from nbclient import NotebookClient
from record_rows import misses, shape_rows, synthetic

from evals.analysis import research_compare, search_front
from evals.analysis.table import run
from evals.store.records import append_records

ROOT = REPO  # the checkout (tests/locations.py)
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
COMMITTED = ROOT / "results"
#: Figures each notebook draws at least.
FIGURES = {"recall_per_token.ipynb": 3, "research_front.ipynb": 1}


def _execute(path: Path, results: Path, monkeypatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("SNAPCOMPACT_RESULTS", str(results))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel runs this checkout's code
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return nb


def _outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


@pytest.fixture(scope="module")
def synthetic_results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("nb")
    append_records(root / "runs" / "records.jsonl", synthetic(
        shape_rows("6x6u-bw", misses(40, range(30)), 600),
        shape_rows("8on22-bw", misses(40, range(2)), 1500),
        shape_rows("11on16-bw", misses(40, range(1)), 1600),
        shape_rows("8on22-bw", misses(40, range(4)), 1500, target="openai/gpt-5",
                   model="openai/gpt-5", reported=1560),
        shape_rows("text", misses(40, range(1)), 9000, frame_size=0, arm="text",
                   reader="text_qa", model="snapocr/text-qa"),
    ))
    table = root / "model_shapes.toml"
    table.write_text((ROOT / "snapcompact" / "pricing" / "model_shapes.toml").read_text())
    run([root / "runs"], out=root / "results", n_boot=300, table_path=table, plots=False)
    _research_tables(root, root / "results" / "research")
    return root / "results"


def _research_tables(root: Path, out: Path) -> None:
    """The two research tables, written by their own commands from synthetic research rows:
    a study of three trials beside production, and a held-out pair of runs."""
    from record_rows import research_arm as _arm

    study, held_out = root / "study", root / "held_out"
    append_records(study / "runs" / "reference" / "records.jsonl",
                   _arm("ref", "production", "auto", [1, 0, 0, 0, None], 90_000))
    for i, (recalls, tokens) in enumerate((([1, 1, 0, 0], 80_000), ([1, 1, 1, 0], 100_000),
                                           ([0, 0, 0, 0], 120_000))):
        append_records(study / "runs" / f"t{i}" / "records.jsonl",
                       _arm(f"t{i}", f"search-{i}", "px-8x13-11x16-bw-nostretch",
                            recalls, tokens))
    assert search_front.main([str(study), "--out", str(out)]) == 0
    append_records(held_out / "production" / "records.jsonl",
                   _arm("p", "production", "auto", [1, 0, 0, 0, 0, 1], 90_000, seed=1))
    append_records(held_out / "recommended" / "records.jsonl",
                   _arm("r", "recommended-1", "auto", [1, 1, 0, 1, 0, 1], 85_000, seed=1))
    assert research_compare.main([str(held_out / "production"), str(held_out / "recommended"),
                                  "--out", str(out)]) == 0


def test_there_is_a_recall_per_token_notebook() -> None:
    assert ROOT / "notebooks" / "recall_per_token.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_synthetic_results(path: Path, synthetic_results: Path,
                                            monkeypatch) -> None:
    nb = _execute(path, synthetic_results, monkeypatch)
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "answers by: snapocr (offline OCR reader" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= FIGURES[path.name]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_committed_results(path: Path, monkeypatch) -> None:
    if not (COMMITTED / "summary.parquet").exists():
        pytest.skip("results/ holds no tables yet: the default run has not been committed")
    nb = _execute(path, COMMITTED, monkeypatch)
    assert not [o for o in _outputs(nb) if o.get("output_type") == "error"]


def test_notebooks_never_call_a_model() -> None:
    for path in NOTEBOOKS:
        source = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells
                           if c.cell_type == "code")
        for forbidden in ("litellm", "completion(", "evals.send.client", "evals.pipeline.run",
                          "requests"):
            assert forbidden not in source, f"{path.name} mentions {forbidden}"
