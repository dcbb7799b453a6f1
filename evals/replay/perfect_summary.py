"""The perfect summarizer: an oracle bound on what production's LLM summary could carry.

Offline, production's handoff and soft summaries are written by a stand-in whose fixed text names
no fact, so recall on the sessions where production hands over is a floor. This module gives the
other side of the bracket: a ``complete(system, prompt, *, max_tokens)`` function that answers every
summary request the library's maintenance makes with the evidence line of every question whose
evidence it was shown. It goes through the same library path as the stand-in (the replay calls it
where it would call the model), so the only thing that changes is the summary text.

"Shown" is the summarizer's prompt as the library builds it (``serialize_for_summary``: tool
results capped at 2,000 UTF-16 units, the previous summary included): a real summarizer cannot
carry a fact it was never given, so this is the ceiling of production's summarizer, not of any
compaction. It is an oracle: its rows are never production's context and never ranked. It reports
no usage of its own, but the replay bills its calls as a real request would carry them
(:mod:`evals.replay.compaction_bill`: the prompt it was given as input, its summary as output),
labelled an estimate in ``compaction_bill_note``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

#: the summary's first line, so a reader of a context sees what wrote it
PERFECT_SUMMARY_HEADER = ("## Goal\nOracle summary (perfect summarizer, an upper bound, not a "
                          "language model): every question's evidence line it was shown.")


def _normalized(text: str) -> str:
    return " ".join(text.split())


def perfect_summarizer(evidence_lines: Iterable[str]) -> Callable[..., dict[str, Any]]:
    """``complete`` for one session: keeps each of ``evidence_lines`` found in the prompt.

    A line counts as shown when its whitespace-normalized text occurs in the prompt's
    whitespace-normalized text. Lines are kept in the given order, each once.
    """
    lines: list[str] = []
    for line in evidence_lines:
        if not isinstance(line, str) or not line.strip():
            raise ValueError(f"perfect summarizer: an evidence line must be non-blank text, "
                             f"got {line!r}")
        if line not in lines:
            lines.append(line)

    def complete(system_prompt: str, user_prompt: str, *, max_tokens: int) -> dict[str, Any]:
        shown = _normalized(user_prompt)
        kept = [line for line in lines if _normalized(line) in shown]
        text = "\n".join([PERFECT_SUMMARY_HEADER, *(f"- {line}" for line in kept)])
        return {"text": text, "usage": {"input": 0, "output": 0}}

    return complete
