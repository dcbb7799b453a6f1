"""The perfect summarizer: an oracle bound on what production's LLM summary could carry.

Offline, production's handoff and soft summaries are written by a stand-in whose fixed text
names no fact, so recall on the sessions where production hands over is a floor. This module
gives the other side of the bracket: a ``complete(system, prompt, *, max_tokens)`` function that
answers every summary request the library's maintenance makes with the evidence line of every
question whose evidence it was shown. It goes through the same library path as the stand-in (the
replay calls it where it would call the model), so the only thing that changes is the summary
text.

"Shown" is the request as the agent builds it: for a soft summary the summarizer's prompt
(``serialize_for_summary``: tool results capped at 2,000 UTF-16 units, the previous summary
included); for a handoff the live conversation itself (:func:`perfect_chat`: every message in
full, as ``generate_handoff_live`` sends it). A real summarizer cannot carry a fact it was never
given, so this is the ceiling of production's summarizer, not of any compaction. It is an
oracle: its rows are never production's context and never ranked. It reports no usage of its
own, but the replay bills its calls as a real request would carry them
(:mod:`evals.replay.compaction_bill`: the prompt it was given as input, its summary as output),
labelled an estimate in ``compaction_bill_note``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

#: the summary's first line, so a reader of a context sees what wrote it
PERFECT_SUMMARY_HEADER = ("## Goal\nOracle summary (perfect summarizer, an upper bound, not a "
                          "language model): every question's evidence line it was shown.")


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _oracle_lines(evidence_lines: Iterable[str]) -> list[str]:
    lines: list[str] = []
    for line in evidence_lines:
        if not isinstance(line, str) or not line.strip():
            raise ValueError(f"perfect summarizer: an evidence line must be non-blank text, "
                             f"got {line!r}")
        if line not in lines:
            lines.append(line)
    return lines


def _summary(lines: Sequence[str], shown_text: str) -> dict[str, Any]:
    shown = _normalized(shown_text)
    kept = [line for line in lines if _normalized(line) in shown]
    text = "\n".join([PERFECT_SUMMARY_HEADER, *(f"- {line}" for line in kept)])
    return {"text": text, "usage": {"input": 0, "output": 0}}


def _strings(value: Any) -> list[str]:
    """Every string inside a wire message (text blocks, tool arguments, tool results), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def perfect_summarizer(evidence_lines: Iterable[str]) -> Callable[..., dict[str, Any]]:
    """``complete`` for one session: keeps each of ``evidence_lines`` found in the prompt.

    A line counts as shown when its whitespace-normalized text occurs in the prompt's
    whitespace-normalized text. Lines are kept in the given order, each once.
    """
    lines = _oracle_lines(evidence_lines)

    def complete(system_prompt: str, user_prompt: str, *, max_tokens: int) -> dict[str, Any]:
        return _summary(lines, user_prompt)

    return complete


def perfect_chat(evidence_lines: Iterable[str]) -> Callable[..., dict[str, Any]]:
    """``chat(system_prompt, messages, *, tools, tool_choice, max_tokens)`` for one session:
    the live handoff's oracle, keeping each evidence line found anywhere in the live messages
    (every text, tool call and tool result in full: what the agent's handoff request shows)."""
    lines = _oracle_lines(evidence_lines)

    def chat(system_prompt: str | Sequence[str], messages: Sequence[Mapping[str, Any]], *,
             tools: Any = None, tool_choice: str = "none", max_tokens: int = 0
             ) -> dict[str, Any]:
        return _summary(lines, "\n".join(_strings(list(messages))))

    return chat
