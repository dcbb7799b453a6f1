"""Regenerate the serializer golden data from the reference implementation.

    .venv/bin/python tests/golden/serialize/make_golden.py [--oracle PATH] [--check]

Writes ``corpus.json.gz`` (hand-written conversations that each pin one behaviour, plus seeded
random conversations) and ``expected.json.gz`` (the reference's ``serializeConversation``
output for every conversation under every option set in ``OPTION_SETS``), obtained by
running ``upstream-frames serialize --options JSON < messages.json``. ``--check`` also
compares our own ``serialize_conversation`` with the fresh reference output and prints the
identical/total count.

The option sets are stored as JSON *text* so that ``1e400`` reaches both sides as Infinity.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ORACLE = str(Path(__file__).resolve().parents[4] / "shared" / "tools" / "upstream-frames")

OPTION_SETS: dict[str, str] = {
    "default": "{}",
    "tight": '{"toolResultMaxChars":60,"toolArgMaxChars":25,"toolCallMaxChars":80,"truncateHeadRatio":0.5}',
    "halves": '{"toolResultMaxChars":5,"toolArgMaxChars":9,"toolCallMaxChars":3,"truncateHeadRatio":0.5}',
    "plain": '{"dimToolResults":false,"includeThinking":false}',
    "unbounded": '{"toolResultMaxChars":1e400,"toolArgMaxChars":1e400,"toolCallMaxChars":1e400}',
    "head_only": '{"toolResultMaxChars":100,"toolArgMaxChars":40,"truncateHeadRatio":1.7}',
    "tail_only": '{"toolResultMaxChars":100,"toolCallMaxChars":50,"truncateHeadRatio":-3}',
    "zero": '{"toolResultMaxChars":0,"toolArgMaxChars":0,"toolCallMaxChars":0}',
    "fractional": '{"toolResultMaxChars":30.5,"toolArgMaxChars":12.25,"toolCallMaxChars":40.75,"truncateHeadRatio":0.3}',
}

DIM_ON, DIM_OFF = "\x0e", "\x0f"
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
GIF_1PX = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
SVG_B64 = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdpZHRoPSIxIiBoZWlnaHQ9IjEiLz4="


# --- message builders --------------------------------------------------------------------

def user(content):
    return {"role": "user", "content": content, "timestamp": 1}


def ai(*blocks):
    return {"role": "assistant", "content": list(blocks), "api": "anthropic-messages", "timestamp": 2}


def text(t):
    return {"type": "text", "text": t}


def think(t):
    return {"type": "thinking", "thinking": t}


def call(cid, name, args, **extra):
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args, **extra}


def result(cid, *texts, name="tool", is_error=False, useless=None, images=0):
    content = [text(t) for t in texts] + [
        {"type": "image", "data": PNG_1PX, "mimeType": "image/png"} for _ in range(images)
    ]
    msg = {"role": "toolResult", "toolCallId": cid, "toolName": name, "content": content,
           "isError": is_error, "timestamp": 3}
    if useless is not None:
        msg["useless"] = useless
    return msg


def image_block():
    return {"type": "image", "data": PNG_1PX, "mimeType": "image/png"}


# --- hand-written cases ------------------------------------------------------------------

def hand_cases() -> dict[str, list]:
    long_body = "HEAD-" + "x" * 5000 + "-TAIL"
    emoji_body = "🙂" * 1500 + "a" + "😀" * 1500  # cuts land inside surrogate pairs
    cases: dict[str, list] = {
        "user_then_ai": [user("do the thing"), ai(text("done"))],
        "think_then_text": [ai(think("weigh options"), text("the answer"))],
        "think_then_call": [ai(think("plan first"), call("c1", "read", {"path": "a.ts"}))],
        "call_result_intent_arg": [
            ai(call("c1", "bash", {"command": "bun test", "i": "Running tests"})),
            result("c1", "3 pass", name="bash"),
        ],
        "harness_intent_beats_arg": [
            ai(call("c1", "bash", {"command": "ls", "i": "raw intent"}, intent="  Listing \n\t files  ")),
            result("c1", "a\nb", name="bash"),
        ],
        "non_string_intents": [
            ai(call("c1", "bash", {"command": "ls", "i": "from arg"}, intent=7),
               call("c2", "bash", {"command": "pwd", "i": 42}),
               call("c3", "bash", {"command": "x", "i": " \u3000\u00a0 "}),
               call("c4", "bash", {"command": "y"}, intent="a\u2028b\u200bc\ufeffd")),
        ],
        "orphan_result": [result("gone", "ok")],
        "content_order": [
            ai(text("before"), call("c1", "read", {"path": "x"}), text("after")),
            result("c1", "file body"),
        ],
        "useless_inside_prose": [
            ai(text("before"), call("c1", "grep", {"pattern": "zzz"}), text("after")),
            result("c1", "no matches", useless=True),
        ],
        "useless_error_is_kept": [
            ai(call("c1", "grep", {"pattern": "("})),
            result("c1", "bad regex", is_error=True, useless=True),
        ],
        "useless_flag_not_true": [
            ai(call("c1", "grep", {"pattern": "a"}), call("c2", "grep", {"pattern": "b"})),
            result("c1", "kept", useless=False),
            result("c2", "also kept"),
        ],
        "useless_orphan_and_all_useless_turn": [
            result("old", "nothing", useless=True),
            ai(think("hmm"), call("c1", "job", {"poll": True}), call("c2", "irc", {})),
            result("c1", "still running", useless=True),
            result("c2", "", useless=True),
        ],
        "blank_blocks": [
            ai(think("   "), text(""), text(" \n\t"), think("\u3000"), text("real")),
            ai(think(""), text("\u00a0\ufeff")),
        ],
        "stray_dim_everywhere": [
            user(f"hi {DIM_ON}there{DIM_OFF}"),
            ai(think(f"{DIM_OFF}t"), text(f"{DIM_ON}a{DIM_OFF}"),
               call("c1", f"na{DIM_ON}me", {"v": f"x{DIM_ON}y"}, intent=f"go{DIM_OFF} now")),
            result("c1", f"{DIM_ON}out{DIM_OFF} put{DIM_ON}"),
            user(DIM_ON + DIM_OFF),
            ai(text(DIM_ON)),
        ],
        "dim_only_result": [ai(call("c1", "t", {})), result("c1", DIM_ON + DIM_OFF)],
        "same_role_merging": [user("hello"), user("world"), ai(text("hi")), ai(text("there"))],
        "consecutive_calls": [
            ai(call("c1", "read", {"path": "a"}), call("c2", "read", {"path": "b"})),
            result("c1", "A"), result("c2", "B"),
            ai(call("c3", "read", {"path": "c"})),
        ],
        "result_blocks_joined": [
            ai(call("c1", "shot", {})),
            result("c1", "part one", "part two", "", "three", images=2),
        ],
        "result_only_image_or_empty": [
            ai(call("c1", "shot", {}), call("c2", "noop", {})),
            result("c1", images=1),
            result("c2", ""),
            result("c3", ""),
        ],
        "duplicate_results_last_wins": [
            ai(call("c1", "t", {})),
            result("c1", "first"), result("c1", "second"), result("c1", ""),
        ],
        "result_before_call": [result("c1", "early"), ai(call("c1", "t", {"a": 1}))],
        "duplicate_call_ids": [
            ai(call("c1", "t", {"n": 1}), call("c1", "t", {"n": 2})),
            result("c1", "shared"),
        ],
        "user_blocks_with_images": [
            user([text("look "), image_block(), text("at this")]),
            user([image_block()]),
            user(""),
            user([]),
            ai(text("seen")),
        ],
        "developer_and_other_blocks": [
            {"role": "developer", "content": "system note", "timestamp": 1},
            ai({"type": "redactedThinking", "data": "xyz"}, image_block(),
               {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}}, text("visible")),
        ],
        "long_result_head_tail": [ai(call("c1", "cat", {"path": "big"})), result("c1", long_body)],
        "long_result_astral_cuts": [ai(call("c1", "cat", {})), result("c1", emoji_body)],
        "long_write_argument": [
            ai(call("c1", "write", {"path": "a.ts", "content": "y" * 3000})),
            result("c1", "wrote"),
        ],
        "ten_long_arguments": [ai(call("c1", "multi", {f"k{i}": "z" * 400 for i in range(10)}))],
        "astral_arguments_at_caps": [
            ai(call("c1", "emoji", {"a": "😀" * 300, "b": "x" + "🎞" * 260, "c": "é" * 250})),
            ai(call("c2", "emoji", {f"🔑{i}": "👍🏽" * 60 for i in range(12)})),
        ],
        "argument_value_kinds": [
            ai(call("c1", "kinds", {
                "int": 3, "neg": -17, "negzero": -0.0, "float": 0.1, "whole": 100.0,
                "big": 1e21, "bigger": 1.5e300, "huge_int": 12345678901234567890,
                "tiny": 1.5e-7, "small": 0.000001, "smaller": 1e-7, "denorm": 5e-324,
                "max": 1.7976931348623157e308, "prec": 0.30000000000000004, "e20": 123456789012345680000.0,
                "t": True, "f": False, "n": None, "empty_list": [], "empty_obj": {},
                "nested": {"b": [1, {"z": None, "a": "s"}], "10": "ten", "2": "two", "a": {}},
                "str": 'q"uo\\te/ \b\f\n\r\t \x00\x01\x1f \x7f \u0080 \u2028\u2029 é 中 😀 \ud800 \udfff x',
            })),
        ],
        "argument_key_order": [
            ai(call("c1", "keys", {"b": 1, "10": 2, "2": 3, "a": 4, "01": 5, "-1": 6, "4294967294": 7,
                                   "4294967295": 8, "1.5": 9, "0": 10, "__proto__": 11, "": 12})),
        ],
        "intent_key_removed": [ai(call("c1", "t", {"i": "why", "x": 1}, intent="harness"))],
        "empty_arguments_and_odd_names": [
            ai(call("c1", "", {}), call("c2", "weird name (x)", {"k": ""}), call("", "noid", {})),
            result("", "empty id result"),
        ],
        "error_result": [ai(call("c1", "bash", {"command": "false"})),
                         result("c1", "exit 1", is_error=True)],
        "newline_edges_merge": [
            user("ends with newline\n"), user("next"), user("\nstarts with newline"),
            ai(text("a\n")), ai(text("\nb")),
            ai(call("c1", "t", {})), result("c1", "\nleading\n"),
            result("orph", "\norphan after call"),
        ],
        "long_user_message": [user("word " * 1200), ai(text("ok"))],
        "non_latin": [
            user("请帮我看看这个函数 — Привет, мир! مرحبا بالعالم 안녕하세요 こんにちは"),
            ai(think("考虑一下"), text("Ελληνικά · हिन्दी · ไทย"),
               call("c1", "read", {"path": "数据/файл.txt", "i": "读取 文件"})),
            result("c1", "内容：" + "汉字" * 1200),
        ],
        "lone_surrogates_and_crlf": [
            user("lone \ud83d here\r\nand \udc00 there"),
            ai(text("pair split: \ud83d\ude00 ok"), call("c1", "t", {"v": "\ud83d"})),
            result("c1", "a\ud800b\r\n" * 3),
        ],
        "thinking_with_data_url_not_elided": [
            user(f"see data:image/png;base64,{PNG_1PX}"),
            ai(think(f"data:image/gif;base64,{GIF_1PX}"), text(f"![x](data:image/png;base64,{PNG_1PX})")),
        ],
    }
    # Data URLs in tool results and arguments.
    d = {
        "bare_canonical_png": f"before data:image/png;base64,{PNG_1PX} after",
        "markdown_svg": f"img: ![diagram](data:image/svg+xml;base64,{SVG_B64}) trailing text",
        "markdown_link_no_bang": f"[file](data:text/plain;base64,{SVG_B64})",
        "double_bang_and_spaces": f"!![a b]( \n data:image/png;base64,{PNG_1PX} \t) end",
        "gif_canonical": f"data:image/gif;base64,{GIF_1PX}",
        "prose_short": "Use data:image/png;base64,abc in prose; and DATA:IMAGE/PNG;BASE64,xyz= too.",
        "uppercase": f"DATA:IMAGE/PNG;BASE64,{PNG_1PX}",
        "charset_params": f"data:text/plain;charset=utf-8;name=a.txt;base64,{SVG_B64}",
        "bad_mime_no_slash": f"data:image;base64,{PNG_1PX}",
        "short_canonical": "data:image/png;base64,QUJD and data:image/png;base64,QUI= and data:a/b;base64,QQ==",
        "non_canonical_short": "data:image/png;base64,abcde and data:image/png;base64,a===",
        "non_canonical_long": "data:image/webp;base64," + "A" * 41 + "=" * 3,
        "empty_payload": "data:image/png;base64, and ![x](data:image/png;base64,)",
        "marker_in_payload": "data:image/png;base64,iVBOR [\u2026908ch elided\u2026] ggg== done",
        "ascii_marker_in_payload": "![p](data:image/png;base64,iVBOR[...1200ch elided...]AAA)",
        "marker_right_after_comma": "data:image/jpeg;base64,[\u202612ch elided\u2026]",
        "uppercase_marker": "data:image/png;base64,QUJD [\u20265CH ELIDED\u2026] QQ",
        "huge_marker": "data:image/png;base64,AB [\u2026" + "9" * 30 + "ch elided\u2026] CD",
        "opener_without_closer": f"![x](data:image/png;base64,{PNG_1PX} and more",
        "closer_without_opener": f"(data:image/png;base64,{PNG_1PX})",
        "nested_label": f"![a [b] c](data:image/png;base64,{PNG_1PX})",
        "label_with_newline": f"![a\nb](data:image/png;base64,{PNG_1PX})",
        "adjacent_urls": f"![a](data:image/png;base64,{PNG_1PX})![b](data:image/gif;base64,{GIF_1PX})",
        "opener_overlaps_prior": f"[x data:image/png;base64,{PNG_1PX} y](data:image/gif;base64,{GIF_1PX})",
        "prose_then_wrapper": f"[data:image/png;base64,abc](data:image/png;base64,{PNG_1PX})",
        "already_placeholder": "[data URL omitted: image/png, 96 base64 chars] stays",
        "many_brackets": "[" * 20000 + ";base64,",
    }
    for name, body in d.items():
        cases[f"dataurl_{name}"] = [
            ai(call("c1", "fetch", {"url": body, "n": 1})),
            result("c1", body),
        ]
    pad_url = f"![chart](data:image/png;base64,{PNG_1PX * 20})"
    for pad in (0, 600, 1150, 1199, 1900, 4000):
        cases[f"dataurl_cut_sweep_{pad}"] = [
            ai(call("c1", "read", {"path": "report.md"})),
            result("c1", "p" * pad + pad_url + "q" * 1500),
        ]
    return cases


# --- data-URL strings, elided in both contexts -------------------------------------------

def dataurl_inputs() -> dict[str, str]:
    """Strings for ``elide_data_urls`` in "source" and "archive" context (no DIM or █)."""
    inputs = {name.removeprefix("dataurl_"): msgs[1]["content"][0]["text"]
              for name, msgs in hand_cases().items() if name.startswith("dataurl_")}
    inputs.update({
        "cut_at_comma": "head data:image/png;base64,",
        "cut_plus_1": "head data:image/png;base64,i",
        "cut_plus_39": "head data:image/png;base64," + PNG_1PX[:39],
        "cut_plus_39_wrapped": "![x](data:image/png;base64," + PNG_1PX[:39] + ")",
        "marker_after_comma_ascii": "data:image/svg+xml;base64,[...4000ch elided...] tail",
        "param_fragment": "data:text/html;charset=UTF-8;base64,PGh0",
        "webp_fragment": "![w](data:image/webp;base64,UklGR",
        "prose_mentions": "The format is data:<mime>;base64,<payload> e.g. data:image/png;base64,abc.",
        "marker_spaces": "data:image/png;base64,AAAA \u3000[\u20267ch elided\u2026]\u00a0 BBBB)",
        "marker_no_digits": "data:image/png;base64,AA [\u2026ch elided\u2026] BB",
        "two_markers": "data:image/png;base64,AA [...3ch elided...] BB [...4ch elided...] CC",
        "mime_plus_dots": "data:application/vnd.ms-excel+xml.v2;base64," + SVG_B64,
        "mime_param_no_value": "data:text/plain;charset;base64," + SVG_B64,
        "mime_digit_start": "data:1mage/png;base64," + PNG_1PX,
        "kelvin_and_long_s": "data:image/png;ba\u017fe64," + PNG_1PX + " DATA:image/png;base\u212a" + PNG_1PX,
        "close_paren_after_ws": "![a](data:image/png;base64,QUJD \n\t )",
        "bang_at_cursor": "![a](data:image/png;base64,QUJD)![b](data:image/png;base64,QUJD)",
        "emoji_around": "\U0001F600![\U0001F39E](data:image/png;base64," + PNG_1PX + ")\U0001F600",
    })
    rng = random.Random(7)
    for n in range(40):
        inputs[f"fuzz_{n:02d}"] = "".join(rng.choice(_URL_ATOMS) for _ in range(rng.randint(1, 25)))
    return inputs


_URL_ATOMS = [
    "data:", "DATA:", "image/png", "text/plain;charset=utf-8", ";base64,", ";BASE64,", "iVBOR",
    "QUJD", "QQ==", "A" * 45, "=", "[\u20269ch elided\u2026]", "[...12ch elided...]", " ", "\n", "(",
    ")", "](", "![", "[", "]", "!", "label", "\u00e9", "\U0001F600", "\t", "\u3000", "+/",
]


# --- seeded random conversations ---------------------------------------------------------

_ATOMS = [
    "the", "quick", "fn()", "x = 1;", "é", "中文", "😀", "🎞", "\ud83d", "\n", "\r\n", "\t", " ",
    "\u3000", "\u00a0", DIM_ON, DIM_OFF, "\\", '"', "…", "[...3ch elided...]", "¶", "█",
    f"data:image/png;base64,{PNG_1PX}", f"![i](data:image/gif;base64,{GIF_1PX})",
    "data:image/png;base64,abc", "data:text/plain;charset=utf-8;base64,", "](", "![", ")",
]


def _random_text(rng: random.Random, max_atoms: int) -> str:
    n = rng.choice([0, 1, 3, rng.randint(0, max_atoms)])
    return "".join(rng.choice(_ATOMS) if rng.random() < 0.5 else rng.choice("abcdefgh ") * rng.randint(1, 40)
                   for _ in range(n))


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 2 else 5)
    if kind == 0:
        return _random_text(rng, 60)
    if kind == 1:
        return rng.choice([0, -1, 7, 2**53 + 1, 1e21, 1e-7, 0.5, -0.0, 3.14159, 1e300])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return "L" * rng.randint(400, 700)
    if kind == 4:
        return _random_text(rng, 200)
    if kind == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["a", "b", "1", "0", "z", "é", "10"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def random_cases(count: int = 40, seed: int = 20240611) -> dict[str, list]:
    rng = random.Random(seed)
    cases = {}
    for n in range(count):
        messages: list = []
        pending: list[str] = []
        next_id = 0
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.25:
                if rng.random() < 0.3:
                    messages.append(user([text(_random_text(rng, 30)), image_block()]))
                else:
                    messages.append(user(_random_text(rng, 30)))
            elif r < 0.65:
                blocks = []
                for _ in range(rng.randint(1, 5)):
                    b = rng.random()
                    if b < 0.3:
                        blocks.append(text(_random_text(rng, 30)))
                    elif b < 0.5:
                        blocks.append(think(_random_text(rng, 30)))
                    else:
                        cid = f"call_{next_id}"
                        next_id += 1
                        args = {f"arg{k}": _random_value(rng) for k in range(rng.randint(0, 4))}
                        if rng.random() < 0.3:
                            args["i"] = _random_text(rng, 5)
                        extra = {"intent": _random_text(rng, 5)} if rng.random() < 0.2 else {}
                        blocks.append(call(cid, rng.choice(["read", "bash", "edit", "grep"]), args, **extra))
                        pending.append(cid)
                messages.append(ai(*blocks))
            else:
                cid = pending.pop(0) if pending and rng.random() < 0.85 else f"orphan_{next_id}"
                next_id += 1
                big = rng.random() < 0.3
                texts = [_random_text(rng, 400 if big else 40) + ("R" * rng.randint(1500, 3000) if big else "")
                         for _ in range(rng.randint(0, 2))]
                flag = rng.random()
                messages.append(result(cid, *texts, is_error=flag < 0.1, useless=True if flag < 0.25 else None,
                                       images=rng.randint(0, 1)))
        cases[f"random_{n:02d}"] = messages
    return cases


# --- reference runs ----------------------------------------------------------------------

def run_reference(oracle: str, messages: list, options_json: str, attempts: int = 4) -> str:
    # Under parallel load the oracle occasionally exits 0 with an empty stdout; retry then.
    for _ in range(attempts):
        proc = subprocess.run(
            [oracle, "serialize", "--options", options_json],
            input=json.dumps(messages).encode("ascii"),
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"reference failed: {proc.stderr.decode(errors='replace')[-400:]}")
        if proc.stdout.strip():
            return json.loads(proc.stdout)
    raise RuntimeError("reference printed nothing, repeatedly")


def run_reference_dataurl(oracle: str, text: str) -> dict[str, str]:
    """Reference output in both contexts.

    "source": an orphan tool result serialized with no caps and no dimming is exactly
    ``<out>\\n`` + elided body + ``\\n</out>``. "archive": ``archiveSourceText`` elides
    a persisted archive text in archive mode (after DIM/█ handling our inputs avoid).
    """
    messages = [result("x", text)]
    options = '{"toolResultMaxChars":1e400,"dimToolResults":false}'
    serialized = run_reference(oracle, messages, options)
    prefix, suffix = "\u00b6call:\n<out>\n", "\n</out>"
    assert serialized.startswith(prefix) and serialized.endswith(suffix), serialized[:80]
    expr = f"sc.archiveSourceText({{frames: [], text: {json.dumps(text)}}})"
    for _ in range(4):
        proc = subprocess.run([oracle, "eval", expr], capture_output=True, check=True)
        if proc.stdout.strip():
            break
    archive = json.loads(proc.stdout)
    return {"source": serialized[len(prefix):-len(suffix)], "archive": archive}


def write_gzip_json(path: Path, value: object) -> None:
    """ASCII JSON (lone surrogates survive as escapes), gzipped with a fixed mtime."""
    data = (json.dumps(value, indent=0) + "\n").encode("ascii")
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", default=DEFAULT_ORACLE)
    parser.add_argument("--check", action="store_true", help="also diff our serializer against it")
    args = parser.parse_args()

    corpus = {**hand_cases(), **random_cases()}
    jobs = [(case, opt) for case in corpus for opt in OPTION_SETS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(pool.map(lambda job: run_reference(args.oracle, corpus[job[0]], OPTION_SETS[job[1]]), jobs))
    expected: dict[str, dict[str, str]] = {case: {} for case in corpus}
    for (case, opt), out in zip(jobs, outputs):
        expected[case][opt] = out

    url_inputs = dataurl_inputs()
    with ThreadPoolExecutor(max_workers=4) as pool:
        url_outputs = list(pool.map(lambda t: run_reference_dataurl(args.oracle, t), url_inputs.values()))
    dataurl_golden = {name: {"input": text, **out} for (name, text), out in zip(url_inputs.items(), url_outputs)}

    write_gzip_json(HERE / "corpus.json.gz", {"option_sets": OPTION_SETS, "cases": corpus})
    write_gzip_json(HERE / "expected.json.gz", expected)
    write_gzip_json(HERE / "dataurl.json.gz", dataurl_golden)
    print(f"{len(corpus)} conversations x {len(OPTION_SETS)} option sets = {len(jobs)} reference outputs")

    if args.check:
        from snapcompact.archive import serialize_conversation

        same = 0
        for case, opt in jobs:
            ours = serialize_conversation(corpus[case], json.loads(OPTION_SETS[opt]))
            if ours == expected[case][opt]:
                same += 1
            else:
                print(f"DIFF {case} / {opt}")
        print(f"serialize identical: {same}/{len(jobs)}")
        from snapcompact.archive import elide_data_urls

        url_same = 0
        for name, entry in dataurl_golden.items():
            for context in ("source", "archive"):
                if elide_data_urls(entry["input"], context) == entry[context]:
                    url_same += 1
                else:
                    print(f"DIFF dataurl {name} / {context}")
        print(f"data-URL identical: {url_same}/{2 * len(dataurl_golden)}")
        return 0 if same == len(jobs) and url_same == 2 * len(dataurl_golden) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
