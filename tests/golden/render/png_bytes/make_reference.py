"""Record the reference's PNG bytes for one full frame of every shape (needs upstream-frames; not
run in CI).

    python tests/golden/render/png_bytes/make_reference.py [--upstream PATH]

Why byte counts and not the PNGs: the test (``tests/render/test_png_bytes.py``) needs the size of
the reference's file and the pixels it decodes to; a 1568 px frame of every shape is ~8 MB of
PNG, its byte count and pixel digest are a line of JSON.

The input is ``make_text()`` (deterministic, 100,000 characters: prose, source code, tool output,
one-sentence lines and non-Latin text built from the golden render cases' own words, so every
shape's first frame is full and the sentence shapes use their hues); ``reference.json`` holds
its SHA-256 (the test rebuilds the text and checks it) and, for every shape at 1568 px,
the first frame the reference draws (``upstream-frames render --shape S --size 1568``): its
byte count, its IHDR bit depth and colour type, and the SHA-256 of its size and decoded 8-bit
RGB pixels (``"WxH:"`` then the rows, as ``evals.store.pixel_keys`` hashes frames).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))

from make_golden import PROSE, _code, _tool_output  # noqa: E402  (found through the path set above)

from snapcompact.core import SHAPE_NAMES  # noqa: E402

SIZE = 1568
CHARS = 100_000  # fills the first frame of the densest shape (6x6u: 68,121 cells)
SOURCE = ("upstream-frames render --shape S --size 1568 < make_text(): "
          "@oh-my-pi/snapcompact 18.2.11 with @oh-my-pi/pi-natives 18.2.3 "
          "(../shared/tools/upstream-frames); first frame only")
_NON_LATIN = ("中文文本测试：你好，世界。日本語のテキスト、カタカナ。한국어 텍스트입니다. "
              "Ελληνικά κείμενο, Русский текст. café naïve Ångström 🚀 ✅ ")


def make_text() -> str:
    """The fixed input: blocks of prose, code, tool output, sentences and non-Latin text."""
    rnd = random.Random(45)
    words = PROSE.replace("\n", " ").split(" ")
    sentences = [s.strip() + "." for s in PROSE.replace("\n", " ").split(".") if s.strip()]
    blocks = [
        lambda: " ".join(rnd.choice(words) for _ in range(300)) + "\n\n",
        lambda: _code() + "\n",
        lambda: _tool_output() + "\n",
        lambda: "\n".join(rnd.choice(sentences) for _ in range(12)) + "\n",
        lambda: "".join(rnd.choice(_NON_LATIN) for _ in range(400)) + "\n",
    ]
    out: list[str] = []
    size = 0
    while size < CHARS:
        block = blocks[len(out) % len(blocks)]()
        out.append(block)
        size += len(block)
    return "".join(out)[:CHARS]


def pixel_sha256(png: bytes) -> str:
    """SHA-256 of ``"WxH:"`` and the 8-bit RGB pixels the PNG decodes to."""
    with Image.open(io.BytesIO(png)) as image:
        rgb = image.convert("RGB")
    digest = hashlib.sha256(f"{rgb.size[0]}x{rgb.size[1]}:".encode("ascii"))
    digest.update(rgb.tobytes())
    return digest.hexdigest()


def _render_first(upstream: str, variant: str, data: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as out:
        cmd = [upstream, "render", "--shape", variant, "--size", str(SIZE), "--out", out]
        for _attempt in range(4):  # the oracle occasionally dies while loading its native addon
            proc = subprocess.run(cmd, input=data, capture_output=True)
            if proc.returncode == 0 and (Path(out) / "frame000.png").exists():
                return (Path(out) / "frame000.png").read_bytes()
    raise RuntimeError(f"upstream render failed for {variant}: {proc.stderr[-500:]!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", default=str(ROOT.parent / "shared/tools/upstream-frames"))
    args = parser.parse_args()
    text = make_text()
    data = text.encode("utf-8")
    frames = {}
    for variant in SHAPE_NAMES:
        png = _render_first(args.upstream, variant, data)
        depth, colour = struct.unpack(">BB", png[24:26])
        frames[variant] = {"bytes": len(png), "bit_depth": depth, "colour_type": colour,
                           "rgb_sha256": pixel_sha256(png)}
    reference = {"source": SOURCE, "size": SIZE, "text": "make_reference.make_text()",
                 "text_sha256": hashlib.sha256(data).hexdigest(), "frames": frames}
    (HERE / "reference.json").write_text(json.dumps(reference, indent=1) + "\n")


if __name__ == "__main__":
    main()
