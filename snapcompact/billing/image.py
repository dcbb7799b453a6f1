"""What a provider bills for one image: the rule that applies to a model, and its answer.

Why here: production reserves a cheap per-frame estimate before it renders
(:func:`snapcompact.pricing.frame_token_estimate`); whether a frame *saves money* depends on what
the provider really bills for the frame actually sent, whose height hugs the text.
:func:`bill_image` answers that for any width x height and model: the size the model sees after
the provider's resize, the tokens, the rule used and where the rule was read. The gap between
the estimate and the bill is reported (``ImageBill.estimate_gap``), never hidden.

The rules are the ``[[image_rules]]`` rows of ``pricing.toml`` (read by
:func:`snapcompact.pricing.pricing_table`, each with its source, date checked and confidence);
the formulas are :mod:`.image_methods`. An unknown model falls back to the row marked as its
API family's default, and the bill says so in ``rule`` and ``notes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from snapcompact.billing.image_methods import METHOD_FORMULAS
from snapcompact.pricing import ImageRule, api_family, api_for, frame_token_estimate, pricing_table

__all__ = ["DETAILS", "MAX_IMAGE_EDGE", "ImageBill", "bill_image", "select_rule"]

#: The ``detail`` values a request may give an image (each provider reads some of them).
DETAILS: tuple[str, ...] = ("auto", "low", "medium", "high", "original", "ultra_high")
#: Larger edges are not images any provider accepts; they signal a bug upstream of billing.
MAX_IMAGE_EDGE = 32768


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


def _check_edge(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"image {name} must be an integer number of pixels, got {value!r}")
    if value < 1:
        raise ValueError(f"image {name} must be at least 1 px, got {value}")
    if value > MAX_IMAGE_EDGE:
        raise ValueError(f"image {name} of {value} px is absurd (limit {MAX_IMAGE_EDGE} px)")
    return value


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
    outcome = METHOD_FORMULAS[rule.method](rule, w, h, detail)
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

