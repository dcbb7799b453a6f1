"""The viewer in a real browser: headless system Chromium loads the site of a small run.

Checks the index and a question page by their DOM (cells, filters, frames at their seen and
rendered sizes, zoom, the reader's highlighted transcript, side by side), takes screenshots,
and asserts that no request left ``file://``. Expectations come from the fixture run's
description and its stored contexts (tests/view_fixture.py).
"""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from view_browser import browser, unavailable  # noqa: E402
from view_fixture import QUESTIONS, build_fixture_run  # noqa: E402

from evals.view import build_site  # noqa: E402

REASON = unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewb")
    run = build_fixture_run(root / "run")
    build_site([root / "run"], root / "site", page_size=2, log=lambda _: None)
    ids = {}
    for path in (root / "site" / "data" / "q").rglob("*.js"):
        text = path.read_text()
        payload = json.loads(text[text.index(",") + 1:-3])
        rec = payload["record"]
        ids[(rec.get("strategy", ""), rec.get("policy", ""), rec["shape"],
             rec["question_id"])] = payload["id"]
    return run, root / "site", ids


def test_index_cell_and_question_pages_in_chromium(site, tmp_path):
    run, out, ids = site
    with browser(tmp_path / "profile") as b:
        page = b.page
        # index: one row per cell, the offline label, filters that narrow the table
        b.open(out / "index.html")
        assert page.locator("#cells tbody tr").count() == len(run.cells)
        assert page.locator("#cells .floor").count() == len(run.cells)
        assert "legibility floor" in page.text_content(".note")
        page.screenshot(path=str(tmp_path / "index.png"), full_page=True)
        page.select_option("select[name='strategy']", "truncate")
        b.wait_ready()
        assert page.locator("#cells tbody tr").count() == 1
        page.select_option("select[name='strategy']", "all")
        b.wait_ready()
        page.select_option("select[name='evidence round']", "r2")
        b.wait_ready()
        page.select_option("select[name='outcome']", "abstained")
        b.wait_ready()
        # q3 (lost to compaction 2): the reader abstains under foveated and truncate (its evidence
        # is not in what it read), right under pinned
        rows = page.locator("#cells tbody tr")
        assert rows.count() == 2
        assert sorted(rows.nth(i).locator("td").nth(3).text_content() for i in range(2)) == [
            "snapcompact", "truncate"]

        # the foveated cell's abstained round-2 questions: exactly q3
        page.locator("#cells tbody tr", has_text="foveated").locator("a.open").click()
        b.wait_ready()
        assert page.evaluate("document.body.dataset.page") == "cell"
        listed = page.locator("#questions tbody tr")
        assert listed.count() == 1
        assert listed.first.get_attribute("data-id") == ids[("snapcompact", "foveated",
                                                             "8on22-bw", "q3")]

        # a question page: the context as sent, every frame at its seen size
        qid = ids[("snapcompact", "foveated", "8on22-bw", "q1")]
        b.open(out / "question.html", f"id={qid}")
        question = next(q for q in QUESTIONS if q[0] == "q1")
        assert page.text_content("h2.question-text") == question[1]
        assert page.locator("ul.gold li").all_text_contents() == list(question[2])
        context_hash = next(r["context_hash"] for r in run.rows
                            if r.get("policy") == "foveated")
        images = [p for m in run.contexts[context_hash]["messages"] for p in m["content"]
                  if p["type"] == "image"]
        frames = page.locator("img.frame")
        assert frames.count() == len(images) > 0
        page.wait_for_function("[...document.images].every(i => i.complete)")
        for i, part in enumerate(images):
            img = frames.nth(i)
            natural = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
            assert natural == [part["width"], part["height"]]
            box = img.evaluate("i => [i.clientWidth, i.clientHeight]")
            assert box == [part["seen_width"], part["seen_height"]]
        assert [c.split()[-1] for c in page.locator("figcaption").all_text_contents()] == [
            p["frame_hash"] for p in images]
        # the frames are shrunk for this target: the toggle shows them as rendered
        assert any(p["seen_width"] != p["width"] for p in images)
        page.click("button[data-size-choice='rendered']")
        assert frames.first.evaluate("i => i.clientWidth") == images[0]["width"]
        page.click("button.zoom-in")
        assert frames.first.evaluate("i => i.clientWidth") == 2 * images[0]["width"]
        page.click("button.zoom-out")
        page.click("button[data-size-choice='seen']")
        assert frames.first.evaluate("i => i.clientWidth") == images[0]["seen_width"]
        # each block's billed tokens; the reader's reading with evidence and answer located
        tokens = page.locator(".image-block .tokens").all_text_contents()
        assert tokens == [f"{p['tokens']:,} tokens" for p in images]
        assert page.text_content("mark.answer >> nth=-1") == "KX7-2O481"
        assert "KX7-2O481" in page.locator("pre.transcript mark.evidence").first.evaluate(
            "m => m.parentElement.textContent")
        page.screenshot(path=str(tmp_path / "question.png"), full_page=True)

        # side by side: the same question under another shape and policy
        other = ids[("snapcompact", "pinned", "11on16-bw", "q1")]
        page.locator(f"table.siblings tr[data-id='{other}'] a.compare").click()
        b.wait_ready()
        panels = page.locator(".compare .question-panel")
        assert panels.count() == 2
        assert panels.nth(0).get_attribute("data-id") == qid
        assert panels.nth(1).get_attribute("data-id") == other
        assert panels.nth(1).locator("mark.answer").last.text_content() == "KX7-20481"

        # an old-format row still views: its frames, rebuilt from the record
        legacy = ids[("", "", "11on16-bw", "q1")]
        b.open(out / "question.html", f"id={legacy}")
        assert "rebuilt from the record" in page.text_content(".context .note")
        assert page.locator("img.frame").count() == len(
            next(r for r in run.rows if r["run_id"] == "fixture-legacy")["frame_hashes"])

    assert b.blocked == [] and b.failed == [] and b.console_errors == []
    assert b.requests and all(url.startswith("file://") for url in b.requests)
    for name in ("index.png", "question.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
