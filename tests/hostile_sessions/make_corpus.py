"""Write the hostile-session corpus: one file per case, next to ``expectations.tsv``.

Why a generator: several cases are bytes no editor keeps (a BOM, invalid UTF-8, a torn line, a
NUL), and the big ones (a 4 MB message, 100,000 levels of nesting) would bloat the repository;
the small files are committed, the big ones are written by the test from the same recipes
(``BIG`` below). Run it after changing a recipe:

    python tests/hostile_sessions/make_corpus.py           # rewrites the small files
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADER = {"type": "session", "version": 1, "id": "0f0f0f0f",
          "timestamp": "2026-01-01T00:00:00.000Z"}
EVIDENCE = "The spare key is under the blue mat."
PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgAB"
           "SK+kcQAAAABJRU5ErkJggg==")


def _msg(entry_id: str, parent: str | None, message: object) -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": message}


def _user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def _assistant(*blocks: dict, stop: str = "stop") -> dict:
    return {"role": "assistant", "content": list(blocks), "stopReason": stop, "timestamp": 0}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _call(call_id: object = "c1", **extra: object) -> dict:
    block = {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "notes.txt"}}
    block.update(extra)
    return block


def _result(call_id: object = "c1", content: object = None) -> dict:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": content if content is not None else [_text("notes: nothing new")],
            "isError": False, "timestamp": 0}


def _good_messages() -> list[dict]:
    return [
        _user(f"Before we start: {EVIDENCE} Now read notes.txt."),
        _assistant(_text("Reading it."), _call(), stop="toolUse"),
        _result(),
        _assistant(_text("Nothing new in the notes.")),
    ]


def _jsonl(records: list[object]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


def _tree(messages: list[object]) -> bytes:
    """A session tree: header, then the messages in one chain e0 <- e1 <- ..."""
    records: list[object] = [HEADER]
    for i, m in enumerate(messages):
        records.append(_msg(f"e{i}", f"e{i - 1}" if i else None, m))
    return _jsonl(records)


def _replace(index: int, message: object) -> list[object]:
    messages: list[object] = list(_good_messages())
    messages[index] = message
    return messages


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _torn_middle() -> bytes:
    lines = _lines(_tree(_good_messages()))
    lines[2] = lines[2][: len(lines[2]) // 2]
    return b"\n".join(lines)


def _torn_last() -> bytes:
    data = _tree(_good_messages() + [_assistant(_text("An answer cut short by a crash"))])
    return data[:-25]


def _image(data: str, mime: str = "image/png") -> dict:
    return {"role": "user", "content": [_text(f"See the screenshot. {EVIDENCE}"),
                                        {"type": "image", "data": data, "mimeType": mime}],
            "timestamp": 0}


def _with_image(data: str, mime: str = "image/png") -> bytes:
    return _tree([_image(data, mime), *_good_messages()[1:]])


def _cycle() -> bytes:
    messages = _good_messages()
    records = [HEADER, _msg("e0", "e3", messages[0]), _msg("e1", "e0", messages[1]),
               _msg("e2", "e1", messages[2]), _msg("e3", "e2", messages[3])]
    return _jsonl(records)


def _self_parent() -> bytes:
    messages = _good_messages()
    records = [HEADER, _msg("e0", None, messages[0]), _msg("e1", "e1", messages[1])]
    return _jsonl(records)


def _duplicate_ids() -> bytes:
    messages = _good_messages()
    records = [HEADER, _msg("e0", None, messages[0]), _msg("e1", "e0", messages[1]),
               _msg("e1", "e0", messages[2])]
    return _jsonl(records)


def _leaf_unknown() -> bytes:
    return _tree(_good_messages()) + _jsonl([{"type": "leaf", "leafId": "nope"}])


def _branches() -> bytes:
    """Two branches; a leaf record moves back to the first (a correct run replays that one)."""
    messages = _good_messages()
    records = [HEADER, _msg("e0", None, messages[0]), _msg("e1", "e0", messages[1]),
               _msg("e2", "e1", messages[2]), _msg("e3", "e2", messages[3]),
               _msg("x1", "e0", _assistant(_text("A retry that was abandoned."))),
               {"type": "leaf", "leafId": "e3", "timestamp": "2026-01-01T00:00:00.000Z"}]
    return _jsonl(records)


def _nested(depth: int) -> bytes:
    arguments = '{"k":' * depth + "1" + "}" * depth
    call = ('{"type":"toolCall","id":"c1","name":"read","arguments":' + arguments + "}")
    assistant = ('{"role":"assistant","content":[' + call + '],"stopReason":"toolUse",'
                 '"timestamp":0}')
    lines = _lines(_tree(_good_messages()))
    lines[2] = ('{"type":"message","id":"e1","parentId":"e0","timestamp":"t","message":'
                + assistant + "}").encode()
    return b"\n".join(lines)


def _nested_list(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _huge_message(chars: int) -> bytes:
    body = ("lorem ipsum dolor sit amet " * (chars // 27 + 1))[:chars]
    return _tree([_user(f"{EVIDENCE} {body}"), *_good_messages()[1:]])


def _huge_word(chars: int) -> bytes:
    return _tree([_user(f"{EVIDENCE} " + "x" * chars), *_good_messages()[1:]])


def _many_tiny(count: int) -> bytes:
    messages: list[object] = [_user(EVIDENCE)]
    for i in range(count):
        messages.append(_assistant(_text(".")) if i % 2 else _user("."))
    return _tree(messages)


def _questions(rows: list[object]) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows)


GOOD_Q = {"id": "key", "question": "Where is the spare key?", "answers": ["under the blue mat"],
          "evidence": EVIDENCE}

#: session cases: name -> (file name, bytes). Questions are the good questions file.
SESSIONS: dict[str, Callable[[], bytes]] = {
    "ok_tree.jsonl": lambda: _tree(_good_messages()),
    "ok_list.json": lambda: json.dumps(_good_messages()).encode(),
    "ok_crlf.jsonl": lambda: _tree(_good_messages()).replace(b"\n", b"\r\n"),
    "ok_blank_lines.jsonl": lambda: _tree(_good_messages()).replace(b"\n", b"\n\n"),
    "ok_branches.jsonl": _branches,
    "ok_torn_last_line.jsonl": _torn_last,
    "ok_nan_infinity.jsonl": lambda: _tree(_replace(
        1, _assistant(_text("Reading it."), _call(arguments={"n": float("nan"),
                                                            "m": float("inf")}),
                      stop="toolUse"))),
    "ok_image.jsonl": lambda: _with_image(PNG_1PX),
    "ok_nul_in_text.jsonl": lambda: _tree(_replace(3, _assistant(_text("a\u0000b")))),
    "bom_tree.jsonl": lambda: b"\xef\xbb\xbf" + _tree(_good_messages()),
    "bom_list.json": lambda: b"\xef\xbb\xbf" + json.dumps(_good_messages()).encode(),
    "empty.jsonl": lambda: b"",
    "whitespace.jsonl": lambda: b" \n\n\t\n",
    "header_only.jsonl": lambda: _jsonl([HEADER]),
    "no_header.jsonl": lambda: b"\n".join(_lines(_tree(_good_messages()))[1:]),
    "header_not_first.jsonl": lambda: _jsonl([_msg("e0", None, _user(EVIDENCE)), HEADER]),
    "torn_middle_line.jsonl": _torn_middle,
    "truncated_list.json": lambda: json.dumps(_good_messages()).encode()[:-40],
    "line_not_object.jsonl": lambda: _tree(_good_messages()) + b"[1, 2, 3]\n" + _jsonl(
        [_msg("e9", "e3", _user("more"))]),
    "entry_without_type.jsonl": lambda: _tree(_good_messages()) + _jsonl(
        [{"id": "e9", "parentId": "e3"}]),
    "non_utf8.jsonl": lambda: _tree(_good_messages()).replace(b"Reading it.", b"Read\xff\xfeit."),
    "cycle.jsonl": _cycle,
    "self_parent.jsonl": _self_parent,
    "duplicate_ids.jsonl": _duplicate_ids,
    "leaf_unknown.jsonl": _leaf_unknown,
    "message_not_object.jsonl": lambda: _tree(_replace(3, "just a string")),
    "role_not_string.jsonl": lambda: _tree(_replace(3, {"role": 7, "content": "hi"})),
    "role_unknown.jsonl": lambda: _tree(_replace(3, {"role": "wizard", "content": "hi"})),
    "content_number.jsonl": lambda: _tree(_replace(3, {"role": "assistant", "content": 42,
                                                       "stopReason": "stop"})),
    "content_items_not_objects.jsonl": lambda: _tree(_replace(
        3, {"role": "assistant", "content": [1, "two"], "stopReason": "stop"})),
    "text_not_string.jsonl": lambda: _tree(_replace(3, _assistant({"type": "text", "text": 5}))),
    "toolcall_without_id.jsonl": lambda: _tree(_replace(
        1, _assistant(_text("Reading it."), {"type": "toolCall", "name": "read",
                                             "arguments": {}}, stop="toolUse"))),
    "toolcall_arguments_string.jsonl": lambda: _tree(_replace(
        1, _assistant(_call(arguments="not an object"), stop="toolUse"))),
    "toolresult_without_id.jsonl": lambda: _tree(_replace(
        2, {"role": "toolResult", "toolName": "read", "content": [_text("x")],
            "isError": False})),
    "toolresult_id_number.jsonl": lambda: _tree(_replace(2, _result(call_id=12))),
    "image_bad_base64.jsonl": lambda: _with_image("!!!not base64***"),
    "image_not_an_image.jsonl": lambda: _with_image(base64.b64encode(b"hello world").decode()),
    "image_wrong_mime.jsonl": lambda: _with_image(PNG_1PX, mime="text/plain"),
    "image_data_number.jsonl": lambda: _tree([{"role": "user", "content": [
        _text(EVIDENCE), {"type": "image", "data": 5, "mimeType": "image/png"}]},
        *_good_messages()[1:]]),
    "list_empty.json": lambda: b"[]",
    "list_of_numbers.json": lambda: b"[1, 2]",
    "object_not_list.json": lambda: b'{"role": "user", "content": "hi"}',
    "nested_3000.jsonl": lambda: _nested(3000),
}

#: Big cases: written by the test into a scratch folder (name -> recipe), never committed.
BIG: dict[str, Callable[[], bytes]] = {
    "nested_100000.jsonl": lambda: _nested(100_000),
    "nested_list_100000.json": lambda: _nested_list(100_000),
    "huge_message_4mb.jsonl": lambda: _huge_message(4_000_000),
    "huge_word_2mb.jsonl": lambda: _huge_word(2_000_000),
    "many_tiny_1000.jsonl": lambda: _many_tiny(1000),
}

#: questions cases (the session is ok_tree.jsonl)
QUESTIONS: dict[str, Callable[[], bytes]] = {
    "q_ok.jsonl": lambda: _questions([GOOD_Q]),
    "q_ok_id_number.jsonl": lambda: _questions([{**GOOD_Q, "id": 7}]),
    "q_bom.jsonl": lambda: b"\xef\xbb\xbf" + _questions([GOOD_Q]),
    "q_empty.jsonl": lambda: b"",
    "q_torn.jsonl": lambda: _questions([GOOD_Q])[:-20],
    "q_not_object.jsonl": lambda: _questions([[1, 2]]),
    "q_missing_fields.jsonl": lambda: _questions([{"id": "a", "question": "q?"}]),
    "q_evidence_not_in_session.jsonl": lambda: _questions([{**GOOD_Q,
                                                            "evidence": "Nowhere to be found."}]),
    "q_evidence_empty.jsonl": lambda: _questions([{**GOOD_Q, "evidence": ""}]),
    "q_answers_string.jsonl": lambda: _questions([{**GOOD_Q, "answers": "under the mat"}]),
    "q_answers_empty.jsonl": lambda: _questions([{**GOOD_Q, "answers": []}]),
    "q_answers_numbers.jsonl": lambda: _questions([{**GOOD_Q, "answers": [1, None]}]),
    "q_question_object.jsonl": lambda: _questions([{**GOOD_Q, "question": {"text": "q"}}]),
    "q_id_object.jsonl": lambda: _questions([{**GOOD_Q, "id": {"x": 1}}]),
    "q_evidence_number.jsonl": lambda: _questions([{**GOOD_Q, "evidence": 3.5}]),
    "q_duplicate_ids.jsonl": lambda: _questions([GOOD_Q, GOOD_Q]),
    "q_nan.jsonl": lambda: _questions([b'{"id": "n", "question": "q?", "answers": [NaN], '
                                       b'"evidence": "blue mat"}']),
    "q_non_utf8.jsonl": lambda: _questions([GOOD_Q]).replace(b"spare key?", b"spare \xff?"),
    "q_nested.jsonl": lambda: b"[" * 100_000 + b"]" * 100_000 + b"\n",
}


def write(folder: Path, recipes: dict[str, Callable[[], bytes]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in recipes.items():
        (folder / name).write_bytes(make())


if __name__ == "__main__":
    write(HERE / "files", {**SESSIONS, **{k: v for k, v in QUESTIONS.items()
                                          if k != "q_nested.jsonl"}})
    print(f"wrote {len(SESSIONS) + len(QUESTIONS) - 1} files to {HERE / 'files'}")
