"""One worked example per image billing rule, each with a number fixed outside the code.

Why a file of its own: ``test_billing.py`` reproduces the providers' published examples where
they exist, but several rule rows (o4-mini, the GPT-5 family, gpt-4o-mini, the o-series, Kimi,
GLM) had no exact expectation, so a changed constant in ``pricing.toml`` went unnoticed. Here
every row of the table is exercised (the last test fails when a row has no example), and each
expected value is a literal: worked by hand from the cited page's rule (the arithmetic is in
the comment), or, where no document gives a number, pinned from the reference's measurement or
from the estimate rule itself, and then the row must be labelled ``estimate``.

Sources were read on the date in ``CHECKED`` (the ``checked`` date of the rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from snapcompact.billing import bill_image
from snapcompact.core import SHAPE_NAMES, get_shape
from snapcompact.pricing import pricing_table

CHECKED = "2026-11-30"
OPENAI_COSTS = "platform.openai.com/docs/guides/images-vision#calculating-costs"
OPENAI_SIZING = "platform.openai.com/docs/guides/images-vision#model-sizing-behavior"
CLAUDE_VISION = "platform.claude.com/docs/en/build-with-claude/vision"
CLAUDE_LEGACY = "docs.anthropic.com/en/docs/vision (Calculate image costs)"
GEMINI_MEDIA = "ai.google.dev/gemini-api/docs/media-resolution"
GEMINI_TOKENS = "ai.google.dev/gemini-api/docs/tokens"
DIGEST_J = "reference @oh-my-pi/snapcompact 18.2.11 measurements (upstream-digest.md j)"
MOONSHOT = "platform.moonshot.ai/docs/guide/use-kimi-vision-model (no formula published)"
ZHIPU = "docs.z.ai GLM-4.5V / GLM-4.6V (no formula published)"


@dataclass(frozen=True)
class Worked:
    rule_id: str
    model: str
    width: int
    height: int
    detail: str | None
    tokens: int
    seen: tuple[int, int]
    source: str
    why: str

    def __str__(self) -> str:  # pytest id
        return f"{self.rule_id}:{self.model}:{self.width}x{self.height}:{self.detail}"


EXAMPLES = [
    # --- Anthropic ------------------------------------------------------------------------------
    Worked("anthropic-standard", "claude-sonnet-4-5", 1000, 1000, None, 1296, (1000, 1000),
           CLAUDE_VISION, "ceil(1000/28)^2 = 36*36 = 1296 (under 1568 px and ~1568 tokens)"),
    Worked("anthropic-standard", "claude-haiku-4-5", 1568, 1568, None, 1521, (1092, 1092),
           CLAUDE_VISION, "56*56 = 3136 > 1568: resized to 1092x1092 (documented max "
           "square), ceil(1092/28)^2 = 39*39 = 1521"),
    Worked("anthropic-high-res", "claude-opus-4-7", 2576, 1456, None, 4784, (2576, 1456),
           CLAUDE_VISION, "native 2576 px / 4784 tokens: ceil(2576/28)*ceil(1456/28) = 92*52"),
    Worked("anthropic-high-res", "claude-opus-4-8", 1568, 1568, None, 3136, (1568, 1568),
           DIGEST_J, "reference measured a 1568 px frame at 3,136 tokens = 56*56"),
    Worked("anthropic-legacy-area", "claude-3-5-sonnet", 1000, 1000, None, 1334, (1000, 1000),
           CLAUDE_LEGACY, "table: 1000x1000 ~ 1334 tokens = ceil(1e6/750)"),
    Worked("anthropic-legacy-area", "claude-3-haiku", 200, 200, None, 54, (200, 200),
           CLAUDE_LEGACY, "table: 200x200 ~ 54 tokens = ceil(40000/750)"),
    # --- OpenAI patch models: 1024x1024 is 32*32 = 1024 patches of 32 px (documented example),
    # the token count is patches times the model's multiplier, rounded.
    Worked("openai-patch-gpt-4.1-mini", "gpt-4.1-mini", 1024, 1024, "high", 1659, (1024, 1024),
           OPENAI_COSTS, "1024 patches * 1.62 = 1658.88 -> 1659"),
    Worked("openai-patch-gpt-4.1-mini", "gpt-4.1-mini", 1800, 2400, "high", 2352, (1056, 1408),
           OPENAI_COSTS, "documented: 1800x2400 shrinks to 1056x1408 = 33*44 = 1452 patches; "
           "1452 * 1.62 = 2352.24 -> 2352"),
    Worked("openai-patch-gpt-4.1-nano", "gpt-4.1-nano", 1024, 1024, "high", 2519, (1024, 1024),
           OPENAI_COSTS, "1024 patches * 2.46 = 2519.04 -> 2519"),
    Worked("openai-patch-o4-mini", "o4-mini", 1024, 1024, "high", 1761, (1024, 1024),
           OPENAI_COSTS, "1024 patches * 1.72 = 1761.28 -> 1761"),
    Worked("openai-patch-gpt-5-mini", "gpt-5-mini", 1024, 1024, None, 1659, (1024, 1024),
           OPENAI_COSTS, "1024 patches * 1.62 = 1658.88 -> 1659 (auto = high)"),
    Worked("openai-patch-gpt-5-nano", "gpt-5-nano", 1024, 1024, None, 2519, (1024, 1024),
           OPENAI_COSTS, "1024 patches * 2.46 = 2519.04 -> 2519 (auto = high)"),
    Worked("openai-patch-original", "gpt-5.5", 1568, 1568, "original", 2881, (1568, 1568),
           DIGEST_J, "reference measured 2,881: ceil(1568/32)^2 = 49*49 = 2401 * 1.2 = 2881.2"),
    Worked("openai-patch-original", "gpt-5.5", 2048, 2048, "high", 3000, (1600, 1600),
           OPENAI_SIZING, "64*64 = 4096 patches > 2500: shrink sqrt(2500*32^2/2048^2) = 0.78125 "
           "-> 1600x1600 = 50*50 = 2500 patches * 1.2 = 3000"),
    # --- OpenAI tile models: fit in 2048 px, shortest side 768, tiles of 512 px; high detail.
    # 1024x1024 -> 768x768 -> 2*2 = 4 tiles.
    Worked("openai-tiles-gpt-4o", "gpt-4o", 1024, 1024, "high", 765, (768, 768),
           OPENAI_COSTS, "documented: 85 + 170*4 = 765"),
    Worked("openai-tiles-gpt-4o", "gpt-4o", 2048, 4096, "high", 1105, (768, 1536),
           OPENAI_COSTS, "documented: 1024x2048 -> 768x1536 = 2*3 tiles; 85 + 170*6 = 1105"),
    Worked("openai-tiles-gpt-4o-mini", "gpt-4o-mini", 1024, 1024, "high", 25501, (768, 768),
           OPENAI_COSTS, "base 2833 + tile 5667 * 4 = 25501"),
    Worked("openai-tiles-gpt-4o-mini", "gpt-4o-mini", 1024, 1024, "low", 2833, (512, 512),
           OPENAI_COSTS, "detail low: base only, 2833"),
    Worked("openai-tiles-gpt-5", "gpt-5", 1024, 1024, "high", 630, (768, 768),
           OPENAI_COSTS, "base 70 + tile 140 * 4 = 630"),
    Worked("openai-tiles-gpt-5", "gpt-5-chat-latest", 512, 512, "high", 210, (512, 512),
           OPENAI_COSTS, "512x512 stays (short side <= 768): 1 tile; 70 + 140 = 210"),
    Worked("openai-tiles-o-series", "o3", 1024, 1024, "high", 675, (768, 768),
           OPENAI_COSTS, "base 75 + tile 150 * 4 = 675"),
    Worked("openai-tiles-o-series", "o1", 1024, 1024, "low", 75, (512, 512),
           OPENAI_COSTS, "detail low: base only, 75"),
    Worked("openai-tiles-computer-use", "computer-use-preview", 1024, 1024, "high", 581,
           (768, 768), OPENAI_COSTS, "base 65 + tile 129 * 4 = 581"),
    # --- Google -------------------------------------------------------------------------------
    Worked("gemini-3-media-resolution", "gemini-3-flash", 1568, 700, None, 1120, (1568, 700),
           GEMINI_MEDIA, "HIGH is the image default: 1120 whatever the pixels"),
    Worked("gemini-3-media-resolution", "gemini-3-pro", 1568, 700, "medium", 560, (1568, 700),
           GEMINI_MEDIA, "MEDIUM: 560"),
    Worked("gemini-2-tiles", "gemini-2.5-flash", 384, 200, None, 258, (384, 200),
           GEMINI_TOKENS, "both sides <= 384 px: 258"),
    # --- Rules no document gives a number for: pinned values of the labelled estimates. --------
    Worked("gemini-2-tiles", "gemini-2.0-flash", 1536, 768, None, 516, (1536, 768),
           GEMINI_TOKENS, "estimated tiling (the count is not published): ceil(1536/768)*"
           "ceil(768/768) = 2 tiles * 258 = 516"),
    Worked("kimi-patches", "kimi-k2.5", 1568, 1568, None, 3136, (1568, 1568),
           MOONSHOT, "estimate: 28 px patches, ceil(1568/28)^2 = 56*56 = 3136"),
    Worked("kimi-patches", "moonshot-v1-128k-vision", 2576, 2576, None, 4096, (1792, 1792),
           MOONSHOT, "estimate: downscaled to the reference's measured 1792 px limit, "
           "64*64 = 4096"),
    Worked("kimi-patches", "kimi-k2.5", 2576, 700, None, 1152, (1792, 487),
           MOONSHOT, "estimate: long edge to 1792 px (700*1792/2576 = 486.96 -> 487), "
           "ceil(1792/28)*ceil(487/28) = 64*18 = 1152"),
    Worked("glm-patches", "glm-4.5v", 1568, 1568, None, 3136, (1568, 1568),
           ZHIPU, "estimate: 14 px ViT patches merged 2x2 = 28 px, 56*56 = 3136"),
    Worked("glm-patches", "glm-4.6v", 2576, 1456, None, 4784, (2576, 1456),
           ZHIPU, "estimate: 92*52 = 4784 (placeholder caps never bind at <= 2576 px)"),
]

#: A full square frame of every shape variant, per model line: (model, frame side) -> (tokens,
#: seen side). Worked by hand from the same rules as EXAMPLES (variants are 1568 or 2576 px).
FULL_FRAME = {
    # high-res Claude: 56*56; 2576 px = 92*92 = 8464 > 4784, largest fit 1932 px = 69*69 = 4761
    ("claude-opus-4-8", 1568): (3136, 1568), ("claude-opus-4-8", 2576): (4761, 1932),
    # older Claude lines: over ~1568 tokens, resized to the documented 1092 px square, 39*39
    ("claude-sonnet-4-5", 1568): (1521, 1092), ("claude-sonnet-4-5", 2576): (1521, 1092),
    # patch flagship at detail auto (= high, 2500 patches): 49*49 * 1.2 = 2881.2; 2576 px is
    # 81*81 = 6561 patches, shrunk to 1600 px = 50*50 = 2500 * 1.2
    ("gpt-5.5", 1568): (2881, 1568), ("gpt-5.5", 2576): (3000, 1600),
    # tile model: shortest side to 768 px, 2*2 tiles: 85 + 4*170
    ("gpt-4.1", 1568): (765, 768), ("gpt-4.1", 2576): (765, 768),
    # Gemini 2 (estimated tiling): ceil(1568/768)^2 = 9 tiles, ceil(2576/768)^2 = 16 tiles, * 258
    ("gemini-2.5-flash", 1568): (2322, 1568), ("gemini-2.5-flash", 2576): (4128, 2576),
    # Gemini 3: HIGH, fixed
    ("gemini-3.5-flash", 1568): (1120, 1568), ("gemini-3.5-flash", 2576): (1120, 2576),
    # Kimi (estimate): 56*56; 2576 px to 1792 px = 64*64
    ("kimi-k2.5", 1568): (3136, 1568), ("kimi-k2.5", 2576): (4096, 1792),
    # GLM (estimate): 56*56; 92*92, caps never bind
    ("glm-4.5v", 1568): (3136, 1568), ("glm-4.5v", 2576): (8464, 2576),
}


@pytest.mark.parametrize("name", SHAPE_NAMES)
@pytest.mark.parametrize("model", sorted({model for model, _ in FULL_FRAME}))
def test_full_frame_of_every_variant(name, model):
    side = get_shape(name).frame_size
    tokens, seen = FULL_FRAME[(model, side)]
    bill = bill_image(model, side, side)
    assert (bill.tokens, bill.seen_width, bill.seen_height) == (tokens, seen, seen)


#: Rows whose numbers no provider document gives: they must say so in the table.
ESTIMATE_RULES = {"kimi-patches", "glm-patches"}


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_worked_example(example: Worked):
    bill = bill_image(example.model, example.width, example.height, detail=example.detail)
    assert bill.rule_id == example.rule_id, f"{example.model} picked {bill.rule_id}"
    got = (bill.tokens, (bill.seen_width, bill.seen_height))
    assert got == (example.tokens, example.seen), f"{example.source}: {example.why}"
    assert bill.checked == CHECKED


def test_every_rule_row_has_a_worked_example():
    rows = {rule.id for rule in pricing_table().rules}
    worked = {example.rule_id for example in EXAMPLES}
    assert rows - worked == set(), "rules without a worked example"
    assert worked - rows == set(), "examples for rules that no longer exist"


def test_rules_without_a_published_number_are_labelled_estimates():
    confidence = {rule.id: rule.confidence for rule in pricing_table().rules}
    for rule_id in ESTIMATE_RULES:
        assert confidence[rule_id] == "estimate", rule_id
    # The Gemini 2 row is documented for small images only; its tiling of larger ones is
    # labelled an estimate in every bill it produces.
    bill = bill_image("gemini-2.0-flash", 1536, 768)
    assert "tile count estimated" in bill.rule
