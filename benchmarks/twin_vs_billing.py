"""Where the wire twins' reading of the provider docs and ``snapcompact.pricing.billing`` disagree.

    python benchmarks/twin_vs_billing.py [--widths 256,512] [--heights 64,200]

For every model the configs call, prices a grid of frame sizes both ways (the twin's rule in
``evals/twins/vision.py``, written from the provider pages, and ``bill_image``) and prints how
many sizes differ and the first few (width x height: billing -> twin). The table in
docs/running-real-models.md ("Where the twins' reading and snapcompact.pricing.billing disagree") is
this output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evals.twins.vision import (
    anthropic_image_tokens,
    gemini_image_tokens,
    openai_image_tokens,
)
from snapcompact.pricing import bill_image

TWIN_RULES = {
    "claude-sonnet-4-5": lambda w, h: anthropic_image_tokens("claude-sonnet-4-5", w, h)[0],
    "claude-opus-4-7": lambda w, h: anthropic_image_tokens("claude-opus-4-7", w, h)[0],
    "gpt-4.1": lambda w, h: openai_image_tokens("gpt-4.1", w, h, "high")[0],
    "gpt-5": lambda w, h: openai_image_tokens("gpt-5", w, h, "high")[0],
    "gemini-2.5-flash": lambda w, h: gemini_image_tokens("gemini-2.5-flash", w, h, None)[0],
    "gemini-3-flash-preview":
        lambda w, h: gemini_image_tokens("gemini-3-flash-preview", w, h, None)[0],
}


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--widths", default="256,384,512,768,1024,1092,1288,1568,1932,2048,2576,"
                                            "3000")
    parser.add_argument("--heights", default="64,200,384,416,768,1024,1568,1932,2576,4000")
    args = parser.parse_args(argv)
    sizes = [(w, h) for w in _ints(args.widths) for h in _ints(args.heights)]
    print(f"{'model':<24} {'sizes':>5} {'differ':>6}  first differences (w x h: billing -> twin)")
    for model, twin in TWIN_RULES.items():
        detail = "high" if model.startswith("gpt") else None
        diffs = [(w, h, b, t) for w, h in sizes
                 if (b := bill_image(model, w, h, detail).tokens) != (t := twin(w, h))]
        shown = ", ".join(f"{w}x{h}: {b} -> {t}" for w, h, b, t in diffs[:4])
        print(f"{model:<24} {len(sizes):>5} {len(diffs):>6}  {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
