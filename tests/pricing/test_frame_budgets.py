"""Frame and byte budgets: the seed policy (clamp to 8, OpenRouter 8, unknown 5) and the
reference numbers (recorded by tests/golden/resolve/make_golden.py; digest (k) items 72-75)."""

from __future__ import annotations

import json
import re

import pytest
from locations import GOLDEN

from snapcompact.pricing import (
    DEFAULT_PROVIDER_IMAGE_BUDGET,
    FRAME_DATA_BYTES_BUDGET,
    FRAME_DATA_BYTES_ESTIMATE,
    MAX_FRAMES,
    MAX_FRAMES_DEFAULT,
    REFERENCE_PROVIDER_IMAGE_BUDGETS,
    frame_fits_provider,
    max_frames_for_data_budget,
    provider_frame_budget,
    provider_image_budget,
    provider_request_limit,
)

GOLDEN = json.loads((GOLDEN / "resolve" / "reference.json").read_text())


@pytest.mark.parametrize("provider", sorted(GOLDEN["budgets"]))
def test_reference_policy_matches_upstream(provider):
    ref = GOLDEN["budgets"][provider]
    assert provider_image_budget(provider, policy="reference") == ref["image"]
    assert provider_frame_budget(provider, policy="reference") == ref["frame"]


def test_reference_constants_match_upstream():
    c = GOLDEN["constants"]
    assert MAX_FRAMES_DEFAULT == c["MAX_FRAMES_DEFAULT"]
    assert DEFAULT_PROVIDER_IMAGE_BUDGET == c["DEFAULT_PROVIDER_IMAGE_BUDGET"]
    assert FRAME_DATA_BYTES_ESTIMATE == c["FRAME_DATA_BYTES_ESTIMATE"]
    assert FRAME_DATA_BYTES_BUDGET == c["FRAME_DATA_BYTES_BUDGET"]
    assert max_frames_for_data_budget() == c["maxFramesForDataBudget"] == 17
    assert dict(REFERENCE_PROVIDER_IMAGE_BUDGETS) == c["PROVIDER_IMAGE_BUDGETS"]


@pytest.mark.parametrize("provider,frames", [
    # Seed: per-provider image cap clamped to 8; OpenRouter 8; unknown providers 5.
    ("anthropic", 8), ("openai", 8), ("google-vertex", 8), ("openrouter", 8), ("umans", 8),
    ("groq", 5), ("unknown-provider", 5), (None, 5),
])
def test_seed_frame_budget(provider, frames):
    assert provider_frame_budget(provider) == frames
    assert provider_frame_budget(provider) <= MAX_FRAMES


def test_seed_openrouter_image_cap_is_the_measured_hard_limit():
    assert provider_image_budget("openrouter") == 8
    assert provider_image_budget("openrouter", policy="reference") == 90


def test_digest_item_72_budgets():
    # openrouter 90, umans 10, unknown 5, openai-codex 200; frames: unknown 5, umans 10, anthropic 80.
    ref = dict(policy="reference")
    assert [provider_image_budget(p, **ref) for p in ("openrouter", "umans", "x", "openai-codex")] == [90, 10, 5, 200]
    assert [provider_frame_budget(p, **ref) for p in ("x", "umans", "anthropic")] == [5, 10, 80]


def test_digest_item_73_unreleased_api_fallback():
    pol = dict(policy="reference-unreleased")
    assert provider_image_budget("somebody", "anthropic-messages", **pol) == 90
    assert provider_image_budget("somebody", "google-vertex", **pol) == 200
    assert provider_image_budget("somebody", "openai-completions", **pol) == 5
    assert provider_image_budget("umans", "google-vertex", **pol) == 10  # provider entry wins
    # The seed ignores the API: unknown providers stay at 5.
    assert provider_image_budget("somebody", "anthropic-messages") == 5


def test_byte_limits_are_data_with_sources():
    anthropic = provider_request_limit("anthropic")
    assert anthropic.max_image_bytes == 5_000_000 and anthropic.max_request_bytes == 32_000_000
    assert "claude.com" in anthropic.source and anthropic.checked
    assert provider_request_limit("nobody") is None
    assert frame_fits_provider(FRAME_DATA_BYTES_ESTIMATE, "anthropic")
    assert not frame_fits_provider(6_000_000, "anthropic")
    assert frame_fits_provider(6_000_000, "nobody")


@pytest.mark.parametrize("call", [
    lambda: provider_image_budget(5),
    lambda: provider_frame_budget("x", policy="loose"),
    lambda: max_frames_for_data_budget(0),
    lambda: max_frames_for_data_budget(-1),
    lambda: frame_fits_provider(-3, "anthropic"),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


def test_small_byte_budget_still_allows_one_frame():
    assert max_frames_for_data_budget(1000) == 1
    assert max_frames_for_data_budget(340_000) == 2


def _budget_tables():
    import tomllib
    from importlib import resources

    raw = resources.files("snapcompact.pricing").joinpath("pricing.toml").read_text()
    return tomllib.loads(raw)


def test_image_budgets_sit_below_the_documented_provider_limits():
    # Anthropic documents 100 images per request; the reference budgets 90 (upstream digest).
    from snapcompact.pricing import provider_request_limit

    limit = provider_request_limit("anthropic")
    assert limit is not None and limit.max_images == 100
    assert REFERENCE_PROVIDER_IMAGE_BUDGETS["anthropic"] == 90


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["image_budgets"]["seed"].pop("source"), "image_budgets.seed has no source"),
        (lambda d: d["image_budgets"]["seed"].update(based_on="nope"), "based_on 'nope'"),
        (lambda d: d["image_budgets"]["reference"]["providers"].update(anthropic=0),
         "image_budgets.reference.providers.anthropic must be a positive integer"),
        (lambda d: d["image_budgets"].pop("reference-unreleased"), "must hold exactly"),
        (lambda d: d["image_budgets"]["seed"].update(max_images=3), "unknown keys ['max_images']"),
    ],
)
def test_a_bad_budget_row_is_refused_naming_it(mutate, message):
    from snapcompact.pricing.budgets import parse_image_budgets

    data = _budget_tables()
    mutate(data)
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_image_budgets(data)
