"""The words every reader is sent, in one place, versioned.

Why a module of constants: prompt text is part of every response-cache key, so an edit
silently turns a sweep's cache into misses (and re-bills it). Keeping the text here, with
PROMPT_VERSION recorded in every row, makes such a change deliberate and visible in the records.

Layout of one request (a single user message, OpenAI content parts):
  image QA     instruction, the frames (image parts, in page order), the question
  text QA      instruction, the archive text, the question
  transcribe   instruction, the frames
The question is always the last text part: the offline reader reads it from there, and real
models see the material before the question, as in a compacted conversation.

The QA instruction asks for a short extractive span, because scoring is SQuAD EM/F1, and for a
fixed word when the answer cannot be read, so that abstentions are counted apart from misreads.
"""

from __future__ import annotations

PROMPT_VERSION = "1"

#: What a reader says when it cannot find the answer (scoring counts it as an abstention).
ABSTAIN_WORD = "unanswerable"

IMAGE_QA_INSTRUCTION = (
    "The images below are the pages of an archived conversation, rendered as text in a small "
    "bitmap font, in reading order: left to right, top to bottom, page after page. A solid "
    "black block marks a line break. Read them carefully; a question about them follows."
)

TEXT_QA_INSTRUCTION = (
    "Below is an archived conversation. Read it carefully; a question about it follows."
)

QUESTION_TEMPLATE = (
    "Question: {question}\n"
    "Answer with the exact words from the archive that answer the question: a short span, "
    "copied as written, with no explanation. If the archive does not show the answer, reply "
    f"with the single word: {ABSTAIN_WORD}"
)

TRANSCRIBE_INSTRUCTION = (
    "The images below are the pages of an archived conversation, rendered as text in a small "
    "bitmap font. Transcribe all of the text exactly as printed, page after page, left to "
    "right and top to bottom. Write a line break where you see a solid black block. Output "
    "the transcript only, with no commentary."
)


def question_text(question: str) -> str:
    """The last text part of a QA request."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    return QUESTION_TEMPLATE.format(question=question.strip())
