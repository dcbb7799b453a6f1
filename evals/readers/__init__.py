"""Offline readers: the harness's default "model", which needs no key and no network.

`ocr.transcribe` reads a frame the way the target provider would show it (after its resize),
`answer` turns a reading into a reply by locating the question's evidence -- so its recall is
limited only by legibility, never by comprehension -- and `provider` registers all of it with
litellm as `snapocr/ocr-qa`, `snapocr/text-qa` and `snapocr/transcribe`.

Importing this package does not import litellm (5 s) or tesseract; `provider.register()` does.
"""

from evals.readers.answer import (
    ABSTENTION,
    answer_from_text,
    answer_from_transcript,
    character_error_rate,
    locate,
)
from evals.readers.ocr import OcrSettings, transcribe

__all__ = [
    "ABSTENTION",
    "OcrSettings",
    "answer_from_text",
    "answer_from_transcript",
    "character_error_rate",
    "locate",
    "transcribe",
]
