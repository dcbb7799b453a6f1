"""Generated coding-agent sessions: the regime snapcompact exists for (20k-400k tokens).

Why generated: no public corpus of long agent sessions may be shipped, and an eval needs facts
at known depths. Every machine has the Python standard library, so the sessions are built from
it: a user asks about a module (prose from real docstrings), the assistant calls a tool --
``read`` (numbered source lines), ``grep`` (``path:line:text`` hits) or ``bash`` (``ls``/``wc``
listings) -- gets real output back, and explains (more docstring prose). Tool output dominates
the token count, as it does in real sessions, unless ``talk_share`` asks for more prose: the
coding agent prunes old tool output before it compacts, so a session meant to compact several
times at a 200k window needs user turns and explanations the pruner cannot shrink (the main
job's sessions are half prose).

Facts ("needles", the same templates as the ``needles`` dataset) are planted at chosen depths
of the session, measured in characters, and rotate between the three places a fact lives in a
real session: a user message, an assistant's explanation, and a tool result (a line of a notes
file the assistant ``cat``s). Each question's evidence is its fact sentence, verbatim.

Deterministic by ``seed`` on one interpreter (the stdlib differs a little between Python
versions; the version is in the item's meta). Lengths are 4-characters-per-token estimates.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from evals.items.datasets.common import (
    CHARS_PER_TOKEN,
    check_depths,
    check_int,
    check_seed,
    check_target_tokens,
    python_version,
)
from evals.items.datasets.needles import draw_needles
from evals.items.datasets.probe_plants import (
    GIST_LEAD,
    exact_meta,
    extra_questions,
    plan_gists,
)
from evals.items.datasets.stdlib_corpus import (
    docstring_paragraphs,
    read_source,
    stdlib_source_files,
)
from evals.items.probes import check_probe_kinds
from evals.items.qa_items import Question, content_id
from evals.items.sessions import SessionItem, make_session_item

DATASET = "agent_session"
DEFAULT_DEPTHS = (0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95)
_PLACES = ("user", "assistant", "tool_result")
_GREP_WORDS = ("return", "raise", "class", "yield", "lambda", "assert", "import", "global")
_READ_LINES = (40, 160)
#: Sessions may run past 200k tokens: the regime of a 200k window that compacts several times.
MAX_SESSION_TOKENS = 400_000
#: Openers of the extra prose paragraphs of a talkative session (``talk_share`` > 0).
_USER_LEADS = ("To give you some background:", "What I have in mind is this.",
               "My understanding so far:", "Some context from the design doc:")
_ASSISTANT_LEADS = ("In more detail:", "Here is how the pieces fit together.",
                    "Reading it again, the docs put it this way:", "To summarize what I found:")


def _numbered(lines: Sequence[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


class _Builder:
    """Draws turns from the stdlib until the session reaches its character budget."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.paragraphs = docstring_paragraphs()
        self.files = [f for f in stdlib_source_files() if f.rel.count("/") <= 1]
        self._read = read_source
        self._text_cache: dict[str, list[str]] = {}
        self.calls = 0

    def lines_of(self, index: int) -> tuple[str, list[str]]:
        source = self.files[index % len(self.files)]
        if source.rel not in self._text_cache:
            self._text_cache[source.rel] = (self._read(source) or "").splitlines()
        return source.rel, self._text_cache[source.rel]

    def prose(self, count: int) -> str:
        start = self.rng.randrange(len(self.paragraphs))
        size = len(self.paragraphs)
        return "\n\n".join(self.paragraphs[(start + k) % size] for k in range(count))

    def call_id(self) -> str:
        self.calls += 1
        return f"call_{self.calls:04d}"

    def tool_turn(self) -> tuple[dict[str, Any], str, str]:
        """(tool call block, tool name, output) over a random stdlib file."""
        rng = self.rng
        rel, lines = self.lines_of(rng.randrange(len(self.files)))
        kind = rng.choice(("read", "read", "grep", "bash"))
        if kind == "read" or not lines:
            length = rng.randrange(*_READ_LINES)
            first = rng.randrange(max(1, len(lines) - length)) + 1 if lines else 1
            args = {"path": f"Lib/{rel}", "offset": first, "limit": length}
            output = _numbered(lines[first - 1:first - 1 + length], first) or "(empty file)"
            name = "read"
        elif kind == "grep":
            word = rng.choice(_GREP_WORDS)
            hits = [f"Lib/{rel}:{i}:{line.strip()}" for i, line in enumerate(lines, 1)
                    if word in line][:80]
            args = {"pattern": word, "path": f"Lib/{rel}"}
            output = "\n".join(hits) or "(no matches)"
            name = "grep"
        else:
            folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
            listing = [f.rel for f in self.files if f.rel.startswith(folder)][:60] if folder else \
                [f.rel for f in self.files[:: max(1, len(self.files) // 60)]]
            rows = []
            for path in listing:
                _, body = self.lines_of(next(i for i, f in enumerate(self.files) if f.rel == path))
                rows.append(f"{len(body):>7} Lib/{path}")
            args = {"command": f"wc -l Lib/{folder or '*.py'}"}
            output = "\n".join(rows)
            name = "bash"
        call = {"type": "toolCall", "id": self.call_id(), "name": name, "arguments": args}
        return call, name, output


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(text: str, call: dict[str, Any] | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if call is not None:
        content.append(call)
    return {"role": "assistant", "content": content, "stopReason": "toolUse" if call else "stop"}


def _tool_result(call: dict[str, Any], name: str, output: str) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call["id"], "toolName": name,
            "content": [{"type": "text", "text": output}], "isError": False}


def _size(message: dict[str, Any]) -> int:
    total = 0
    for block in message["content"]:
        total += len(block.get("text", "")) + len(str(block.get("arguments", "")))
    return total


def _add_talk(builder: _Builder, rng: random.Random, ask: str, explanation: str, talk: int,
              total: int, share: float) -> tuple[str, str, int]:
    """The turn's user message and explanation grown with more prose (the user's reasoning, the
    assistant's longer answer) until user and assistant prose are ``share`` of the session's
    characters. This is the part no pruner shrinks: production's pruning elides old tool
    output, never what the user or the assistant said."""
    talk += len(ask) + len(explanation)
    total += len(explanation)
    while talk < share * total:
        extra = builder.prose(1)
        if rng.random() < 0.4:
            ask += f"\n\n{rng.choice(_USER_LEADS)} {extra}"
        else:
            explanation += f"\n\n{rng.choice(_ASSISTANT_LEADS)} {extra}"
        talk += len(extra) + 16
        total += len(extra) + 16
    return ask, explanation, talk


def build_session(seed: int, index: int, target_tokens: int,
                  depths: Sequence[float], talk_share: float = 0.0,
                  probes: Sequence[str] | None = None) -> SessionItem:
    rng = random.Random(f"{DATASET}:{seed}:{index}")
    talk_rng = random.Random(f"{DATASET}:talk:{seed}:{index}")  # leaves the base draws as they were
    talk = 0  # characters of user and assistant prose
    builder = _Builder(rng)
    needles = draw_needles(rng, depths)
    gists = plan_gists(seed, index, depths, probes)
    budget = target_tokens * CHARS_PER_TOKEN
    pending = sorted(needles, key=lambda n: n.depth)
    messages: list[dict[str, Any]] = []
    used = 0
    placed: list[tuple[Any, str]] = []
    turn = 0
    while used < budget or pending:
        due = pending[0] if pending and used >= pending[0].depth * budget else None
        place = _PLACES[len(placed) % len(_PLACES)] if due is not None else None
        rel, _ = builder.lines_of(rng.randrange(len(builder.files)))
        ask = f"Let's look at Lib/{rel} next. {builder.prose(1)}"
        turn_messages = [_user(ask + (f"\n\nAlso, for later: {due.sentence}"
                                      if place == "user" else ""))]
        for _ in range(rng.choice((1, 1, 2))):
            call, name, output = builder.tool_turn()
            turn_messages.append(_assistant(f"I'll check with {name}.", call))
            turn_messages.append(_tool_result(call, name, output))
        if place == "tool_result":
            notes = [s.rstrip(".") for s in builder.prose(1).split(". ")]
            notes.insert(rng.randrange(len(notes) + 1), due.sentence.rstrip("."))
            call = {"type": "toolCall", "id": builder.call_id(), "name": "bash",
                    "arguments": {"command": "cat notes/todo.txt"}}
            turn_messages.append(_assistant("Let me check the notes file too.", call))
            turn_messages.append(_tool_result(call, "bash", ".\n".join(notes) + "."))
        explanation = builder.prose(rng.choice((1, 2)))
        if talk_share > 0:
            ask, explanation, talk = _add_talk(builder, talk_rng, ask, explanation, talk,
                                               used + sum(_size(m) for m in turn_messages),
                                               talk_share)
            turn_messages[0] = _user(ask + (f"\n\nAlso, for later: {due.sentence}"
                                            if place == "user" else ""))
        if place == "assistant":
            explanation += f"\n\nOne more thing I noticed: {due.sentence}"
        if due is not None and due.depth in gists:
            explanation += f"\n\n{GIST_LEAD} {gists[due.depth].sentence}"
        turn_messages.append(_assistant(explanation))
        if due is not None:
            placed.append((due, place))
            pending.pop(0)
        messages.extend(turn_messages)
        used += sum(_size(m) for m in turn_messages)
        turn += 1
        if turn > 10_000:  # pragma: no cover - the budget is reached long before
            raise RuntimeError("agent session generator did not reach its budget")
    joined = [str(m["content"]) for m in messages]
    questions = []
    for needle, place in placed:
        hits = [i for i, text in enumerate(joined) if needle.value in text]
        if len(hits) != 1:  # a random code that also occurs in the corpus: rare, but ambiguous
            continue
        questions.append(Question(
            question_id=content_id(DATASET, needle.question, needle.value, needle.sentence),
            question=needle.question, answers=(needle.value,), evidence=needle.sentence,
            meta={"kind": "needle", "template": needle.template, "depth": needle.depth,
                  "place": place, "message_index": hits[0], **exact_meta(probes),
                  "answer_start_in_evidence": needle.sentence.index(needle.value)}))
    questions += extra_questions(DATASET, seed, index, placed, gists, probes, "\n".join(joined))
    meta = {"python": python_version(), "target_tokens": target_tokens,
            "talk_share": talk_share, "talk_chars": talk,
            "estimated_tokens": used // CHARS_PER_TOKEN,
            "chars_per_token_estimate": CHARS_PER_TOKEN,
            "messages": len(messages), "turns": turn, "depths": list(depths), "item_index": index,
            **({"probes": list(probes)} if probes is not None else {})}
    return make_session_item(DATASET, messages, questions, seed, meta)


def load_agent_session(*, seed: int = 0, n_items: int = 1,
                       target_tokens: int | Sequence[int] = 80_000,
                       depths: Sequence[float] = DEFAULT_DEPTHS,
                       talk_share: float = 0.0,
                       probes: Sequence[str] | None = None) -> list[SessionItem]:
    """Generated agent sessions of about ``target_tokens`` (20k-400k), facts at ``depths``;
    ``talk_share`` (0 to 0.9): the share of characters that is user and assistant prose;
    ``probes`` (e.g. ``[exact, gist, never-stated]``): the probe kinds asked at every depth
    (``evals.items.datasets.probe_plants``; unset: the facts alone, without a kind, as before).

    A list of lengths gives item ``i`` the length ``target_tokens[i % len]``: where a session
    ends relative to its last compaction decides what its questions are billed on, so a
    comparison of settings is fair over a spread of lengths, not at one
    (:mod:`evals.pipeline.token_phase`)."""
    seed = check_seed(seed)
    n_items = check_int("n_items", n_items, minimum=1, maximum=1_000)
    if isinstance(target_tokens, Sequence) and not isinstance(target_tokens, str):
        if not target_tokens:
            raise ValueError("target_tokens: an empty list (give one length, or several)")
        lengths = [check_target_tokens(n, minimum=2_000, maximum=MAX_SESSION_TOKENS)
                   for n in target_tokens]
    else:
        lengths = [check_target_tokens(target_tokens, minimum=2_000,
                                       maximum=MAX_SESSION_TOKENS)]
    depths = check_depths(depths)
    if (isinstance(talk_share, bool) or not isinstance(talk_share, (int, float))
            or not 0.0 <= talk_share <= 0.9):
        raise ValueError(f"talk_share must be a number in [0, 0.9], got {talk_share!r}")
    kinds = check_probe_kinds(probes) if probes is not None else None
    return [build_session(seed, i, lengths[i % len(lengths)], depths, float(talk_share), kinds)
            for i in range(n_items)]
