"""Serialize agent history into the dense, role-tagged text that snapcompact archives.

Why it must match the reference to the character: the archive text is persisted and
re-rendered on every later compaction, and frames are compared pixel for pixel with the
reference. So this module reproduces the TypeScript behaviour including its JavaScript
string semantics:

* lengths and slices count UTF-16 code units (an emoji counts 2, and a cut may split it,
  leaving a lone surrogate exactly where the reference leaves one);
* ``Math.round`` rounds halves up, not to even;
* argument values go through an exact ``JSON.stringify`` port (array-index keys first,
  ``\\u00xx`` escapes for control characters and lone surrogates, ``1e+21`` style numbers,
  ``-0`` as ``0``, non-finite numbers as ``null``);
* "white space" is the ECMAScript set used by ``\\s`` and ``String.trim``.

Output format (sections joined by a blank line; consecutive sections with the same tag
merge with a newline): ``¶user:``, ``¶think:``, ``¶ai:``, and ``¶call:name(k=v, ...)//intent``
followed by the paired result as ``<out>``, DIM_ON, body, DIM_OFF, ``</out>``. Useless
(non-error) results vanish together with their call. Tool bodies and argument values are
data-URL-elided, then capped head+tail with a ``[…Nch elided…]`` marker.
"""

from __future__ import annotations

import math
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from snapcompact.archive.dataurl import elide_data_urls
from snapcompact.archive.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    message_from_json,
)
from snapcompact.core import (
    DIM_OFF,
    DIM_ON,
    JS_WHITESPACE,
    JS_WS,
    js_number_to_string,
    js_round,
    js_slice,
    utf16_len,
)

__all__ = [
    "INTENT_FIELD",
    "TOOL_RESULT_MAX_CHARS",
    "TOOL_ARG_MAX_CHARS",
    "TOOL_CALL_MAX_CHARS",
    "TRUNCATE_HEAD_RATIO",
    "SerializeOptions",
    "message_sections",
    "result_fact",
    "serialize_conversation",
    "truncate_middle",
    "js_json_stringify",
    "js_number_to_string",
    "utf16_len",
]

TOOL_RESULT_MAX_CHARS = 2000
TOOL_ARG_MAX_CHARS = 500
TOOL_CALL_MAX_CHARS = 2000
TRUNCATE_HEAD_RATIO = 0.6
#: Tool-call argument holding the model's stated intent (pi-wire 18.2.x; older builds used "_i").
INTENT_FIELD = "i"

_DIM_MARKERS = re.compile("[\x0e\x0f]")
_JS_WS_RUN = re.compile(JS_WS + "+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


# ---------------------------------------------------------------------------------------
# JavaScript string and number semantics
# ---------------------------------------------------------------------------------------


def _has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (only those fail a strict UTF-8 encode).

    ASCII text is answered without a scan, other text by the encoder, which runs several times
    faster than a character-class search over the whole serialized history.
    """
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _rejoin_surrogates(text: str) -> str:
    """Merge adjacent high+low surrogate code points into one character, as JS sees them."""
    if not _has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_ARRAY_INDEX = 2**32 - 2


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX.fullmatch(key) is not None and int(key) <= _MAX_ARRAY_INDEX


def js_object_keys(obj: Mapping[str, Any]) -> list[str]:
    """Own-key order of a JS object built from ``obj``: array indices ascending, then the rest."""
    keys = list(obj.keys())
    for key in keys:
        if not isinstance(key, str):
            raise ValueError(f"object keys must be strings, got {key!r}")
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    return indices + [k for k in keys if not _is_array_index(k)]


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                 "\t": "\\t"}
_JSON_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _quote_json_string(text: str) -> str:
    text = _rejoin_surrogates(text)  # what is left as a surrogate is lone

    def escape(match: re.Match[str]) -> str:
        ch = match.group(0)
        return _JSON_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"

    return '"' + _JSON_NEEDS_ESCAPE.sub(escape, text) + '"'


def _json_scalar(value: Any) -> str | None:
    """The JSON text of a scalar, or None for a container."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _quote_json_string(value)
    if isinstance(value, (int, float)):
        text = js_number_to_string(value)
        return "null" if text in ("NaN", "Infinity", "-Infinity") else text
    if isinstance(value, (Mapping, list, tuple)):
        return None
    raise ValueError(f"tool-call argument value of type {type(value).__name__} has no JSON form")


def js_json_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` (no indent) for JSON-shaped Python values.

    Tuples count as arrays. Values with no JSON form (bytes, sets, objects) raise
    ``ValueError`` instead of silently vanishing. The walk uses an explicit stack, not
    recursion: tool-call arguments nested thousands deep (they reach this through compaction of
    real conversations) serialize like any other; a container that contains itself raises
    ``ValueError``, as ``JSON.stringify`` throws on a cycle.
    """
    out: list[str] = []
    # Work items: ("value", v) writes v; ("text", s) writes s; ("leave", id) ends a container.
    stack: list[tuple[str, Any]] = [("value", value)]
    open_ids: set[int] = set()
    while stack:
        kind, item = stack.pop()
        if kind == "text":
            out.append(item)
            continue
        if kind == "leave":
            open_ids.discard(item)
            continue
        scalar = _json_scalar(item)
        if scalar is not None:
            out.append(scalar)
            continue
        if id(item) in open_ids:
            raise ValueError("tool-call argument value contains itself (a cycle has no JSON form)")
        open_ids.add(id(item))
        work: list[tuple[str, Any]] = []
        if isinstance(item, Mapping):
            out.append("{")
            for i, key in enumerate(js_object_keys(item)):
                prefix = ("," if i else "") + _quote_json_string(key) + ":"
                work += [("text", prefix), ("value", item[key])]
            work += [("text", "}"), ("leave", id(item))]
        else:
            out.append("[")
            for i, element in enumerate(item):
                if i:
                    work.append(("text", ","))
                work.append(("value", element))
            work += [("text", "]"), ("leave", id(item))]
        stack.extend(reversed(work))
    return "".join(out)


def _js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


# ---------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SerializeOptions:
    """Character budgets and switches; ``math.inf`` disables a cap."""

    tool_result_max_chars: float = TOOL_RESULT_MAX_CHARS
    tool_arg_max_chars: float = TOOL_ARG_MAX_CHARS
    tool_call_max_chars: float = TOOL_CALL_MAX_CHARS
    truncate_head_ratio: float = TRUNCATE_HEAD_RATIO
    dim_tool_results: bool = True
    include_thinking: bool = True

    def __post_init__(self) -> None:
        for name in ("tool_result_max_chars", "tool_arg_max_chars", "tool_call_max_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if math.isnan(value) or value < 0:
                raise ValueError(f"{name} must be a non-negative number or math.inf, got {value!r}")
        ratio = self.truncate_head_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or math.isnan(ratio):
            raise ValueError(f"truncate_head_ratio must be a number, got {ratio!r}")
        for name in ("dim_tool_results", "include_thinking"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None) -> SerializeOptions:
        """Build from snake_case or the reference's camelCase keys.

        ``None`` values mean "default" (as ``??`` does in the reference). Keys that are not
        serializer options are ignored, because the reference receives the whole compaction
        options object.
        """
        if mapping is None:
            return cls()
        if not isinstance(mapping, Mapping):
            raise ValueError(f"serialize options must be a mapping, got {type(mapping).__name__}")
        values: dict[str, Any] = {}
        for f in fields(cls):
            camel = _snake_to_camel(f.name)
            if f.name in mapping and camel in mapping and mapping[f.name] != mapping[camel]:
                raise ValueError(f"options give both {f.name!r} and {camel!r} with different "
                                 "values")
            value = mapping.get(f.name, mapping.get(camel))
            if value is not None:
                values[f.name] = value
        return cls(**values)


def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# ---------------------------------------------------------------------------------------
# Serialization
# ---------------------------------------------------------------------------------------


def truncate_middle(text: str, max_chars: float, head_ratio: float = TRUNCATE_HEAD_RATIO) -> str:
    """Keep the head and tail of ``text`` within ``max_chars`` UTF-16 units plus a marker.

    ``head = round(max_chars * clamp(head_ratio, 0, 1))`` (halves up), ``tail = max_chars -
    head``; the middle becomes `` […<elided>ch elided…] ``. Text within the cap is returned
    unchanged; ``math.inf`` never truncates.
    """
    length = utf16_len(text)
    if length <= max_chars:
        return text
    ratio = min(max(head_ratio, 0), 1)
    head_chars = js_round(max_chars * ratio)
    tail_chars = max_chars - head_chars
    elided = length - max_chars
    tail = js_slice(text, -tail_chars) if tail_chars > 0 else ""
    return (f"{js_slice(text, 0, head_chars)} "
            f"[\u2026{js_number_to_string(elided)}ch elided\u2026] {tail}")


def _strip_dim(text: str) -> str:
    if "\x0e" not in text and "\x0f" not in text:  # a substring test is far cheaper than sub
        return text
    return _DIM_MARKERS.sub("", text)


def _joined_text(content: str | tuple[Any, ...]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextBlock))


class _Sections:
    """Tagged sections; consecutive parts with the same tag merge with a newline."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.last_prefix: str | None = None

    def push(self, prefix: str, content: str) -> None:
        if self.parts and self.last_prefix == prefix:
            sep = "" if self.parts[-1].endswith("\n") or content.startswith("\n") else "\n"
            self.parts[-1] += sep + content
        else:
            self.parts.append(prefix + content)
            self.last_prefix = prefix


#: Formatted calls per block object: a caller that keeps its parsed messages (the agent's
#: renderability probe serializes the same history on every pass) formats each call once.
#: Blocks are treated as immutable, like the messages they come from.
_CALL_TEXT: dict[int, tuple[ToolCallBlock, SerializeOptions, str]] = {}


def _format_call(block: ToolCallBlock, opts: SerializeOptions) -> str:
    hit = _CALL_TEXT.get(id(block))
    if hit is not None and hit[0] is block and (hit[1] is opts or hit[1] == opts):
        return hit[2]
    line = _format_call_text(block, opts)
    if len(_CALL_TEXT) > 200_000:
        _CALL_TEXT.clear()
    _CALL_TEXT[id(block)] = (block, opts, line)
    return line


def _format_call_text(block: ToolCallBlock, opts: SerializeOptions) -> str:
    args = block.arguments
    if block.intent is not None:
        raw_intent = block.intent
    else:
        candidate = args.get(INTENT_FIELD)
        raw_intent = candidate if isinstance(candidate, str) else ""
    intent = _js_trim(_JS_WS_RUN.sub(" ", _strip_dim(raw_intent)))
    rendered = []
    for key in js_object_keys(args):
        if key == INTENT_FIELD:
            continue
        value = elide_data_urls(js_json_stringify(args[key]))
        shown = truncate_middle(value, opts.tool_arg_max_chars, opts.truncate_head_ratio)
        rendered.append(f"{key}={shown}")
    args_text = truncate_middle(", ".join(rendered), opts.tool_call_max_chars,
                                opts.truncate_head_ratio)
    line = f"{block.name}({args_text})"
    return f"{line}//{intent}" if intent else line


def result_fact(msg: Message) -> tuple[str, bool, str] | None:
    """What serialization indexes of a tool result: (call id, useless, joined text); None for
    other messages. A useless (non-error) result drops its call/result pair; a non-empty text
    is the paired output of the call with that id (the last one wins)."""
    if not isinstance(msg, ToolResultMessage):
        return None
    if msg.useless and not msg.is_error:
        return msg.tool_call_id, True, ""
    return msg.tool_call_id, False, _joined_text(msg.content)


def message_sections(msg: Message, opts: SerializeOptions, useless_ids: Container[str],
                     result_text: Mapping[str, str], merged_ids: set[str],
                     looked_up: list[str] | None = None) -> list[tuple[str, str]]:
    """The (tag, text) sections ``msg`` pushes, given the whole history's useless call ids and
    paired result texts and the call ids merged so far (updated: a call that prints its result
    adds its id). ``looked_up`` collects the call ids whose entries in those maps were read."""
    out: list[tuple[str, str]] = []

    def result_block(raw: str) -> str:
        body = truncate_middle(elide_data_urls(_strip_dim(raw)), opts.tool_result_max_chars,
                               opts.truncate_head_ratio)
        return (f"<out>\n{DIM_ON}{body}{DIM_OFF}\n</out>" if opts.dim_tool_results
                else f"<out>\n{body}\n</out>")

    if isinstance(msg, UserMessage):
        content = _joined_text(msg.content)
        if content:
            out.append(("¶user:", _strip_dim(content)))
    elif isinstance(msg, AssistantMessage):
        thinking: list[str] = []
        texts: list[str] = []

        def flush() -> None:
            if thinking:
                out.append(("¶think:", "\n".join(thinking)))
            if texts:
                out.append(("¶ai:", "\n".join(texts)))
            thinking.clear()
            texts.clear()

        for block in msg.content:
            if isinstance(block, TextBlock):
                text = _strip_dim(block.text)
                if _js_trim(text):
                    texts.append(text)
            elif isinstance(block, ThinkingBlock):
                if not opts.include_thinking:
                    continue
                text = _strip_dim(block.thinking)
                if _js_trim(text):
                    thinking.append(text)
            elif isinstance(block, ToolCallBlock):
                if looked_up is not None:
                    looked_up.append(block.id)
                if block.id in useless_ids:
                    continue
                flush()
                lines = [_format_call(block, opts)]
                paired = result_text.get(block.id)
                if paired is not None:
                    merged_ids.add(block.id)
                    lines.append(result_block(paired))
                out.append(("¶call:", "\n".join(lines)))
        flush()
    elif isinstance(msg, ToolResultMessage):
        if looked_up is not None:
            looked_up.append(msg.tool_call_id)
        # Paired results were merged into their call; only orphans print here.
        if msg.tool_call_id in useless_ids or msg.tool_call_id in merged_ids:
            return out
        orphan = result_text.get(msg.tool_call_id)
        if orphan is not None:
            out.append(("¶call:", "\n" + result_block(orphan)))
    return out


def serialize_conversation(
    messages: Sequence[Message | Mapping[str, Any]],
    options: SerializeOptions | Mapping[str, Any] | None = None,
) -> str:
    """Serialize messages (dataclasses or reference-shaped JSON dicts) into archive text."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise ValueError(f"messages must be a list, got {type(messages).__name__}")
    parsed = [message_from_json(m, i) for i, m in enumerate(messages)]
    opts = (options if isinstance(options, SerializeOptions)
            else SerializeOptions.from_mapping(options))

    # Useless (non-error) results drop their whole call/result pair; surviving non-empty
    # results are indexed by call id (the last one wins, as with a JS Map).
    useless_ids: set[str] = set()
    result_text: dict[str, str] = {}
    for msg in parsed:
        fact = result_fact(msg)
        if fact is None:
            continue
        call_id, useless, text = fact
        if useless:
            useless_ids.add(call_id)
        elif text:
            result_text[call_id] = text

    sections = _Sections()
    merged_ids: set[str] = set()
    for msg in parsed:
        for prefix, content in message_sections(msg, opts, useless_ids, result_text, merged_ids):
            sections.push(prefix, content)
    return _rejoin_surrogates("\n\n".join(sections.parts))
