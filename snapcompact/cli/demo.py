"""Offline demo: render a sample of real text into frames with every named shape.

    python -m snapcompact.cli.demo [--out DIR] [--chars N]

The sample is this package's own source (prose docstrings and code), so the demo needs nothing
but the library.  It prints, per shape, the frame count, geometry and PNG bytes, and writes the
frames under ``DIR/<shape>/``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from snapcompact.core import SHAPE_NAMES, geometry, get_shape
from snapcompact.render import render_many


def sample_text(chars: int) -> str:
    """The first ``chars`` characters of this package's own source, a realistic code sample."""
    here = Path(__file__).resolve().parents[1]
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(here.rglob("*.py")))
    return text[:chars]


def main(argv: list[str] | None = None) -> int:
    """Render the sample text with every named shape into ``--out``; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="out/demo")
    parser.add_argument("--chars", type=int, default=60_000)
    args = parser.parse_args(argv)
    text = sample_text(args.chars)
    out = Path(args.out)
    print(f"{len(text):,} chars of sample text -> {out}/")
    print(f"{'shape':20} {'frames':>6} {'cols x rows':>12} {'KB':>7} {'ms':>7}")
    for name in SHAPE_NAMES:
        shape = get_shape(name)
        t0 = time.perf_counter()
        frames = render_many(text, shape)
        ms = 1000 * (time.perf_counter() - t0)
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for i, frame in enumerate(frames):
            (folder / f"frame{i:03d}.png").write_bytes(frame.png)
        geo = geometry(shape)
        kb = sum(len(f.png) for f in frames) / 1024
        print(f"{name:20} {len(frames):6d} {f'{geo.cols} x {geo.rows}':>12} {kb:7.0f} {ms:7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
