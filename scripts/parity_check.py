"""Live pixel parity against the reference renderer over a seeded random corpus.

    python scripts/parity_check.py [--cases 12] [--seed 0] [--variants A,B] [--upstream PATH]

For every (case, variant, frame size) it renders with the reference (upstream-frames render) and
with this library, then compares frame counts, decoded RGB pixels and normalized text.  Prints
one line per variant and the totals (identical frames / frames).  Needs the reference tool, so it
is a developer check, not a test.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from snapcompact.core import SHAPE_NAMES, get_shape  # noqa: E402
from snapcompact.render import (
    decode_rgb,  # noqa: E402
    render_many,  # noqa: E402
)
from snapcompact.text import normalize  # noqa: E402

DEFAULT_UPSTREAM = ROOT.parent / "shared" / "tools" / "upstream-frames"
WORDS = ("the of and to in is that it for was on are as with his they at be this from have or "
         "by one had not but what all were when we there can an your which their said if do will "
         "each about how up out them then she many some so these would other into has more her "
         "two like him see time could no make than first been its who now people my made over").split()


def _prose(rnd: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        s = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 18)))
        out.append(s.capitalize() + rnd.choice([". ", "? ", "! ", ".\n", ".\n\n", "; ", ", "]))
    return "".join(out)


def _code(rnd: random.Random, n: int) -> str:
    lines = []
    for i in range(n):
        ind = "\t" * rnd.randint(0, 3) + " " * rnd.choice([0, 2, 4])
        lines.append(f"{i + 1:5d}\t{ind}value_{rnd.randint(0, 999)} = f(x[{i}], 0x{rnd.randint(0, 65535):04x})  # {rnd.choice(WORDS)}")
    return "\n".join(lines)


def _unicode(rnd: random.Random, n: int) -> str:
    pools = [(0x20, 0x7E), (0xA0, 0xFF), (0x370, 0x3FF), (0x400, 0x4FF), (0x2000, 0x206F),
             (0x2190, 0x21FF), (0x2500, 0x257F), (0x3040, 0x30FF), (0x4E00, 0x9FFF),
             (0xAC00, 0xD7A3), (0xFF00, 0xFFEF), (0x1F300, 0x1FAFF), (0x1D400, 0x1D7FF),
             (0x0, 0x1F), (0xE000, 0xE0FF), (0x300, 0x36F)]
    chars = []
    for _ in range(n):
        lo, hi = rnd.choice(pools)
        chars.append(chr(rnd.randint(lo, hi)))
        if rnd.random() < 0.15:
            chars.append(rnd.choice([" ", "\n", "\t", "\x1b[31m", "\x1b[0m", "\u200d", "\ufe0f"]))
    return "".join(chars)


def corpus(seed: int, cases: int) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    out = []
    kinds = ["prose", "code", "unicode", "mixed"]
    for i in range(cases):
        kind = kinds[i % len(kinds)]
        if kind == "prose":
            text = _prose(rnd, rnd.randint(5, 400))
        elif kind == "code":
            text = _code(rnd, rnd.randint(5, 200))
        elif kind == "unicode":
            text = _unicode(rnd, rnd.randint(10, 3000))
        else:
            text = _prose(rnd, 40) + _unicode(rnd, 300) + _code(rnd, 30)
        out.append((f"{kind}-{i}", text))
    return out


def run_reference(upstream: Path, text: str, variant: str, size: int, out: Path) -> tuple[list, str]:
    for _ in range(4):  # the oracle occasionally dies while loading its native addon
        proc = subprocess.run([str(upstream), "render", "--shape", variant, "--size", str(size),
                               "--out", str(out)], input=text.encode("utf-8", "replace"),
                              capture_output=True)
        if proc.returncode == 0 and (out / "meta.json").exists():
            break
    else:
        raise RuntimeError(f"reference render failed: {proc.stderr[-300:]!r}")
    pngs = sorted(out.glob("frame*.png"), key=lambda p: int(p.stem[5:]))
    frames = [np.asarray(Image.open(p).convert("RGB")) for p in pngs]
    for _ in range(4):
        proc = subprocess.run([str(upstream), "normalize", "--shape", variant],
                              input=text.encode("utf-8", "replace"), capture_output=True)
        if proc.returncode == 0 and proc.stdout.strip():
            return frames, json.loads(proc.stdout)
    raise RuntimeError("reference normalize failed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", default=",".join(SHAPE_NAMES))
    parser.add_argument("--sizes", default="96,320,1568")
    parser.add_argument("--upstream", type=Path, default=DEFAULT_UPSTREAM)
    args = parser.parse_args()
    texts = corpus(args.seed, args.cases)
    sizes = [int(s) for s in args.sizes.split(",")]
    total_frames = same_frames = total_norm = same_norm = 0
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants.split(","):
            v_frames = v_same = 0
            failures = []
            for name, text in texts:
                text = text.encode("utf-8", "replace").decode("utf-8", "replace")
                for size in sizes:
                    out = Path(tmp) / f"{variant}-{name}-{size}"
                    ref_frames, ref_norm = run_reference(args.upstream, text, variant, size, out)
                    ours = [decode_rgb(f.png) for f in render_many(text, variant, size)]
                    total_norm += 1
                    same_norm += normalize(text, get_shape(variant).font) == ref_norm
                    n = max(len(ref_frames), len(ours))
                    same = sum(a.shape == b.shape and np.array_equal(a, b)
                               for a, b in zip(ref_frames, ours))
                    v_frames += n
                    v_same += same
                    if same != n:
                        failures.append(f"{name}@{size}")
            total_frames += v_frames
            same_frames += v_same
            print(f"{variant:20} {v_same:5d}/{v_frames:<5d} identical frames"
                  + (f"   differ: {', '.join(failures[:6])}" if failures else ""), flush=True)
    print(f"TOTAL frames identical: {same_frames}/{total_frames}; "
          f"normalized text identical: {same_norm}/{total_norm}")
    return 0 if same_frames == total_frames and same_norm == total_norm else 1


if __name__ == "__main__":
    raise SystemExit(main())
