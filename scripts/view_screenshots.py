"""Screenshots of the records viewer for docs/: the index and one question page.

Builds the small fixture run of the viewer's tests (real renderer frames, compaction-record
fields), writes its site, and photographs it with the system Chromium (see tests/view_browser.py):

    .venv/bin/python scripts/view_screenshots.py   # -> docs/view-index.png, view-question.png

Given run folders instead (``--runs``), it photographs their site: the index and the told
reader's silent wrong answer closest to its gold (a digit dropped or misread: ``distant
pebble 2`` for ``distant pebble 25``), its first screen, into ``--out`` (default docs/):

    .venv/bin/python scripts/view_screenshots.py --runs results/runs/default \
        results/runs/default_blind results/runs/small_window --out /tmp/shots
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from view_browser import browser, unavailable  # noqa: E402
from view_fixture import build_fixture_run  # noqa: E402

from evals.view import build_site  # noqa: E402


def _questions(site: Path):
    for path in sorted((site / "data" / "q").rglob("*.js")):
        text = path.read_text()
        yield json.loads(text[text.index(",") + 1:-3])


def _fixture_question(site: Path) -> str | None:
    return next((q["id"] for q in _questions(site) if q["record"].get("policy") == "foveated"
                 and q["record"]["question_id"] == "q1"), None)


def _silent_wrong(site: Path) -> str | None:
    """The told reader's silent wrong answer most like its gold (ties: the first by id)."""
    def likeness(q: dict) -> float:
        gold = (q["record"].get("gold_answers") or [""])[0]
        return difflib.SequenceMatcher(None, q["record"].get("answer") or "", gold).ratio()
    found = [q for q in _questions(site) if q.get("kind") == "silent wrong" and q.get("offline")]
    return max(found, key=likeness)["id"] if found else None


def _wait_for_frames(page, seconds: float = 120) -> None:
    """Every frame loaded (lazy ones made eager: a full-page shot shows them all). Polled from
    here: a polled string predicate is an eval, which the site's CSP refuses."""
    page.evaluate("document.querySelectorAll('img.frame').forEach(i => { i.loading = 'eager'; })")
    deadline = time.monotonic() + seconds
    while not page.evaluate("[...document.images].every(i => i.complete)"):
        if time.monotonic() > deadline:
            raise TimeoutError("frames did not load")
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", type=Path, help="run folders (default: the fixture)")
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="where the PNGs go")
    args = parser.parse_args(argv)
    reason = unavailable()
    if reason:
        print(f"view_screenshots: {reason}", file=sys.stderr)
        return 2
    docs = args.out
    docs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = root / "site"
        if args.runs:
            build_site(args.runs, out)
            question = _silent_wrong(out)
        else:
            build_fixture_run(root / "run")
            build_site([root / "run"], out)
            question = _fixture_question(out)
        if question is None:
            print("view_screenshots: no question to photograph", file=sys.stderr)
            return 1
        with browser(root / "profile", width=1600 if args.runs else 1280, height=900) as b:
            b.open(out / "index.html")
            b.page.screenshot(path=str(docs / "view-index.png"))
            b.open(out / "question.html", f"id={question}")
            _wait_for_frames(b.page)
            # a main-job context is tens of thousands of pixels long: its first screen only
            b.page.screenshot(path=str(docs / "view-question.png"), full_page=not args.runs)
        if b.blocked:
            print(f"view_screenshots: blocked requests {b.blocked}", file=sys.stderr)
            return 1
    print(f"wrote {docs / 'view-index.png'} and {docs / 'view-question.png'} (question {question})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
