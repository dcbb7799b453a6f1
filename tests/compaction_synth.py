"""Synthetic agent sessions and a fake summarizer for the compaction tests (no LLM, no network)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

PATHS = ["src/app/main.py", "src/app/util.py", "src/app/db/models.py", "docs/guide.md", "tests/test_app.py",
         "README.md", "src/app/db/migrations/0001.sql", "src/cli.py"]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"]


class FakeLLM:
    """Records each call; replies with a structured summary naming the prompt kind and a digest."""

    def __init__(self, reply: str | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.reply = reply

    def __call__(self, system_prompt: str, prompt: str, *, max_tokens: int) -> str:
        kind = ("short" if "In one line of at most twelve words" in prompt else
                "update" if "<previous-summary>" in prompt else
                "turn-prefix" if "## Original Request" in prompt else
                "handoff" if "handoff document" in prompt else
                "branch" if "branch of the session" in prompt else "initial")
        self.calls.append({"system": system_prompt, "prompt": prompt, "max_tokens": max_tokens, "kind": kind})
        if self.reply is not None:
            return self.reply
        return (f"## Goal\nsummary #{len(self.calls)} ({kind}, {len(prompt)} chars)\n\n## Constraints & Preferences\n"
                "- none\n\n## Progress\n### Done\n- [x] work\n\n## Key Decisions\n- none\n\n## Next Steps\n1. go on"
                "\n\n## Critical Context\n- none")


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


class Turns:
    """Generates one user turn at a time: user prompt, assistant tool calls, tool results, reply."""

    def __init__(self, seed: int, result_words: tuple[int, int] = (20, 400)) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.result_words = result_words

    def call(self) -> dict[str, Any]:
        self.n += 1
        tool = self.rng.choice(["read", "read", "write", "edit", "bash", "grep"])
        path = self.rng.choice(PATHS)
        if tool == "read" and self.rng.random() < 0.3:
            path += f":{self.rng.randint(1, 50)}-{self.rng.randint(51, 200)}"
        args: dict[str, Any] = {"path": path} if tool in ("read", "write", "edit") else {"command": text(self.rng, 3)}
        if tool == "write":
            args["content"] = text(self.rng, 30)
        return {"type": "toolCall", "id": f"call_{self.n}", "name": tool, "arguments": args}

    def result(self, call: Mapping[str, Any]) -> dict[str, Any]:
        useless = call["name"] == "grep" and self.rng.random() < 0.5
        body = "no matches" if useless else text(self.rng, self.rng.randint(*self.result_words))
        out = {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
               "content": [{"type": "text", "text": body}], "isError": False}
        if useless:
            out["useless"] = True
        return out

    def assistant(self, calls: list[dict[str, Any]], stop: str = "toolUse") -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": text(self.rng, 8)},
                                        {"type": "text", "text": text(self.rng, 12)}]
        return {"role": "assistant", "content": blocks + calls, "stopReason": stop if calls else "stop",
                "model": "claude-sonnet-4-5"}


def read_turns(turns: int = 40, size: int = 1600) -> list[dict]:
    """A plain agent session: each turn a user ask, a ``read`` call, its output, a reply."""
    out: list[dict] = []
    for t in range(turns):
        out.append({"role": "user", "content": [{"type": "text", "text": f"Turn {t}: fact {t}."}]})
        out.append({"role": "assistant", "stopReason": "toolUse", "content": [
            {"type": "toolCall", "id": f"c{t}", "name": "read", "arguments": {"path": f"f{t}"}}]})
        out.append({"role": "toolResult", "toolCallId": f"c{t}", "toolName": "read",
                    "isError": False,
                    "content": [{"type": "text", "text": f"line {t} " + "word " * (size // 5)}]})
        out.append({"role": "assistant", "stopReason": "stop",
                    "content": [{"type": "text", "text": f"Noted fact {t}."}]})
    return out


def tool_turns(turns: int, seed: int, ask: str = "turn {turn}: keep going") -> list[dict]:
    """``turns`` agent turns from :class:`Turns`: a user ask (``ask`` formatted with the turn
    number), 1-3 assistant steps of 1-2 tool calls with their results, a closing answer."""
    t = Turns(seed)
    out: list[dict] = []
    for turn in range(turns):
        out.append({"role": "user", "content": ask.format(turn=turn)})
        for _ in range(t.rng.randint(1, 3)):
            calls = [t.call() for _ in range(t.rng.randint(1, 2))]
            out.append(t.assistant(calls))
            out.extend(t.result(call) for call in calls)
        out.append(t.assistant([]))
    return out
