"""``python -m snapcompact compact``: replay one session file and show the next turn's context.

Why a command: to see what production sends after compacting a session (how many passes fired,
which method each accepted or why it rejected one, the frame cap, which frames survived, what
the context costs and whether it fits the window) without writing Python. It is the same
replay through the coding agent's maintenance, conversion and bill the eval harness uses
(:mod:`.replay`, :func:`snapcompact.compaction.to_chat_messages`,
:func:`snapcompact.billing.bill_request`).

Output folder: ``session.jsonl`` (the replayed session tree, compaction entries included),
``context.json`` (the chat messages of the next turn, each image's data replaced by its
``frames/NNN.png`` path) and ``frames/NNN.png``. The printed JSON summarizes the replay.
"""

from __future__ import annotations

import base64
import copy
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapcompact.agent.frame_shapes import frames_by_shape
from snapcompact.agent.replay import AGENT_STRATEGIES, agent_settings, replay_agent_session
from snapcompact.agent.system_prompt import system_prompt_for
from snapcompact.billing import bill_request
from snapcompact.compaction import (
    ModelInfo,
    claude_stand_in,
    load_session_messages,
    load_settings,
    to_chat_messages,
)
from snapcompact.core import collector_paused, indented_json

#: Strategies whose first method needs a language model (this command has none).
LLM_STRATEGIES: tuple[str, ...] = ("context-full", "handoff", "shake")
#: Provider and wire API assumed for a model id when the command is not told (the provider's
#: image budget and the frame estimate depend on them).
_PROVIDER_BY_PREFIX: tuple[tuple[str, str, str], ...] = (
    ("claude-", "anthropic", "anthropic-messages"),
    ("gpt-", "openai", "openai-responses"),
    ("gemini-", "google", "google-generative-ai"),
)

__all__ = ["CompactRequest", "compact_session_file", "load_with_warnings", "model_for_request",
           "prepare_out"]


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
    #: A system prompt file; None: the coding agent's own prompt for the model
    #: (:func:`~.system_prompt.agent_system_prompt`).
    system_prompt: str | None = None


def prepare_out(out: str) -> Path:
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


def model_for_request(req: CompactRequest) -> tuple[ModelInfo, str | None, str | None]:
    """(model, api, provider) of a request: the provider and wire API guessed from the model id
    when neither is given; thinking is left out of archives for Anthropic's dialect."""
    provider, api = req.provider, req.api
    if provider is None and api is None:
        for prefix, known_provider, known_api in _PROVIDER_BY_PREFIX:
            if req.model.startswith(prefix):
                provider, api = known_provider, known_api
    model = ModelInfo(id=req.model, context_window=req.context_window, provider=provider,
                      api=api, include_thinking=not (api or "").startswith("anthropic"))
    return model, api, provider


def _has_image_part(message: Any) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        part.get("type") == "image_url" for part in content)


def compact_session_file(req: CompactRequest, *,
                         keep_alive: list[Any] | None = None) -> dict[str, Any]:
    """Replay ``req.session`` and write the next turn's context; returns the summary.

    ``keep_alive``: a list the replay's objects are appended to instead of being freed on return
    (for a process that ends right after, without freeing them: the command line; freeing a
    60,000-message replay object by object took ~1 CPU s)."""
    if req.strategy not in AGENT_STRATEGIES:
        raise ValueError(f"unknown strategy {req.strategy!r}; "
                         f"known: {', '.join(AGENT_STRATEGIES)}")
    if req.strategy in LLM_STRATEGIES:
        raise ValueError(f"strategy {req.strategy!r} needs an LLM to summarize; this command runs "
                         "offline (use the library with a completion function, or the eval "
                         "harness with summarizer=)")
    # the replay's millions of short-lived containers: see snapcompact.core.collector
    with collector_paused():
        return _compact_session_file(req, keep_alive)


def _without_thinking(message: Any) -> Any:
    """``message`` (as JSON) without its thinking blocks (what the chat request leaves out)."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": [p for p in content
                                   if not (isinstance(p, dict) and p.get("type") == "thinking")]}


def _count_note(view: Any, messages: list[Any], counted: int, billed: int) -> str | None:
    """Why the agent's count (``context_tokens_estimate``, what ``fits_window`` judges, as
    production does) and the next request's bill (``context_billed_tokens``) differ: the
    thinking blocks the agent counts and the chat request does not send, and what the agent
    counts beside the messages (system prompt, tool declarations). None when they agree."""
    if counted == billed:
        return None
    as_json = [m if isinstance(m, dict) else m.to_json() for m in messages
               if isinstance(m, dict) or hasattr(m, "to_json")]
    thinking = (view.estimator.messages(as_json)
                - view.estimator.messages([_without_thinking(m) for m in as_json]))
    parts = []
    if thinking:
        parts.append(f"{thinking:,} tokens of thinking blocks, which the next request does not "
                     "send (chat messages carry no thinking)")
    if view.non_message_tokens:
        parts.append(f"{view.non_message_tokens:,} tokens of system prompt and tools beside "
                     "the messages")
    why = "; ".join(parts) or "its own estimate of the same messages"
    return (f"the agent's count ({counted:,}, context_tokens_estimate; fits_window compares it "
            f"with the window budget, as production does) differs from the next request's bill "
            f"({billed:,}, context_billed_tokens): the agent counts {why}")


def load_with_warnings(path: str) -> tuple[list[Any], list[str]]:
    """The session file's messages and the loader's warnings (a torn last line, a skipped
    entry), as text: the command counts them in ``warnings_total`` and prints each as one line
    instead of Python's ``UserWarning`` display with the library's source path."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        messages = load_session_messages(path)
    for w in caught:  # anything but the loader's own notes is passed on as it came
        if w.category is not UserWarning:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return messages, [str(w.message) for w in caught if w.category is UserWarning]


def _compact_session_file(req: CompactRequest, keep_alive: list[Any] | None) -> dict[str, Any]:
    messages, load_warnings = load_with_warnings(req.session)
    if keep_alive is not None:
        keep_alive.append(messages)
    model, api, provider = model_for_request(req)
    settings = agent_settings(req.strategy, load_settings(req.settings), shape=req.shape,
                              policy=req.policy, frame_size=req.frame_size)
    system, system_source = system_prompt_for(req.system_prompt, model)
    folder = prepare_out(req.out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        replay = replay_agent_session(messages, model, settings, strategy=req.strategy,
                                      system_prompt=system)
    if keep_alive is not None:
        keep_alive.append(replay)
    chat = to_chat_messages(replay.llm_messages())
    bill = bill_request(chat, req.model, api=api, provider=provider)
    maint = replay.maintenance
    assert maint is not None
    # Only messages with an image part are rewritten below: copy those, share the rest.
    written = [copy.deepcopy(m) if _has_image_part(m) else m for m in chat]
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
    # json.dumps(written, ensure_ascii=False, indent=1), written faster (same text).
    (folder / "context.json").write_text(indented_json(written, indent=1) + "\n",
                                         encoding="utf-8")
    session = replay.pipeline.session
    session.path = folder / "session.jsonl"
    session.rewrite()
    archive = replay.final_archive()
    payload = sum(len(f.data) for f in archive.frames) if archive is not None else 0
    stored = maint.view.stored_tokens()
    caps = [a.frame_cap.max_frames for p in replay.passes for a in p.attempts
            if a.frame_cap is not None]
    warnings_all = list(maint.notices) + list(load_warnings)
    return {
        "compactions": replay.compactions,
        "passes": len(replay.passes),
        "methods": replay.methods_used(),
        "rounds": [p.to_json() for p in replay.passes],
        "frame_cap": {"min": min(caps), "max": max(caps)} if caps else None,
        "frames": count,
        "frames_by_shape": frames_by_shape(archive.frames) if archive is not None else {},
        "frame_payload_bytes": payload,
        "context_tokens_estimate": stored,
        "agent_token_method": maint.view.text_token_method,
        "counts_estimated_by": (maint.view.text_token_method if claude_stand_in(
            model.id, settings.compaction.text_tokenizer) else None),
        "threshold_tokens": maint.view.threshold(),
        "window_budget_tokens": maint.view.window_budget(),
        "fits_window": stored <= maint.view.window_budget(),
        "dead_ends": replay.dead_ends,
        "offline_divergence": replay.offline_divergence,
        "context_text_tokens": bill.text_tokens,
        "context_image_tokens": bill.image_tokens,
        "context_billed_tokens": bill.billed_tokens,
        "text_token_method": bill.text_token_method,
        "count_note": _count_note(maint.view, replay.llm_messages(), stored, bill.billed_tokens),
        "strategy": req.strategy,
        "system_prompt": {"source": system_source, "chars": len(system),
                          "tokens": maint.view.non_message_tokens},
        "messages_replayed": len(messages),
        "messages_discarded": sum(1 for r in replay.discarded_round if r > 0),
        "warnings_total": len(warnings_all),
        "warnings": list(dict.fromkeys(warnings_all))[:10],
        "load_warnings": load_warnings,
        "out": str(folder),
    }
