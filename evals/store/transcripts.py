"""What the offline reader read, stored once by content hash, so a viewer can show it.

Why a store: a record holds the reader's *answer*, but a researcher asking "why did this shape
fail?" needs the reading behind it -- the transcript, where the evidence was found in it and
which stretch became the answer. A transcript is kilobytes (the text arm's is the whole
history) and every question about the same frames shares it, so the text is stored once under
``<run_dir>/transcripts/ab/<sha256>.json`` (the frame store's layout; the hash is over the exact
bytes stored, so equal transcripts are one file and a name proves its content), and the record
carries only the small per-question part in ``reading`` field: the transcript's hash, the
evidence, the alignment score and the evidence and answer spans.

Spans index the stored ``reading``: the reader's *reading form* of the transcript (whitespace
runs folded to one space, newline glyphs as spaces), which is what the locator matched on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evals.store.records import JsonStore

TRANSCRIPTS_DIR = "transcripts"


@dataclass(frozen=True)
class Reading:
    """One offline-reader reading: the text it read and where evidence and answer sit in it."""

    reader: str  # "ocr-qa" (transcript of the frames) or "text-qa" (the plain history)
    reading: str  # reading form of the transcript; spans index this
    evidence: str
    score: float  # 0-100 alignment score of the evidence in the reading
    evidence_span: tuple[int, int] | None  # None when the evidence was not found (abstention)
    answer_span: tuple[int, int] | None
    answer: str

    def record_part(self, transcript_hash: str) -> dict[str, Any]:
        """What a record keeps of this reading (``reading`` field): all but the text."""
        return {
            "transcript": transcript_hash,
            "reader": self.reader,
            "evidence": self.evidence,
            "score": round(float(self.score), 2),
            "evidence_span": list(self.evidence_span) if self.evidence_span else None,
            "answer_span": list(self.answer_span) if self.answer_span else None,
            "answer": self.answer,
        }


def _encode(reading: str) -> bytes:
    return json.dumps({"reading": reading}, ensure_ascii=False, sort_keys=True,
                      separators=(",", ":")).encode("utf-8")


class TranscriptStore(JsonStore):
    """Transcripts by content hash: ``root/ab/<sha256>.json``, written once, atomically."""

    def put(self, reading: Reading) -> dict[str, Any]:
        """Store the reading's text (once) and return the record's part of it."""
        return reading.record_part(self.put_text(reading.reading))

    def put_text(self, reading: str) -> str:
        return self.put_bytes(_encode(reading))
