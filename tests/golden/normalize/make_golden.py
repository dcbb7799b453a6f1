"""Regenerate the normalization fixtures from the reference implementation.

Why: `tests/test_normalize.py` must run without the reference, so the reference's answers for a
fixed corpus are stored here as JSON.  The corpus is deterministic (seeded), so re-running this
script reproduces the same files unless the reference changes.

    .venv/bin/python tests/golden/normalize/make_golden.py            # rewrite fixtures
    .venv/bin/python tests/golden/normalize/make_golden.py --check    # compare ours, print counts
    .venv/bin/python tests/golden/normalize/make_golden.py --tables   # Unicode tables for normalize.py

Needs `upstream-frames` (path in $UPSTREAM_FRAMES, default ../shared/tools/upstream-frames beside the repository).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM = os.environ.get("UPSTREAM_FRAMES", str(Path(__file__).resolve().parents[4] / "shared" / "tools" / "upstream-frames"))
FONTS = ("5x8", "6x12", "8x13", "8x8", "silver")
CODESPACE_CHUNK = 4096
DIM_ON, DIM_OFF, BLOCK = "\x0e", "\x0f", "\u2588"


def run_reference(request: dict) -> dict:
    """Send one request to oracle.js through `upstream-frames eval` and return its response."""
    with tempfile.TemporaryDirectory() as tmp:
        req, res = Path(tmp) / "request.json", Path(tmp) / "response.json"
        req.write_text(json.dumps(request))
        body = f"const REQUEST = {json.dumps(str(req))}; const RESPONSE = {json.dumps(str(res))};\n"
        body += (HERE / "oracle.js").read_text()
        body_file = Path(tmp) / "body.js"
        body_file.write_text(body)
        expr = (
            f'(new Function("sc", "nat", "return (async () => {{" + '
            f'(await Bun.file({json.dumps(str(body_file))}).text()) + "}})()"))(sc, nat)'
        )
        subprocess.run([UPSTREAM, "eval", expr], check=True, stdout=subprocess.DEVNULL)
        return json.loads(res.read_text())


# ---------------------------------------------------------------------------------------------
# Corpora
# ---------------------------------------------------------------------------------------------


def _stdlib_snippets(rng: random.Random) -> list[str]:
    """Real prose and code: slices of Python standard-library sources (present on every machine)."""
    import argparse as ap
    import json as js
    import textwrap

    out = []
    for module in (textwrap, ap, js):
        src = Path(module.__file__).read_text()
        for _ in range(4):
            start = rng.randrange(0, max(1, len(src) - 3000))
            out.append(src[start : start + rng.randrange(200, 3000)])
    numbered = "\n".join(
        f"{i:>6}\t{line}"
        for i, line in enumerate(Path(textwrap.__file__).read_text().splitlines()[:120], 1)
    )
    out.append(numbered)
    return out


ANSI_SAMPLES = [
    "\x1b[31mred\x1b[0m plain",
    "\x1b[1;31;48;2;255;0;0mtruecolor\x1b[m",
    "\x1b[?25l\x1b[2J\x1b[Hcursor",
    "\x1b]0;window title\x07after",
    "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ text",
    "\x1b]52;c;Zm9v\x9cclip",
    "\x1bPq#0;2;0;0;0#1!10~\x1b\\sixel",
    "\x1b_apc payload\x1b\\x",
    "\x1b^pm\x9cy",
    "\x1bXsos\x1b\\z",
    "\x1b(B\x1b)0charset",
    "\x1b#8 \x1b%G utf8",
    "\x1bM\x1b7\x1b8\x1bc reset",
    "\x9b31mC1 csi\x9b0m",
    "\x9d0;t\x07C1 osc",
    "\x90dcs\x9cafter",
    "trailing esc\x1b",
    "\x1b[31",
    "\x1b]0;unterminated",
    "\x1b[31m你好\x1b[0m",
    "\x1b[你m",
    "\x1bé",
    "\x1b\x1b[0m",
    "\x1b[0m\x1bé",
    "\x1b(你",
    "\x1b\n\x1b\tx",
    "a\x1b[1mb\x1b[22mc\x1b[4:3md",
    "progress 10%\r\x1b[K progress 20%\r\x1b[K done",
    "\x1b[38;5;208mfoo\x1b[39m",
    "\x1b]8;id=1;file:///tmp/a b\x07x\x1b]8;;\x07",
    "\x1b[>0c\x1b[=1h\x1b[<u",
    "\x1b[0 q\x1b[!p",
    "\x9c lone st \x9c",
    "\x1b]\x1b[0m",
    "\x1b]0;a\x1bb\x07c",
    "\x1bP\x1b\x1b\\d",
    "\x1b[\x1b[0m",
    "\x1b\x9b0m",
    "\x1b[1\n2m",
]

SAMPLES = [
    "",
    " ",
    "\n\n\t \r\n ",
    "\u3000\u00a0\u2028",
    "a \t b   c",
    "x \u2192 y \u2713 \u201cquoted\u201d \u2014 em\u2026",
    "caf\u00e9 gr\u00f6\u00dfe",
    "box \u2502\u2500\u250c emoji \U0001f39e",
    "a\n\n\tb   c\r\nd",
    "\n\nbody\n",
    f"a\x00b\x07c\u200bd\ufeffe\u0301f{DIM_ON}dim{DIM_OFF}",
    "\u3053\u3093\u306b\u3061\u306f \u30ab\u30bf\u30ab\u30ca",
    "\uc548\ub155\ud558\uc138\uc694 \ud55c\uad6d\uc5b4",
    "\u2705 pass \u26a0\ufe0f warn \u274c fail \U0001f604",
    "\u2717 \u2718",
    "x\u2075 \uff28\uff25\uff2c\uff2c\uff2f \ufb01le \u2460\u2461 \u216b \u2153 \U0001d407\U0001d41e\U0001d425\U0001d425\U0001d428",
    "\u2122 \u2039q\u203a \u2032 \u2033 \u21d0 \u2191",
    "emoji \U0001f39e \ue000",
    "\u4f60\u597d\uff0c\u4e16\u754c\u3002\u8fd9\u662f\u4e00\u4e2a\u6d4b\u8bd5\u3002" * 3,
    "def f(x):\n\treturn x  # \u4e2d\u6587\u6ce8\u91ca\n",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u03b1\u03b2\u03b3",
    "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd \u0928\u092e\u0938\u094d\u0924\u0947 \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family \U0001f3f3\ufe0f\u200d\U0001f308 flag",
    "\U0001f1fa\U0001f1f8 \U0001f1ef\U0001f1f5 flags \U0001f44d\U0001f3fd \U0001f44b\U0001f3ff tones",
    "\u2764\ufe0f \u263a\ufe0e \u00a9\ufe0f \u0031\ufe0f\u20e3 keycap #\ufe0f\u20e3",
    "\u2554\u2550\u2550\u2557\n\u2551ok\u2551\n\u255a\u2550\u2550\u255d \u253c\u2524\u251c \u2503\u2501",
    "".join(chr(c) for c in range(0x20)) + "x" + "".join(chr(c) for c in range(0x7F, 0xA0)),
    "a\u00adb\u200cc\u200dd\u200ee\u200ff\u202ag\u2060h\u2066i\ufff9j\U000e0001k\U000e0041l",
    "w"
    + "".join(
        chr(c) + "x"
        for c in (
            9,
            11,
            12,
            0x1C,
            0x1D,
            0x1E,
            0x1F,
            0x85,
            0xA0,
            0x1680,
            0x180E,
            0x2000,
            0x2005,
            0x200A,
            0x200B,
            0x2028,
            0x2029,
            0x202F,
            0x205F,
            0x3000,
            0xFEFF,
        )
    ),
    "\u200b\u200b",
    "\ufeff\ufeff \u200b",
    "a\u200b\u200bb",
    "a\u200b \u200bb",
    "a\u200b\n\u200bb",
    " \u2588 a \u2588 ",
    "\U0001d400\U0001d4d0\U0001d56c\U0001d7ce\U0001d7f6 \u2102\u210d \u24b6\u24d0 \u2474 \u2488 \u3251 \u33a1",
    "\uff21\uff42\uff43\uff10\uff11\uff01\uff1f\uff08\uff09 \uff61\uff62 \uffe0\uffe1\uffe5\uffe6 \uffe8",
    "\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06 \u0132\u0133 \u01c4\u01c5\u01c6 \u2163 \u217b \u00bd\u00bc",
    "\ue000\ue001\uf8ff \U000f0000 \U00100000\U0010fffd",
    "\u0378\u0379 \U0001fffe \U000e01f0 \U0003134b \U0010ffff",
    "\ud800 lone \udc00 surrogates \udbff",
    "\u2f00\u2e80\u3041\u30a1\u3105\u3131 \u1100\u1161 \ua000 \uf900",
    "\U00020000\U0002a6d6\U00030000\U00031350",
    "\U00031350" * 12,
    "\u2639\u263a\u2660\u2663 \u2600\u2601 \u260e",
    "\u2190\u2191\u2192\u2193\u2194\u2195\u21d0\u21d2\u21d4 \u2713\u2714\u2717\u2718 \u2022\u2023\u2043\u2219\u25cf\u25a0\u25aa",
    "\u2010\u2011\u2012\u2013\u2014\u2015\u2212 \u2018\u2019\u201a\u201b\u201c\u201d\u201e \u2024\u2025\u2026\u22ef \u2044",
    "\u2047 \u2048 \u2049 \u203c \ufe56 \ufe57 \u2e18",
    "\u203e\ufe49 over\u0305line",
    "\u1fed\u1fee \u00a8 \u02d8",
    f"{DIM_ON}tool output{DIM_OFF} and {DIM_ON}unterminated",
    f"  {DIM_ON}  {DIM_OFF}  ",
    "x" * 20000,
    ("word " * 3000).strip(),
    "\n".join(f"{i:>5}\tline {i}" for i in range(1, 400)),
    "\u00c0\u00c9\u00ee\u00f5\u00fc\u00ff\u00d7\u00f7\u00a1\u00bf\u00ab\u00bb\u00b5\u00df",
    "\u0101\u0107\u010d\u0111\u011b\u0142\u0144\u0151\u0159\u015b\u0161\u0165\u016f\u017a\u017e \u1ea0\u1ec7\u1ef9",
    "\u0915\u093f\u0924\u093e\u092c \u0d15\u0d3e \u0f40\u0f72",
    "\u1e9e\u0218\u021a \u0259\u0283\u028a",
    "\U0001cd00 \U0001ccd6\U0001ccef\U0001ccf0\U0001ccf9 \ua7f1 \U0001e030\U0001e06d \U00016d68",
    "\u0897\u1acf\u1ae0\U00011f00\U0001171e\U00013439 ext",
    "\U0001fae9\U0001fa70\U0001faf8 new emoji \U0001f6dc",
]


def _random_strings(rng: random.Random, count: int) -> list[str]:
    """Seeded random strings: uniform over all of Unicode, and weighted mixes of tricky pools."""
    pools = [
        "abcdefghij XYZ 0123 .,;:!?'\"-_/()[]{}<>=+*&^%$#@~`|\\",
        "".join(
            chr(c)
            for c in (
                9,
                10,
                11,
                12,
                13,
                32,
                32,
                32,
                0xA0,
                0x1680,
                0x2003,
                0x2028,
                0x2029,
                0x3000,
                0xFEFF,
                0x85,
                0x1C,
            )
        ),
        "".join(
            chr(c)
            for c in (0xAD, 0x200B, 0x200C, 0x200D, 0x200E, 0x2060, 0x2066, 0xFFF9, 0x180E, 0x13439)
        ),
        "\x1b[]0;mP\\\x07\x9b\x9c\x9d#(",
        "\u4f60\u597d\u3053\u3093\uc548\ub155\u0416\u03a9\u05d0\u0627\u0e01\u0915",
        "\U0001f600\U0001f44d\U0001f3fd\u200d\ufe0f\u2764\U0001f1fa\U0001f1f8\u2705\u26a0\u2139\U0001f680\u2122",
        "\u2500\u2502\u250c\u2588\u2592\u25cf\u2192\u2026\u201c\u2014\uff21\ufb01\u2460\U0001d41a\u0301\u20e3\u0489",
        DIM_ON + DIM_OFF + BLOCK,
    ]
    out = []
    for i in range(count):
        n = rng.randrange(0, 60)
        if i % 3 == 0:  # uniform over the whole code space, surrogates included
            out.append("".join(chr(rng.randrange(0x110000)) for _ in range(n)))
        elif i % 3 == 1:  # uniform over the BMP plus SMP
            out.append("".join(chr(rng.randrange(0x20000)) for _ in range(n)))
        else:
            weights = [rng.random() for _ in pools]
            out.append("".join(rng.choice(rng.choices(pools, weights)[0]) for _ in range(n)))
    return out


def _long_sparse(rng: random.Random) -> list[str]:
    """Long texts where non-Latin-1 characters are rare (the common case in real transcripts)."""
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dog",
        "x = f(y)",
        "return",
        "0x1F",
        "caf\u00e9",
    ]
    rare = [
        "\u201cq\u201d",
        "\u2192",
        "\u4f60\u597d",
        "\u2705",
        "\U0001f600",
        "\x00",
        "\u200b",
        "\ue000",
        "\u2502",
        "\x1b[1m",
        "\ufb01",
        "\u0301",
        DIM_ON,
        "\U0008d073",
    ]
    out = []
    for density in (0.001, 0.01, 0.05):
        parts = []
        for _ in range(2500):
            parts.append(rng.choice(rare) if rng.random() < density else rng.choice(words))
            parts.append(rng.choice([" ", " ", " ", "\n", "  ", "\t"]))
        out.append("".join(parts))
    return out


def _ansi_fuzz(rng: random.Random, count: int) -> list[str]:
    alphabet = list("\x1b\x1b\x1b[[]];;0123mHJK?>()#% P X^_\\\x07ab\n") + [
        "\x9b",
        "\x9c",
        "\x9d",
        "\x90",
        "\x98",
        "\x9e",
        "\x9f",
        "\u00e9",
        "\u4f60",
        "\U0001f600",
    ]
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 24))) for _ in range(count)
    ]


def _dim_corpus(rng: random.Random) -> list[str]:
    fixed = [
        "the cat sat on a mat",
        "The Cat SAT On A mat THE end",
        "theory of everything",
        "thé the théory",
        "\u00dcber the \u00e9t\u00e9 and",
        f"keep {DIM_ON}the dim span{DIM_OFF} but the rest",
        f"open {DIM_ON}the rest is dim",
        f"{DIM_OFF}the stray off",
        "it's the end-of-the-line",
        "a_b the1 x-the-y",
        "",
        f"{DIM_ON}{DIM_OFF}",
        "\u2588the\u2588an\u2588",
        "whom whose who's",
        "same-ish SO so",
        "THEREFORE there",
    ]
    words = [
        "the",
        "The",
        "THE",
        "an",
        "cat",
        "theory",
        "of",
        "over",
        "\u00e9t\u00e9",
        "so",
        "x1",
        "it's",
        "\u4f60",
        DIM_ON,
        DIM_OFF,
        " ",
        " ",
        "\u2588",
        "-",
        "Et",
        "ther\u00e9",
    ]
    fixed += [
        "".join(rng.choice(words) + rng.choice(["", " ", " "]) for _ in range(rng.randrange(1, 30)))
        for _ in range(300)
    ]
    return fixed


def _wrap_corpus(rng: random.Random) -> list[list]:
    cases = [
        ["", 10, False],
        ["hello world", 5, False],
        ["hello world", 11, False],
        ["a bb ccc dddd", 4, False],
        ["short supercalifragilistic x", 6, False],
        ["abcdefghij", 3, False],
        ["ab abcdefghij c", 4, False],
        ["\u4f60\u597d\u4e16\u754c", 3, True],
        ["\u4f60\u597d\u4e16\u754c", 3, False],
        [f"{DIM_ON}the{DIM_OFF} cat", 3, False],
        ["a\u3000b\u00a0c\u2028d\ufeffe\u200bf", 3, False],
        ["x\u2588y\u2588z w", 3, False],
        ["\u4f60a", 1, True],
    ]
    tokens = [
        "a",
        "bb",
        "ccc",
        "word",
        "longerword",
        "\u4f60\u597d",
        "\u4f60",
        "x\u2588y",
        DIM_ON + "the" + DIM_OFF,
        "superlongtokenwithoutbreaks",
        "\U0001f600",
        "\u00e9t\u00e9",
    ]
    seps = [" ", " ", "  ", "\t", "\n", "\u3000", "\u00a0"]
    for _ in range(500):
        text = "".join(rng.choice(tokens) + rng.choice(seps) for _ in range(rng.randrange(0, 25)))
        cases.append([text, rng.randrange(1, 30), rng.random() < 0.5])
    return cases


def _resolve_corpus(rng: random.Random) -> list[str]:
    cjk = "\u4f60\u597d\u4e16\u754c\u6d4b\u8bd5\u3053\u3093\uc548\ub155"
    out = [
        "plain ascii code x = 1",
        "\u4f60\u597d" * 4,
        "\u4f60" * 7 + " abc",
        "\u4f60" * 8,
        "\u4f60" * 8 + "a" * 24,
        "\u4f60" * 8 + "a" * 25,
        "\ue000" * 10,
        "\U00031350" * 12,
        "\u4f60" * 8 + "\u0301" * 30 + "a" * 20,
        "\u4f60" * 8 + DIM_ON * 40 + "\u2588" * 40 + " " * 40 + "a" * 20,
        "\u0416" * 50 + "\u4f60" * 20,
    ]
    for _ in range(120):
        n_cjk, n_lat = rng.randrange(0, 30), rng.randrange(0, 80)
        chars = [rng.choice(cjk) for _ in range(n_cjk)] + [
            rng.choice("abc xyz\n\u0301\ue000\U0001f600") for _ in range(n_lat)
        ]
        rng.shuffle(chars)
        out.append("".join(chars))
    return out


def build_request() -> dict:
    rng = random.Random(20240518)
    texts = (
        SAMPLES
        + ANSI_SAMPLES
        + _stdlib_snippets(rng)
        + _random_strings(rng, 600)
        + _long_sparse(rng)
    )
    texts += [
        a + b + c
        for a, b, c in zip(
            _random_strings(rng, 150), _ansi_fuzz(rng, 150), _random_strings(rng, 150)
        )
    ]
    return {
        "fonts": list(FONTS),
        "normalize": texts,
        "strip": ANSI_SAMPLES + _ansi_fuzz(rng, 3000),
        "dim": _dim_corpus(rng),
        "wrap": _wrap_corpus(rng),
        "resolve": {
            "target": {"api": "openai-responses", "id": "gpt-5.5"},
            "texts": _resolve_corpus(rng),
        },
        "codespace": {"chunk": CODESPACE_CHUNK, "fonts": list(FONTS), "full": False},
    }


def codespace_chunk(lo: int) -> str:
    """The same DIM_ON-separated chunk oracle.js builds (each code point decided in isolation)."""
    cps = range(lo, min(lo + CODESPACE_CHUNK, 0x110000))
    return DIM_ON + "".join(chr(cp) + DIM_ON for cp in cps) + "\ue000"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _dedupe_outputs(text: str, row: dict) -> dict:
    """One normalize case: the input, its distinct outputs, and per font [output index, ratio, safe]."""
    outputs: list[str] = []
    fonts = {}
    for font, (out, ratio, safe) in row.items():
        if out not in outputs:
            outputs.append(out)
        fonts[font] = [outputs.index(out), ratio, safe]
    return {"text": text, "outputs": outputs, "fonts": fonts}


def write_fixtures(request: dict, response: dict) -> None:
    cases = {
        "normalize": [
            _dedupe_outputs(t, r) for t, r in zip(request["normalize"], response["normalize"])
        ],
        "strip_ansi": [[t, r] for t, r in zip(request["strip"], response["strip"])],
        "dim_stopwords": [[t, r] for t, r in zip(request["dim"], response["dim"])],
        "wrap": [[*c, r] for c, r in zip(request["wrap"], response["wrap"])],
        "resolve": {
            "default_font": response["resolveDefault"],
            "cases": [[t, r] for t, r in zip(request["resolve"]["texts"], response["resolve"])],
        },
    }
    (HERE / "cases.json").write_text(json.dumps(cases, ensure_ascii=True, separators=(",", ":")))
    space = {
        "chunk": CODESPACE_CHUNK,
        "fonts": {f: [[h, r] for h, r, _ in rows] for f, rows in response["codespace"].items()},
    }
    (HERE / "codespace.json").write_text(json.dumps(space, separators=(",", ":")))


def check(request: dict, response: dict) -> bool:
    """Compare our implementation with the reference answers; print identical/total per function."""
    sys.path.insert(0, str(HERE.parents[2]))
    import snapcompact.text as nz
    ok = True

    def report(name: str, same: int, total: int, bad: list) -> None:
        nonlocal ok
        print(f"{name:<28} {same}/{total} identical")
        for item in bad[:5]:
            print("    DIFF", ascii(item)[:400])
        ok &= same == total

    for font in FONTS:
        same, bad = 0, []
        for text, row in zip(request["normalize"], response["normalize"]):
            want, ratio, safe = row[font]
            got = nz.normalize(text, font)
            scan = nz.scan_renderability(text, font)
            if got == want and scan.ratio == ratio and scan.safe == safe:
                same += 1
            else:
                bad.append((text[:80], got[:80], want[:80], scan, ratio))
        report(f"normalize+scan[{font}]", same, len(request["normalize"]), bad)
    pairs = list(zip(request["strip"], response["strip"]))
    bad = [(t, nz.strip_ansi(t), r) for t, r in pairs if nz.strip_ansi(t) != r]
    report("strip_ansi", len(pairs) - len(bad), len(pairs), bad)
    pairs = list(zip(request["dim"], response["dim"]))
    bad = [(t, nz.dim_stopwords(t), r) for t, r in pairs if nz.dim_stopwords(t) != r]
    report("dim_stopwords", len(pairs) - len(bad), len(pairs), bad)
    pairs = list(zip(request["wrap"], response["wrap"]))
    bad = [(c, nz.wrap(*c), r) for c, r in pairs if nz.wrap(*c) != r]
    report("wrap", len(pairs) - len(bad), len(pairs), bad)
    default = response["resolveDefault"]
    bad, texts = [], request["resolve"]["texts"]
    for text, want in zip(texts, response["resolve"]):
        got = expected_resolved_font(nz, text, default)
        if got != want:
            bad.append((text, got, want, nz.cjk_heavy(text)))
    report("resolve (cjk_heavy rule)", len(texts) - len(bad), len(texts), bad)
    for font, rows in response["codespace"].items():
        bad = []
        for i, (digest, ratio, _) in enumerate(rows):
            text = codespace_chunk(i * CODESPACE_CHUNK)
            got = nz.normalize(text, font)
            got_ratio = nz.scan_renderability(text, font).ratio
            if sha256(got) != digest or got_ratio != ratio:
                bad.append((hex(i * CODESPACE_CHUNK), got_ratio, ratio))
        report(f"codespace chunks[{font}]", len(rows) - len(bad), len(rows), bad)
    return ok


def expected_resolved_font(nz, text: str, default_font: str) -> str:
    """resolveShapeForText's rule for an auto shape, from our scan and cjk_heavy."""
    default_safe = nz.scan_renderability(text, default_font).safe
    silver_safe = nz.scan_renderability(text, "silver").safe
    if not default_safe:
        return "silver" if silver_safe else default_font
    return (
        "silver"
        if default_font != "silver" and nz.cjk_heavy(text) and silver_safe
        else default_font
    )


def print_tables() -> None:
    """Print the Unicode property tables normalize.py embeds, as the reference engine sees them."""
    probe = """
const cls = (re) => { const out = []; for (let cp = 0; cp <= 0x10ffff; cp++) if (re.test(String.fromCodePoint(cp))) out.push(cp); return out; };
return { ep: cls(/^\\p{Extended_Pictographic}$/u), cf: cls(/^\\p{Cf}$/u), unr: cls(/^[\\p{Cc}\\p{Mn}\\p{Me}\\p{Cs}]$/u), mark: cls(/^\\p{M}$/u) };"""
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "probe.js"
        f.write_text(probe)
        expr = f'(new Function("return (() => {{" + (await Bun.file({json.dumps(str(f))}).text()) + "}})()"))()'
        data = json.loads(
            subprocess.run(
                [UPSTREAM, "eval", expr], check=True, capture_output=True, text=True
            ).stdout
        )
    import unicodedata as ud

    def ranges(cps):
        out = []
        for cp in sorted(cps):
            if out and out[-1][1] == cp - 1:
                out[-1][1] = cp
            else:
                out.append([cp, cp])
        return ", ".join(f"(0x{a:04X}, 0x{b:04X})" for a, b in out)

    space = range(0x110000)
    py_unr = {c for c in space if ud.category(chr(c)) in ("Cc", "Mn", "Me", "Cs")}
    py_mark = {c for c in space if ud.category(chr(c))[0] == "M"}
    print("FORMAT_RANGES:", ranges(data["cf"]))
    print("PICTOGRAPHIC_RANGES:", ranges(data["ep"]))
    print("_UNRENDERABLE_NEWER:", ranges(set(data["unr"]) - py_unr))
    print("_UNRENDERABLE_FORMER:", [hex(c) for c in sorted(py_unr - set(data["unr"]))])
    print(
        "_MARK_NEWER:",
        ranges(set(data["mark"]) - py_mark),
        "missing:",
        sorted(py_mark - set(data["mark"])),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with our code, do not write")
    parser.add_argument(
        "--tables", action="store_true", help="print Unicode tables for normalize.py"
    )
    parser.add_argument(
        "--cache", type=Path, help="reuse (or save) the raw reference response here"
    )
    args = parser.parse_args()
    if args.tables:
        print_tables()
        return
    request = build_request()
    if args.cache and args.cache.exists():
        response = json.loads(args.cache.read_text())
    else:
        response = run_reference(request)
        if args.cache:
            args.cache.write_text(json.dumps(response))
    if args.check:
        sys.exit(0 if check(request, response) else 1)
    write_fixtures(request, response)
    check(request, response)


if __name__ == "__main__":
    main()
