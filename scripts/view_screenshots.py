"""Screenshots of the records viewer for docs/: the index and one question page.

Builds the small fixture run of the viewer's tests (real renderer frames, compaction-record
fields), writes its site, and photographs it with the system Chromium (see tests/view_browser.py):

    .venv/bin/python scripts/view_screenshots.py   # -> docs/view-index.png, view-question.png
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from view_browser import browser, unavailable  # noqa: E402
from view_fixture import build_fixture_run  # noqa: E402

from evals.view import build_site  # noqa: E402


def main() -> int:
    reason = unavailable()
    if reason:
        print(f"view_screenshots: {reason}", file=sys.stderr)
        return 2
    docs = REPO / "docs"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_fixture_run(root / "run")
        out = root / "site"
        build_site([root / "run"], out)
        question = None
        for path in (out / "data" / "q").rglob("*.js"):
            text = path.read_text()
            payload = json.loads(text[text.index(",") + 1:-3])
            rec = payload["record"]
            if rec.get("policy") == "foveated" and rec["question_id"] == "q1":
                question = payload["id"]
        assert question is not None
        with browser(root / "profile", width=1280, height=800) as b:
            b.open(out / "index.html")
            b.page.screenshot(path=str(docs / "view-index.png"))
            b.open(out / "question.html", f"id={question}")
            b.page.wait_for_function("[...document.images].every(i => i.complete)")
            b.page.screenshot(path=str(docs / "view-question.png"), full_page=True)
        if b.blocked:
            print(f"view_screenshots: blocked requests {b.blocked}", file=sys.stderr)
            return 1
    print(f"wrote {docs / 'view-index.png'} and {docs / 'view-question.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
