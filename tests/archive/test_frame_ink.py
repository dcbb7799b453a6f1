"""A frame's ink is ``ArchiveFrame.ink``; the persisted key stays the reference's ``variant``.

Archives the reference wrote (the golden scenarios of ``tests/golden/archive``) load with their
ink under the new name and are written back byte for byte; the old attribute is retired
(issue 38: one word).
"""

from __future__ import annotations

import gzip
import json

from locations import GOLDEN

from snapcompact.archive import ArchiveFrame
from snapcompact.archive.model import get_preserved_archive


def _reference_preserve_data() -> dict:
    data = json.loads(gzip.decompress((GOLDEN / "archive" / "reference.json.gz").read_bytes()))
    return data["outputs"]["scenarios"][0]["rounds"][0]["result"]["preserveData"]


def test_reference_archive_loads_its_ink_and_writes_the_same_key() -> None:
    preserve_data = _reference_preserve_data()
    frames = preserve_data["snapcompact"]["frames"]
    assert frames and all("variant" in f for f in frames)  # the reference's key for the ink
    archive = get_preserved_archive(preserve_data)
    assert archive is not None
    assert [f.ink for f in archive.frames] == [raw["variant"] for raw in frames]
    assert {f.ink for f in archive.frames} <= {"bw", "sent"}
    assert [f.to_json() for f in archive.frames] == frames


def test_the_ink_is_read_and_written_under_the_references_key() -> None:
    frame = ArchiveFrame.from_json({"data": "AA", "mimeType": "image/png", "cols": 1, "rows": 1,
                                    "chars": 1, "variant": "sent"})
    assert frame.ink == "sent"
    assert not hasattr(frame, "variant")
    assert "ink" not in frame.to_json() and frame.to_json()["variant"] == "sent"

