"""Versions of the installed packages that can change an answer or a price.

A row must say what produced it, and the code's own version is not enough: litellm carries the
price map that turns tokens into dollars and the provider adapters that shape each request;
tiktoken counts the text tokens the predictions bill; Pillow decodes and resizes the frames the
offline reader reads; tesseract (through tesserocr, with its language data) is that reader.
An upgrade of any of them can move a figure, so every row records them
(``Record.dependency_versions``) and a table can be split by them.
"""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version

from evals.readers.ocr import engine_version

__all__ = ["ANSWER_PACKAGES", "dependency_versions"]

#: Distribution names (as pip knows them) whose version is recorded in every row (rank-bm25:
#: the blind reader's retrieval).
ANSWER_PACKAGES = ("litellm", "pillow", "tiktoken", "tesserocr", "rank-bm25")

NOT_INSTALLED = "not installed"


def _tesseract() -> str:
    """The OCR engine and its language data, as the offline reader reports them."""
    try:  # the OCR engine is optional (ImportError / OSError when absent)
        return engine_version()
    except (ImportError, OSError, RuntimeError, ValueError, IndexError):
        return "unavailable"


@functools.lru_cache(maxsize=1)
def dependency_versions() -> dict[str, str]:
    """``{package: version}`` for ``ANSWER_PACKAGES`` plus ``tesseract`` (the engine)."""
    out: dict[str, str] = {}
    for name in ANSWER_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = NOT_INSTALLED
    out["tesseract"] = _tesseract() if out["tesserocr"] != NOT_INSTALLED else "unavailable"
    return out
