"""Model id -> frame shape, priced for the API that carries the request.

Why from the model id: which shape a model reads best (and at what frame size) was measured per
model line, and a Claude served through Vertex, Bedrock or OpenRouter reads with the same eyes.
Billing, though, is whatever the carrying API charges, so the price always follows the wire API.
Unmeasured models fall back to their API family's shape.

The table is data (``model_shapes.toml``, from the seed's "Snapcompact strategy"); where the seed
differs from the reference implementation the reference value is kept beside it, so
``table="reference"`` reproduces ``upstream-frames resolve`` and tests can list the differences.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal, Mapping

from snapcompact.pricing.billing import FAMILIES, family_image_detail, frame_token_estimate
from snapcompact.core.shapes import SHAPE_VARIANTS, Shape, check_frame_size, get_shape

Table = Literal["seed", "reference"]
TABLES: tuple[str, ...] = ("seed", "reference")


@dataclass(frozen=True)
class ShapeRule:
    name: str
    pattern: re.Pattern[str]
    variant: str
    frame_size: int | None
    reference_variant: str
    note: str


@dataclass(frozen=True)
class ShapeTable:
    apis: Mapping[str, str]
    provider_apis: Mapping[str, str]
    family_variants: Mapping[str, str]
    reference_family_variants: Mapping[str, str]
    high_res_variant: str
    high_res_frame_size: int
    high_res_families: tuple[str, ...]
    opus_min_version: tuple[int, ...]
    rules: tuple[ShapeRule, ...]
    sha256: str


def _known_variant(name: object, where: str) -> str:
    if not isinstance(name, str) or name not in SHAPE_VARIANTS:
        raise ValueError(f"model shape table: {where}: unknown shape variant {name!r}")
    return name


def parse_shape_rules(raw: bytes | str) -> ShapeTable:
    """Parse and validate ``model_shapes.toml``."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"model shape table is not valid TOML: {exc}") from exc
    apis = data.get("apis", {})
    for api, fam in apis.items():
        if fam not in FAMILIES or fam == "unknown":
            raise ValueError(f"model shape table: api {api!r} maps to unknown family {fam!r}")
    provider_apis = data.get("provider_apis", {})
    for prov, api in provider_apis.items():
        if api not in apis:
            raise ValueError(f"model shape table: provider {prov!r} maps to unknown api {api!r}")
    fam_seed: dict[str, str] = {}
    fam_ref: dict[str, str] = {}
    raw_fams = data.get("family_variants", {})
    for fam in FAMILIES:
        entry = raw_fams.get(fam)
        if entry is None:
            raise ValueError(f"model shape table: no family_variants.{fam}")
        if isinstance(entry, dict):
            fam_seed[fam] = _known_variant(entry.get("variant"), f"family_variants.{fam}")
            fam_ref[fam] = _known_variant(entry.get("reference_variant", entry.get("variant")),
                                          f"family_variants.{fam}")
        else:
            fam_seed[fam] = fam_ref[fam] = _known_variant(entry, f"family_variants.{fam}")
    hr = data.get("claude_high_res")
    if not isinstance(hr, dict):
        raise ValueError("model shape table: missing [claude_high_res]")
    version = hr.get("opus_min_version")
    if not (isinstance(version, list) and version and all(isinstance(v, int) for v in version)):
        raise ValueError("model shape table: claude_high_res.opus_min_version must be a list of ints")
    rules = []
    for i, row in enumerate(data.get("rules", [])):
        name = row.get("name", f"#{i}")
        where = f"rule {name!r}"
        try:
            pattern = re.compile(row["pattern"], re.IGNORECASE)
        except (KeyError, re.error) as exc:
            raise ValueError(f"model shape table: {where}: bad or missing pattern ({exc})") from exc
        variant = _known_variant(row.get("variant"), where)
        size = row.get("frame_size")
        if size is not None:
            check_frame_size(size)
        rules.append(ShapeRule(
            name=name, pattern=pattern, variant=variant, frame_size=size,
            reference_variant=_known_variant(row.get("reference_variant", variant), where),
            note=row.get("note", "")))
    if not rules:
        raise ValueError("model shape table: no [[rules]]")
    return ShapeTable(
        apis=dict(apis), provider_apis=dict(provider_apis), family_variants=fam_seed,
        reference_family_variants=fam_ref,
        high_res_variant=_known_variant(hr.get("variant"), "claude_high_res"),
        high_res_frame_size=check_frame_size(hr.get("frame_size")),
        high_res_families=tuple(hr.get("families", ())), opus_min_version=tuple(version),
        rules=tuple(rules), sha256=hashlib.sha256(text.encode()).hexdigest())


@lru_cache(maxsize=1)
def shape_rules() -> ShapeTable:
    raw = resources.files("snapcompact.pricing").joinpath("model_shapes.toml").read_bytes()
    return parse_shape_rules(raw)


def model_shapes_sha256() -> str:
    """Hash of the model -> shape table, recorded with every eval result."""
    return shape_rules().sha256


# ---------------------------------------------------------------------------------------------
# Wire API and Claude identity


def api_for(api: str | None, provider: str | None = None) -> str | None:
    """The wire API of a request: ``api`` itself, else the provider's usual API, else None."""
    if api is not None and not isinstance(api, str):
        raise ValueError(f"api must be a string, got {api!r}")
    if provider is not None and not isinstance(provider, str):
        raise ValueError(f"provider must be a string, got {provider!r}")
    if api:
        return api
    if provider:
        return shape_rules().provider_apis.get(provider)
    return None


def api_family(api: str | None) -> str:
    """Billing family of a wire API; anything unlisted (or none) is ``unknown``."""
    if api is None:
        return "unknown"
    return shape_rules().apis.get(api, "unknown")


_CLAUDE_FAMILIES = ("opus", "sonnet", "haiku", "fable", "mythos")
_NUM = r"(\d{1,3})(?!\d)"
_AFTER = re.compile(rf"^[-_.]?{_NUM}(?:[-_.]{_NUM})?")
_BEFORE = re.compile(rf"(?<!\d){_NUM}(?:[-_.]{_NUM})?[-_.]?$")


@dataclass(frozen=True)
class ClaudeId:
    family: str
    version: tuple[int, ...]


def parse_claude_id(model_id: str) -> ClaudeId | None:
    """Family token and version of a Claude model id, or None when it is not a Claude id.

    Our approximation of the reference's catalog parser: lowercase, drop ``@...`` suffixes,
    find the family token, read the version right after it (else right before it); 8-digit
    dates are never version components. Handles ``claude-opus-4-7-20260416``,
    ``anthropic--claude-4.8-opus``, ``claude-opus-4-10``, ``CLAUDE-OPUS-5``.
    """
    low = model_id.lower().split("@", 1)[0]
    if "claude" not in low:
        return None
    best: tuple[int, str] | None = None
    for fam in _CLAUDE_FAMILIES:
        pos = low.find(fam, low.find("claude"))
        if pos < 0:
            pos = low.find(fam)
        if pos >= 0 and (best is None or pos < best[0]):
            best = (pos, fam)
    if best is None:
        return None
    pos, fam = best
    after = _AFTER.match(low[pos + len(fam):])
    before = _BEFORE.search(low[:pos])
    found = after or before
    version = tuple(int(g) for g in found.groups() if g is not None) if found else ()
    return ClaudeId(family=fam, version=version)


def is_claude_high_res(model_id: str) -> bool:
    """Opus >= 4.7, Fable and Mythos read 1932 px frames (Anthropic's 4,784-patch tier)."""
    if not isinstance(model_id, str):
        return False
    parsed = parse_claude_id(model_id)
    if parsed is None:
        return False
    table = shape_rules()
    if parsed.family in table.high_res_families:
        return True
    if parsed.family != "opus" or not parsed.version:
        return False
    width = max(len(parsed.version), len(table.opus_min_version))
    pad = lambda v: tuple(v) + (0,) * (width - len(v))  # noqa: E731
    return pad(parsed.version) >= pad(table.opus_min_version)


# ---------------------------------------------------------------------------------------------
# Resolution


@dataclass(frozen=True)
class IdealShape:
    """The measured shape of a model line: variant, frame size (None = research size), rule."""

    variant: str
    frame_size: int | None
    rule: str


def ideal_shape_variant(model_id: str, table: Table = "seed") -> IdealShape | None:
    """Measured shape for ``model_id``, or None when the line was never measured."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r} (known: {', '.join(TABLES)})")
    if not isinstance(model_id, str):
        raise ValueError(f"model id must be a string, got {model_id!r}")
    rules = shape_rules()
    if is_claude_high_res(model_id):
        return IdealShape(rules.high_res_variant, rules.high_res_frame_size, "claude-high-res")
    for rule in rules.rules:
        if rule.pattern.search(model_id):
            variant = rule.variant if table == "seed" else rule.reference_variant
            size = rule.frame_size
            if table == "reference" and variant != rule.variant:
                size = None
            return IdealShape(variant, size, rule.name)
    return None


@dataclass(frozen=True)
class ResolvedShape:
    """A shape ready to render and price: geometry, billing family, estimate and why."""

    shape: Shape
    family: str
    frame_token_estimate: int
    image_detail: str | None
    rule: str
    model_id: str
    api: str | None
    provider: str | None
    forced: bool

    @property
    def variant(self) -> str:
        return self.shape.name

    @property
    def frame_size(self) -> int:
        return self.shape.frame_size

    def to_json(self) -> dict[str, Any]:
        s = self.shape
        return {
            "variant": s.name, "font": s.font, "cell_width": s.cell_width,
            "cell_height": s.cell_height, "ink": s.ink, "line_repeat": s.line_repeat,
            "stretch": s.stretch, "columns": s.columns, "stopword_dim": s.stopword_dim,
            "frame_size": s.frame_size, "frame_token_estimate": self.frame_token_estimate,
            "image_detail": self.image_detail, "family": self.family, "rule": self.rule,
            "model": self.model_id, "api": self.api, "provider": self.provider,
            "forced": self.forced,
        }


def _priced(shape: Shape, family: str, rule: str, model_id: str, api: str | None,
            provider: str | None, forced: bool) -> ResolvedShape:
    return ResolvedShape(
        shape=shape, family=family, frame_token_estimate=frame_token_estimate(family, shape.frame_size),
        image_detail=family_image_detail(family), rule=rule, model_id=model_id, api=api,
        provider=provider, forced=forced)


def resolve_shape(
    model_id: str,
    api: str | None = None,
    provider: str | None = None,
    variant: str | None = "auto",
    frame_size: int | None = None,
    table: Table = "seed",
) -> ResolvedShape:
    """The frame shape for ``model_id`` over ``api`` (or ``provider``'s usual API).

    ``variant`` other than "auto" forces that variant at its own research frame size, re-priced
    for the carrying API. ``frame_size`` overrides the frame side (and the estimate follows).
    """
    if not isinstance(model_id, str):
        raise ValueError(f"model id must be a string, got {model_id!r}")
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r} (known: {', '.join(TABLES)})")
    if frame_size is not None:
        check_frame_size(frame_size)
    wire = api_for(api, provider)
    family = api_family(wire)
    if variant not in (None, "auto"):
        shape = get_shape(variant, frame_size)
        return _priced(shape, family, f"forced variant {variant}", model_id, wire, provider, True)
    ideal = ideal_shape_variant(model_id, table)
    if ideal is None:
        fams = shape_rules().family_variants if table == "seed" else shape_rules().reference_family_variants
        name, size = fams[family], None
        rule = f"unmeasured model: {family} family default"
    else:
        name, size, rule = ideal.variant, ideal.frame_size, f"model rule {ideal.rule}"
    shape = get_shape(name, frame_size if frame_size is not None else size)
    return _priced(shape, family, rule, model_id, wire, provider, False)


def resolve_shape_for_text(
    text: str,
    model_id: str,
    api: str | None = None,
    provider: str | None = None,
    variant: str | None = "auto",
) -> ResolvedShape:
    """Like ``resolve_shape``, but fall back to the TrueType Silver shape when the text needs it.

    Explicit variants are kept. Otherwise, when the resolved bitmap shape cannot render the text
    safely (too many ``?`` fallbacks) or the text is CJK-heavy, the Silver shape (same billing
    family, its own 1568 px frame) is used if it renders the text safely.
    """
    resolved = resolve_shape(model_id, api=api, provider=provider, variant=variant)
    if variant not in (None, "auto"):
        return resolved
    from snapcompact.text.normalize import cjk_heavy, scan_renderability  # lazy: heavy tables

    silver = resolve_shape(model_id, api=api, provider=provider, variant="silver16-bw")
    silver_safe = _is_safe(scan_renderability(text, silver.shape.font))
    if not _is_safe(scan_renderability(text, resolved.shape.font)):
        return _with_rule(silver, "unsafe text for the bitmap font: silver") if silver_safe else resolved
    if resolved.shape.font != "silver" and silver_safe and cjk_heavy(text):
        return _with_rule(silver, "CJK-heavy text: silver")
    return resolved


def _is_safe(scan: object) -> bool:
    if isinstance(scan, Mapping):
        return bool(scan["safe"])
    return bool(getattr(scan, "safe"))


def _with_rule(resolved: ResolvedShape, rule: str) -> ResolvedShape:
    from dataclasses import replace

    return replace(resolved, rule=rule, forced=False)
