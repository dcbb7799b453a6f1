"""``python -m snapcompact compact``: replay one session file and show the next turn's context.

Why a command: to see what production sends after compacting a session (how many rounds fired,
which frames survived, what the context costs) without writing Python. It is the same replay,
conversion and bill the eval harness uses (:mod:`.replay`, :mod:`.chat`, :mod:`.request_bill`).

Output folder: ``session.jsonl`` (the replayed session tree, compaction entries included),
``context.json`` (the chat messages of the next turn, each image's data replaced by its
``frames/NNN.png`` path) and ``frames/NNN.png``. The printed JSON summarizes the replay.
"""

from __future__ import annotations

import base64
import copy
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapcompact.compaction.chat import to_chat_messages
from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.replay import (
    LLM_STRATEGIES,
    REPLAY_STRATEGIES,
    load_session_messages,
    replay_session,
    replay_settings,
)
from snapcompact.compaction.request_bill import bill_request
from snapcompact.compaction.settings import load_settings

__all__ = ["CompactRequest", "compact_session_file"]


@dataclass(frozen=True)
class CompactRequest:
    """One ``compact`` command: the session file, the model, where to write the result."""

    session: str
    model: str
    out: str
    api: str | None = None
    provider: str | None = None
    strategy: str = "snapcompact"
    policy: str | None = None
    shape: str | None = None
    frame_size: int | None = None
    context_window: int = 200_000
    settings: str | None = None


def _prepare_out(out: str) -> Path:
    """The output folder (checked by the caller) with the files of an earlier run removed."""
    folder = Path(out)
    if not out or (folder.exists() and not folder.is_dir()):
        raise ValueError(f"output folder {out!r} is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    frames = folder / "frames"
    if frames.is_dir():  # a reused folder: frames of an earlier run must not linger
        for stale in frames.glob("*.png"):
            stale.unlink()
    frames.mkdir(exist_ok=True)
    for name in ("session.jsonl", "context.json"):
        if (folder / name).exists():
            (folder / name).unlink()
    return folder


def compact_session_file(req: CompactRequest) -> dict[str, Any]:
    """Replay ``req.session`` and write the next turn's context; returns the summary."""
    if req.strategy not in REPLAY_STRATEGIES:
        raise ValueError(f"unknown strategy {req.strategy!r}; "
                         f"known: {', '.join(REPLAY_STRATEGIES)}")
    if req.strategy in LLM_STRATEGIES:
        raise ValueError(f"strategy {req.strategy!r} needs an LLM to summarize; this command runs "
                         "offline (use the library with a completion function, or the eval "
                         "harness with summarizer=)")
    messages = load_session_messages(req.session)
    model = ModelInfo(id=req.model, context_window=req.context_window, provider=req.provider,
                      api=req.api)
    settings = replay_settings(req.strategy, load_settings(req.settings), shape=req.shape,
                               policy=req.policy, frame_size=req.frame_size)
    folder = _prepare_out(req.out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        replay = replay_session(messages, model, settings, strategy=req.strategy)
    chat = to_chat_messages(replay.llm_messages())
    bill = bill_request(chat, req.model, api=req.api, provider=req.provider)
    written = copy.deepcopy(chat)
    count = 0
    for message in written:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "image_url":
                name = f"frames/{count:03d}.png"
                png = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                (folder / name).write_bytes(png)
                part["image_url"]["url"] = name
                count += 1
    (folder / "context.json").write_text(json.dumps(written, ensure_ascii=False, indent=1) + "\n",
                                         encoding="utf-8")
    session = replay.pipeline.session
    session.path = folder / "session.jsonl"
    session.rewrite()
    return {
        "compactions": replay.compactions,
        "frames": count,
        "context_text_tokens": bill.text_tokens,
        "context_image_tokens": bill.image_tokens,
        "context_billed_tokens": bill.billed_tokens,
        "text_token_method": bill.text_token_method,
        "strategy": req.strategy,
        "messages_replayed": len(messages),
        "messages_discarded": sum(1 for r in replay.discarded_round if r > 0),
        "warnings": list(replay.warnings[:10]),
        "out": str(folder),
    }
