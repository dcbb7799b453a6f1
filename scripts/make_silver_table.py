"""Write fonts/silver-glyphs.npz: Silver's glyphs pre-rasterized at every named shape's pixel size.

Why generated: the table is derived data (fonts/Silver.ttf through snapcompact.render.silver's
fontdue-exact rasterizer), shipped so that no process pays for rasterizing fallback glyphs
(see snapcompact/render/silver_table.py).  Regenerate it whenever the font, the rasterizer or the set
of named shapes changes; tests/render/test_silver_table.py fails until it is.

    .venv/bin/python scripts/make_silver_table.py [--out fonts/silver-glyphs.npz]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from snapcompact.render.silver_table import TABLE_FILE
from snapcompact.render.silver_table_build import build, shape_pixel_sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "fonts" / TABLE_FILE)
    args = parser.parse_args()
    sizes = shape_pixel_sizes()
    arrays = build(sizes)
    np.savez_compressed(args.out, **arrays)
    print(
        f"{args.out}: {len(arrays['cps'])} code points at {', '.join(f'{s:g}' for s in sizes)} px, "
        f"{args.out.stat().st_size:,} bytes"
    )


if __name__ == "__main__":
    main()
