"""Regenerate the Silver golden frames from the reference renderer (needs upstream-frames).

Two kinds of frame, each packing many glyphs so the fixtures stay small:

* ``silver_px{P}.png``: every Silver code point the reference supports, drawn by the native
  renderer with ``font: "silver"`` on a P x P cell (so the glyphs are rasterized at P px), black
  ink, 64 columns.  Black on white makes each pixel 255 - coverage, so the RGB frame is stored
  as an 8-bit gray PNG without loss (the script checks R == G == B).
* ``fallback_{name}.png``: the reference's indexed PNG for a bitmap-font shape, fed every Silver
  code point that the bitmap font lacks (so every glyph goes through the Silver fallback).

* ``silver_band.png``: a slice of the Silver glyphs in hue ink with ``lineRepeat: 2``, so the
  second copy of each row blends over the pale band (kept as RGB).

``manifest.json`` records, per frame, the native options and the key of its exact text
(texts are stored once under ``texts``).

Run from the repository root:  .venv/bin/python tests/golden/silver/make_golden.py
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from snapcompact.core import is_wide
from snapcompact.text import supported

HERE = Path(__file__).resolve().parent
TOOL = os.environ.get("UPSTREAM_FRAMES", str(Path(__file__).resolve().parents[4] / "shared" / "tools" / "upstream-frames"))
SILVER_PX = (5, 6, 8, 11, 12, 13, 16)
SILVER_COLS = 64
#: (name, font, cell_w, cell_h, line_repeat, variant, dim) — the distinct fallback situations of
#: the shape variants (the stretched 6x6u draws at the natural 8x8 cell first, so 8x8 covers it),
#: plus hue ink and dim ink, which skip the gray fringe.
FALLBACK_CASES = (
    ("8x8u-bw", "8x8", 8, 8, 1, "bw", False),
    ("8x8r-bw", "8x8", 8, 8, 2, "bw", False),
    ("5x8-bw", "5x8", 5, 8, 1, "bw", False),
    ("6x12-bw", "6x12", 6, 12, 1, "bw", False),
    ("6x12-dim", "6x12", 6, 12, 1, "bw", True),
    ("8x13-bw", "8x13", 8, 13, 1, "bw", False),
    ("8on16-bw", "8x13", 8, 16, 1, "bw", False),
    ("8on16-sent", "8x13", 8, 16, 1, "sent", False),
    ("8on22-bw", "8x13", 8, 22, 1, "bw", False),
    ("11on16-bw", "8x13", 11, 16, 1, "bw", False),
)
#: Control code points the renderer interprets itself, never drawn as Silver glyphs.
CONTROL = {0x09, 0x0A, 0x0D, 0x0E, 0x0F, 0x2588}

JS = """(async () => {
  const fs = await import("node:fs");
  const jobs = JSON.parse(fs.readFileSync(%s, "utf8"));
  for (const job of jobs) {
    const b64 = await nat.renderSnapcompactPng(job.text, job.options);
    fs.writeFileSync(job.out, Buffer.from(b64, "base64"));
  }
  return jobs.length;
})()"""


def silver_code_points() -> list[int]:
    return sorted(cp for cp in supported("silver") if cp not in CONTROL)


def fallback_code_points(font: str) -> list[int]:
    own = supported(font)
    return [cp for cp in silver_code_points() if cp not in own]


def cells_needed(cps: list[int], cols: int) -> int:
    cursor = 0
    for cp in cps:
        units = 2 if is_wide(cp) else 1
        if units == 2 and cursor % cols == cols - 1:
            cursor += 1
        cursor += units
    return cursor


def frame_side(cps: list[int], cell_w: int, cell_h: int, repeat: int) -> int:
    side = int(math.sqrt(2.2 * len(cps) * cell_w * cell_h * repeat))
    while True:
        cols, rows = side // cell_w, side // cell_h // repeat
        if cells_needed(cps, cols) <= cols * rows:
            return side
        side += cell_w


def main() -> None:
    texts = {"silver": "".join(map(chr, silver_code_points()))}
    manifest = {"texts": texts, "silver": [], "band": [], "fallback": []}
    jobs = []

    def job(kind: str, entry: dict) -> None:
        dim_prefix = "\x0e" if entry.get("dim") else ""  # DIM_ON: the whole text in dim ink
        jobs.append({"text": dim_prefix + texts[entry["text"]], "options": entry["options"],
                     "out": f"{tmp}/{entry['file']}"})
        manifest[kind].append(entry)

    with tempfile.TemporaryDirectory() as tmp:
        for px in SILVER_PX:
            job("silver", {"file": f"silver_px{px}.png", "px": px, "text": "silver",
                           "options": {"size": SILVER_COLS * px, "font": "silver", "cellWidth": px,
                                       "cellHeight": px, "variant": "bw"}})
        texts["band"] = texts["silver"][::12]
        job("band", {"file": "silver_band.png", "px": 16, "text": "band",
                     "options": {"size": 32 * 16, "font": "silver", "cellWidth": 16, "cellHeight": 16,
                                 "variant": "sent", "lineRepeat": 2}})
        for name, font, cw, ch, repeat, variant, dim in FALLBACK_CASES:
            cps = fallback_code_points(font)
            texts.setdefault(f"fallback-{font}", "".join(map(chr, cps)))
            job("fallback", {"file": f"fallback_{name}.png", "name": name, "font": font,
                             "text": f"fallback-{font}", "dim": dim,
                             "options": {"size": frame_side(cps, cw, ch, repeat), "font": font,
                                         "cellWidth": cw, "cellHeight": ch, "variant": variant,
                                         "lineRepeat": repeat, "stretch": False}})
        job_file = Path(tmp) / "jobs.json"
        job_file.write_text(json.dumps(jobs))
        subprocess.run([TOOL, "eval", JS % json.dumps(str(job_file))], check=True,
                       stdout=subprocess.DEVNULL)
        for entry in manifest["silver"]:
            rgb = np.asarray(Image.open(f"{tmp}/{entry['file']}").convert("RGB"))
            if not (np.array_equal(rgb[..., 0], rgb[..., 1]) and np.array_equal(rgb[..., 0], rgb[..., 2])):
                raise SystemExit(f"{entry['file']}: black-ink frame is not gray")
            buf = io.BytesIO()
            Image.fromarray(rgb[..., 0], mode="L").save(buf, format="PNG", optimize=True)
            (HERE / entry["file"]).write_bytes(buf.getvalue())
        for entry in manifest["fallback"] + manifest["band"]:
            (HERE / entry["file"]).write_bytes(Path(f"{tmp}/{entry['file']}").read_bytes())
    (HERE / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    total = sum(p.stat().st_size for p in HERE.iterdir() if p.suffix in (".png", ".json"))
    print(f"wrote {len(jobs)} frames, {total / 1024:.0f} KiB in {HERE}")


if __name__ == "__main__":
    main()
