"""The providers' image formulas: one function per ``method`` a ``pricing.toml`` image rule names.

Why a module of its own: each vendor bills an image by its own arithmetic (Anthropic by 28 px
patches or by area, OpenAI by 512 px tiles or 32 px patches, Google by a fixed budget per
media resolution or by tiles), after its own resize. The numbers (patch sizes, caps, budgets)
are data in ``pricing.toml``, each with its source; this module holds only the arithmetic, so a
rule changes by editing the table and a formula by editing one function here.
:func:`snapcompact.billing.image.bill_image` picks the rule and calls the formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

from snapcompact.pricing import ImageRule

__all__ = ["METHOD_FORMULAS", "Outcome"]


@dataclass(frozen=True)
class Outcome:
    """What one formula found: the size the model sees, its tokens, the arithmetic as text."""

    seen: tuple[int, int]
    tokens: int
    rule: str
    notes: tuple[str, ...] = ()


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


def _anthropic_patches(rule: ImageRule, w: int, h: int, detail: str | None) -> Outcome:
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
    return Outcome(seen, tokens, text, notes)


def _anthropic_area(rule: ImageRule, w: int, h: int, detail: str | None) -> Outcome:
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
    return Outcome(seen, tokens, text, _ignored_detail(rule, detail))


def _openai_tiles(rule: ImageRule, w: int, h: int, detail: str | None) -> Outcome:
    p = rule.params
    base, per_tile, tile = p["base_tokens"], p["tile_tokens"], p["tile"]
    if detail == "low":
        return Outcome((min(w, 512), min(h, 512)), base, f"detail low: fixed {base}",
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
    return Outcome(seen, base + per_tile * tiles, text, notes)


def _openai_patches(rule: ImageRule, w: int, h: int, detail: str | None) -> Outcome:
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
    return Outcome(seen, tokens, text, tuple(notes))


_GEMINI_LEVEL = {None: None, "auto": None, "low": "low", "medium": "medium", "high": "high",
                 "original": "ultra_high", "ultra_high": "ultra_high"}


def _gemini_fixed(rule: ImageRule, w: int, h: int, detail: str | None) -> Outcome:
    p = rule.params
    level = _GEMINI_LEVEL[detail] or p["default"]
    tokens = int(p[level])
    notes: tuple[str, ...] = (
        "fixed budget per image; the resolution the model works at is not published, "
        "seen size is the size sent",
    )
    if detail == "original":
        notes += ("detail original mapped to media_resolution ULTRA_HIGH",)
    return Outcome((w, h), tokens, f"media_resolution {level.upper()}: fixed {tokens}", notes)


def _gemini_tiles(rule: ImageRule, w: int, h: int, detail: str | None) -> Outcome:
    p = rule.params
    notes = _ignored_detail(rule, detail)
    if w <= p["small_edge"] and h <= p["small_edge"]:
        return Outcome((w, h), int(p["small_tokens"]),
                       f"both sides <= {p['small_edge']} px: {p['small_tokens']}", notes)
    tiles = _patches(w, h, p["tile"])
    text = (f"{p['tile_tokens']} * ceil({w}/{p['tile']})*ceil({h}/{p['tile']}) = "
            f"{p['tile_tokens']}*{tiles} (tile count estimated)")
    return Outcome((w, h), int(p["tile_tokens"]) * tiles, text,
                   notes + ("tiles are crops/rescales of the image; seen size not published",))


def _ignored_detail(rule: ImageRule, detail: str | None) -> tuple[str, ...]:
    if detail in (None, "auto"):
        return ()
    return (f"detail {detail!r} has no effect on {rule.vendor} image billing",)


#: ``pricing.toml`` method name -> its formula (every method the table accepts has one).
METHOD_FORMULAS: Mapping[str, Callable[[ImageRule, int, int, str | None], Outcome]] = {
    "anthropic_patches": _anthropic_patches,
    "anthropic_area": _anthropic_area,
    "openai_tiles": _openai_tiles,
    "openai_patches": _openai_patches,
    "gemini_fixed": _gemini_fixed,
    "gemini_tiles": _gemini_tiles,
}
