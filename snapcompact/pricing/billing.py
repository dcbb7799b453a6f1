"""What an image costs: the production per-frame estimate and the providers' real rules.

Why two answers: production must reserve context before it renders anything, so every resolved
shape carries a cheap, conservative per-frame estimate for its billing family (the reference's
formulas, always for a square frame). Whether a shape *saves money* depends on what the provider
really bills for the frame actually sent, whose height hugs the text. ``bill_image`` answers that
for any width x height and model: the size the model sees after the provider's resize, the tokens,
the rule used and where the rule was read. The gap between the two is reported, never hidden.

Numbers live in ``pricing.toml`` (each rule with its source, date checked and confidence);
this module holds only the formulas. Unknown models fall back to the row marked as their API
family's default, and say so in ``rule``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Mapping

from snapcompact.pricing.model_table import (
    FAMILIES,
    api_family,
    api_for,
)
from snapcompact.pricing.pricing_rows import (  # noqa: F401  (re-exported: billing's API)
    CONFIDENCES,
    METHODS,
    FamilyEstimate,
    ImageRule,
    PricingTable,
    RequestLimit,
    parse_pricing_table,
)

DETAILS: tuple[str, ...] = ("auto", "low", "medium", "high", "original", "ultra_high")
#: Larger edges are not images any provider accepts; they signal a bug upstream of billing.
MAX_IMAGE_EDGE = 32768


# ---------------------------------------------------------------------------------------------
# Table loading (the table's records and parser: :mod:`snapcompact.pricing.pricing_rows`)


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
# Real provider rules


#: How a note says the bill's rule is a family default for a model no rule matched.
_FALLBACK = "fallback:"


@dataclass(frozen=True)
class ImageBill:
    """What one provider bills for one image, and how that was worked out."""

    model: str
    width: int
    height: int
    seen_width: int
    seen_height: int
    tokens: int
    rule: str
    rule_id: str
    source: str
    checked: str
    confidence: str
    detail: str | None
    family: str
    square_estimate: int
    notes: tuple[str, ...] = ()

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """The notes saying a default rule stood in for an unmeasured model (empty: none)."""
        return tuple(n for n in self.notes if n.startswith(_FALLBACK))

    @property
    def estimate_gap(self) -> int:
        """Square-frame production estimate minus these real tokens (positive = overestimate)."""
        return self.square_estimate - self.tokens

    def to_json(self) -> dict[str, Any]:
        """The bill as a flat JSON record."""
        return {
            "model": self.model, "width": self.width, "height": self.height,
            "seen_width": self.seen_width, "seen_height": self.seen_height,
            "tokens": self.tokens, "rule": self.rule, "rule_id": self.rule_id,
            "source": self.source, "checked": self.checked, "confidence": self.confidence,
            "detail": self.detail, "family": self.family,
            "square_estimate": self.square_estimate, "estimate_gap": self.estimate_gap,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class _Outcome:
    seen: tuple[int, int]
    tokens: int
    rule: str
    notes: tuple[str, ...] = ()


def _check_edge(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"image {name} must be an integer number of pixels, got {value!r}")
    if value < 1:
        raise ValueError(f"image {name} must be at least 1 px, got {value}")
    if value > MAX_IMAGE_EDGE:
        raise ValueError(f"image {name} of {value} px is absurd (limit {MAX_IMAGE_EDGE} px)")
    return value


def _patches(w: int, h: int, patch: int) -> int:
    return math.ceil(w / patch) * math.ceil(h / patch)


def _scaled(w: int, h: int, long_edge: int) -> tuple[int, int]:
    """Aspect-preserving size whose long edge is ``long_edge`` (short edge rounded, >= 1)."""
    if w >= h:
        return long_edge, max(1, round(h * long_edge / w))
    return max(1, round(w * long_edge / h)), long_edge


def _largest_fit(w: int, h: int, start: int, fits: Callable[[int, int], bool]) -> tuple[int, int]:
    """Largest aspect-preserving size with long edge <= ``start`` that satisfies ``fits``."""
    lo, hi = 1, start
    best = _scaled(w, h, 1)
    while lo <= hi:
        mid = (lo + hi) // 2
        cand = _scaled(w, h, mid)
        if fits(*cand):
            best, lo = cand, mid + 1
        else:
            hi = mid - 1
    return best


def _check_input_edge(rule: ImageRule, w: int, h: int) -> None:
    max_input = rule.params.get("max_input_edge")
    if max_input and max(w, h) > max_input:
        raise ValueError(f"{rule.vendor} rejects images larger than {max_input}x{max_input} px "
                         f"(got {w}x{h})")


def _anthropic_patches(rule: ImageRule, w: int, h: int, detail: str | None) -> _Outcome:
    p = rule.params
    patch, max_edge, cap = p["patch"], p["max_edge"], p["max_visual_tokens"]
    _check_input_edge(rule, w, h)

    def fits(a: int, b: int) -> bool:
        return max(a, b) <= max_edge and _patches(a, b, patch) <= cap

    seen = (w, h) if fits(w, h) else _largest_fit(w, h, min(max(w, h), max_edge), fits)
    tokens = _patches(*seen, patch)
    cols, rows = math.ceil(seen[0] / patch), math.ceil(seen[1] / patch)
    text = f"ceil({seen[0]}/{patch})*ceil({seen[1]}/{patch}) = {cols}*{rows}"
    if seen != (w, h):
        text += f" after resizing {w}x{h} to fit {max_edge} px long edge and {cap} visual tokens"
    notes = _ignored_detail(rule, detail)
    return _Outcome(seen, tokens, text, notes)


def _anthropic_area(rule: ImageRule, w: int, h: int, detail: str | None) -> _Outcome:
    p = rule.params
    ppt, max_edge, cap = p["pixels_per_token"], p["max_edge"], p["max_tokens"]
    _check_input_edge(rule, w, h)
    seen = (w, h)
    if max(w, h) > max_edge or w * h / ppt > cap:
        scale = min(max_edge / max(w, h), math.sqrt(cap * ppt / (w * h)))
        seen = (max(1, math.floor(w * scale)), max(1, math.floor(h * scale)))
    tokens = math.ceil(seen[0] * seen[1] / ppt)
    text = f"ceil({seen[0]}*{seen[1]}/{ppt})"
    if seen != (w, h):
        text += f" after scaling {w}x{h} down to a {max_edge} px long edge / ~{cap} tokens"
    return _Outcome(seen, tokens, text, _ignored_detail(rule, detail))


def _openai_tiles(rule: ImageRule, w: int, h: int, detail: str | None) -> _Outcome:
    p = rule.params
    base, per_tile, tile = p["base_tokens"], p["tile_tokens"], p["tile"]
    if detail == "low":
        return _Outcome((min(w, 512), min(h, 512)), base, f"detail low: fixed {base}",
                        ("detail low: the model sees a 512x512 px version",))
    if detail in ("original", "medium", "ultra_high"):
        raise ValueError(f"{rule.id}: detail {detail!r} is not supported by this model "
                         "(use low, high or auto)")
    sw, sh = float(w), float(h)
    if max(sw, sh) > p["fit_edge"]:
        s = p["fit_edge"] / max(sw, sh)
        sw, sh = sw * s, sh * s
    if min(sw, sh) > p["short_side"]:
        s = p["short_side"] / min(sw, sh)
        sw, sh = sw * s, sh * s
    seen = (max(1, round(sw)), max(1, round(sh)))
    tiles = _patches(*seen, tile)
    notes = ("detail auto treated as high",) if detail in (None, "auto") else ()
    text = (f"{base} + {per_tile}*tiles, tiles = ceil({seen[0]}/{tile})*ceil({seen[1]}/{tile}) "
            f"= {tiles} (fit {p['fit_edge']} px square, shortest side <= {p['short_side']} px)")
    return _Outcome(seen, base + per_tile * tiles, text, notes)


def _openai_patches(rule: ImageRule, w: int, h: int, detail: str | None) -> _Outcome:
    p = rule.params
    patch, mult = p["patch"], p["multiplier"]
    if detail == "original":
        if "max_patches_original" not in p:
            raise ValueError(f"{rule.id}: detail 'original' is not supported by this model")
        cap = p["max_patches_original"]
    elif detail == "low":
        raise ValueError(f"{rule.id}: no published token count for detail 'low' on this model")
    elif detail in ("medium", "ultra_high"):
        raise ValueError(f"{rule.id}: detail {detail!r} is not an OpenAI setting")
    else:
        cap = p["max_patches"]
    seen = (w, h)
    notes: list[str] = []
    if _patches(w, h, patch) > cap:
        shrink = math.sqrt(cap * patch * patch / (w * h))
        fw, fh = w * shrink, h * shrink
        # Scale further so the tighter side holds a whole number of patches (documented step).
        adjust = min(math.floor(fw / patch) / (fw / patch), math.floor(fh / patch) / (fh / patch))
        fw, fh = fw * adjust, fh * adjust
        seen = (max(1, math.floor(fw)), max(1, math.floor(fh)))
        while _patches(*seen, patch) > cap:  # guard against rounding at the boundary
            seen = (max(1, seen[0] - 1), max(1, round(seen[1] * (seen[0] - 1) / seen[0])))
    n = _patches(*seen, patch)
    tokens = round(n * mult)
    if detail in (None, "auto"):
        notes.append("detail auto treated as high")
    text = f"round({n} patches of {patch} px * {mult}), cap {cap} patches"
    if seen != (w, h):
        text += f" after shrinking {w}x{h}"
    return _Outcome(seen, tokens, text, tuple(notes))


_GEMINI_LEVEL = {None: None, "auto": None, "low": "low", "medium": "medium", "high": "high",
                 "original": "ultra_high", "ultra_high": "ultra_high"}


def _gemini_fixed(rule: ImageRule, w: int, h: int, detail: str | None) -> _Outcome:
    p = rule.params
    level = _GEMINI_LEVEL[detail] or p["default"]
    tokens = int(p[level])
    notes: tuple[str, ...] = (
        "fixed budget per image; the resolution the model works at is not published, "
        "seen size is the size sent",
    )
    if detail == "original":
        notes += ("detail original mapped to media_resolution ULTRA_HIGH",)
    return _Outcome((w, h), tokens, f"media_resolution {level.upper()}: fixed {tokens}", notes)


def _gemini_tiles(rule: ImageRule, w: int, h: int, detail: str | None) -> _Outcome:
    p = rule.params
    notes = _ignored_detail(rule, detail)
    if w <= p["small_edge"] and h <= p["small_edge"]:
        return _Outcome((w, h), int(p["small_tokens"]),
                        f"both sides <= {p['small_edge']} px: {p['small_tokens']}", notes)
    tiles = _patches(w, h, p["tile"])
    text = (f"{p['tile_tokens']} * ceil({w}/{p['tile']})*ceil({h}/{p['tile']}) = "
            f"{p['tile_tokens']}*{tiles} (tile count estimated)")
    return _Outcome((w, h), int(p["tile_tokens"]) * tiles, text,
                    notes + ("tiles are crops/rescales of the image; seen size not published",))


def _ignored_detail(rule: ImageRule, detail: str | None) -> tuple[str, ...]:
    if detail in (None, "auto"):
        return ()
    return (f"detail {detail!r} has no effect on {rule.vendor} image billing",)


_APPLY: Mapping[str, Callable[[ImageRule, int, int, str | None], _Outcome]] = {
    "anthropic_patches": _anthropic_patches,
    "anthropic_area": _anthropic_area,
    "openai_tiles": _openai_tiles,
    "openai_patches": _openai_patches,
    "gemini_fixed": _gemini_fixed,
    "gemini_tiles": _gemini_tiles,
}

_VENDOR_FAMILY = {"anthropic": "anthropic", "openai": "openai", "google": "google"}


def select_rule(model: str, api: str | None = None,
                provider: str | None = None) -> tuple[ImageRule, str]:
    """The provider rule that bills ``model``, and why it was chosen.

    The model's own rule wins (a Claude on Vertex is still processed by Anthropic's encoder);
    an unmatched id falls back to the default rule of the API's billing family, and with no known
    API to the anthropic default (the reference bills unknown families like anthropic).
    """
    if not isinstance(model, str):
        raise ValueError(f"model id must be a string, got {model!r}")
    table = pricing_table()
    for rule in table.rules:
        if model and rule.matches(model):
            return rule, f"model id matches {rule.id}"
    family = api_family(api_for(api, provider))
    fallback = "anthropic" if family == "unknown" else family
    rule = next(r for r in table.rules if r.family_default == fallback)
    return rule, f"{_FALLBACK} unmeasured model {model!r} on {family} family -> {rule.id}"


def bill_image(
    model: str,
    width: int,
    height: int,
    detail: str | None = None,
    api: str | None = None,
    provider: str | None = None,
) -> ImageBill:
    """Tokens ``model`` is billed for one ``width`` x ``height`` image (see module docstring)."""
    w, h = _check_edge("width", width), _check_edge("height", height)
    if detail is not None and detail not in DETAILS:
        raise ValueError(f"unknown detail {detail!r} (known: {', '.join(DETAILS)})")
    rule, why = select_rule(model, api, provider)
    outcome = _APPLY[rule.method](rule, w, h, detail)
    family = api_family(api_for(api, provider))
    if family == "unknown" and api is None and provider is None:
        family = _VENDOR_FAMILY.get(rule.vendor, "unknown")
    notes = outcome.notes
    if why.startswith("fallback"):
        notes = (why,) + notes
    return ImageBill(
        model=model, width=w, height=h, seen_width=outcome.seen[0], seen_height=outcome.seen[1],
        tokens=int(outcome.tokens), rule=f"{rule.id}: {outcome.rule}", rule_id=rule.id,
        source=rule.source, checked=rule.checked, confidence=rule.confidence, detail=detail,
        family=family, square_estimate=frame_token_estimate(family, w), notes=notes)


def request_limit(provider: str) -> RequestLimit | None:
    """Documented request/image limits of ``provider`` (None when none are recorded)."""
    return pricing_table().limits.get(provider)
