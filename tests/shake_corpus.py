"""The shake parity corpus: the compaction parity sessions with fenced and XML blocks pasted in.

Shake drops whole tool results and large fenced/XML blocks, so each session of
``compaction_corpus`` (seed N) gets, from its own ``random.Random(N + 100_003)``, blocks spliced
into some user, developer, assistant-text and custom-message texts: backtick and tilde fences
(some indented, some unterminated, some nested), top-level XML elements (nested, with
attributes, self-closing, indented openings, uppercase tags, mismatched closings), sizes on both
sides of the 400-token eligibility line, non-ASCII and astral text; plus artifact recovery reads
(``artifact://`` paths and ``details.meta.source``) and results with ``prunedAt``. The goldens hold
only the agent core's answers, so the sessions are regenerated here.
"""

from __future__ import annotations

import random
from typing import Any

from compaction_corpus import CORPUS_SEEDS, _words, session_entries

__all__ = ["SHAKE_SEEDS", "shake_session"]

#: One shake session per parity seed.
SHAKE_SEEDS = CORPUS_SEEDS


def _body(rng: random.Random) -> str:
    # 400 tokens ~ 1,600 UTF-8 bytes; bodies range ~300 B to ~5 kB so both sides of the line occur.
    lines = [_words(rng, rng.randint(3, 14)) for _ in range(rng.choice((4, 20, 40, 60, 90)))]
    return "\n".join(line.replace("\n", " ") for line in lines)


def _fence(rng: random.Random) -> str:
    mark = rng.choice(("```", "```", "~~~", "````"))
    indent = rng.choice(("", "", "", "  "))
    lang = rng.choice(("", "python", "ts", "diff"))
    body = _body(rng)
    if rng.random() < 0.1:
        body += "\n" + rng.choice(("```", "~~~")) + "inner\n" + _words(rng, 5) + "\n" + rng.choice(("```", "~~~"))
    if rng.random() < 0.08:
        return f"{indent}{mark}{lang}\n{body}"  # unterminated
    return f"{indent}{mark}{lang}\n{body}\n{indent}{mark}"


def _xml(rng: random.Random) -> str:
    tag = rng.choice(("context", "file", "tool_output", "system-reminder", "Doc", "x"))
    attrs = rng.choice(("", "", ' path="src/a.ts"', "\tid=7", ' a="1" b="2"'))
    inner = _body(rng)
    if rng.random() < 0.3:
        inner = f"<item>\n{_body(rng)}\n</item>\n" + inner
    if rng.random() < 0.1:
        inner += '\n<br class="x"/>'  # a self-closing line still opens an element
    opening = rng.choice(("", "", "", " ")) + f"<{tag}{attrs}>"
    closing = rng.choice(("", "", "  ")) + f"</{tag}>" + rng.choice(("", "", "", " "))
    if rng.random() < 0.08:
        closing = "</other>"
    return f"{opening}\n{inner}\n{closing}"


def _paste(rng: random.Random, text: str) -> str:
    parts = [text]
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        block = _fence(rng) if rng.random() < 0.55 else _xml(rng)
        parts.append(block)
        if rng.random() < 0.5:
            parts.append(_words(rng, rng.randint(2, 20)))
    return "\n".join(parts) if rng.random() < 0.85 else "\n\n".join(parts)


def _paste_into(rng: random.Random, content: Any) -> Any:
    if isinstance(content, str):
        return _paste(rng, content)
    out = [dict(b) for b in content]
    texts = [i for i, b in enumerate(out) if b.get("type") == "text"]
    if texts:
        i = rng.choice(texts)
        out[i]["text"] = _paste(rng, out[i]["text"])
    return out


def shake_session(seed: int) -> list[dict[str, Any]]:
    """The parity session of ``seed`` with blocks pasted into about a fifth of its texts."""
    rng = random.Random(seed + 100_003)
    entries = session_entries(seed)
    for entry in entries:
        if entry["type"] == "custom_message":
            if rng.random() < 0.4:
                entry["content"] = _paste_into(rng, entry["content"])
            continue
        if entry["type"] != "message":
            continue
        message = entry["message"]
        role = message["role"]
        if role in ("user", "assistant") and rng.random() < 0.2:
            if role == "user" and rng.random() < 0.2:
                message["role"] = "developer"
            message["content"] = _paste_into(rng, message["content"])
        elif role == "toolResult":
            r = rng.random()
            if r < 0.03:
                message["details"] = {"meta": {"source": {"type": "internal", "value": "artifact://7"}}}
            elif r < 0.05:
                message["details"] = {"meta": {"source": {"type": "internal", "value": "local://x"}}}
            elif r < 0.08:
                message["content"] = [{"type": "text", "text": ""}, *message["content"],
                                      {"type": "text", "text": _words(rng, 30)}]
    return entries
