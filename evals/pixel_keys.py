"""The old path of :mod:`evals.store.pixel_keys`, kept for the offline reader alone.

Why it exists: ``evals/readers/ocr.py`` imports ``pixel_digest`` from here, and the readers'
source is hashed into every OCR cache key (``evals.spec.provenance.offline_reader_version``).
Rewriting that import would re-key every cached answer, so the readers keep their import and
this module points it at the store. Nothing else imports this path
(tests/project/test_architecture.py).
"""

from evals.store.pixel_keys import pixel_digest

__all__ = ["pixel_digest"]
