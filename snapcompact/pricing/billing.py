"""The pricing table and production's per-frame estimate: what ``pricing.toml`` says.

Why here: production must reserve context before it renders anything, so every resolved shape
carries a cheap, conservative per-frame estimate for its billing family (the reference's
formulas, always for a square frame): :func:`frame_token_estimate`, read by shape resolution
and the archive, below any bill. The table also holds the providers' image rules (parsed here
into :class:`ImageRule` rows, each with its source, date checked and confidence) and their
request limits.

What a provider really *bills* for an image, a request, a cached prefix or a compaction call
is worked out in :mod:`snapcompact.billing` (``bill_image`` applies these rules); this module
holds no bill formula.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Mapping

from snapcompact.pricing.model_table import FAMILIES, is_claude_high_res

METHODS: tuple[str, ...] = (
    "anthropic_patches", "anthropic_area", "openai_tiles", "openai_patches", "gemini_fixed",
    "gemini_tiles",
)
CONFIDENCES: tuple[str, ...] = ("documented", "secondary", "reference", "estimate")


# ---------------------------------------------------------------------------------------------
# Table loading


@dataclass(frozen=True)
class FamilyEstimate:
    """Production per-frame estimate of one billing family (square frame)."""

    family: str
    method: str
    params: Mapping[str, Any]
    image_detail: str | None
    source: str


@dataclass(frozen=True)
class ImageRule:
    """One provider rule row of ``pricing.toml``."""

    id: str
    vendor: str
    method: str
    params: Mapping[str, Any]
    patterns: tuple[re.Pattern[str], ...]
    selector: str | None
    family_default: str | None
    source: str
    checked: str
    confidence: str
    notes: str = ""

    def matches(self, model_id: str) -> bool:
        """Whether the rule applies to ``model_id`` (by named selector, else by pattern)."""
        if self.selector is not None:
            return _SELECTORS[self.selector](model_id)
        return any(p.search(model_id) for p in self.patterns)


@dataclass(frozen=True)
class RequestLimit:
    """Per-provider request/image limits (bytes of base64 payload unless the source says not)."""

    provider: str
    max_image_bytes: int | None
    max_request_bytes: int | None
    max_images: int | None
    source: str
    checked: str
    confidence: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PricingTable:
    """``pricing.toml`` parsed: token estimates per family, image rules, request limits, digest."""

    estimates: Mapping[str, FamilyEstimate]
    rules: tuple[ImageRule, ...]
    limits: Mapping[str, RequestLimit]
    sha256: str


_SELECTORS: Mapping[str, Callable[[str], bool]] = {"claude-high-res": is_claude_high_res}

_RULE_KEYS = {"id", "vendor", "method", "models", "selector", "family_default", "source", "checked",
              "confidence", "notes"}
_REQUIRED_PARAMS: Mapping[str, tuple[str, ...]] = {
    "anthropic_patches": ("patch", "max_edge", "max_visual_tokens"),
    "anthropic_area": ("pixels_per_token", "max_edge", "max_tokens"),
    "openai_tiles": ("base_tokens", "tile_tokens", "tile", "fit_edge", "short_side"),
    "openai_patches": ("patch", "max_patches", "multiplier"),
    "gemini_fixed": ("low", "medium", "high", "ultra_high", "default"),
    "gemini_tiles": ("small_edge", "small_tokens", "tile", "tile_tokens"),
}


def parse_pricing_table(raw: bytes | str) -> PricingTable:
    """Parse and validate ``pricing.toml``; every problem is a ``ValueError`` naming the row."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"pricing table is not valid TOML: {exc}") from exc

    estimates: dict[str, FamilyEstimate] = {}
    raw_est = data.get("estimate", {})
    for family in FAMILIES:
        row = raw_est.get(family)
        if not isinstance(row, dict):
            raise ValueError(f"pricing table: missing [estimate.{family}]")
        if "same_as" in row:
            row = {**raw_est[row["same_as"]], "source": row.get("source", "")}
        method = row.get("method")
        if method == "patch_cap_margin":
            needed: tuple[str, ...] = ("patch", "max_patches", "margin")
        elif method == "fixed":
            needed = ("tokens",)
        else:
            raise ValueError(f"pricing table: [estimate.{family}] has unknown method {method!r}")
        missing = [k for k in needed if k not in row]
        if missing:
            raise ValueError(f"pricing table: [estimate.{family}] lacks {', '.join(missing)}")
        estimates[family] = FamilyEstimate(
            family=family, method=method, params={k: row[k] for k in needed},
            image_detail=row.get("image_detail") or None, source=str(row.get("source", "")))

    rules: list[ImageRule] = []
    seen_ids: set[str] = set()
    defaults: set[str] = set()
    for i, row in enumerate(data.get("image_rules", [])):
        rid = row.get("id", f"#{i}")
        where = f"pricing table: image rule {rid!r}"
        if rid in seen_ids:
            raise ValueError(f"{where}: duplicate id")
        seen_ids.add(rid)
        method = row.get("method")
        if method not in METHODS:
            raise ValueError(f"{where}: unknown method {method!r} (known: {', '.join(METHODS)})")
        params = {k: v for k, v in row.items() if k not in _RULE_KEYS}
        missing = [k for k in _REQUIRED_PARAMS[method] if k not in params]
        if missing:
            raise ValueError(f"{where}: method {method} needs {', '.join(missing)}")
        for key, value in params.items():
            if key == "default":
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{where}: {key} must be a non-negative number, got {value!r}")
        if row.get("confidence") not in CONFIDENCES:
            raise ValueError(f"{where}: confidence must be one of {', '.join(CONFIDENCES)}")
        for key in ("source", "checked"):
            if not row.get(key):
                raise ValueError(f"{where}: missing {key}")
        selector = row.get("selector")
        if selector is not None and selector not in _SELECTORS:
            raise ValueError(f"{where}: unknown selector {selector!r}")
        models = row.get("models", [])
        if selector is None and not models:
            raise ValueError(f"{where}: needs models or selector")
        try:
            patterns = tuple(re.compile(p, re.IGNORECASE) for p in models)
        except re.error as exc:
            raise ValueError(f"{where}: bad model pattern: {exc}") from exc
        fam = row.get("family_default")
        if fam is not None:
            if fam not in FAMILIES or fam in defaults:
                raise ValueError(f"{where}: family_default {fam!r} unknown or repeated")
            defaults.add(fam)
        rules.append(ImageRule(
            id=rid, vendor=str(row.get("vendor", "")), method=method, params=params,
            patterns=patterns, selector=selector, family_default=fam, source=row["source"],
            checked=str(row["checked"]), confidence=row["confidence"], notes=row.get("notes", "")))
    for fam in ("anthropic", "openai", "google"):
        if fam not in defaults:
            raise ValueError(f"pricing table: no image rule is the family_default for {fam}")

    limits: dict[str, RequestLimit] = {}
    for row in data.get("request_limits", []):
        provider = row.get("provider")
        if not provider or provider in limits:
            raise ValueError("pricing table: request limit with missing/duplicate provider "
                             f"{provider!r}")
        known = {"provider", "max_image_bytes", "max_request_bytes", "max_images", "source",
                 "checked", "confidence"}
        limits[provider] = RequestLimit(
            provider=provider, max_image_bytes=row.get("max_image_bytes"),
            max_request_bytes=row.get("max_request_bytes"), max_images=row.get("max_images"),
            source=row.get("source", ""), checked=str(row.get("checked", "")),
            confidence=row.get("confidence", "estimate"),
            extra={k: v for k, v in row.items() if k not in known})
    digest = hashlib.sha256(text.encode()).hexdigest()
    return PricingTable(estimates=estimates, rules=tuple(rules), limits=limits, sha256=digest)


@lru_cache(maxsize=1)
def pricing_toml_text() -> str:
    """The shipped ``pricing.toml``, read once per process (rules, limits and image budgets)."""
    return resources.files("snapcompact.pricing").joinpath("pricing.toml").read_text()


@lru_cache(maxsize=1)
def pricing_table() -> PricingTable:
    """The shipped ``pricing.toml``, parsed."""
    return parse_pricing_table(pricing_toml_text())


def pricing_table_sha256() -> str:
    """Hash of the pricing table, recorded with every eval result."""
    return pricing_table().sha256


# ---------------------------------------------------------------------------------------------
# Production estimate (per family, square frame)


def _check_family(family: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"unknown billing family {family!r} (known: {', '.join(FAMILIES)})")
    return family


def frame_token_estimate(family: str, frame_size: int) -> int:
    """Production per-frame token estimate for a square frame of side ``frame_size``."""
    est = pricing_table().estimates[_check_family(family)]
    if not isinstance(frame_size, int) or isinstance(frame_size, bool) or frame_size < 1:
        raise ValueError(f"frame size must be a positive integer, got {frame_size!r}")
    if est.method == "fixed":
        return int(est.params["tokens"])
    p = est.params
    patches = min(math.ceil(frame_size / p["patch"]) ** 2, p["max_patches"])
    # Round the product first: 4784 * 1.05 is 5023.2000000000001 in binary floating point.
    return math.ceil(round(patches * p["margin"], 6))


def family_image_detail(family: str) -> str | None:
    """The ``detail`` hint production sends with every frame for this family (or None)."""
    return pricing_table().estimates[_check_family(family)].image_detail


# ---------------------------------------------------------------------------------------------
# Request limits


def request_limit(provider: str) -> RequestLimit | None:
    """Documented request/image limits of ``provider`` (None when none are recorded)."""
    return pricing_table().limits.get(provider)
