"""Probe questions drawn from a session's own tool output: ``dataset=session-file``.

Why: a user's real session has no hand-written questions, yet its tool results state facts
exactly (a commit hash, a file path, a test count, an error line). Those facts make questions
whose answers are checkable without a judge: the gold answer is the value as the tool printed it,
and the harness's exact match (SQuAD normalization, ``evals.pipeline.scoring``) checks a reply.

How a probe is made (deterministic, no model): every line of every tool result is scanned by a
fixed set of extractors (:data:`EXTRACTORS`); each hit becomes a candidate whose question is a
template filled from its context -- the tool call that produced the output (its command, path or
pattern), the message index, and the words on the line next to the value. A candidate is kept
only when it is unambiguous within the session:

- its evidence (the whole output line) occurs exactly once in the session's text;
- an identifier-like value (hash, path) occurs exactly once in the session's text;
- no other candidate asks the same question (two values behind one question both go).

``n`` of the kept candidates are sampled by ``seed``; the evidence message index (and from it the
replay's ``evidence_round``, the compaction that discarded the answer) is recorded per question.
The module works on loaded messages (``load_session_messages``), never on raw file lines, so it
reads whatever session format the library's loader reads.

To see what a session file would be asked (kind, depth and quarter, evidence message and line,
the line itself, question and answer): ``python scripts/show_session_probes.py SESSION [--n 10]
[--seed 0]`` (:func:`describe_probes`).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.items.datasets.common import check_int, check_seed
from evals.items.datasets.session_probe_kinds import DEPTH_PARTS, depth_part, sample_kinds
from evals.items.qa_items import Question, content_id
from evals.items.sessions import SessionItem, make_session_item, message_text

DATASET = "session-file"
#: Characters of a command / argument / line context quoted in a question.
CONTEXT_CHARS = 60
#: Longest error message kept as an answer (longer ones are not "stated exactly" enough to ask).
MAX_ERROR_CHARS = 120


@dataclass(frozen=True)
class ProbeCandidate:
    """One fact a tool result states: the value, its line and where it sits in the session."""

    kind: str
    value: str
    line: str
    message_index: int
    line_number: int  # 1-based, within the tool result's text
    question: str


def _result_text(message: Mapping[str, Any]) -> str:
    """The text a tool result carries (its text blocks)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        return ""
    return "\n".join(str(b.get("text", "")) for b in content
                     if isinstance(b, Mapping) and b.get("type") == "text")


def _quote(text: str, *, from_end: bool = False) -> str:
    """``text`` squeezed to one line and cut to CONTEXT_CHARS (keeping its end if asked)."""
    flat = " ".join(text.split())
    if len(flat) <= CONTEXT_CHARS:
        return flat
    return "..." + flat[-CONTEXT_CHARS:] if from_end else flat[:CONTEXT_CHARS] + "..."


def _tool_calls(messages: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Tool calls of every assistant message, by call id."""
    calls: dict[str, Mapping[str, Any]] = {}
    for m in messages:
        content = m.get("content")
        if m.get("role") != "assistant" or not isinstance(content, Sequence):
            continue
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "toolCall":
                calls[str(block.get("id"))] = block
    return calls


def describe_call(message: Mapping[str, Any], calls: Mapping[str, Mapping[str, Any]],
                  index: int) -> str:
    """'the `bash` call running `pytest -q` (message 12)': the context phrase of a question."""
    call = calls.get(str(message.get("toolCallId")))
    name = str(message.get("toolName") or (call or {}).get("name") or "tool")
    args = (call or {}).get("arguments")
    what = ""
    if isinstance(args, Mapping):
        for key, verb in (("command", "running"), ("path", "on"), ("file_path", "on"),
                          ("pattern", "for"), ("query", "for"), ("url", "on")):
            if isinstance(args.get(key), str) and args[key].strip():
                what = f" {verb} `{_quote(args[key])}`"
                if key == "pattern" and isinstance(args.get("path"), str):
                    what += f" in `{_quote(args['path'], from_end=True)}`"
                break
        else:
            if args:
                what = f" with `{_quote(json.dumps(args, ensure_ascii=False))}`"
    return f"the `{name}` call{what} (message {index})"


# -- extractors: (line) -> [(kind, value, template)]; the template gets the call phrase ---------

_HASH = re.compile(r"(?<![0-9A-Za-z])([0-9a-f]{7,64})(?![0-9A-Za-z])")
_PATH = re.compile(r"(?<![\w./:-])((?:/|\./|\.\./|[\w.-]+/)[\w./-]*\w\.[A-Za-z][\w]{0,7})"
                   r"(?![\w/])")
_COUNT = re.compile(r"(?<![\w.])(\d+) (passed|failed|skipped|errors?|tests?|warnings?|"
                    r"files? changed|insertions?|deletions?)\b")
_ERROR = re.compile(r"\b([A-Z]\w*(?:Error|Exception)|error|Error|ERROR|fatal|FAIL(?:ED)?):\s+"
                    r"(\S.*\S)\s*$")
_LABELLED_NUMBER = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z _-]{2,30}?)\s*[:=]\s*(\d[\d,.]*\d|\d)"
                              r"(?![\w.])")


def _side(line: str, start: int, end: int) -> tuple[str, str]:
    return line[:start].strip(), line[end:].strip()


def _anchored(what: str, line: str, start: int, end: int) -> str | None:
    """'{what} printed after `prefix`' or '... followed by `suffix`'; None with no anchor."""
    before, after = _side(line, start, end)
    if len(before.strip(" :=-#*>|")) >= 3:
        return f"what is the {what} printed right after `{_quote(before, from_end=True)}`?"
    if len(after.strip(" :=-#*>|")) >= 3:
        return f"what is the {what} printed right before `{_quote(after)}`?"
    return None


def _hashes(line: str) -> list[tuple[str, str, str | None]]:
    out = []
    for m in _HASH.finditer(line):
        value = m.group(1)
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            out.append(("hash", value, _anchored("hash", line, *m.span(1))))
    return out


def _paths(line: str) -> list[tuple[str, str, str | None]]:
    return [("path", m.group(1), _anchored("file path", line, *m.span(1)))
            for m in _PATH.finditer(line)]


def _counts(line: str) -> list[tuple[str, str, str | None]]:
    return [("count", m.group(1), f"how many {m.group(2)} does it report?")
            for m in _COUNT.finditer(line)]


def _errors(line: str) -> list[tuple[str, str, str | None]]:
    m = _ERROR.search(line)
    if m is None:
        return []
    message = m.group(2).rstrip(",;")
    if not 8 <= len(message) <= MAX_ERROR_CHARS:
        return []
    if sum(1 for w in message.split() if any(c.isalpha() for c in w)) < 3:
        return []  # an interpolation or a type annotation, not a message
    return [("error", message, f"what message follows `{m.group(1)}:` in it?")]


def _labelled_numbers(line: str) -> list[tuple[str, str, str | None]]:
    return [("number", m.group(2), f"what value does it give for `{m.group(1).strip()}`?")
            for m in _LABELLED_NUMBER.finditer(line)]


EXTRACTORS: tuple[Callable[[str], list[tuple[str, str, str | None]]], ...] = (
    _hashes, _paths, _counts, _errors, _labelled_numbers)
#: Kinds whose value must also be unique in the whole session (identifiers, not quantities).
UNIQUE_VALUE_KINDS = frozenset({"hash", "path"})


def probe_candidates(messages: Sequence[Mapping[str, Any]]) -> list[ProbeCandidate]:
    """Every unambiguous probe the session's tool results support, in session order."""
    texts = [message_text(m) for m in messages]
    whole = "\n\u0000".join(texts)
    calls = _tool_calls(messages)
    raw: list[ProbeCandidate] = []
    for index, message in enumerate(messages):
        if message.get("role") != "toolResult":
            continue
        phrase = describe_call(message, calls, index)
        for number, line in enumerate(_result_text(message).split("\n"), start=1):
            stripped = line.strip()
            if not stripped:
                continue
            for extract in EXTRACTORS:
                for kind, value, template in extract(stripped):
                    if template is None:
                        continue
                    question = f"In the output of {phrase}, {template}"
                    raw.append(ProbeCandidate(kind, value, stripped, index, number, question))
    asked = Counter(c.question for c in raw)
    kept: list[ProbeCandidate] = []
    seen_values: set[str] = set()
    for c in raw:
        if asked[c.question] != 1 or whole.count(c.line) != 1:
            continue
        if c.kind in UNIQUE_VALUE_KINDS and whole.count(c.value) != 1:
            continue
        if c.value in seen_values:  # one question per value
            continue
        seen_values.add(c.value)
        kept.append(c)
    return kept


def sample_probes(candidates: Sequence[ProbeCandidate], n: int, seed: int) -> list[ProbeCandidate]:
    """``n`` candidates drawn by ``seed`` (all of them when fewer), back in session order.

    Drawn kind by kind in turn (kinds in name order, each kind's candidates shuffled by the
    seed), so a file full of import paths still yields its few test counts and errors."""
    if len(candidates) <= n:
        return list(candidates)
    rng = random.Random(seed)
    by_kind: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        by_kind.setdefault(c.kind, []).append(i)
    queues = []
    for kind in sorted(by_kind):
        order = by_kind[kind][:]
        rng.shuffle(order)
        queues.append(order)
    picked: list[int] = []
    while len(picked) < n:
        for queue in queues:
            if queue and len(picked) < n:
                picked.append(queue.pop(0))
    return [candidates[i] for i in sorted(picked)]


def as_question(candidate: ProbeCandidate) -> Question:
    qid = "probe-" + content_id(candidate.message_index, candidate.line_number, candidate.kind,
                                candidate.value)
    return Question(
        question_id=qid, question=candidate.question, answers=(candidate.value,),
        evidence=candidate.line,
        meta={"kind": f"probe-{candidate.kind}", "evidence_message": candidate.message_index,
              "evidence_line": candidate.line_number, "answer_check": "exact_normalized"})


def load_session_file(*, path: str | None = None, n_questions: int = 10,
                      seed: int = 0, probe_kinds: bool = True) -> list[SessionItem]:
    """One item: the session at ``path`` with ``n_questions`` probes drawn from its tool output:
    exact, gist and never-stated ones from distinct lines, without trivial values, spread over
    the session's quarters (``evals.items.datasets.session_probe_kinds``);
    ``probe_kinds=false``: the draw before kinds existed (exact facts without a kind, lines and
    values unchecked)."""
    # local (cost): the session reader loads the compaction pipeline, +0.53 s on listing datasets
    from snapcompact.compaction import load_session_messages

    if not path:
        raise ValueError("dataset=session-file needs dataset.params.path=SESSION")
    n = check_int("n_questions", n_questions, minimum=1)
    seed = check_seed(seed)
    session_path = Path(path).expanduser()
    messages = load_session_messages(session_path)
    candidates = probe_candidates(messages)
    if not candidates:
        raise ValueError(f"session {session_path}: its tool results state no fact that makes an "
                         "unambiguous probe question (no tool output with a hash, path, count, "
                         "error line or labelled number that occurs once)")
    if probe_kinds:
        questions = sample_kinds(candidates, n, seed, [message_text(m) for m in messages],
                                 sample_probes)
    else:
        questions = [as_question(c) for c in sample_probes(candidates, n, seed)]
    return [make_session_item(DATASET, messages, questions, seed,
                              {"path": session_path.name, "probe_candidates": len(candidates)})]


#: Characters of an evidence line :func:`describe_probes` shows (a minified line runs to 10k).
SHOWN_CHARS = 200


def _shown(line: str) -> str:
    return line if len(line) <= SHOWN_CHARS else f"{line[:SHOWN_CHARS]}... ({len(line):,} chars)"


def describe_probes(path: str, n: int = 10, seed: int = 0) -> str:
    """The probes ``dataset=session-file`` draws from ``path``, one block each (kind, depth and
    its quarter, evidence message and line number, the evidence line, question and answer),
    after a line counting them per quarter of the session."""
    [item] = load_session_file(path=path, n_questions=n, seed=seed)
    parts = [depth_part(float(q.meta["depth"])) for q in item.questions]
    spread = "/".join(str(parts.count(k)) for k in range(DEPTH_PARTS))
    out = [f"{Path(path).name}: {len(item.questions)} probes (seed {seed}) from "
           f"{item.meta['probe_candidates']} candidates; per quarter of the session: {spread}"]
    for i, (q, part) in enumerate(zip(item.questions, parts), start=1):
        out += [f"{i:2d}. {q.meta['probe']} ({q.meta['kind']}), depth {q.meta['depth']:.3f} "
                f"(quarter {part + 1}), message {q.meta['evidence_message']} line "
                f"{q.meta['evidence_line']}: {_shown(q.evidence)}",
                f"    Q: {q.question}", f"    A: {q.answers[0]}"]
    return "\n".join(out)

