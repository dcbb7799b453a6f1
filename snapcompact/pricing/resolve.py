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

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Mapping

from snapcompact.core import Shape, check_frame_size, get_shape
from snapcompact.pricing.billing import family_image_detail, frame_token_estimate
from snapcompact.pricing.model_table import (
    TABLES,
    Table,
    api_family,
    api_for,
    is_claude_high_res,
    matching_rule,
    shape_rules,
)
from snapcompact.text import cjk_heavy, scan_renderability

# ---------------------------------------------------------------------------------------------
# Resolution


@dataclass(frozen=True)
class IdealShape:
    """The measured shape of a model line: its name, frame size (None = research size), rule."""

    name: str
    frame_size: int | None
    rule: str


def ideal_shape(model_id: str, table: Table = "seed") -> IdealShape | None:
    """Measured shape for ``model_id``, or None when the line was never measured."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r} (known: {', '.join(TABLES)})")
    if not isinstance(model_id, str):
        raise ValueError(f"model id must be a string, got {model_id!r}")
    rules = shape_rules()
    if is_claude_high_res(model_id, rules):
        return IdealShape(rules.high_res_shape, rules.high_res_frame_size, "claude-high-res")
    rule = matching_rule(model_id, rules)
    if rule is None:
        return None
    name = rule.shape if table == "seed" else rule.reference_shape
    size = rule.frame_size
    if table == "reference" and name != rule.shape:
        size = None
    return IdealShape(name, size, rule.name)


#: How a resolution that matched no model rule starts its ``rule`` (see ``ResolvedShape.fallback``).
_UNMEASURED = "unmeasured model"


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
    def name(self) -> str:
        """Name of the resolved shape."""
        return self.shape.name

    @property
    def fallback(self) -> str | None:
        """Why the shape is a family default (the model id matched no rule), or None."""
        if self.forced or not self.rule.startswith(_UNMEASURED):
            return None
        return f"{self.model_id!r} matches no model rule: {self.rule} ({self.name})"

    @property
    def frame_size(self) -> int:
        """Frame side in pixels of the resolved shape."""
        return self.shape.frame_size

    def to_json(self) -> dict[str, Any]:
        """The resolution as a flat JSON record: geometry, billing family, estimate, reason."""
        s = self.shape
        return {
            "shape": s.name, "font": s.font, "cell_width": s.cell_width,
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
        shape=shape, family=family,
        frame_token_estimate=frame_token_estimate(family, shape.frame_size),
        image_detail=family_image_detail(family), rule=rule, model_id=model_id, api=api,
        provider=provider, forced=forced)


def resolve_shape(
    model_id: str,
    api: str | None = None,
    provider: str | None = None,
    shape: str | None = "auto",
    frame_size: int | None = None,
    table: Table = "seed",
) -> ResolvedShape:
    """The frame shape for ``model_id`` over ``api`` (or ``provider``'s usual API).

    ``shape`` other than "auto" forces that named (or parametric) shape at its own research
    frame size, re-priced for the carrying API. ``frame_size`` overrides the frame side (and the
    estimate follows).
    """
    if not isinstance(model_id, str):
        raise ValueError(f"model id must be a string, got {model_id!r}")
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r} (known: {', '.join(TABLES)})")
    if frame_size is not None:
        check_frame_size(frame_size)
    if all(v is None or isinstance(v, str) for v in (api, provider, shape)):
        return _resolved(model_id, api, provider, shape, frame_size, table)
    return _resolve(model_id, api, provider, shape, frame_size, table)


#: A compaction replay asks for the same model's shape several times per maintenance pass; the
#: answer depends only on the arguments and the shipped tables (ResolvedShape is frozen).
@lru_cache(maxsize=256)
def _resolved(model_id: str, api: str | None, provider: str | None, shape: str | None,
              frame_size: int | None, table: Table) -> ResolvedShape:
    return _resolve(model_id, api, provider, shape, frame_size, table)


def _resolve(model_id: str, api: str | None, provider: str | None, shape: str | None,
             frame_size: int | None, table: Table) -> ResolvedShape:
    wire = api_for(api, provider)
    family = api_family(wire)
    if shape not in (None, "auto"):
        return _priced(get_shape(shape, frame_size), family, f"forced shape {shape}", model_id,
                       wire, provider, True)
    ideal = ideal_shape(model_id, table)
    if ideal is None:
        fams = (shape_rules().family_shapes if table == "seed"
                else shape_rules().reference_family_shapes)
        name, size = fams[family], None
        rule = f"{_UNMEASURED}: {family} family default"
    else:
        name, size, rule = ideal.name, ideal.frame_size, f"model rule {ideal.rule}"
    return _priced(get_shape(name, frame_size if frame_size is not None else size), family, rule,
                   model_id, wire, provider, False)


def resolve_shape_for_text(
    text: str,
    model_id: str,
    api: str | None = None,
    provider: str | None = None,
    shape: str | None = "auto",
) -> ResolvedShape:
    """Like ``resolve_shape``, but fall back to the TrueType Silver shape when the text needs it.

    Explicit shapes are kept. Otherwise, when the resolved bitmap shape cannot render the text
    safely (too many ``?`` fallbacks) or the text is CJK-heavy, the Silver shape (same billing
    family, its own 1568 px frame) is used if it renders the text safely.
    """
    return _resolve_with_silver(model_id, api, provider, shape,
                                lambda font: _is_safe(scan_renderability(text, font)),
                                lambda: cjk_heavy(text))


def resolve_shape_for_scan(
    counts: Any,
    model_id: str,
    api: str | None = None,
    provider: str | None = None,
    shape: str | None = "auto",
) -> ResolvedShape:
    """:func:`resolve_shape_for_text` of the text ``counts`` (a ``snapcompact.text.ScanCounts``
    covering the resolved shape's font and Silver's) were counted from."""
    return _resolve_with_silver(model_id, api, provider, shape,
                                lambda font: counts.renderability(font).safe, counts.cjk_heavy)


def _resolve_with_silver(model_id: str, api: str | None, provider: str | None,
                         shape: str | None, safe: Callable[[str], bool],
                         cjk: Callable[[], bool]) -> ResolvedShape:
    """The shape for a text judged by ``safe`` (renders in this font) and ``cjk`` (CJK-heavy):
    an explicit shape as asked, else the model's, or Silver when the text needs it."""
    resolved = resolve_shape(model_id, api=api, provider=provider, shape=shape)
    if shape not in (None, "auto"):
        return resolved
    silver = resolve_shape(model_id, api=api, provider=provider, shape="silver16-bw")
    silver_safe = safe(silver.shape.font)
    if not safe(resolved.shape.font):
        return (_with_rule(silver, "unsafe text for the bitmap font: silver") if silver_safe
                else resolved)
    if resolved.shape.font != "silver" and silver_safe and cjk():
        return _with_rule(silver, "CJK-heavy text: silver")
    return resolved


def _is_safe(scan: object) -> bool:
    if isinstance(scan, Mapping):
        return bool(scan["safe"])
    return bool(getattr(scan, "safe"))


def _with_rule(resolved: ResolvedShape, rule: str) -> ResolvedShape:
    return replace(resolved, rule=rule, forced=False)
