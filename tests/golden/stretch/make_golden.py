"""Regenerate the stretch (6x6u) golden data from the reference renderer (needs upstream-frames).

    python tests/golden/stretch/make_golden.py [--upstream PATH]

For each case (text x ink x frame size) the reference renders the text twice: as ``8x8u-<ink>``
at frame size ``cols * 8`` (cols = size // 6), which is exactly the natural-cell canvas the
6x6u path rasterizes before resampling (same grid, same pages), and as ``6x6u-<ink>`` at ``size``.
We keep, per frame:

* ``natural/<case>/frameNNN.png``: the 8x8u frame cropped to the used width ``cols * 8``;
* the expected 6x6u frame, as ``expected/<case>/frameNNN.png`` when small, else only the SHA-256
  of its RGB pixels in ``manifest.json`` (full frames are ~1 MB each as PNG).

Texts live in ``texts/`` (written once, deterministic) so a regeneration uses the same input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
TEXTS = HERE / "texts"
UPSTREAM = str(Path(__file__).resolve().parents[4] / "shared" / "tools" / "upstream-frames")
#: Expected frames up to this many pixels are stored as PNG; bigger ones as a pixel hash.
MAX_STORED_PIXELS = 200_000
#: Frames kept per case (the first ones).
MAX_FRAMES = 2

#: (text, ink, frame size): tiny, small, odd and full frame sizes over prose, code and
#: non-Latin text with dim spans (fallback glyphs come from the reference's 8x8u render).
CASES = [
    ("prose", "bw", 64),
    ("prose", "sent", 64),
    ("prose", "bw", 320),
    ("prose", "sent", 320),
    ("wide", "bw", 320),
    ("wide", "sent", 777),
    ("code", "bw", 999),
    ("code", "sent", 1001),
    ("prose", "sent", 1568),
    ("code", "bw", 1568),
    ("code", "sent", 1932),
]


def write_texts() -> None:
    """Deterministic inputs: English prose, Python source, and mixed scripts with dim spans."""
    TEXTS.mkdir(exist_ok=True)
    prose = (
        "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs! "
        "How vexingly quick daft zebras jump? Sphinx of black quartz, judge my vow. "
    )
    words = prose.split()
    rotations = [(i * 7) % len(words) for i in range(60)]
    sentences = [" ".join(words[r:] + words[:r]) for r in rotations]
    texts = {
        "prose": "\n\n".join(sentences),
        "code": "\n".join(
            f'def f{i}(x, y={i}):\n    """Return x scaled by {i}."""\n'
            f"    return [v * y for v in range(x) if v % {i % 7 + 2}]  # {'#' * (i % 5)}\n"
            for i in range(700)
        ),
        "wide": (
            "¶user: Héllo wörld — naïve café. 日本語のテキスト、中文字符。"
            "한국어 ✓ ★ →\n"
            + '\x0e¶call: read(path="/etc/hosts")\n<out>\n127.0.0.1 localhost\n</out>\x0f\n'
            "¶ai: Done. Ελληνικά Кириллица\n"
        )
        * 12,
    }
    for name, text in texts.items():
        path = TEXTS / f"{name}.txt"
        if not path.exists():
            path.write_text(text, encoding="utf-8")


def render(upstream: str, shape: str, size: int, text: Path, out: Path) -> list[Path]:
    with text.open("rb") as stdin:
        subprocess.run(
            [upstream, "render", "--shape", shape, "--size", str(size), "--out", str(out)],
            stdin=stdin,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return sorted(out.glob("frame*.png"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", default=UPSTREAM)
    args = parser.parse_args()
    write_texts()
    for sub in ("natural", "expected"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    manifest = []
    with tempfile.TemporaryDirectory() as tmp:
        for text_name, ink, size in CASES:
            case = f"{text_name}-{ink}-{size}"
            cols = size // 6
            text = TEXTS / f"{text_name}.txt"
            natural = render(args.upstream, f"8x8u-{ink}", cols * 8, text, Path(tmp) / case / "nat")
            expected = render(args.upstream, f"6x6u-{ink}", size, text, Path(tmp) / case / "exp")
            if len(natural) != len(expected):
                raise SystemExit(f"{case}: {len(natural)} natural vs {len(expected)} 6x6u frames")
            for index, (nat_png, exp_png) in enumerate(zip(natural, expected)):
                if index >= MAX_FRAMES:
                    break
                with Image.open(nat_png) as im:
                    canvas = im.crop((0, 0, cols * 8, im.height))
                    canvas.load()
                with Image.open(exp_png) as im:
                    frame = np.asarray(im.convert("RGB"))
                entry = {
                    "case": case,
                    "text": text_name,
                    "ink": ink,
                    "size": size,
                    "cols": cols,
                    "frame": index,
                    "width": frame.shape[1],
                    "height": frame.shape[0],
                    "natural": f"natural/{case}/{nat_png.name}",
                    "sha256": hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest(),
                    "expected": None,
                }
                (HERE / "natural" / case).mkdir(parents=True, exist_ok=True)
                canvas.save(HERE / entry["natural"], optimize=True)
                if frame.shape[0] * frame.shape[1] <= MAX_STORED_PIXELS:
                    entry["expected"] = f"expected/{case}/{exp_png.name}"
                    (HERE / "expected" / case).mkdir(parents=True, exist_ok=True)
                    Image.fromarray(frame).save(HERE / entry["expected"], optimize=True)
                manifest.append(entry)
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(manifest)} frames")


if __name__ == "__main__":
    main()
