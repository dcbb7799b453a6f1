"""The words every reader is sent, in one place, versioned.

Why a module of constants: prompt text is part of every response-cache key, so an edit
silently turns a sweep's cache into misses (and re-bills it). Keeping the text here, with
PROMPT_VERSION recorded in every row, makes such a change deliberate and visible in the records.

Layout of one request: the context production builds for the next turn after compacting the
session (``llm_messages()`` as chat messages: the compaction summary with its reading guide,
text and frames, then the kept tail), followed by one user message holding the question. The
question is always the last text part: the offline reader reads it from there.

The question asks for a short extractive span, because scoring is SQuAD EM/F1, and for a fixed
word when the answer cannot be found, so that abstentions are counted apart from misreads.
"""

from __future__ import annotations

PROMPT_VERSION = "2"

#: What a reader says when it cannot find the answer (scoring counts it as an abstention).
ABSTAIN_WORD = "unanswerable"

QUESTION_TEMPLATE = (
    "A question about our conversation so far, including any archived earlier history: "
    "{question}\n"
    "Answer with the exact words from the conversation that answer the question: a short "
    "span, copied as written, with no explanation. If the conversation does not show the "
    f"answer, reply with the single word: {ABSTAIN_WORD}"
)


def question_text(question: str) -> str:
    """The user message text that asks ``question`` after the compacted context."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    return QUESTION_TEMPLATE.format(question=question.strip())
