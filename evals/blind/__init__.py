"""Room: the blind offline reader: given only the question, it finds the answer in what it read.

Why a room of its own beside ``readers``: the told reader's package (``evals/readers/*.py``) is
hashed into every response cache key and the request goldens
(``evals.spec.provenance.offline_reader_version``); a module added there would re-key every
cached answer. This room reuses their OCR (``evals.readers.ocr``, its transcript cache) and
reading order (``evals.readers.provider.context_reading``) without touching them, and is hashed
on its own (``blind_reader_version``).

Modules: ``retrieval`` (segments, BM25, coverage, extraction), ``provider`` (the litellm custom
provider ``snapblind/context-qa`` and the reading kept for the viewer).
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def blind_reader_version() -> str:
    """Hash of this package's source: part of every blind answer's cache key."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
