"""Answering by locating evidence: the embedded reader's "reasoning".

The offline reader is not a language model, so it answers the only honest way a text matcher
can: it is told the question's evidence sentence and gold answers, finds the evidence in what
it read (fuzzy, because OCR is noisy), and returns the stretch of its own reading that lines up
with where the gold answer sits inside the evidence. What comes back is *as read*: OCR errors
inside the span count against EM/F1, and an evidence sentence that cannot be found above
`MIN_EVIDENCE_SCORE` gives an abstention (a sibling sentence of the same template, another
subject, is not its evidence). Its recall is therefore limited only by legibility,
never by comprehension -- every number it produces must be labelled that way.

The same procedure over the plain history is the text-only baseline, and
`character_error_rate` scores the transcription reader.

Matching works on a *reading form* of both sides: the full-block newline glyph and every
whitespace run become one space, dim markers vanish, typographic quotes fold to ASCII. Case is
kept in what is returned and ignored when matching.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from snapcompact.core import DIM_OFF, DIM_ON, NEWLINE_GLYPH

ABSTENTION = "unanswerable"
#: rapidfuzz partial-alignment score (0-100) the evidence must reach to count as found. 88, not
#: 80: a generated session states many facts in one template ("The nightly backup of the X
#: server starts at T."), and with its own sentence gone (discarded) a told reader at 80 landed
#: on a sibling line (another subject, another value) and copied that value: a "silent wrong"
#: that was the locator's, not the reading's. scripts/lure_scores.py measures it (generated
#: sessions, seeds 0-5, 60k, every stated probe): with its sentence removed, the 78 siblings
#: with another value score at most 85.2; its sentence with 5 % of its characters garbled
#: scores at least 90.1 (at 10 %, down to 81.9: past legible).
MIN_EVIDENCE_SCORE = 88.0
#: how closely a gold answer must match inside the evidence when it is not there verbatim.
MIN_ANSWER_IN_EVIDENCE_SCORE = 90.0
#: extra transcript characters on each side of the located window, as a share of the evidence.
WINDOW_MARGIN = 0.25

_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                       NEWLINE_GLYPH: " ", DIM_ON: None, DIM_OFF: None})


def reading_form(text: str) -> str:
    """Whitespace-collapsed text with newline glyphs as spaces and dim markers removed."""
    return " ".join(text.translate(_FOLD).split())


def _match_form(text: str) -> str:
    """Lowercase without changing length, so positions stay valid in `reading_form`."""
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def character_error_rate(reference: str, hypothesis: str) -> float:
    """Levenshtein distance over the reference length, on the reading form of both.

    0.0 is a perfect read; insertions can push it above 1.0. An empty reference gives 0.0 for
    an empty hypothesis and 1.0 otherwise.
    """
    ref, hyp = reading_form(reference), reading_form(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return Levenshtein.distance(ref, hyp) / len(ref)


@dataclass(frozen=True)
class Location:
    """Where the evidence was found in the reading: score 0-100 and the extracted answer."""

    score: float
    start: int  # span of the evidence match in reading_form(transcript)
    end: int
    answer: str  # the answer as read, or ABSTENTION
    answer_start: int = 0  # span of the answer in reading_form(transcript); empty if abstained
    answer_end: int = 0


def _answer_span_in_evidence(evidence: str, answers: Sequence[str]) -> tuple[int, int]:
    """Where the first gold answer that occurs in the evidence sits (reading form, any case)."""
    ev = _match_form(evidence)
    forms = [_match_form(reading_form(a)) for a in answers if reading_form(a)]
    if not forms:
        raise ValueError("answers must hold at least one non-blank gold answer")
    for form in forms:
        at = ev.find(form)
        if at >= 0:
            return at, at + len(form)
    best = max((fuzz.partial_ratio_alignment(form, ev) for form in forms), key=lambda a: a.score)
    if best is None or best.score < MIN_ANSWER_IN_EVIDENCE_SCORE:
        raise ValueError(f"no gold answer {list(answers)!r} occurs in the evidence {evidence!r}")
    return best.dest_start, best.dest_end


def _align_landing(source: str, target: str) -> tuple[list[int], list[bool]]:
    """Semi-global edit alignment of all of `source` to a substring of `target`.

    Returns, for every source position and one past the end, the target position it lands
    on (a source character missing from the target lands where the target continues), and
    for every source character whether it has a counterpart in the target.
    Rows are vectorized with the identity D[i][j] = min_k<=j (E[k] + j - k), where E holds the
    diagonal and vertical moves, so the horizontal (insertion) chain is a running minimum.
    """
    n, m = len(source), len(target)
    cols = np.arange(m + 1)
    tgt = np.frombuffer(target.encode("utf-32-le"), dtype=np.uint32)
    dist = np.zeros((n + 1, m + 1), dtype=np.int32)  # row 0 all zero: free start in target
    for i in range(1, n + 1):
        prev = dist[i - 1]
        mismatch = (tgt != ord(source[i - 1])).astype(np.int32)
        best = np.empty(m + 1, dtype=np.int32)
        best[0] = prev[0] + 1
        best[1:] = np.minimum(prev[:-1] + mismatch, prev[1:] + 1)
        dist[i] = np.minimum.accumulate(best - cols) + cols
    j = int(np.argmin(dist[n]))  # free end in target
    landing = [0] * (n + 1)
    kept = [False] * n
    landing[n] = j
    i = n
    while i > 0:
        here = dist[i, j]
        if j > 0 and here == dist[i - 1, j - 1] + (target[j - 1] != source[i - 1]):
            i, j = i - 1, j - 1  # match or substitution
            landing[i] = j
            kept[i] = True
        elif here == dist[i - 1, j] + 1:
            i -= 1  # source character not in the target
            landing[i] = j
        else:
            j -= 1  # extra target character
    return landing, kept


def locate(transcript: str, evidence: str, answers: Sequence[str],
           min_score: float = MIN_EVIDENCE_SCORE) -> Location:
    """Find `evidence` in `transcript` and read off the span aligned with the gold answer."""
    if not isinstance(evidence, str) or not reading_form(evidence):
        raise ValueError("evidence must be a non-blank string")
    if isinstance(answers, str):
        raise ValueError("answers must be a sequence of strings, not one string")
    evidence_read = reading_form(evidence)
    answer_start, answer_end = _answer_span_in_evidence(evidence_read, answers)
    reading = reading_form(transcript)
    if not reading:
        return Location(0.0, 0, 0, ABSTENTION)
    ev_match, reading_match = _match_form(evidence_read), _match_form(reading)
    found = fuzz.partial_ratio_alignment(ev_match, reading_match)
    if found is None or found.score < min_score:
        score = found.score if found is not None else 0.0
        return Location(score, 0, 0, ABSTENTION)
    # re-align inside a padded window: partial alignment fixes the window's length to the
    # evidence's, while OCR may have inserted or dropped characters
    margin = max(8, int(len(ev_match) * WINDOW_MARGIN))
    lo = max(0, found.dest_start - margin)
    hi = min(len(reading), found.dest_end + margin)
    landing, kept = _align_landing(ev_match, reading_match[lo:hi])
    window_lo, window_hi = lo + landing[0], lo + landing[-1]
    # the answer runs from its first character's landing to one past its last read character:
    # extra characters inside the answer stay (they were read there), those around it do not
    span_lo = landing[answer_start]
    span_hi = max([span_lo, *(landing[k] + 1 for k in range(answer_start, answer_end) if kept[k])])
    read = reading[lo + span_lo:lo + span_hi]
    answer = read.strip()
    if not answer:
        return Location(found.score, window_lo, window_hi, ABSTENTION)
    answer_start = lo + span_lo + len(read) - len(read.lstrip())
    return Location(found.score, window_lo, window_hi, answer, answer_start,
                    answer_start + len(answer))


def answer_from_transcript(transcript: str, question: str, evidence: str,
                           answers: Sequence[str], min_score: float = MIN_EVIDENCE_SCORE) -> str:
    """The image reader's reply: the answer span as read, or ABSTENTION if evidence is lost.

    `question` is accepted for the reader interface; the locator does not need it.
    """
    if not isinstance(question, str):
        raise ValueError("question must be a string")
    return locate(transcript, evidence, answers, min_score).answer


def answer_from_text(history: str, question: str, evidence: str,
                     answers: Sequence[str], min_score: float = MIN_EVIDENCE_SCORE) -> str:
    """The text-only baseline: the same locator over the plain history (no OCR)."""
    return answer_from_transcript(history, question, evidence, answers, min_score)
