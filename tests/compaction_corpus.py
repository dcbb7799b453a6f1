"""Seeded random agent sessions for the parity checks against the agent core (pi-agent-core).

One seed gives one session (a list of JSON entries in branch order), the same on every machine:
``random.Random(seed)`` is stable across Python versions for ``random``/``randint``/``choice``. The
goldens under ``tests/golden/compaction/`` hold only the reference's answers, keyed by seed, so
the sessions themselves are regenerated here rather than stored.

What a session can hold, so that every rule the checks cover is exercised: user prompts (string
or blocks, some with an image), assistant turns with text, thinking (empty, signed), tool calls
(read with every selector form, write, edit, bash, grep, skill, URL-like paths), tool results
(long, non-ASCII and astral text, errors, useless, images, already pruned, boundary tags),
bash executions, custom messages, branch summaries, metadata (model and thinking-level changes,
labels), provider usage on assistants, and in a third of the sessions an earlier compaction whose
``firstKeptEntryId`` points back into the history and whose ``details`` carry read selectors.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

__all__ = ["CORPUS_SEEDS", "THRESHOLD_CASES", "session_entries"]

#: Seeds of the parity corpus (one session each).
CORPUS_SEEDS = tuple(range(240))

WORDS = ["alpha", "beta", "gamma", "delta", "value", "index", "parse", "token", "render", "frame", "state", "error", "result", "cache", "config", "module", "import", "return", "class", "self", "path", "file", "line", "count", "window", "budget", "reply", "model", "naïve", "café", "größe", "東京", "данные", "résumé"]
ASTRAL = ("\U0001f600", "\U0001f4f7", "\U00020000")
DIRS = ("src", "src/app", "src/app/db", "docs", "tests", "packages/agent/src/compaction", "lib/util")
FILES = ("main.py", "util.ts", "models.py", "guide.md", "test_app.py", "README.md", "index.ts", "a.b.c.json")
SELECTORS = (":50-200", ":50+10", ":5-16,960-973", ":RAW", ":raw", ":L12", ":3..9", ":1-50:raw", ":raw:1-50",
             ":conflicts", ":50-", ":abc", ":12x")
ODD_PATHS = ("artifact://3", "skill://review/SKILL.md", "https://example.com/a.ts", "local://ctx.md",
             "file.ts:conflict://1")
BOUNDARY_TAGS = ("</conversation>", "<previous-summary>", "< / Conversation >")


_POOL = [*WORDS, *(w + "\n" for w in WORDS), *(w + a for w in WORDS[:6] for a in ASTRAL)]
_CUM_WEIGHTS = []
for _weight in [96] * len(WORDS) + [2] * len(WORDS) + [len(WORDS) / 18] * (6 * len(ASTRAL)):
    _CUM_WEIGHTS.append((_CUM_WEIGHTS[-1] if _CUM_WEIGHTS else 0) + _weight)


def _words(rng: random.Random, n: int) -> str:
    """n random words, about 2 % ending a line and 1 % carrying an astral character."""
    return " ".join(rng.choices(_POOL, cum_weights=_CUM_WEIGHTS, k=n))


def _path(rng: random.Random, tool: str) -> str:
    if rng.random() < 0.06:
        return rng.choice(ODD_PATHS)
    path = f"{rng.choice(DIRS)}/{rng.choice(FILES)}"
    if tool == "read" and rng.random() < 0.35:
        path += rng.choice(SELECTORS)
    return path


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.entries: list[dict[str, Any]] = []
        self.clock = 1_760_000_000_000 + seed * 1000
        self.calls = 0

    def _add(self, entry: dict[str, Any]) -> dict[str, Any]:
        self.clock += self.rng.randint(500, 90_000)
        entry = {"type": entry.pop("type"), "id": f"e{len(self.entries)}",
                 "parentId": self.entries[-1]["id"] if self.entries else None,
                 "timestamp": datetime.fromtimestamp(self.clock / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
                 + f"{self.clock % 1000:03d}Z", **entry}
        self.entries.append(entry)
        return entry

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._add({"type": "message", "message": {**message, "timestamp": self.clock}})

    def user(self) -> None:
        rng = self.rng
        text = _words(rng, rng.randint(3, 60))
        if rng.random() < 0.5:
            self.message({"role": "user", "content": text})
            return
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if rng.random() < 0.15:
            blocks.append({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
        if rng.random() < 0.1:
            blocks.append({"type": "text", "text": ""})
        self.message({"role": "user", "content": blocks})

    def call(self) -> dict[str, Any]:
        rng = self.rng
        self.calls += 1
        tool = rng.choice(("read", "read", "read", "write", "edit", "bash", "grep", "skill"))
        if tool in ("read", "write", "edit"):
            args: dict[str, Any] = {"path": _path(rng, tool)}
            if tool == "write":
                args["content"] = _words(rng, rng.randint(5, 80))
            if tool == "edit":
                args["edits"] = [{"old": _words(rng, 3), "new": _words(rng, 4)}]
        elif tool == "skill":
            args = {"name": "review"}
        else:
            args = {"command": _words(rng, 3), "timeout": rng.choice((30, 60, 1.5))}
        return {"type": "toolCall", "id": f"call_{self.calls}", "name": tool, "arguments": args}

    def assistant(self, calls: list[dict[str, Any]]) -> None:
        rng = self.rng
        blocks: list[dict[str, Any]] = []
        r = rng.random()
        if r < 0.6:
            thinking = {"type": "thinking", "thinking": "" if rng.random() < 0.1 else _words(rng, rng.randint(5, 40))}
            if rng.random() < 0.4:
                thinking["thinkingSignature"] = "sig" + "".join(rng.choice("abcdef0123456789") for _ in range(80))
            blocks.append(thinking)
        if rng.random() < 0.85:
            blocks.append({"type": "text", "text": "   " if rng.random() < 0.05 else _words(rng, rng.randint(2, 50))})
        blocks += calls
        message: dict[str, Any] = {"role": "assistant", "content": blocks, "api": "anthropic-messages",
                                   "provider": "anthropic", "model": "claude-sonnet-4-5",
                                   "stopReason": "toolUse" if calls else "stop"}
        if rng.random() < 0.3:
            total = rng.randint(1000, 90_000)
            message["usage"] = {"input": total, "output": 300, "cacheRead": 0, "cacheWrite": 0,
                                "totalTokens": total + 300}
            if rng.random() < 0.1:
                message["stopReason"] = "aborted"
        self.message(message)

    def result(self, call: dict[str, Any]) -> None:
        rng = self.rng
        size = rng.choice((5, 20, 80, 300, 800, 1600))
        text = _words(rng, rng.randint(size // 2, size))
        if rng.random() < 0.05:
            text += " " + rng.choice(BOUNDARY_TAGS) + " tail"
        message: dict[str, Any] = {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
                                   "content": [{"type": "text", "text": text}], "isError": False}
        r = rng.random()
        if r < 0.06:
            message["isError"] = True
        elif r < 0.16 or (call["name"] == "grep" and r < 0.4):
            message["useless"] = True
        if rng.random() < 0.04:
            message["content"].append({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
        if rng.random() < 0.03:
            message["content"] = [{"type": "text", "text": f"[Output truncated - {len(text) // 4} tokens]"}]
            message["prunedAt"] = self.clock
        self.message(message)

    def extra(self) -> None:
        rng = self.rng
        kind = rng.random()
        if kind < 0.25:
            self._add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
        elif kind < 0.4:
            self._add({"type": "thinking_level_change", "thinkingLevel": rng.choice(("low", "high"))})
        elif kind < 0.5:
            self._add({"type": "label", "targetId": self.entries[-1]["id"], "label": "checkpoint"})
        elif kind < 0.65:
            self.message({"role": "bashExecution", "command": _words(rng, 2), "exitCode": rng.choice((0, 1, None)),
                          "output": "" if rng.random() < 0.2 else _words(rng, rng.randint(3, 200)),
                          "cancelled": rng.random() < 0.1, "truncated": False,
                          **({"excludeFromContext": True} if rng.random() < 0.2 else {})})
        elif kind < 0.8:
            content: Any = _words(rng, rng.randint(3, 60))
            if rng.random() < 0.3:
                content = [{"type": "text", "text": content}]
            self._add({"type": "custom_message", "customType": "note", "content": content, "display": True})
        elif kind < 0.9:
            self._add({"type": "branch_summary", "fromId": self.entries[0]["id"],
                       "summary": _words(rng, rng.randint(10, 80)),
                       **({"details": {"readFiles": ["docs/guide.md"], "modifiedFiles": []}} if rng.random() < 0.5
                          else {})})
        else:
            self.message({"role": "custom", "customType": "hint", "content": _words(rng, 10), "display": False})

    def turn(self) -> None:
        rng = self.rng
        self.user()
        for _ in range(rng.choice((0, 1, 1, 2, 3, 5))):
            calls = [self.call() for _ in range(rng.choice((1, 1, 1, 2, 3)))]
            self.assistant(calls)
            for call in calls:
                self.result(call)
            if rng.random() < 0.1:
                self.extra()
        self.assistant([])
        if rng.random() < 0.25:
            self.extra()

    def compaction(self) -> None:
        rng = self.rng
        turn_starts = [i for i, e in enumerate(self.entries) if e["type"] == "message"
                       and e["message"]["role"] in ("user", "assistant")]
        kept = self.entries[rng.choice(turn_starts[len(turn_starts) // 2:])]["id"]
        reads = [f"{rng.choice(DIRS)}/{rng.choice(FILES)}" + (rng.choice(SELECTORS) if rng.random() < 0.5 else "")
                 for _ in range(rng.randint(0, 6))]
        entry: dict[str, Any] = {"type": "compaction", "summary": "## Goal\n" + _words(rng, 40),
                                 "firstKeptEntryId": kept, "tokensBefore": rng.randint(10_000, 90_000),
                                 "details": {"readFiles": reads,
                                             "modifiedFiles": [f"{rng.choice(DIRS)}/{rng.choice(FILES)}"
                                                               for _ in range(rng.randint(0, 3))]}}
        if rng.random() < 0.2:
            entry["fromExtension"] = True
        self._add(entry)


def session_entries(seed: int) -> list[dict[str, Any]]:
    """The session of ``seed``: 13 to ~300 entries in branch order (no header line)."""
    b = _Builder(seed)
    rng = b.rng
    turns = rng.randint(3, 40)
    compact_at = rng.randint(2, turns - 1) if rng.random() < 0.34 else None
    for t in range(turns):
        if t == compact_at:
            b.compaction()
        b.turn()
    while len(b.entries) < 13:
        b.turn()
    return b.entries


def _threshold_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    windows = (2, 7, 100, 1000, 16_000, 18_000, 19_274, 32_768, 64_000, 128_000, 200_000, 272_000, 1_000_000)
    for w in windows:
        cases.append({"window": w})
        cases.append({"window": w, "reserve": 16_384})
        cases.append({"window": w, "reserve": 50_000})
        cases.append({"window": w, "reserve": 0})
        cases.append({"window": w, "percent": 80})
        cases.append({"window": w, "percent": 33.3})
        cases.append({"window": w, "percent": 150})
        cases.append({"window": w, "tokens": 300_000})
        cases.append({"window": w, "tokens": 5})
    return cases


#: Threshold settings checked against the agent core (window, and reserve/percent/tokens if set).
THRESHOLD_CASES = tuple(_threshold_cases())
