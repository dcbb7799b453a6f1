"""Shared helpers of the agent parity test: load a recorded case and count tokens as omp did.

The goldens (``tests/golden/agent/<case>/``, written by ``scripts/make_agent_goldens.py``)
hold the real coding agent's per-step summary and its ``claude-v3`` token count of every
message it saw, keyed by the hash of the message's text fragments. :func:`recorded_counter`
counts a message by that table; text the agent never counted in the recording (our own
compaction summaries, pruned notices) is scaled from bytes/4 by the session's measured
claude-v3 / bytes/4 ratio: the documented tolerance of the parity check.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import math
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from snapcompact.agent import agent_settings, production_estimator
from snapcompact.agent.stepwise import StepwiseReplay, replay_like_upstream_steps
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    ModelInfo,
    TokenEstimator,
    merge_settings,
)
from snapcompact.compaction.tokens import byte_estimate

GOLDEN = Path(__file__).parent / "golden" / "agent"
CASES = ("example", "session60k", "session1m")
#: Stands for omp's system prompt: only its size and its recorded token count matter.
SYSTEM_PLACEHOLDER_CHAR = "s"


def key_of(fragments: Sequence[str]) -> str:
    return hashlib.sha1("\x1f".join(fragments).encode("utf-8")).hexdigest()[:16]


@cache
def load_case(name: str) -> dict[str, Any]:
    folder = GOLDEN / name
    golden = json.loads((folder / "golden.json").read_text(encoding="utf-8"))
    golden["session"] = json.loads(lzma.decompress((folder / "session.json.xz").read_bytes()))
    return golden


def system_prompt(golden: dict[str, Any]) -> str:
    return SYSTEM_PLACEHOLDER_CHAR * golden["system_chars"]


def recorded_counter(golden: dict[str, Any]) -> Callable[[Sequence[str]], int]:
    """claude-v3 counts as recorded; unknown text scaled from bytes/4 by the session ratio."""
    table = dict(golden["tokens_claude_v3"])
    table[key_of([system_prompt(golden)])] = golden["system_tokens_claude_v3"]
    ratio = golden["source_tokens"]["claude_v3"] / golden["source_tokens"]["bytes4"]

    def count(fragments: Sequence[str]) -> int:
        known = table.get(key_of(fragments))
        if known is not None:
            return known
        return math.ceil(byte_estimate(fragments) * ratio)

    return count


def model_of(golden: dict[str, Any]) -> ModelInfo:
    return ModelInfo(id="claude-sonnet-4-5", context_window=golden["window"],
                     provider="anthropic", api="anthropic-messages", include_thinking=False)


def settings_of(golden: dict[str, Any]) -> Any:
    """The oracle's config: ``{"compaction": {"enabled": true, "strategy": "snapcompact"}}``
    deep-merged with the case's settings (the legacy strategy the agent migrates to the
    method order snapcompact, remote, soft)."""
    compaction = {"enabled": True, "strategy": "snapcompact",
                  **golden["settings"].get("compaction", {})}
    return merge_settings(DEFAULT_SETTINGS, {**golden["settings"], "compaction": compaction})


def replay_case(name: str, *, tokenizer: str = "recorded") -> StepwiseReplay:
    """The case through :func:`replay_like_upstream_steps` (``recorded``: claude-v3 counts as
    the agent recorded them; ``bytes4``: the agent core's bytes/4 estimate; ``auto``: the
    maintenance's own default, the model line's tokenizer, claude-v3 through ctok)."""
    golden = load_case(name)
    settings = settings_of(golden)
    estimator: TokenEstimator | None = None
    if tokenizer == "recorded":
        estimator = production_estimator(
            count_text=recorded_counter(golden),
            max_frame_data_bytes=settings.snapcompact.max_frame_data_bytes)
    elif tokenizer == "bytes4":
        estimator = production_estimator(
            max_frame_data_bytes=settings.snapcompact.max_frame_data_bytes)
    return replay_like_upstream_steps(
        golden["session"], model_of(golden), settings, steps=golden["steps"],
        question=golden["question"], system_prompt=system_prompt(golden), estimator=estimator)


__all__ = ["CASES", "agent_settings", "load_case", "recorded_counter", "replay_case"]
