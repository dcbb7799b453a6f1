"""Drive the system Chromium (Debian's package) headless with playwright, for the viewer.

Never a downloaded browser: playwright is pointed at ``/usr/bin/chromium``, which
``scripts/setup.sh`` installs with apt. Every request the pages make is recorded, and any that
would leave ``file://`` is aborted and kept, so a test can assert the site stays on disk.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def unavailable() -> str | None:
    """Why the browser cannot run here, or None when it can."""
    if not CHROMIUM.exists() and shutil.which("chromium") is None:
        return ("/usr/bin/chromium is missing: scripts/setup.sh (make setup) installs the Debian "
                "chromium package when run as root with apt")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    return None


@dataclass
class Browsing:
    page: Any
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def open(self, path: Path, fragment: str = "") -> None:
        self.page.goto(path.resolve().as_uri() + (f"#{fragment}" if fragment else ""))
        self.wait_ready()

    def wait_ready(self) -> None:
        self.page.wait_for_selector("body[data-ready=true], body[data-ready=error]")
        state = self.page.evaluate("document.body.dataset.ready")
        if state != "true":
            message = self.page.text_content("#main")
            raise AssertionError(f"page did not render: {message}")


@contextmanager
def browser(profile_dir: Path, width: int = 1400, height: int = 900) -> Iterator[Browsing]:
    from playwright.sync_api import sync_playwright

    executable = CHROMIUM if CHROMIUM.exists() else Path(shutil.which("chromium") or CHROMIUM)
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile_dir), executable_path=str(executable), headless=True, args=FLAGS,
            viewport={"width": width, "height": height}, service_workers="block")
        try:
            page = context.new_page()
            session = Browsing(page)

            def guard(route: Any) -> None:
                url = route.request.url
                if url.startswith("file://"):
                    route.continue_()
                else:
                    session.blocked.append(url)
                    route.abort()

            context.route("**/*", guard)
            page.on("request", lambda r: session.requests.append(r.url))
            page.on("requestfailed", lambda r: session.failed.append(r.url))
            page.on("console", lambda m: session.console_errors.append(m.text)
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: session.console_errors.append(str(e)))
            yield session
        finally:
            context.close()
