"""Billed tokens and dollars per full frame, every shape x a representative model per provider.

Why a module: the figures are computed, not measured (the billing rules in
snapcompact/pricing/pricing.toml and the prices in litellm's bundled cost map), and both change;
the README's table is a generated block (:mod:`evals.analysis.docs_blocks`) rendered from here, and
``scripts/frame_costs_table.py`` writes the same tables to docs/frame-costs.md, so neither is ever
typed and ``snapcompact-eval-table --check`` notices when a rule or a price moved.

A "full frame" is a square frame at the shape's research frame size (a forced shape keeps its
geometry). Real archive frames hug their content in height, so the last frame of an archive
costs less; ``python -m snapcompact bill`` prices any width x height.
"""

from __future__ import annotations

from evals.send.price_map import price_of
from snapcompact.billing import bill_image
from snapcompact.core import SHAPE_NAMES, geometry, get_shape
from snapcompact.pricing import pricing_table_sha256, resolve_shape

__all__ = ["REPRESENTATIVES", "build"]

#: (column label, model id, wire API that carries it)
REPRESENTATIVES: tuple[tuple[str, str, str], ...] = (
    ("Claude Opus 4.8 (high-res)", "claude-opus-4-8", "anthropic-messages"),
    ("Claude Sonnet 4.5", "claude-sonnet-4-5", "anthropic-messages"),
    ("GPT-5.5 (original)", "gpt-5.5", "openai-responses"),
    ("GPT-4.1 (tiles)", "gpt-4.1", "openai-responses"),
    ("Gemini 2.5 Flash", "gemini-2.5-flash", "google-generative-ai"),
    ("Gemini 3.5 Flash", "gemini-3.5-flash", "google-generative-ai"),
    ("Kimi K2.5", "kimi-k2.5", "openai-completions"),
    ("GLM-4.5V", "glm-4.5v", "openai-completions"),
)


def _bill(model: str, api: str, size: int):
    detail = resolve_shape(model, api=api).image_detail  # the hint production sends on this API
    try:
        return bill_image(model, size, size, detail=detail, api=api)
    except ValueError:  # e.g. a tile model has no detail 'original': production would send high
        return bill_image(model, size, size, detail="high", api=api)


def build(subheading: str = "##") -> str:
    """The tables as markdown (no title: the page or section gives it); ``subheading`` is the
    markdown level of the second table's heading."""
    prices = {model: price_of(model) for _, model, _ in REPRESENTATIVES}
    source = next(iter(prices.values())).source
    lines = [
        "Each cell: **billed tokens / US dollars** for one full (square) frame of the shape at its",
        "research frame size, as the provider really bills it (`snapcompact.bill_image`), at",
        "the model's input price. Real frames hug their content in height, so a partial last frame",
        "costs less. OpenAI-family requests carry `detail: \"original\"` as production sends it",
        "(tile models such as GPT-4.1 do not accept it and are billed at `high`).",
        "",
        "- Image rules: `snapcompact/pricing/pricing.toml` "
        f"(sha256 `{pricing_table_sha256()[:12]}`), each",
        "  row with its source, date checked and confidence. Kimi and GLM rules are **estimates**",
        "  (neither vendor publishes an image-token formula); Gemini 2.x tile counts are "
        "estimated.",
        f"- Prices: {source}, input price per token:",
    ]
    for label, model, _ in REPRESENTATIVES:
        p = prices[model]
        lines.append(f"  {label} `{p.key}` ${p.input_per_token * 1e6:.2f}/M;")
    lines[-1] = lines[-1].rstrip(";") + "."
    lines += ["", "| shape | frame px | chars/frame | " +
              " | ".join(label for label, _, _ in REPRESENTATIVES) + " |",
              "|---|---:|---:|" + "---:|" * len(REPRESENTATIVES)]
    for name in SHAPE_NAMES:
        shape = get_shape(name)
        cells = []
        for _, model, api in REPRESENTATIVES:
            bill = _bill(model, api, shape.frame_size)
            usd = prices[model].dollars(bill.tokens)
            mark = "*" if (bill.seen_width, bill.seen_height) != (shape.frame_size,) * 2 else ""
            cells.append(f"{bill.tokens:,}{mark} / ${usd:.4f}")
        lines.append(f"| {name} | {shape.frame_size} | {geometry(shape).capacity:,} | " +
                     " | ".join(cells) + " |")
    lines += [
        "",
        "`*` the provider downscales this frame before the model reads it (older Claude lines "
        "see a",
        "1568 px square frame at 1092 px; Kimi caps the long edge at 1792 px; GPT-4.1 tiles shrink",
        "the shortest side to 768 px), so glyphs arrive smaller than rendered.",
        "",
        f"{subheading} Auto-resolved shape per model (seed table)",
        "",
        "| model | API | shape | frame px | chars/frame | production estimate | billed tokens | "
        "$ per frame | $ per 1M chars |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for _, model, api in REPRESENTATIVES:
        r = resolve_shape(model, api=api)
        bill = _bill(model, api, r.frame_size)
        usd = prices[model].dollars(bill.tokens)
        cap = geometry(r.shape).capacity
        lines.append(f"| {model} | {api} | {r.name} | {r.frame_size} | {cap:,} | "
                     f"{r.frame_token_estimate:,} | {bill.tokens:,} | ${usd:.4f} | "
                     f"${usd / cap * 1e6:.2f} |")
    lines += ["", "The production estimate is the per-family square-frame formula the archive "
              "uses", "to reserve context (reference 18.2.11); the billed column is the provider's "
              "rule."]
    return "\n".join(lines)
