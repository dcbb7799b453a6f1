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

import math
from functools import lru_cache
from importlib import resources

from snapcompact.pricing.model_table import FAMILIES
from snapcompact.pricing.pricing_rows import (  # noqa: F401  (re-exported: billing's API)
    CONFIDENCES,
    METHODS,
    FamilyEstimate,
    ImageRule,
    PricingTable,
    RequestLimit,
    parse_pricing_table,
)

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
# Request limits


def request_limit(provider: str) -> RequestLimit | None:
    """Documented request/image limits of ``provider`` (None when none are recorded)."""
    return pricing_table().limits.get(provider)
