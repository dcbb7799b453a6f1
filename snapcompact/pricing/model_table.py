"""The model table: which shape each model line reads best, which API bills it, Claude tiers.

Why a module of its own: both the resolver (model -> shape) and the image bills (which provider
rule applies, is this Claude on the high-resolution tier) read these facts, so they sit one floor
below both. The facts are data (``model_shapes.toml``, from the seed's "Snapcompact strategy",
with the reference's values beside the seed's where they differ); this module parses and checks it.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
import warnings
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal, Mapping

from snapcompact.core import NAMED_SHAPES, check_frame_size, rename_old_keys, renamed_keys

#: Billing families: how an API's provider turns an image into tokens.
FAMILIES: tuple[str, ...] = ("anthropic", "openai", "google", "unknown")

Table = Literal["seed", "reference"]
TABLES: tuple[str, ...] = ("seed", "reference")


@dataclass(frozen=True)
class ShapeRule:
    """One row of ``model_shapes.toml``: a model-id pattern and the shape it reads best."""

    name: str
    pattern: re.Pattern[str]
    shape: str
    frame_size: int | None
    reference_shape: str
    note: str


@dataclass(frozen=True)
class ShapeTable:
    """``model_shapes.toml`` parsed: wire APIs, family defaults and the per-model rules."""

    apis: Mapping[str, str]
    provider_apis: Mapping[str, str]
    family_shapes: Mapping[str, str]
    reference_family_shapes: Mapping[str, str]
    high_res_shape: str
    high_res_frame_size: int
    high_res_families: tuple[str, ...]
    opus_min_version: tuple[int, ...]
    rules: tuple[ShapeRule, ...]
    sha256: str


def _known_shape(name: object, where: str) -> str:
    if not isinstance(name, str) or name not in NAMED_SHAPES:
        raise ValueError(f"model shape table: {where}: unknown shape {name!r}")
    return name


def _renamed_old_keys(data: dict) -> dict:
    """``data`` with the keys of an old spelling renamed (``snapcompact.core.old_spellings``),
    warning once (``DeprecationWarning``) naming them and their new spelling."""
    seen: set[str] = set()

    def renamed(table: object) -> object:
        if not isinstance(table, dict):
            return table
        out, old = rename_old_keys("model_table", table, "model shape table")
        seen.update(old)
        return out

    data = dict(renamed(data))  # type: ignore[call-overload]
    for section in ("family_shapes",):
        if isinstance(data.get(section), dict):
            data[section] = {k: renamed(v) for k, v in data[section].items()}
    data["claude_high_res"] = renamed(data.get("claude_high_res"))
    data["rules"] = [renamed(row) for row in data.get("rules", [])]
    if seen:
        new_keys = renamed_keys("model_table")
        warnings.warn("model shape table: old key(s) " + ", ".join(sorted(seen)) + "; use "
                      + ", ".join(new_keys[k] for k in sorted(seen)),
                      DeprecationWarning, stacklevel=3)
    return data


def parse_shape_rules(raw: bytes | str) -> ShapeTable:
    """Parse and validate ``model_shapes.toml``."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"model shape table is not valid TOML: {exc}") from exc
    data = _renamed_old_keys(data)
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
    raw_fams = data.get("family_shapes", {})
    for fam in FAMILIES:
        entry = raw_fams.get(fam)
        if entry is None:
            raise ValueError(f"model shape table: no family_shapes.{fam}")
        if isinstance(entry, dict):
            fam_seed[fam] = _known_shape(entry.get("shape"), f"family_shapes.{fam}")
            fam_ref[fam] = _known_shape(entry.get("reference_shape", entry.get("shape")),
                                        f"family_shapes.{fam}")
        else:
            fam_seed[fam] = fam_ref[fam] = _known_shape(entry, f"family_shapes.{fam}")
    hr = data.get("claude_high_res")
    if not isinstance(hr, dict):
        raise ValueError("model shape table: missing [claude_high_res]")
    version = hr.get("opus_min_version")
    if not (isinstance(version, list) and version and all(isinstance(v, int) for v in version)):
        raise ValueError("model shape table: claude_high_res.opus_min_version must be a list of "
                         "ints")
    rules = []
    for i, row in enumerate(data.get("rules", [])):
        name = row.get("name", f"#{i}")
        where = f"rule {name!r}"
        try:
            pattern = re.compile(row["pattern"], re.IGNORECASE)
        except (KeyError, re.error) as exc:
            raise ValueError(f"model shape table: {where}: bad or missing pattern ({exc})") from exc
        shape = _known_shape(row.get("shape"), where)
        size = row.get("frame_size")
        if size is not None:
            check_frame_size(size)
        rules.append(ShapeRule(
            name=name, pattern=pattern, shape=shape, frame_size=size,
            reference_shape=_known_shape(row.get("reference_shape", shape), where),
            note=row.get("note", "")))
    if not rules:
        raise ValueError("model shape table: no [[rules]]")
    return ShapeTable(
        apis=dict(apis), provider_apis=dict(provider_apis), family_shapes=fam_seed,
        reference_family_shapes=fam_ref,
        high_res_shape=_known_shape(hr.get("shape"), "claude_high_res"),
        high_res_frame_size=check_frame_size(hr.get("frame_size")),
        high_res_families=tuple(hr.get("families", ())), opus_min_version=tuple(version),
        rules=tuple(rules), sha256=hashlib.sha256(text.encode()).hexdigest())


@lru_cache(maxsize=1)
def shape_rules() -> ShapeTable:
    """The shipped ``model_shapes.toml``, parsed."""
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
    """A Claude model id split into its family token and version numbers."""

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


def is_claude_high_res(model_id: str, table: ShapeTable | None = None) -> bool:
    """Opus >= 4.7, Fable and Mythos read 1932 px frames (Anthropic's 4,784-patch tier).

    ``table``: the shape table to read the families and the Opus version from (the shipped one
    by default; the harness passes a proposed one)."""
    if not isinstance(model_id, str):
        return False
    parsed = parse_claude_id(model_id)
    if parsed is None:
        return False
    table = table if table is not None else shape_rules()
    if parsed.family in table.high_res_families:
        return True
    if parsed.family != "opus" or not parsed.version:
        return False
    width = max(len(parsed.version), len(table.opus_min_version))
    pad = lambda v: tuple(v) + (0,) * (width - len(v))  # noqa: E731
    return pad(parsed.version) >= pad(table.opus_min_version)


def matching_rule(model_id: str, table: ShapeTable | None = None) -> ShapeRule | None:
    """The first per-model rule of ``table`` (the shipped one by default) whose pattern matches
    ``model_id``, or None. The high-resolution Claude tier is checked before any rule
    (:func:`is_claude_high_res`): together they are the one model -> line matching, used by
    the resolver and by the harness's tables."""
    rules = table if table is not None else shape_rules()
    return next((rule for rule in rules.rules if rule.pattern.search(model_id)), None)
