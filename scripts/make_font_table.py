"""Write fonts/bitmap-glyphs.npz: the four bitmap fonts' covered glyphs, parsed once.

Why generated: the table is derived data (each font file with fonts/coverage.json and
fonts/glyph-patches.txt, through snapcompact.render.fonts' parser), shipped so that no process
pays for parsing BDF text (see snapcompact/render/font_table.py).  Regenerate it whenever a
font file, the coverage, the patches or the parser changes; tests/render/test_font_table.py fails
until it is.

    .venv/bin/python scripts/make_font_table.py [--out fonts/bitmap-glyphs.npz]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from snapcompact.render.font_table import TABLE_FILE, to_members  # noqa: E402
from snapcompact.render.fonts import BITMAP_FONTS, FONT_FILES, parse_font  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "fonts" / TABLE_FILE)
    args = parser.parse_args()
    members: dict[str, np.ndarray] = {}
    counts = []
    for name in BITMAP_FONTS:
        font = parse_font(name)
        members.update(to_members(name, FONT_FILES[name], font))
        counts.append(f"{name}: {font.glyphs.cps.size}")
    np.savez_compressed(args.out, **members)
    print(f"{args.out}: {', '.join(counts)} glyphs, {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
