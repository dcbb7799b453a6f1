"""Regenerate the golden frames from the reference renderer (needs upstream-frames; not run in CI).

    python tests/golden/render/make_golden.py [--upstream PATH]

Writes, for every case in ``cases/`` and every shape variant, the reference's frames at the case's
frame size into ``frames/<case>/<variant>/frameNNN.png`` plus ``frames/<case>/<variant>/meta.json``.
The inputs are written once by ``write_cases()`` (deterministic) and committed with the frames.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
FRAMES = HERE / "frames"
sys.path.insert(0, str(HERE.parents[2]))

from snapcompact.core import SHAPE_NAMES  # noqa: E402

#: case name -> frame size (small frames keep the fixtures small; "prose-full" checks a full frame)
SIZES = {
    "prose": 320,
    "prose-full": None,
    "code": 320,
    "tool-output": 320,
    "cjk": 160,
    "emoji": 160,
    "ansi": 160,
    "box-drawing": 160,
    "controls": 160,
    "long-line": 160,
    "mixed-scripts": 160,
    "empty": 160,
    "dim-spans": 320,
    "latin1-blocks": 320,
    "fallback-spill": 96,
}

PROSE = (
    "Snapcompact archives the discarded history as frames. Does it read well? It should! "
    "The quick brown fox jumps over the lazy dog; 0O 1lI |! 5S 2Z 8B. Prices: $3.50, 42%, "
    "e.g. the 3rd item... \"Quoted\" and 'single' text (with parens) [brackets] {braces} <tags>.\n"
    "A second paragraph starts here.  Extra   spaces collapse, tabs\tturn into one space.\n\n"
    "Numbers 0123456789 and symbols ~`@#^&*_+=\\/ close the sample. End."
)


def _code() -> str:
    return (
        "def paginate(text: str, capacity: int) -> list[str]:\n"
        "\t\"\"\"Split text into pages.\"\"\"\n"
        "\tpages = []\n"
        "\tfor start in range(0, len(text), capacity):\n"
        "\t\tpages.append(text[start:start + capacity])  # slice\n"
        "\treturn pages\n\n"
        "class Frame:\n    width = 1568\n    def __repr__(self):\n        return f'Frame({self.width})'\n"
    )


def _tool_output() -> str:
    lines = [f"{i:6d}\t{'    ' * (i % 3)}value_{i} = compute({i}, key='k{i}')" for i in range(1, 40)]
    grep = [f"src/module_{i}.py:{i * 7}:    def handler_{i}(self):" for i in range(1, 12)]
    find = [f"./pkg/sub{i % 4}/file_{i}.txt" for i in range(1, 15)]
    return "\n".join(["$ cat -n app.py", *lines, "$ grep -n handler", *grep, "$ find .", *find])


def write_cases() -> None:
    CASES.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(7)
    words = PROSE.replace("\n", " ").split(" ")
    cases = {
        "prose": PROSE,
        "prose-full": " ".join(rnd.choice(words) for _ in range(2300)),
        "code": _code(),
        "tool-output": _tool_output(),
        "cjk": "中文文本测试：你好，世界。日本語のテキスト、カタカナ。한국어 텍스트입니다. 混合 mixed 文字 ＡＢＣ１２３",
        "emoji": "Status ✅ pass ⚠️ warn ❌ fail 😄 👩‍👩‍👧‍👦 family 🇺🇸 flag 👍🏽 tone ✔ ✗ 🚀 launch 🔥 hot",
        "ansi": "\x1b[31mred\x1b[0m plain \x1b[1;32mbold green\x1b[0m \x1b]0;title\x07 after osc \x1b[2K\x1b[1Gcleared",
        "box-drawing": "┌──────┐\n│ box  │\n├──────┤\n│ ═══ ║ │\n└──────┘ ╭─╮ ╰─╯ ▀▄█▌",
        "controls": "nul\x00bel\x07bs\x08 vt\x0b ff\x0c esc-less zwsp\u200bbom\ufeff nbsp\u00a0shy\u00adend cafe\u0301 \ud800 lone",
        "long-line": "x" * 700 + " " + "abcdefghij" * 40,
        "mixed-scripts": "Ελληνικά κείμενο, Русский текст, עברית, العربية, हिन्दी, ไทย, ﬁle x⁵ ① Ⅻ ⅓ ™ 𝐇𝐞𝐥𝐥𝐨",
        "empty": " \n\t \n ",
        "dim-spans": "¶user:run the tests\n\n¶call:bash(command=\"make test\")\n<out>\n\x0e3 passed, 0 failed in 0.42s. All good.\x0f\n</out>\n\n¶ai:The tests pass. Next we deploy it to the staging server.",
    }
    # Dense Latin-1 with newline blocks and dim spans: accented capitals under a newline cell
    # (Silver draws their ascenders over the black cell above).
    latin = [chr(c) for c in range(0xC0, 0x100)] + list("abcdefgh  ")
    cases["latin1-blocks"] = "".join(
        rnd.choice(latin) + ("\n" if rnd.random() < 0.12 else "") + ("\x0e" if rnd.random() < 0.03 else "")
        + ("\x0f" if rnd.random() < 0.03 else "")
        for _ in range(900)
    )
    # Latin-1 mixed with Greek/Cyrillic/CJK: in 8x8 shapes the Silver fallback glyphs reach into
    # the next row, under a bitmap glyph drawn later (its ink wins there).
    sys.path.insert(0, str(HERE.parents[2] / "scripts"))
    from parity_check import corpus

    cases["fallback-spill"] = dict(corpus(1, 12))["unicode-2"][:900]
    for name, text in cases.items():
        (CASES / f"{name}.txt").write_text(text, encoding="utf-8", errors="surrogatepass")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", default=str(HERE.parents[3] / "shared/tools/upstream-frames"))
    parser.add_argument("--only", nargs="*", help="regenerate only these cases")
    args = parser.parse_args()
    write_cases()
    for case, size in SIZES.items():
        if args.only and case not in args.only:
            continue
        if (FRAMES / case).exists():
            shutil.rmtree(FRAMES / case)
        data = (CASES / f"{case}.txt").read_bytes()
        for variant in SHAPE_NAMES:
            out = FRAMES / case / variant
            cmd = [args.upstream, "render", "--shape", variant, "--out", str(out)]
            if size:
                cmd += ["--size", str(size)]
            for _attempt in range(4):  # the oracle occasionally dies while loading its native addon
                proc = subprocess.run(cmd, input=data, capture_output=True)
                if proc.returncode == 0 and (out / "meta.json").exists():
                    break
            else:
                raise RuntimeError(f"upstream render failed for {case}/{variant}: {proc.stderr[-500:]!r}")
            meta = json.loads((out / "meta.json").read_text())
            meta.pop("seconds", None)
            (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
            for _attempt in range(4):
                proc = subprocess.run([args.upstream, "normalize", "--shape", variant], input=data,
                                      capture_output=True)
                if proc.returncode == 0 and proc.stdout.strip():
                    break
            else:
                raise RuntimeError(f"upstream normalize failed for {case}/{variant}")
            norm = proc.stdout
            (out / "normalized.json").write_bytes(norm)
        print(case, "done", flush=True)


if __name__ == "__main__":
    main()
