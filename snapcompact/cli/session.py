"""``python -m snapcompact session SESSION {show|transcript|tree|prune}``: a session, read only.

Why a command: to see what the compaction pipeline makes of a session without writing Python.

- ``show``: the context the next turn would send (the LLM messages rebuilt from the active
  branch, after the latest compaction), as JSON with each message's token estimate; image and
  frame payloads are replaced by their size.
- ``transcript``: the display transcript, every entry of the branch in order, each compaction a
  divider line (``--expand`` prints its summary below it).
- ``tree``: every entry of the session as a tree (children indented), ``*`` on the active branch.
- ``prune``: a dry run of the threshold prune and the per-turn stale pass: which tool results
  would be blanked, why, and what that saves. Nothing is written.

Settings come from ``--settings FILE``, else from the agent's user and project files
(``~/.omp/agent``, ``<cwd>/.omp``). Bad input: exit status 2 and one line naming the problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["add_session_parser", "run_session"]

_PREVIEW = 72


def _settings(args: argparse.Namespace):
    from snapcompact.compaction import discover_settings, load_settings

    if args.settings:
        return load_settings(args.settings)
    settings, notes = discover_settings(Path(args.session).resolve().parent if args.cwd is None
                                        else args.cwd)
    for note in notes:
        sys.stderr.write(f"note: {note}\n")
    return settings


def _load(path: str):
    from snapcompact.compaction import read_session_file

    loaded = read_session_file(path)  # any format the agent reads; bad lines are warnings
    for note in loaded.warnings:
        sys.stderr.write(f"warning: {path}: {note}\n")
    return loaded.session


def _slim(value: Any) -> Any:
    """JSON with base64 payloads replaced by their length (frames are megabytes)."""
    if isinstance(value, Mapping):
        if value.get("type") == "image" and isinstance(value.get("data"), str):
            return {**{k: _slim(v) for k, v in value.items() if k != "data"},
                    "dataChars": len(value["data"])}
        return {k: _slim(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_slim(v) for v in value]
    return value


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[:_PREVIEW - 1] + "\u2026"


def _message_text(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        return str(message.get("summary", ""))
    if role == "bashExecution":
        return f"$ {message.get('command', '')}\n{message.get('output', '')}"
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "thinking":
            parts.append(f"(thinking) {block.get('thinking', '')}")
        elif kind == "toolCall":
            arguments = json.dumps(block.get('arguments'), ensure_ascii=False)
            parts.append(f"{block.get('name')}({arguments})")
        elif kind == "image":
            parts.append("[image]")
    return "\n".join(parts)


def _cmd_show(args: argparse.Namespace) -> dict[str, Any]:
    from snapcompact.archive import archive_blocks
    from snapcompact.compaction import (
        TokenEstimator,
        build_session_context,
        to_wire_json,
    )

    session, settings = _load(args.session), _settings(args)
    limit = settings.snapcompact.max_frame_data_bytes
    estimator = TokenEstimator(archive_blocks=lambda m: archive_blocks(m, limit))
    context = build_session_context(session.get_branch())
    rows = []
    for entry_id, message in zip(context.entry_ids, context.messages, strict=True):
        wire = to_wire_json(message, max_frame_data_bytes=limit)
        if wire is not None:
            rows.append({"entryId": entry_id, "tokens": estimator.message(message),
                         "message": _slim(wire)})
    return {"session": str(args.session), "leafId": session.leaf_id, "messages": len(rows),
            "estimatedTokens": sum(r["tokens"] for r in rows), "context": rows}


def _cmd_transcript(args: argparse.Namespace) -> str:
    from snapcompact.compaction import build_session_context

    session = _load(args.session)
    context = build_session_context(session.get_branch(), transcript=True)
    lines = []
    for entry_id, message in zip(context.entry_ids, context.messages, strict=True):
        if "divider" in message:
            lines.append(str(message["divider"]))
            if args.expand:
                lines += [f"    {line}" for line in str(message.get("summary", "")).splitlines()]
            continue
        text = _message_text(message)
        shown = text if args.full else _one_line(text)
        lines.append(f"[{entry_id}] {message.get('role')}: {shown}")
    return "\n".join(lines)


def _describe(entry: Any) -> str:
    from snapcompact.compaction import CompactionEntry, entry_to_message

    if isinstance(entry, CompactionEntry):
        return f"compaction (keeps from {entry.first_kept_entry_id}): {_one_line(entry.summary)}"
    message = entry_to_message(entry)
    if message is None:
        return entry.type
    return f"{message.get('role')}: {_one_line(_message_text(message))}"


def _cmd_tree(args: argparse.Namespace) -> str:
    session = _load(args.session)
    on_branch = {e.id for e in session.get_branch()}
    lines: list[str] = []
    stack = [(child, 0) for child in reversed(session.children(None))]
    while stack:
        entry, depth = stack.pop()
        mark = "*" if entry.id in on_branch else " "
        leaf = "  <- leaf" if entry.id == session.leaf_id else ""
        lines.append(f"{mark} {'  ' * depth}{entry.id} {_describe(entry)}{leaf}")
        children = session.children(entry.id)
        # Siblings indent one level; a single child continues the same column (a long branch
        # stays readable).
        stack.extend((child, depth + (1 if len(children) > 1 else 0))
                     for child in reversed(children))
    return "\n".join(lines)


def _cmd_prune(args: argparse.Namespace) -> dict[str, Any]:
    from snapcompact.compaction import prune_superseded_tool_results, prune_tool_outputs

    session, settings = _load(args.session), _settings(args)
    branch = session.get_branch()

    def report(result: Any) -> dict[str, Any]:
        return {"results": len(result.replacements), "tokensSaved": result.tokens_saved,
                "blanked": [{"entryId": i, "reason": result.reasons[i],
                             "notice": result.replacements[i]["content"][0]["text"]}
                            for i in result.replacements]}

    threshold = prune_tool_outputs(branch, settings.pruning, now_ms=0)
    stale = prune_superseded_tool_results(branch, settings.pruning, idle_seconds=args.idle_seconds,
                                          drop_useless=settings.compaction.drop_useless, now_ms=0)
    return {"session": str(args.session), "dryRun": True, "thresholdPrune": report(threshold),
            "stalePass": report(stale)}


_COMMANDS = {"show": _cmd_show, "transcript": _cmd_transcript, "tree": _cmd_tree,
             "prune": _cmd_prune}


def run_session(args: argparse.Namespace) -> int:
    """Run one ``session`` action; JSON results are printed as JSON, text ones as text."""
    result = _COMMANDS[args.action](args)
    if isinstance(result, str):
        sys.stdout.write(result + ("\n" if result else ""))
    else:
        sys.stdout.write(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return 0


def add_session_parser(sub: Any) -> None:
    """Register the ``session`` verb on the main parser's subcommands."""
    p = sub.add_parser("session",
                       help="inspect a session file: show | transcript | tree | prune (read only)")
    p.add_argument("session", help="session JSONL file (pi v1-v3, oh-my-pi/GJC or Claude Code)")
    p.add_argument("action", choices=sorted(_COMMANDS))
    p.add_argument("--settings",
                   help="settings file (TOML/JSON/YAML); default: the agent's user and project "
                        "files")
    p.add_argument("--cwd",
                   help="project directory for settings discovery (default: the session's folder)")
    p.add_argument("--expand", action="store_true",
                   help="transcript: print each compaction's summary")
    p.add_argument("--full", action="store_true",
                   help="transcript: whole messages instead of one line each")
    p.add_argument("--idle-seconds", type=float, default=0.0,
                   help="prune: how long the session has been idle")
    p.set_defaults(func=run_session)
