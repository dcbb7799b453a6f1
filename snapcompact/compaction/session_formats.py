"""Read every real session format into a :class:`Session`, the way the coding agent reads it.

Why: real session files come from several writers (pi v1, pi/oh-my-pi/GJC v2-v3, Claude Code)
and carry real-world flaws (lines broken by hand-editing or masking, two records joined on one
line, images stored as ``blob:sha256:`` references to a blob store that did not travel with the
file). The agent (@oh-my-pi/pi-coding-agent 18.3.4) never refuses a session for one bad line; this
module reproduces what it does and says so, one warning per affected line, instead of refusing
or silently dropping.

What the agent does, and therefore what happens here (behaviour ported from its
``session-loader``, ``session-migrations``, ``blob-store`` and ``claude-session-store``):

* pi JSONL: records are read as a stream of JSON values split on ``\\n`` only (never
  ``splitlines()``: U+2028 occurs inside strings). Several values on one line are all kept (two
  objects joined without a newline). At a value that does not parse, the rest of that line is
  skipped and reading goes on at the next line; values before it on the line are kept.
* pi v1 (header without ``version``, entries without ids) is migrated: each entry gets an id
  and the previous entry as parent; a compaction's ``firstKeptEntryIndex`` (an index into the
  file's records, the header being record 0) becomes ``firstKeptEntryId``. v1/v2
  ``hookMessage`` roles become ``custom``. Ids here are deterministic (``v1-00001``...), the
  agent's are random. This project's own tree files say version 1 but carry ids: kept as they are.
* An entry whose parent is not in the file (its parent sat on a skipped line) starts the branch
  again: the agent's walk from the leaf stops at a missing parent, so the earlier entries are not
  in its context.
* Image blocks whose data is a ``blob:sha256:`` reference: the blob store is not beside the file.
  The agent logs "Blob not found for image reference" and keeps the reference, which is no image
  a provider would accept; here the block becomes a text placeholder naming the reference (the
  image's bytes are unknown, so nothing can be measured for it) and the line gets a warning.
* Claude Code JSONL: imported as the agent's Claude importer does. Lines are parsed one JSON
  object per line (a line that does not parse is skipped). Only ``user`` and ``assistant`` records
  count; ``isSidechain`` and ``isMeta`` records are skipped, as are ``system`` (including
  ``compact_boundary``), ``attachment``, ``queue-operation`` and bookkeeping lines. ``text``,
  ``thinking`` and ``tool_use`` blocks become text, thinking and toolCall; each ``tool_result``
  becomes a toolResult message. The ``isCompactSummary`` user line is an ordinary user message,
  and since the line after a compact boundary has no ``parentUuid`` the active branch starts at
  that summary: what the agent resumes from is the summary and what follows it. A model change
  between assistant records becomes a ``model_change`` entry.
* A JSON list of agent messages is left to :func:`~snapcompact.compaction.load_session_messages`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from snapcompact.compaction.session import Session

__all__ = ["FORMATS", "LoadedSession", "read_session_file"]

#: Format names :func:`read_session_file` reports.
FORMATS = ("pi-v1", "pi-v2", "pi-v3", "claude-code")

BLOB_PREFIX = "blob:sha256:"
_DECODER = json.JSONDecoder()
_WS = " \t\r"


@dataclass(frozen=True)
class LoadedSession:
    """A session as the agent would see it, the format it came in and what loading repaired."""

    session: Session
    format: str
    warnings: tuple[str, ...]


def _decode_lines(raw: bytes, notes: list[str]) -> list[str]:
    """The file's ``\\n`` lines as text; bytes that are not UTF-8 become U+FFFD (the agent's
    ``TextDecoder`` does the same), with one note per such line."""
    lines = []
    for n, chunk in enumerate(raw.split(b"\n"), 1):
        try:
            lines.append(chunk.decode("utf-8"))
        except UnicodeDecodeError as exc:
            notes.append(f"line {n} is not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                         "undecodable bytes read as U+FFFD, as the agent's decoder does")
            lines.append(chunk.decode("utf-8", errors="replace"))
    return lines


def _parse_stream(lines: list[str]) -> tuple[list[tuple[int, Any]], list[str]]:
    """pi's reader: every JSON value per ``\\n`` line; a bad value drops the rest of its line."""
    values: list[tuple[int, Any]] = []
    notes: list[str] = []
    for n, line in enumerate(lines, 1):
        pos, end = 0, len(line)
        while True:
            while pos < end and line[pos] in _WS:
                pos += 1
            if pos >= end:
                break
            try:
                value, pos = _DECODER.raw_decode(line, pos)
            except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge ints, nesting
                why = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
                       else "nested too deeply to read" if isinstance(exc, RecursionError)
                       else str(exc) or type(exc).__name__)
                notes.append(f"line {n} does not parse ({why}); the rest of the line is "
                             "skipped, as the agent does")
                break
            values.append((n, value))
        joined = sum(1 for ln, _ in values if ln == n)
        if joined > 1:
            notes.append(f"line {n} holds {joined} JSON records with no newline between them; "
                         "each is read, as the agent does")
    return values, notes


def _parse_lines(lines: list[str]) -> tuple[list[tuple[int, Any]], list[str]]:
    """The Claude importer's reader: one ``JSON.parse`` per line; a line that fails is skipped."""
    values: list[tuple[int, Any]] = []
    notes: list[str] = []
    for n, line in enumerate(lines, 1):
        if not line.strip(_WS):
            continue
        try:
            values.append((n, json.loads(line)))
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply to read" if isinstance(exc, RecursionError) else str(exc)
            notes.append(f"line {n} does not parse ({why}); skipped, as the agent's Claude "
                         "importer does")
    return values, notes


def _objects(values: list[tuple[int, Any]], notes: list[str]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, value in values:
        if isinstance(value, dict):
            out.append((n, value))
        else:
            notes.append(f"line {n}: a JSON {type(value).__name__} is not a record; skipped")
    return out


def _blob_images(value: Any, refs: list[str]) -> Any:
    """Copy of ``value`` with blob-referenced image blocks replaced by a text placeholder."""
    if isinstance(value, list):
        return [_blob_images(v, refs) for v in value]
    if not isinstance(value, dict):
        return value
    data = value.get("data")
    if value.get("type") == "image" and isinstance(data, str) and data.startswith(BLOB_PREFIX):
        refs.append(data)
        return {"type": "text", "text": f"[image not available: {data} is not in a blob store]"}
    return {k: _blob_images(v, refs) for k, v in value.items()}


def _replace_blob_images(records: list[tuple[int, dict[str, Any]]],
                         notes: list[str]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, obj in records:
        message = obj.get("message")
        if obj.get("type") == "message" and isinstance(message, dict):
            refs: list[str] = []
            fixed = _blob_images(message, refs)
            if refs:
                notes.append(f"line {n}: {len(refs)} image(s) stored as blob references with no "
                             f"blob store ({refs[0][:30]}...): the agent warns 'Blob not found for "
                             "image reference' and keeps the reference; replaced by a text "
                             "placeholder")
                obj = {**obj, "message": fixed}
        out.append((n, obj))
    return out


def _migrate_pi(records: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """pi's migrations v1 -> v2 (ids, parent chain, firstKeptEntryId) and v2 -> v3 (roles)."""
    version = records[0][1].get("version", 1)
    if not isinstance(version, int) or version >= 3:
        return records
    objs = [dict(obj) for _, obj in records]
    # This project's own session writer labels its tree files version 1 although every entry has
    # an id and a parent: those are never re-id'd (a real v1 file has no entry ids at all).
    if version < 2 and not any(isinstance(o.get("id"), str) for o in objs[1:]):
        previous: str | None = None
        for i, obj in enumerate(objs):
            if obj.get("type") == "session":
                continue
            obj["id"] = f"v1-{i:05d}"
            obj["parentId"] = previous
            previous = obj["id"]
        for obj in objs:
            if obj.get("type") == "compaction" and "firstKeptEntryIndex" in obj:
                index = obj.pop("firstKeptEntryIndex")
                if (isinstance(index, int) and not isinstance(index, bool)
                        and 0 <= index < len(objs) and objs[index].get("type") != "session"):
                    obj["firstKeptEntryId"] = objs[index]["id"]
    for obj in objs:
        if obj.get("type") == "session":
            obj["version"] = 3
        message = obj.get("message")
        if obj.get("type") == "message" and isinstance(message, dict) \
                and message.get("role") == "hookMessage":
            obj["message"] = {**message, "role": "custom"}
    return [(n, obj) for (n, _), obj in zip(records, objs, strict=True)]


# ----------------------------------------------------------------------------- Claude Code

def _ms(value: Any, fallback: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
        except ValueError:
            pass
    return fallback


def _iso(ms: float) -> str:
    stamp = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _field(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) and value else None


def _image(block: Any) -> dict[str, Any] | None:
    if not isinstance(block, dict) or block.get("type") != "image" \
            or not isinstance(block.get("source"), dict):
        return None
    data, mime = _field(block["source"], "data"), _field(block["source"], "media_type")
    return {"type": "image", "data": data, "mimeType": mime} if data and mime else None


def _user_part(block: Any) -> dict[str, Any] | None:
    if isinstance(block, dict) and block.get("type") == "text" \
            and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    return _image(block)


def _tool_result_content(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    out = []
    for block in value if isinstance(value, list) else []:
        part = _user_part(block)
        if part is not None:
            out.append(part)
    return out


def _stop_reason(value: Any) -> str:
    if value == "tool_use":
        return "toolUse"
    if value == "max_tokens":
        return "length"
    if value in ("end_turn", "stop_sequence", "pause_turn") or value is None:
        return "stop"
    return "error"


def _usage(value: Any) -> dict[str, Any]:
    def num(key: str) -> float:
        v = value.get(key) if isinstance(value, dict) else None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
            else 0
    parts = {"input": num("input_tokens"), "output": num("output_tokens"),
             "cacheRead": num("cache_read_input_tokens"),
             "cacheWrite": num("cache_creation_input_tokens")}
    return {**parts, "totalTokens": sum(parts.values()),
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _convert_claude(record: dict[str, Any], fallback: float,
                    tool_names: dict[str, str]) -> list[tuple[dict[str, Any], str]]:
    """One Claude record -> (agent message, id suffix) pairs, as the agent's importer converts."""
    if record.get("type") not in ("user", "assistant") or record.get("isSidechain") is True \
            or record.get("isMeta") is True or not isinstance(record.get("message"), dict):
        return []
    message = record["message"]
    ts = int(_ms(record.get("timestamp"), fallback))
    raw = message.get("content")
    if record["type"] == "assistant":
        content: list[dict[str, Any]] = []
        for block in raw if isinstance(raw, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                content.append({"type": "text", "text": block["text"]})
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                thinking = {"type": "thinking", "thinking": block["thinking"]}
                if isinstance(block.get("signature"), str):
                    thinking["thinkingSignature"] = block["signature"]
                content.append(thinking)
            elif kind == "tool_use":
                call_id, name = _field(block, "id"), _field(block, "name")
                if call_id and name:
                    args = block.get("input") if isinstance(block.get("input"), dict) else {}
                    content.append({"type": "toolCall", "id": call_id, "name": name,
                                    "arguments": args})
                    tool_names[call_id] = name
        error = _field(record, "error")
        if not content and not error:
            return []
        out: dict[str, Any] = {
            "role": "assistant", "content": content, "api": "anthropic-messages",
            "provider": "anthropic", "model": _field(message, "model") or "unknown",
            "usage": _usage(message.get("usage")),
            "stopReason": "error" if record.get("isApiErrorMessage") is True
            else _stop_reason(message.get("stop_reason")),
            "timestamp": ts}
        if _field(message, "id"):
            out["responseId"] = message["id"]
        if error:
            out["errorMessage"] = error
        return [(out, "message")]
    if isinstance(raw, list):
        results: list[tuple[dict[str, Any], str]] = []
        pending: list[dict[str, Any]] = []
        start = 0
        for index, block in enumerate(raw):
            part = _user_part(block)
            if part is not None:
                if not pending:
                    start = index
                pending.append(part)
                continue
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call_id = _field(block, "tool_use_id")
            if not call_id:
                continue
            if pending:
                results.append(({"role": "user", "content": pending, "timestamp": ts},
                                 f"user-{start}"))
                pending = []
            results.append(({"role": "toolResult", "toolCallId": call_id,
                             "toolName": tool_names.get(call_id, "unknown"),
                             "content": _tool_result_content(block.get("content")),
                             "isError": block.get("is_error") is True, "timestamp": ts},
                            f"tool-{index}"))
        if pending:
            results.append(({"role": "user", "content": pending, "timestamp": ts},
                            f"user-{start}"))
        if results:
            return results
        parts = [p for p in (_user_part(b) for b in raw) if p is not None]
        return [({"role": "user", "content": parts, "timestamp": ts}, "message")] if parts else []
    if isinstance(raw, str) and raw:
        return [({"role": "user", "content": raw, "timestamp": ts}, "message")]
    return []


def _claude_records(path: Path, records: list[tuple[int, dict[str, Any]]],
                    notes: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """Claude Code records -> pi v3 records (header first), as the agent's importer builds them."""
    fallback = path.stat().st_mtime * 1000
    parents: dict[str, str | None] = {}
    cwd = session_id = None
    for _, rec in records:
        uuid = _field(rec, "uuid")
        if uuid:
            parents[uuid] = _field(rec, "parentUuid")
        cwd = cwd or _field(rec, "cwd")
        session_id = session_id or _field(rec, "sessionId")
    first_ts = next((_ms(r.get("timestamp"), fallback) for _, r in records
                     if r.get("timestamp") is not None), fallback)
    header: dict[str, Any] = {"type": "session", "version": 3,
                              "id": session_id or path.stem, "timestamp": _iso(first_ts)}
    if cwd:
        header["cwd"] = cwd
    out: list[tuple[int, dict[str, Any]]] = [(records[0][0] if records else 1, header)]
    tails: dict[str, str] = {}
    used: set[str] = set()
    tool_names: dict[str, str] = {}
    last_model: str | None = None
    synthetic = 0

    def unique(base: str) -> str:
        candidate, k = base, 2
        while candidate in used:
            candidate, k = f"{base}-{k}", k + 1
        used.add(candidate)
        return candidate

    def resolve(source: str | None) -> str | None:
        seen: set[str] = set()
        while source and source not in seen:
            seen.add(source)
            if source in tails:
                return tails[source]
            source = parents.get(source)
        return None

    for n, rec in records:
        converted = _convert_claude(rec, fallback, tool_names)
        if not converted:
            continue
        source = _field(rec, "uuid") or f"line-{n}"
        parent = resolve(_field(rec, "parentUuid"))
        stamp = _iso(_ms(rec.get("timestamp"), fallback))
        if rec.get("type") == "assistant":
            model = _field(rec["message"], "model")
            if model and model != last_model:
                entry_id = unique(f"claude-{source}-model")
                out.append((n, {"type": "model_change", "id": entry_id, "parentId": parent,
                                "timestamp": stamp, "model": f"anthropic/{model}"}))
                parent, last_model = entry_id, model
        for message, suffix in converted:
            synthetic += 1
            entry_id = unique(f"claude-{source}-{suffix}-{synthetic}")
            out.append((n, {"type": "message", "id": entry_id, "parentId": parent,
                            "timestamp": stamp, "message": message}))
            parent = entry_id
        if parent:
            tails[source] = parent
    if len(out) == 1:
        raise ValueError(f"{path}: a Claude Code transcript with no user or assistant record on "
                         "its main chain")
    return out


def _is_claude(records: list[tuple[int, dict[str, Any]]]) -> bool:
    return any(isinstance(r.get("uuid"), str) and r.get("type") in ("user", "assistant")
               for _, r in records)


def read_session_file(path: str | Path) -> LoadedSession:
    """Detect the format of a JSONL session file and load it as the agent would.

    Raises ``ValueError`` naming the file when it is missing, holds no record, or is in no known
    format; a single bad line never refuses the file (it is skipped with a warning naming it).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"session file {p} does not exist")
    raw = p.read_bytes().removeprefix(b"\xef\xbb\xbf")
    if not raw.strip():
        raise ValueError(f"{p}: the file is empty (a session file starts with a session header "
                         "line)")
    decoding: list[str] = []
    lines = _decode_lines(raw, decoding)
    values, notes = _parse_stream(lines)
    notes[:0] = decoding
    records = _objects(values, notes)
    if not records:
        raise ValueError(f"{p}: no line holds a JSON record ({'; '.join(notes[:3])})")
    first = records[0][1]
    if first.get("type") == "session":
        fmt = f"pi-v{first.get('version', 1)}"
        records = _replace_blob_images(_migrate_pi(records), notes)
        session = Session.from_records(p, records, fsync=False, orphans_as_roots=True)
    elif _is_claude(records):
        fmt = "claude-code"
        values, notes = _parse_lines(lines)
        notes[:0] = decoding
        records = _objects(values, notes)
        session = Session.from_records(p, _claude_records(p, records, notes), fsync=False,
                                       orphans_as_roots=True)
    else:
        raise ValueError(f"{p}: the first line must be a session header (type 'session', a pi "
                         "session), and no line is a Claude Code user/assistant record (type + "
                         "uuid): not a session format the agent reads")
    session.path = None  # read-only view: nothing is ever appended to the source file
    notes.extend(session.load_notes)
    return LoadedSession(session=session, format=fmt, warnings=tuple(notes))
