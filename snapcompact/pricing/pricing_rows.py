"""``pricing.toml`` read into typed records: per-family estimates, image rules, request limits.

Why a module of its own: the table is data with its own rules (every rule row names its source,
date checked and confidence; exactly one rule per API family is that family's default), and a
bad row must fail loudly when the table loads, naming the row, long before any image is
billed.  :mod:`snapcompact.pricing.billing` holds the formulas that read these records and
loads the shipped table; this module only parses and checks it.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from snapcompact.pricing.model_table import FAMILIES, is_claude_high_res

METHODS: tuple[str, ...] = (
    "anthropic_patches", "anthropic_area", "openai_tiles", "openai_patches", "gemini_fixed",
    "gemini_tiles",
)
CONFIDENCES: tuple[str, ...] = ("documented", "secondary", "reference", "estimate")



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
    return PricingTable(estimates=_estimates(data.get("estimate", {})),
                        rules=_image_rules(data.get("image_rules", [])),
                        limits=_request_limits(data.get("request_limits", [])),
                        sha256=hashlib.sha256(text.encode()).hexdigest())


def _estimates(raw_est: Mapping[str, Any]) -> dict[str, FamilyEstimate]:
    """One ``[estimate.<family>]`` per billing family (``same_as`` copies another's numbers)."""
    estimates: dict[str, FamilyEstimate] = {}
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
    return estimates


def _image_rules(rows: list[dict[str, Any]]) -> tuple[ImageRule, ...]:
    """The ``[[image_rules]]`` rows in order: ids unique, one family default per API family."""
    rules: list[ImageRule] = []
    seen_ids: set[str] = set()
    defaults: set[str] = set()
    for i, row in enumerate(rows):
        rid = row.get("id", f"#{i}")
        if rid in seen_ids:
            raise ValueError(f"pricing table: image rule {rid!r}: duplicate id")
        seen_ids.add(rid)
        rule = _image_rule(row, rid)
        fam = rule.family_default
        if fam is not None:
            if fam not in FAMILIES or fam in defaults:
                raise ValueError(f"pricing table: image rule {rule.id!r}: family_default {fam!r} "
                                 "unknown or repeated")
            defaults.add(fam)
        rules.append(rule)
    for fam in ("anthropic", "openai", "google"):
        if fam not in defaults:
            raise ValueError(f"pricing table: no image rule is the family_default for {fam}")
    return tuple(rules)


def _image_rule(row: Mapping[str, Any], rid: str) -> ImageRule:
    """One image rule row checked: its method's parameters, provenance, and how it matches."""
    where = f"pricing table: image rule {rid!r}"
    method = row.get("method")
    if method not in METHODS:
        raise ValueError(f"{where}: unknown method {method!r} (known: {', '.join(METHODS)})")
    params = _rule_params(where, method, row)
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
    return ImageRule(
        id=rid, vendor=str(row.get("vendor", "")), method=method, params=params,
        patterns=patterns, selector=selector, family_default=row.get("family_default"),
        source=row["source"], checked=str(row["checked"]), confidence=row["confidence"],
        notes=row.get("notes", ""))


def _rule_params(where: str, method: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's method parameters (every key that is not a rule key): each one the method
    needs present, each a non-negative number (``default`` names a level instead)."""
    params = {k: v for k, v in row.items() if k not in _RULE_KEYS}
    missing = [k for k in _REQUIRED_PARAMS[method] if k not in params]
    if missing:
        raise ValueError(f"{where}: method {method} needs {', '.join(missing)}")
    for key, value in params.items():
        if key == "default":
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{where}: {key} must be a non-negative number, got {value!r}")
    return params


def _request_limits(rows: list[dict[str, Any]]) -> dict[str, RequestLimit]:
    """The ``[[request_limits]]`` rows by provider; keys beyond the known ones kept as extra."""
    limits: dict[str, RequestLimit] = {}
    known = {"provider", "max_image_bytes", "max_request_bytes", "max_images", "source",
             "checked", "confidence"}
    for row in rows:
        provider = row.get("provider")
        if not provider or provider in limits:
            raise ValueError("pricing table: request limit with missing/duplicate provider "
                             f"{provider!r}")
        limits[provider] = RequestLimit(
            provider=provider, max_image_bytes=row.get("max_image_bytes"),
            max_request_bytes=row.get("max_request_bytes"), max_images=row.get("max_images"),
            source=row.get("source", ""), checked=str(row.get("checked", "")),
            confidence=row.get("confidence", "estimate"),
            extra={k: v for k, v in row.items() if k not in known})
    return limits
