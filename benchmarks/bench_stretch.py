"""Time the 6x6u stretch (Lanczos3 resize) of a full frame.

Why: the whole 6x6u render must beat the reference's 0.086 M chars/s, i.e. a full 1568 px frame
(68,121 chars) in well under 0.8 s; the resize is the expensive step.  The canvas is a page of
real text (stdlib source) drawn with the vendored unscii-8 glyphs, because the share of pixels
that need the exact fix-up depends on the content.

    .venv/bin/python benchmarks/bench_stretch.py [--size 1568] [--repeat 5] [--cpu]
"""

from __future__ import annotations

import argparse
import textwrap
import time
from pathlib import Path

import numpy as np

from snapcompact.render import stretch

REPO = Path(__file__).resolve().parents[1]

#: Ink colours of the two 6x6u variants (white paper first): black for bw; six sentence hues
#: for sent.
PALETTES = {
    "bw": [(255, 255, 255), (0, 0, 0)],
    "sent": [
        (255, 255, 255),
        (109, 2, 2),
        (109, 53, 2),
        (24, 109, 2),
        (2, 109, 109),
        (2, 32, 109),
        (75, 2, 109),
    ],
}


def _unscii_glyphs() -> dict[int, np.ndarray]:
    """unscii-8 glyphs as 8x8 boolean arrays, from the vendored font."""
    glyphs = {}
    for line in (REPO / "fonts" / "unscii-8.hex").read_text().splitlines():
        code, _, bits = line.partition(":")
        if len(bits) == 16:
            rows = np.array([int(bits[i : i + 2], 16) for i in range(0, 16, 2)], np.uint8)
            glyphs[int(code, 16)] = np.unpackbits(rows).reshape(8, 8).astype(bool)
    return glyphs


def text_canvas(cols: int, rows: int, ink: str) -> np.ndarray:
    """A cols*8 x rows*8 natural-cell page of real text (Python stdlib source, whitespace
    collapsed) in unscii-8; ``sent`` changes hue after each ``. `` as the reference does."""
    glyphs = _unscii_glyphs()
    text = " ".join(" ".join(Path(m.__file__).read_text() for m in (argparse, textwrap)).split())
    text = (text * (cols * rows // len(text) + 1))[: cols * rows]
    palette = np.array(PALETTES[ink], np.uint8)
    index = np.zeros((rows * 8, cols * 8), np.uint8)
    hue = 0
    for cell, ch in enumerate(text):
        glyph = glyphs.get(ord(ch))
        r, c = divmod(cell, cols)
        if glyph is not None:
            colour = 1 if ink == "bw" else 1 + hue % 6
            index[r * 8 : r * 8 + 8, c * 8 : c * 8 + 8][glyph] = colour
        if ch == "." and text[cell + 1 : cell + 2] == " ":
            hue += 1
    return palette[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1568, help="frame side in px (default 1568)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpu", action="store_true", help="report CPU time instead of wall time")
    args = parser.parse_args()
    cols = rows = args.size // 6
    t0 = time.perf_counter()
    wh = stretch.axis_weights(cols * 8, cols * 6)
    weights_ms = (time.perf_counter() - t0) * 1e3
    bound = stretch.error_bound(wh, wh)
    print(
        f"frame {args.size}px: canvas {cols * 8}x{rows * 8} -> {cols * 6}x{rows * 6}, "
        f"{cols * rows} chars; weights {weights_ms:.1f} ms (once per size); "
        f"fix-up bound {bound:.2e}"
    )
    for ink in ("bw", "sent"):
        canvas = text_canvas(cols, rows, ink)
        clock = time.process_time if args.cpu else time.perf_counter
        times = []
        for _ in range(args.repeat):
            t = clock()
            stretch.stretch_frame(canvas, args.size, (8, 8), (6, 6))
            times.append(clock() - t)
        best = min(times)
        print(
            f"{ink:4s}: {best * 1e3:7.1f} ms per full-frame resize (best of {args.repeat}, "
            f"median {sorted(times)[len(times) // 2] * 1e3:.1f} ms) = "
            f"{cols * rows / best / 1e6:.2f} M chars/s for the resize alone"
        )


if __name__ == "__main__":
    main()
