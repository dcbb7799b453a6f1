"""Regenerate the Silver golden frames from the reference renderer (needs upstream-frames).

Which code points: the reference's own answer. ``snapcompactSupportedChars`` is asked for the
whole Unicode range (in chunks: it reads at most about 64k UTF-16 units of one string) for Silver
and each bitmap font, so the goldens cover every code point the reference draws with Silver
(13,778 besides its 6 control codes), never the project's own coverage table.

Three kinds of frame, each packing thousands of glyphs so the fixtures stay few:

* ``silver_px{P}.png``: every Silver code point, drawn by the native renderer with
  ``font: "silver"`` on a P x P cell (glyphs rasterized at P px), black ink, ``SILVER_COLS``
  columns. Black on white makes each pixel 255 - coverage, so the RGB frame is stored as an 8-bit
  gray PNG without loss (the script checks R == G == B).
* ``fallback_{name}.png``: the reference's indexed PNG for a bitmap-font shape, fed every Silver
  code point that the bitmap font lacks (so every glyph goes through the Silver fallback).
* ``silver_band.png``: every 12th Silver code point in hue ink with ``lineRepeat: 2``, so the
  second copy of each row blends over the pale band (kept as RGB).

The native renderer silently ignores text beyond its grid (``floor(size/cellWidth)`` columns by
``floor(size/cellHeight/lineRepeat)`` rows). This script never relies on that: each frame is
sized to hold its text, checked before rendering, and the rendered height (which hugs the rows
used) is checked against the rows the text needs, so a capped frame stops the script.

``manifest.json`` records, per frame, the native options, its column count and the key of its
exact text (texts are stored once under ``texts``).

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

HERE = Path(__file__).resolve().parent
TOOL = os.environ.get("UPSTREAM_FRAMES", str(Path(__file__).resolve().parents[4] / "shared" / "tools" / "upstream-frames"))
SILVER_PX = (5, 6, 8, 11, 12, 13, 16)
#: Columns of the silver_px frames: 128 x 128 cells hold every Silver code point in one frame.
SILVER_COLS = 128
BAND_CELL = 16
FONTS = ("silver", "5x8", "6x12", "8x13", "8x8")
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
#: Code points per snapcompactSupportedChars call (well under its input limit).
CHUNK = 2048

COVERAGE_JS = """(() => {
  const out = {};
  for (const font of %s) {
    const cps = [];
    for (let lo = 1; lo < 0x110000; lo += %d) {
      let s = "";
      for (let c = lo; c < Math.min(lo + %d, 0x110000); c++) {
        if (c < 0xD800 || c > 0xDFFF) s += String.fromCodePoint(c);
      }
      for (const ch of nat.snapcompactSupportedChars(font, s)) cps.push(ch.codePointAt(0));
    }
    out[font] = cps;
  }
  return out;
})()"""

RENDER_JS = """(async () => {
  const fs = await import("node:fs");
  const jobs = JSON.parse(fs.readFileSync(%s, "utf8"));
  for (const job of jobs) {
    const b64 = await nat.renderSnapcompactPng(job.text, job.options);
    fs.writeFileSync(job.out, Buffer.from(b64, "base64"));
  }
  return jobs.length;
})()"""


def reference_coverage() -> dict[str, list[int]]:
    """Code points each font draws, as the reference answers (control codes left out)."""
    js = COVERAGE_JS % (json.dumps(list(FONTS)), CHUNK, CHUNK)
    done = subprocess.run([TOOL, "eval", js], check=True, capture_output=True, text=True)
    raw = json.loads(done.stdout)
    out = {font: sorted(set(raw[font]) - CONTROL) for font in FONTS}
    if len(out["silver"]) < 10_000:
        raise SystemExit(f"reference reports only {len(out['silver'])} Silver code points; "
                         "the supported-chars query was truncated")
    return out


def cells_needed(cps: list[int], cols: int, wide_cells: bool) -> int:
    """Grid cells the text occupies: wide glyphs take two in bitmap shapes, never straddling a row."""
    cursor = 0
    for cp in cps:
        units = 2 if wide_cells and is_wide(cp) else 1
        if units == 2 and cursor % cols == cols - 1:
            cursor += 1
        cursor += units
    return cursor


def frame_side(cps: list[int], cell_w: int, cell_h: int, repeat: int, wide_cells: bool) -> int:
    """Smallest square-ish width (in steps of one cell) whose grid holds every code point."""
    side = int(math.sqrt(len(cps) * cell_w * cell_h * repeat))
    while True:
        cols, rows = side // cell_w, side // cell_h // repeat
        if cells_needed(cps, cols, wide_cells) <= cols * rows:
            return side
        side += cell_w


def expected_height(entry: dict, cps: list[int]) -> int:
    """Rows the text needs times the row pitch; refuses a text the frame's grid cannot hold."""
    opts = entry["options"]
    cw, ch, repeat = opts["cellWidth"], opts["cellHeight"], opts.get("lineRepeat", 1)
    cols, rows = opts["size"] // cw, opts["size"] // ch // repeat
    cells = cells_needed(cps, cols, wide_cells=opts["font"] != "silver")
    if cols != entry["cols"] or cells > cols * rows:
        raise SystemExit(f"{entry['file']}: {len(cps)} code points need {cells} cells, the grid "
                         f"holds {cols}x{rows}; the reference would silently drop the rest")
    return math.ceil(cells / cols) * repeat * ch


def main() -> None:
    coverage = reference_coverage()
    silver_cps = coverage["silver"]
    texts = {"silver": "".join(map(chr, silver_cps))}
    manifest: dict = {"source": "@oh-my-pi/pi-natives 18.2.3 renderSnapcompactPng and "
                                "snapcompactSupportedChars via upstream-frames",
                      "texts": texts, "silver": [], "band": [], "fallback": []}
    jobs = []

    def job(kind: str, entry: dict) -> None:
        dim_prefix = "\x0e" if entry.get("dim") else ""  # DIM_ON: the whole text in dim ink
        jobs.append({"text": dim_prefix + texts[entry["text"]], "options": entry["options"],
                     "out": f"{tmp}/{entry['file']}"})
        manifest[kind].append(entry)

    with tempfile.TemporaryDirectory() as tmp:
        for px in SILVER_PX:
            job("silver", {"file": f"silver_px{px}.png", "px": px, "text": "silver",
                           "cols": SILVER_COLS,
                           "options": {"size": SILVER_COLS * px, "font": "silver", "cellWidth": px,
                                       "cellHeight": px, "variant": "bw"}})
        texts["band"] = texts["silver"][::12]
        band_cps = silver_cps[::12]
        band_size = frame_side(band_cps, BAND_CELL, BAND_CELL, 2, wide_cells=False)
        job("band", {"file": "silver_band.png", "px": BAND_CELL, "text": "band",
                     "cols": band_size // BAND_CELL,
                     "options": {"size": band_size, "font": "silver", "cellWidth": BAND_CELL,
                                 "cellHeight": BAND_CELL, "variant": "sent", "lineRepeat": 2}})
        for name, font, cw, ch, repeat, variant, dim in FALLBACK_CASES:
            own = set(coverage[font])
            cps = [cp for cp in silver_cps if cp not in own]
            texts.setdefault(f"fallback-{font}", "".join(map(chr, cps)))
            size = frame_side(cps, cw, ch, repeat, wide_cells=True)
            job("fallback", {"file": f"fallback_{name}.png", "name": name, "font": font,
                             "text": f"fallback-{font}", "dim": dim, "cols": size // cw,
                             "options": {"size": size, "font": font, "cellWidth": cw,
                                         "cellHeight": ch, "variant": variant,
                                         "lineRepeat": repeat, "stretch": False}})
        heights = {}
        for kind in ("silver", "band", "fallback"):
            for entry in manifest[kind]:
                heights[entry["file"]] = expected_height(entry, [ord(c) for c in texts[entry["text"]]])
        job_file = Path(tmp) / "jobs.json"
        job_file.write_text(json.dumps(jobs))
        subprocess.run([TOOL, "eval", RENDER_JS % json.dumps(str(job_file))], check=True,
                       stdout=subprocess.DEVNULL)
        for file, height in heights.items():
            with Image.open(f"{tmp}/{file}") as img:
                if img.height != height:
                    raise SystemExit(f"{file}: reference frame is {img.height} px high, the text "
                                     f"needs {height} px; glyphs were dropped or the layout moved")
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
    print(f"wrote {len(jobs)} frames covering {len(silver_cps)} Silver code points, "
          f"{total / 1024:.0f} KiB in {HERE}")


if __name__ == "__main__":
    main()
