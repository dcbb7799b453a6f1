"""The viewer shows each question's probe kind and outcome, and the told and blind readers apart.

Hand-made rows (``tests/record_rows.make_record``) in two run folders, the way the main job
writes ``default`` (told evidence: ``snapocr``) and ``default_blind`` (``snapblind``): the same
arm and questions, each answer's outcome written out here, so every expected count below is
the table in :data:`TOLD` / :data:`BLIND` counted by hand, not by the viewer's code. Before
issue 47 item 2 the viewer had no probe kind, no abstained outcome (an abstention listed as
wrong), no silent-wrong or confabulated mark, and ranked the two readers' cells in one table.
"""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from record_rows import make_record  # noqa: E402
from view_browser import browser, unavailable  # noqa: E402

from evals.store.records import RECORDS_FILE, append_records  # noqa: E402
from evals.view import build_site  # noqa: E402

TOLD_NAME = "told evidence (legibility floor)"
BLIND_NAME = "blind (BM25 retrieval)"
# question id -> (probe kind or None for an old row, outcome): correct / abstained / wrong
TOLD = {"q1": ("exact", "correct"), "q2": ("exact", "wrong"), "q3": ("gist", "abstained"),
        "q4": ("never-stated", "wrong"), "q5": ("never-stated", "correct"),
        "q6": (None, "wrong")}
BLIND = {"q1": ("exact", "wrong"), "q2": ("exact", "abstained"), "q3": ("gist", "correct"),
         "q4": ("never-stated", "correct"), "q5": ("never-stated", "wrong")}


def _rows(outcomes, model, label, run_id):
    rows = []
    for qid, (probe, outcome) in outcomes.items():
        meta = {"depth": 0.5} if probe is None else {"depth": 0.5, "probe": probe}
        rows.append(make_record(
            run_id=run_id, model=model, question_id=qid, question=f"What about {qid}?",
            question_meta=meta, extra={"reader_label": label}, context_window=200_000,
            correct=outcome == "correct", abstained=outcome == "abstained",
            answer={"correct": "7342", "abstained": "unanswerable", "wrong": "7348"}[outcome],
            em=float(outcome == "correct"), f1=float(outcome == "correct")))
    return rows


def read_data(path):
    text = path.read_text(encoding="utf-8")
    return json.loads(text[text.index(",") + 1:-3])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewo")
    append_records(root / "told" / RECORDS_FILE,
                   _rows(TOLD, "snapocr/ocr-qa", TOLD_NAME, "told"))
    append_records(root / "blind" / RECORDS_FILE,
                   _rows(BLIND, "snapblind/context-qa", BLIND_NAME, "blind"))
    build_site([root / "told", root / "blind"], root / "site", page_size=3, log=lambda _: None)
    return root / "site"


def _cells(site):
    cells = read_data(site / "data" / "index.js")["cells"]
    return {c["reader_name"]: c for c in cells}


def _questions(site):
    return {(q["reader_name"], q["record"]["question_id"]): q
            for q in (read_data(p) for p in (site / "data" / "q").rglob("*.js"))}


def test_each_reader_is_its_own_cell_linked_to_the_other(site):
    cells = _cells(site)
    assert set(cells) == {TOLD_NAME, BLIND_NAME}
    told, blind = cells[TOLD_NAME], cells[BLIND_NAME]
    assert told["offline"] and not blind["offline"]
    assert told["others"] == [{"id": blind["id"], "reader_name": BLIND_NAME}]
    assert blind["others"] == [{"id": told["id"], "reader_name": TOLD_NAME}]


def test_cell_counts_outcomes_and_silent_wrongs_by_probe_kind(site):
    cells = _cells(site)
    # [correct, abstained, wrong, silent wrong, confabulated]; q6 (no kind) reads as exact
    assert cells[TOLD_NAME]["probes"] == {"exact": [1, 0, 2, 2, 0], "gist": [0, 1, 0, 0, 0],
                                          "never-stated": [1, 0, 1, 0, 1]}
    assert cells[BLIND_NAME]["probes"] == {"exact": [0, 1, 1, 1, 0], "gist": [1, 0, 0, 0, 0],
                                           "never-stated": [1, 0, 1, 0, 1]}
    told = cells[TOLD_NAME]
    # the never-stated probes answered and right, kept apart from recall: told q4, q5; blind q4, q5
    assert [told["rounds"]["rna"][i] for i in (0, 1, 8, 9)] == [6, 2, 2, 1]
    assert [cells[BLIND_NAME]["rounds"]["rna"][i] for i in (0, 1, 8, 9)] == [5, 2, 2, 1]
    assert sorted(told["lists"]) == sorted(
        f"{o}-{r}" for o in ("all", "correct", "abstained", "wrong", "silent", "confab")
        for r in ("all", "rna"))
    listed = read_data(site / "data" / "cells" / told["id"] / "silent-all" / "p1.js")["rows"]
    assert sorted(r["qid"] for r in listed) == ["q2", "q6"]


def test_every_question_names_its_kind_outcome_and_reader(site):
    qs = _questions(site)
    assert len(qs) == 11
    kinds = {key: (q["probe"], q["probe_old"], q["kind"]) for key, q in qs.items()}
    assert kinds[(TOLD_NAME, "q2")] == ("exact", False, "silent wrong")
    assert kinds[(TOLD_NAME, "q3")] == ("gist", False, "abstained")
    assert kinds[(TOLD_NAME, "q4")] == ("never-stated", False, "confabulated")
    assert kinds[(TOLD_NAME, "q6")] == ("exact", True, "silent wrong")
    assert kinds[(BLIND_NAME, "q3")] == ("gist", False, "correct")
    assert kinds[(BLIND_NAME, "q5")] == ("never-stated", False, "confabulated")


@pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")
def test_readers_in_their_own_tables_and_a_silent_wrong_marked_in_chromium(site, tmp_path):
    with browser(tmp_path / "profile") as b:
        b.open(site / "index.html")
        page = b.page
        tables = page.locator("table.cells")
        assert tables.count() == 2  # one window, two readers: never one ranking
        assert sorted(tables.nth(i).get_attribute("data-reader") for i in range(2)) == [
            BLIND_NAME, TOLD_NAME]
        for i in range(2):
            assert tables.nth(i).locator("tbody tr").count() == 1
        told_row = page.locator(f"table.cells[data-reader='{TOLD_NAME}'] tbody tr")
        assert told_row.locator("a.other-reader").text_content() == BLIND_NAME
        # recall over the stated probes: told q1 of q1, q2, q3, q6; blind q3 of q1, q2, q3
        assert told_row.locator("td").nth(12).text_content() == "0.250"
        assert told_row.locator("td.others").text_content().endswith("0.333")
        assert told_row.locator("[data-probe='exact'] .badge.silent").text_content() == "2 silent"
        page.select_option("select[name='outcome']", "confab")
        b.wait_ready()
        assert page.locator("#cells tbody tr").count() == 2
        told_row.locator("a.open").click()
        b.wait_ready()
        assert page.locator("#questions tbody tr").count() == 1

        qid = _questions(site)[(TOLD_NAME, "q2")]["id"]
        b.open(site / "question.html", f"id={qid}")
        assert page.locator(".facts .badge[data-kind='silent wrong']").count() == 1
        assert page.locator(".facts .reader").first.text_content() == TOLD_NAME
        assert not b.blocked and not b.console_errors
