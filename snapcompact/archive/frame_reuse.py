"""Carrying a previous archive's frames forward when a page recurs unchanged.

Why: the foveated policy lays its whole text out again at every compaction (as the reference
does), so most pages of a later compaction are pages the previous archive already holds as
frames: the same page text in the same shape. Drawing and encoding a 1568 px frame costs about
ten milliseconds, and re-rendering forty frames to change five dominated a compaction.

A stored frame records no trace of the text it shows, so the link is kept here, in the process
that drew it: a bounded ledger from a digest of (renderer version, shape, page text) to a digest
of the frame's base64 data and its grid. A page is carried forward only when the ledger knows its
exact render input *and* the previous archive holds a frame with exactly those bytes. Drawing is
deterministic, so the carried frame is byte for byte what drawing the page again would give.
An archive from another process (or from the reference) finds no ledger entry and is drawn
again, as before. The ledger stores SHA-256 digests and three integers per page, never frame
data, so it costs well under a megabyte however many frames it has seen.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from snapcompact.archive.model import ArchiveFrame
from snapcompact.core import Shape
from snapcompact.render import RENDERER_VERSION

#: Pages remembered (least recently used forgotten first); 80 frames a compaction, many sessions.
LEDGER_PAGES = 4096


@dataclass(frozen=True)
class DrawnPage:
    """What the ledger knows of one drawn page: its frame's data digest and reading grid."""

    data_digest: bytes
    cols: int
    rows: int
    chars: int


def page_key(page: str, shape: Shape) -> bytes:
    """Digest of one render input: renderer version, every shape field, the exact page text."""
    head = f"{RENDERER_VERSION}\0{shape!r}\0".encode()
    return hashlib.sha256(head + page.encode("utf-8", "surrogatepass")).digest()


def data_digest(data: str) -> bytes:
    """Digest of a frame's base64 payload (a ``blob:`` reference digests like any other text)."""
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).digest()


class PageLedger:
    """Bounded, thread-safe map from render input (:func:`page_key`) to :class:`DrawnPage`."""

    def __init__(self, max_pages: int = LEDGER_PAGES) -> None:
        if max_pages < 1:
            raise ValueError(f"max_pages must be at least 1, got {max_pages}")
        self._pages: OrderedDict[bytes, DrawnPage] = OrderedDict()
        self._max = max_pages
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pages)

    def record(self, key: bytes, page: DrawnPage) -> None:
        """Remember that the input ``key`` was drawn as ``page``."""
        with self._lock:
            self._pages[key] = page
            self._pages.move_to_end(key)
            while len(self._pages) > self._max:
                self._pages.popitem(last=False)

    def lookup(self, key: bytes) -> DrawnPage | None:
        """The drawn page for ``key``, or None."""
        with self._lock:
            page = self._pages.get(key)
            if page is not None:
                self._pages.move_to_end(key)
            return page

    def clear(self) -> None:
        """Forget every page (the next compaction draws everything)."""
        with self._lock:
            self._pages.clear()


#: The process-wide ledger the compactor records into and reads from.
LEDGER = PageLedger()


class CarriedFrames:
    """The previous archive's frames, found by the render input of the page they show."""

    def __init__(self, previous: Iterable[ArchiveFrame], ledger: PageLedger = LEDGER) -> None:
        self._ledger = ledger
        self._previous = tuple(previous)
        self._by_digest: dict[bytes, str] | None = None

    def _data_by_digest(self) -> dict[bytes, str]:
        if self._by_digest is None:  # digest the previous frames only once something may match
            self._by_digest = {data_digest(f.data): f.data for f in self._previous}
        return self._by_digest

    def find(self, key: bytes) -> tuple[str, DrawnPage] | None:
        """``(data, page)`` of a previous frame showing exactly the input ``key``, or None."""
        if not self._previous:
            return None
        page = self._ledger.lookup(key)
        if page is None:
            return None
        data = self._data_by_digest().get(page.data_digest)
        return None if data is None else (data, page)

    def record(self, key: bytes, data: str, cols: int, rows: int, chars: int) -> None:
        """Remember a page just drawn, so the next compaction can carry its frame forward."""
        self._ledger.record(key, DrawnPage(data_digest(data), cols, rows, chars))
