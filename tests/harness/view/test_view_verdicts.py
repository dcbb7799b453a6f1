"""The viewer keeps apart what the tables keep apart: skipped questions, windows, verdicts.

The fixture run (tests/view_fixture.py) plus rows built here the way the main job writes them:
``full`` over the model's window (every question skipped, never asked), and the pinned arm once
more at a 32k window, production-valid. Expected values are the constructed rows' own: three
skipped questions, no wrong one, two pinned cells (one per window), a verdict on every cell.
Before issue 44 the skipped ``full`` showed "3 questions, 0 correct, recall 0.000" and the two
windows were one cell.
"""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from view_browser import browser, unavailable  # noqa: E402
from view_fixture import build_fixture_run  # noqa: E402

from evals.store.records import RECORDS_FILE  # noqa: E402
from evals.view import build_site  # noqa: E402

SKIPPED = "the whole history (352,110 tokens) exceeds openai/gpt-5's window of 272,000"


def read_data(path):
    text = path.read_text(encoding="utf-8")
    return json.loads(text[text.index(",") + 1:-3])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewv")
    run = build_fixture_run(root / "run")
    truncate = [r for r in run.rows if r.get("strategy") == "truncate"]
    pinned = [r for r in run.rows if r.get("policy") == "pinned"]
    extra = []
    for row in truncate:  # full: the same questions, skipped over the window
        extra.append({**row, "strategy": "full", "skipped": SKIPPED, "answer": "",
                      "correct": False, "em": 0.0, "f1": 0.0, "abstained": False,
                      "context_window": 200_000, "production_valid": None,
                      "predicted_prompt_tokens": 352_110, "reading": None})
    for row in pinned:  # the pinned arm at 200k and again at 32k: two windows, two cells
        row.update(context_window=200_000, production_valid=False)
        extra.append({**row, "context_window": 32_000, "production_valid": True,
                      "run_id": "fixture-32k"})
    with (root / "run" / RECORDS_FILE).open("w", encoding="utf-8") as fh:
        for row in run.rows + extra:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
    build_site([root / "run"], root / "site", page_size=2, log=lambda _: None)
    return root / "site"


def _cells(out):
    return read_data(out / "data" / "index.js")["cells"]


def test_every_cell_carries_its_window_and_verdict_and_windows_are_never_one_cell(site):
    cells = _cells(site)
    assert all("context_window" in c and c["verdict"] for c in cells)
    pinned = sorted((c["context_window"], c["verdict"]) for c in cells if c["policy"] == "pinned")
    assert pinned == [(32_000, "valid"), (200_000, "not sent")]
    assert {c["verdict"] for c in cells if c["strategy"] in ("full", "truncate")} == {"bound"}


def test_skipped_questions_are_skipped_never_wrong(site):
    full = next(c for c in _cells(site) if c["strategy"] == "full")
    counts = [sum(r[i] for r in full["rounds"].values()) for i in range(5)]
    assert counts == [3, 0, 0, 0, 3]  # questions, correct, errors, billed tokens, skipped
    assert full["skipped"] == SKIPPED
    assert "skipped-all" in full["lists"] and "wrong-all" not in full["lists"]
    outcomes = {read_data(p)["outcome"] for p in (site / "data" / "q").rglob("*.js")
                if read_data(p)["coords"]["strategy"] == "full"}
    assert outcomes == {"skipped"}


@pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")
def test_the_index_shows_full_as_skipped_and_one_table_per_window(site, tmp_path):
    with browser(tmp_path / "profile") as b:
        b.open(site / "index.html")
        page = b.page
        assert page.locator("table.cells").count() == 3  # 200k, 32k, and the rows without one
        row = page.locator("tr", has_text="full").first
        assert row.locator("td").nth(12).text_content() == "skipped"  # the recall column
        assert "0.000" not in row.text_content()
        assert page.locator("table.cells[data-window='32000'] tbody tr").count() == 1
        page.select_option("select[name='outcome']", "wrong")
        b.wait_ready()
        assert page.locator("tr", has_text="full").count() == 0
        assert not b.blocked and not b.console_errors
