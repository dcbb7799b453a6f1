"""Image billing against the providers' own worked examples (cited per case) and the reference's
per-frame estimate table (upstream-digest.md section b), plus text tokens for the baseline."""

from __future__ import annotations

from importlib import resources

import pytest

from snapcompact.billing import bill_image, select_rule
from snapcompact.core import SHAPE_NAMES, get_shape
from snapcompact.pricing import (
    count_text_tokens,
    frame_token_estimate,
    parse_pricing_table,
    pricing_table,
)

OPENAI_VISION = "platform.openai.com/docs/guides/images-vision#calculating-costs"
ANTHROPIC_VISION = "platform.claude.com/docs/en/build-with-claude/vision"
ANTHROPIC_LEGACY = "docs.anthropic.com/en/docs/vision (tokens = w*h/750 table)"
GEMINI_TOKENS = "ai.google.dev/gemini-api/docs/tokens and /media-resolution"


# --- production estimate: the reference's own table (digest b) -------------------------------

@pytest.mark.parametrize("size,anthropic,openai,google", [
    (1568, 3293, 2882, 1120), (1932, 5000, 4466, 1120), (2048, 5024, 4916, 1120),
    (2576, 5024, 7874, 1120),
])
def test_family_estimates_match_reference_table(size, anthropic, openai, google):
    assert frame_token_estimate("anthropic", size) == anthropic
    assert frame_token_estimate("unknown", size) == anthropic
    assert frame_token_estimate("openai", size) == openai
    assert frame_token_estimate("google", size) == google


# --- worked examples from the providers' documentation ----------------------------------------

@pytest.mark.parametrize("model,w,h,detail,tokens,seen,source", [
    # OpenAI tile models: 1024x1024 high = 765; 2048x4096 high = 1105; 4096x8192 low = 85.
    ("gpt-4o", 1024, 1024, "high", 765, (768, 768), OPENAI_VISION),
    ("gpt-4o", 2048, 4096, "high", 1105, (768, 1536), OPENAI_VISION),
    ("gpt-4o", 4096, 8192, "low", 85, None, OPENAI_VISION),
    # OpenAI patch models: 1024x1024 -> 1024 patches; 1800x2400 -> shrink 0.603 then 0.97 ->
    # 1056x1408 -> 33*44 = 1452 patches; gpt-4.1-mini multiplies by 1.62.
    ("gpt-4.1-mini", 1024, 1024, "high", round(1024 * 1.62), (1024, 1024), OPENAI_VISION),
    ("gpt-4.1-mini", 1800, 2400, "high", round(1452 * 1.62), (1056, 1408), OPENAI_VISION),
    ("gpt-4.1-nano", 1024, 1024, None, round(1024 * 2.46), (1024, 1024), OPENAI_VISION),
    # Reference measurement (digest j): a 1568 px frame at detail original billed 2,881 tokens.
    ("gpt-5.5", 1568, 1568, "original", 2881, (1568, 1568), "upstream-digest.md (j)"),
    # Anthropic patch rule: ceil(w/28)*ceil(h/28); 1000x1000 = 36*36 = 1,296 visual tokens.
    ("claude-sonnet-4-5", 1000, 1000, None, 1296, (1000, 1000), ANTHROPIC_VISION),
    # Opus 4.7+ native limit 2576 px / 4784 tokens: a 16:9 2576x1456 image is exactly 92*52.
    ("claude-opus-4-8", 2576, 1456, None, 4784, (2576, 1456), ANTHROPIC_VISION),
    # Reference measurement (digest j): a 1568 px frame cost 3,136 tokens (56*56) on a high-res Claude.
    ("claude-opus-4-8", 1568, 1568, None, 3136, (1568, 1568), "upstream-digest.md (j)"),
    # Legacy area rule examples: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590.
    ("claude-3-5-sonnet", 200, 200, None, 54, (200, 200), ANTHROPIC_LEGACY),
    ("claude-3-5-sonnet", 1000, 1000, None, 1334, (1000, 1000), ANTHROPIC_LEGACY),
    ("claude-3-5-sonnet", 1092, 1092, None, 1590, (1092, 1092), ANTHROPIC_LEGACY),
    # Gemini 2.x: both sides <= 384 px -> 258; Gemini 3 HIGH (default) 1120, LOW 280, ULTRA 2240.
    ("gemini-2.5-flash", 384, 384, None, 258, (384, 384), GEMINI_TOKENS),
    ("gemini-2.5-flash", 768, 768, None, 258, (768, 768), GEMINI_TOKENS),
    ("gemini-3.5-flash", 2048, 900, None, 1120, (2048, 900), GEMINI_TOKENS),
    ("gemini-3.5-flash", 2048, 900, "low", 280, (2048, 900), GEMINI_TOKENS),
    ("gemini-3.5-flash", 2048, 900, "original", 2240, (2048, 900), GEMINI_TOKENS),
])
def test_documented_examples(model, w, h, detail, tokens, seen, source):
    bill = bill_image(model, w, h, detail=detail)
    assert bill.tokens == tokens, source
    if seen is not None:
        assert (bill.seen_width, bill.seen_height) == seen, source
    assert bill.source and bill.checked and bill.confidence


@pytest.mark.parametrize("w,h", [(1092, 1092), (951, 1268), (896, 1344), (819, 1456), (784, 1568)])
def test_anthropic_recommended_max_sizes_are_not_resized(w, h):
    # docs.anthropic.com/en/docs/vision: the largest sizes per aspect ratio that avoid resizing.
    bill = bill_image("claude-sonnet-4-5", w, h)
    assert (bill.seen_width, bill.seen_height) == (w, h)
    assert bill.tokens <= 1568


def test_older_claude_lines_see_a_square_1568_frame_at_1092_px():
    # The legacy docs resize anything over ~1,600 tokens: a full 1568 px square reaches the
    # model at 1092 px on pre-4.7 lines, while a frame hugging 784 px of content does not.
    full = bill_image("claude-sonnet-4-5", 1568, 1568)
    assert (full.seen_width, full.seen_height, full.tokens) == (1092, 1092, 39 * 39)
    hugged = bill_image("claude-sonnet-4-5", 1568, 784)
    assert (hugged.seen_width, hugged.seen_height, hugged.tokens) == (1568, 784, 56 * 28)


def test_high_res_claude_downscales_past_the_patch_cap():
    bill = bill_image("claude-fable-5", 2576, 2576)
    assert (bill.seen_width, bill.seen_height, bill.tokens) == (1932, 1932, 69 * 69)


def test_real_frame_height_and_gap_to_square_estimate():
    # A frame hugging 400 px of text at 1568 px wide on anthropic-messages.
    bill = bill_image("claude-opus-4-8", 1568, 400, api="anthropic-messages")
    assert bill.tokens == 56 * 15
    assert bill.square_estimate == 3293 and bill.estimate_gap == 3293 - 840
    assert bill.to_json()["estimate_gap"] == bill.estimate_gap


def test_billing_follows_the_model_vendor_not_the_gateway():
    # A Claude through OpenRouter (openai-completions) is still read by Anthropic's encoder;
    # only the production estimate follows the carrying API.
    bill = bill_image("anthropic/claude-opus-4-8", 1932, 1932, api="openai-completions")
    assert bill.rule_id == "anthropic-high-res" and bill.family == "openai"
    assert bill.square_estimate == 4466


@pytest.mark.parametrize("api,rule_id", [
    ("anthropic-messages", "anthropic-standard"), ("openai-responses", "openai-patch-original"),
    ("google-vertex", "gemini-3-media-resolution"), ("mystery-api", "anthropic-standard"),
    (None, "anthropic-standard"),
])
def test_unknown_models_use_the_documented_family_fallback(api, rule_id):
    rule, why = select_rule("totally-new-model", api=api)
    assert rule.id == rule_id and why.startswith("fallback")
    bill = bill_image("totally-new-model", 800, 600, api=api)
    assert bill.rule_id == rule_id and bill.notes[0].startswith("fallback")


@pytest.mark.parametrize("w,h", [(0, 100), (-1, 100), (100, -20), (100, 0), (10**6, 10), (10, 40000)])
def test_negative_zero_and_absurd_sizes_raise(w, h):
    with pytest.raises(ValueError):
        bill_image("gpt-4o", w, h)


def test_provider_rejections_and_unknown_settings_raise():
    with pytest.raises(ValueError, match="8000"):
        bill_image("claude-sonnet-4-5", 9000, 1000)  # Anthropic rejects > 8000x8000
    with pytest.raises(ValueError, match="original"):
        bill_image("gpt-4o", 1000, 1000, detail="original")  # tile models have no 'original'
    with pytest.raises(ValueError, match="low"):
        bill_image("gpt-4.1-mini", 1000, 1000, detail="low")  # no published number
    with pytest.raises(ValueError, match="detail"):
        bill_image("gpt-4o", 1000, 1000, detail="max")
    with pytest.raises(ValueError):
        bill_image(None, 100, 100)
    with pytest.raises(ValueError):
        bill_image("gpt-4o", 100.5, 100)


@pytest.mark.parametrize("name", SHAPE_NAMES)
@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-sonnet-4-5", "gpt-5.5", "gpt-4.1",
                                   "gemini-2.5-flash", "gemini-3.5-flash", "kimi-k2.5", "glm-4.5v"])
def test_full_frame_of_every_variant_bills_within_the_model_limits(name, model):
    size = get_shape(name).frame_size
    bill = bill_image(model, size, size)
    assert 0 < bill.tokens <= 10000 * 1.2
    assert bill.seen_width <= size and bill.seen_height <= size


def test_every_rule_row_has_source_date_and_confidence():
    for rule in pricing_table().rules:
        assert rule.source and rule.checked and rule.confidence


@pytest.mark.parametrize("mutation,message", [
    (lambda s: s.replace('method = "gemini_tiles"', 'method = "gemini_magic"'), "unknown method"),
    (lambda s: s.replace('multiplier = 2.46\nsource = "https://platform.openai.com/docs/guides/images-vision#calculating-costs (gpt-4.1-nano', 'multiplier = -2.46\nsource = "https://platform.openai.com/docs/guides/images-vision#calculating-costs (gpt-4.1-nano'), "non-negative"),
    (lambda s: s.replace('confidence = "estimate"\n\n[[image_rules]]\nid = "glm-patches"', 'confidence = "guess"\n\n[[image_rules]]\nid = "glm-patches"'), "confidence"),
    (lambda s: s.replace('family_default = "google"\n', ''), "family_default for google"),
])
def test_pricing_table_is_validated_on_load(mutation, message):
    raw = resources.files("snapcompact.pricing").joinpath("pricing.toml").read_text()
    parse_pricing_table(raw)
    mutated = mutation(raw)
    assert mutated != raw
    with pytest.raises(ValueError, match=message):
        parse_pricing_table(mutated)


# --- text tokens ------------------------------------------------------------------------------

def test_text_tokens_exact_for_openai_models_offline():
    got = count_text_tokens("hello world", "gpt-5.5")
    assert got.exact and got.method == "exact:tiktoken:o200k_base"
    assert got.tokens == 2  # o200k_base: "hello", " world"
    old = count_text_tokens("hello world", "gpt-4-turbo")
    assert old.exact and old.encoding == "cl100k_base" and old.tokens == 2


def test_without_the_tokenizer_file_the_fallback_counter_is_named_once(tmp_path, monkeypatch,
                                                                        caplog):
    """A library-only install (no litellm, whose wheel bundles tiktoken's BPE files): gpt-5.5's
    o200k_base cannot load offline, so its text is counted as ceil(chars / 4); the count says
    so, and one warning names the counter and the fix."""
    from snapcompact.pricing import text_tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache: no BPE file
    text_tokens._encoding.cache_clear()
    text_tokens._fell_back.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="snapcompact.pricing.text_tokens"):
            got = [count_text_tokens("hello world, hello again", "gpt-5.5") for _ in range(3)]
    finally:
        text_tokens._encoding.cache_clear()
        text_tokens._fell_back.cache_clear()
    assert {(g.tokens, g.method, g.exact) for g in got} == {(6, "estimate:chars/4", False)}
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1, notes  # once, not once per count
    assert "gpt-5.5: its tokenizer o200k_base is not available offline" in notes[0]
    assert "counted by estimate:chars/4" in notes[0] and "[evals]" in notes[0]
    assert "TIKTOKEN_CACHE_DIR" in notes[0]


def test_text_tokens_are_labelled_estimates_elsewhere():
    text = "The quick brown fox jumps over the lazy dog. " * 20
    for model in ("claude-sonnet-4-5", "gemini-3.5-flash", "kimi-k2.5", None):
        got = count_text_tokens(text, model)
        assert not got.exact and got.method.startswith("estimate:")
        assert len(text) / 8 < got.tokens < len(text) / 2
    assert count_text_tokens("", "gpt-5").tokens == 0
    with pytest.raises(ValueError):
        count_text_tokens(b"bytes", "gpt-5")
