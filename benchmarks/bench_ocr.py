"""Offline OCR reader: seconds per full frame and character accuracy per shape.

    python benchmarks/bench_ocr.py [--shapes 11on16-bw,6x6u-bw|all] [--upscale 1.0]
                                   [--model claude-sonnet-4-5] [--json out.json]

Why: the embedded reader is only useful as a *legibility floor* if it reads the readable shapes
and fails on the unreadable ones. This prints, per shape, the first full frame's size, the
size OCR looked at, wall and CPU seconds for one transcription (no cache; CPU time is the
figure to trust on a shared machine) and character accuracy,
1 - CER on whitespace-collapsed text against exactly the page the renderer drew.

Input: docstrings of the Python standard library (real English prose that every machine has),
packed until every shape's first frame is full. `--model` applies that model's image resize
(snapcompact.pricing.billing.bill_image) before reading, as the harness does; without it frames are
read at native size. One process, one core (OMP_THREAD_LIMIT=1).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evals.readers import ocr  # noqa: E402
from evals.readers.answer import character_error_rate  # noqa: E402
from snapcompact.core import NAMED_SHAPES, geometry, get_shape  # noqa: E402
from snapcompact.render import pages, render  # noqa: E402

DEFAULT_SHAPES = ("11on16-bw", "8on22-bw", "8on16-bw", "8x13-bw", "6x12-dim", "8x8u-bw",
                  "8x8r-bw", "6x6u-bw", "5x8-bw")


def docstring_corpus(n_chars: int) -> str:
    """Module, class and function docstrings of the standard library, in file order."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts: list[str] = []
    total = 0
    for path in sorted(stdlib.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        nodes = [tree, *(n for n in ast.walk(tree)
                         if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))]
        for node in nodes:
            doc = ast.get_docstring(node)
            if doc and len(doc) > 200:
                parts.append(doc)
                total += len(doc)
        if total >= n_chars:
            break
    return "\n".join(parts)[:n_chars]


def measure(shape_name: str, text: str, settings: ocr.OcrSettings, model: str | None) -> dict:
    shape = get_shape(shape_name)
    page = pages(text, shape)[0]
    frame = render(page, shape)
    seen = None
    if model:
        from snapcompact.pricing import bill_image

        bill = bill_image(model, frame.width, frame.height)
        seen = (bill.seen_width, bill.seen_height)
    ocr.clear_memory_cache()
    started, cpu_started = time.perf_counter(), time.process_time()
    transcript = ocr.transcribe(frame.png, seen, settings=settings)
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    cer = character_error_rate(page, transcript)
    return {
        "shape": shape_name,
        "frame": f"{frame.width}x{frame.height}",
        "seen": f"{seen[0]}x{seen[1]}" if seen else "native",
        "chars": frame.chars,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "chars_per_cpu_s": round(frame.chars / cpu_seconds) if cpu_seconds else None,
        "accuracy": round(max(0.0, 1.0 - cer), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=",".join(DEFAULT_SHAPES),
                        help="comma-separated variants, or 'all'")
    parser.add_argument("--upscale", type=float, default=ocr.DEFAULT_SETTINGS.upscale)
    parser.add_argument("--psm", type=int, default=ocr.DEFAULT_SETTINGS.psm)
    parser.add_argument("--model", default=None, help="apply this model's image resize first")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    names = list(NAMED_SHAPES) if args.shapes == "all" else args.shapes.split(",")
    for name in names:
        get_shape(name)  # unknown names fail before any work
    settings = ocr.OcrSettings(upscale=args.upscale, psm=args.psm)
    need = max(geometry(get_shape(n)).capacity for n in names) + 1000
    text = docstring_corpus(need)
    print(f"# {ocr.engine_version()}; upscale {settings.upscale}, psm {settings.psm}; "
          f"seen size: {args.model or 'native'}; corpus {len(text)} chars of stdlib docstrings")
    header = f"{'shape':<20} {'frame':>10} {'seen':>10} {'chars':>7} {'s/frame':>8} " \
             f"{'cpu s':>7} {'chars/cpu s':>11} {'accuracy':>8}"
    print(header)
    print("-" * len(header))
    rows = []
    for name in names:
        row = measure(name, text, settings, args.model)
        rows.append(row)
        print(f"{row['shape']:<20} {row['frame']:>10} {row['seen']:>10} {row['chars']:>7} "
              f"{row['seconds']:>8.2f} {row['cpu_seconds']:>7.2f} "
              f"{row['chars_per_cpu_s'] or 0:>11} {row['accuracy']:>8.3f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"engine": ocr.engine_version(),
                                         "settings": vars(args) | {"json": str(args.json)},
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
