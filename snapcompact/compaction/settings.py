"""Compaction settings: the seed's defaults, overridable per project from a TOML or JSON file.

Why a typed, validated block: the same numbers drive when compaction fires (threshold), how much
history survives verbatim (keep-recent budget), how aggressively old tool output is blanked
(pruning) and which strategy runs. A typo in a project file should fail loudly with the key's
dotted name, not silently fall back to a default.

File shape (either format; keys in camelCase as the reference writes them, or snake_case)::

    [compaction]
    strategy = "snapcompact"
    keepRecentTokens = 30000

    [branchSummary]
    enabled = true

    [pruning]
    protectTokens = 40000

    [snapcompact]
    shape = "auto"          # a shape name, a parametric "px-..." name, or {font = ..., ...}
    frameCharge = "billed"  # research knobs: see SnapcompactSettings

Only the keys present override the defaults; unknown keys are errors.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from snapcompact.core import NAMED_SHAPES, get_shape, parametric_shape

__all__ = [
    "DEFAULT_SETTINGS",
    "FRAME_CAP_BYTES",
    "FRAME_CHARGES",
    "MIDDLE_SHAPES",
    "STRATEGIES",
    "TEXT_TOKENIZERS",
    "BranchSummarySettings",
    "CompactionSettings",
    "PruneSettings",
    "Settings",
    "SnapcompactSettings",
    "discover_settings",
    "effective_reserve_tokens",
    "legacy_method_order",
    "load_settings",
    "merge_settings",
    "resolve_threshold_tokens",
    "settings_paths",
]

#: Strategies the pipeline implements (the seed's list).
STRATEGIES: tuple[str, ...] = ("context-full", "snapcompact", "handoff", "shake", "off")
_POLICIES = ("pinned", "foveated")
#: The coding agent's compaction methods (``compaction.methodOrder`` entries).
METHODS: tuple[str, ...] = ("remote", "snapcompact", "handoff", "soft", "shake")
#: The method list the agent migrates a legacy single ``compaction.strategy`` to.
_LEGACY_ORDERS: dict[str, tuple[str, ...]] = {
    "context-full": ("remote", "soft"),
    "handoff": ("handoff", "remote", "soft"),
    "shake": ("shake", "remote", "soft"),
    "snapcompact": ("snapcompact", "remote", "soft"),
    "off": (),
}


def legacy_method_order(strategy: str, remote_enabled: bool = True) -> tuple[str, ...]:
    """The list coding agent 18.3.4 migrates an old single ``compaction.strategy`` to
    (``config/settings.ts:2551-2600``): ``context-full`` is remote then soft; ``handoff``,
    ``shake`` and ``snapcompact`` run first with remote and soft behind them; ``off`` is empty.
    ``remoteEnabled = false`` removes remote."""
    if strategy not in _LEGACY_ORDERS:
        raise ValueError(f"compaction.strategy {strategy!r} has no method order (known: "
                         f"{', '.join(_LEGACY_ORDERS)})")
    return tuple(m for m in _LEGACY_ORDERS[strategy] if remote_enabled or m != "remote")
#: ``compaction.textTokenizer``: how message text is counted. ``auto`` = production's counter for
#: the model line (its catalog tokenizer family, else bytes/4), ``auto-fast`` = that family
#: approximated by o200k x a fitted scale, or a counter by name (text_counters.py).
TEXT_TOKENIZERS: tuple[str, ...] = ("auto", "auto-fast", "bytes4", "o200k", "cl100k", "claude-v3",
                                    "claude-v47", "claude-v5", "claude-v5-sonnet", "qwen3",
                                    "deepseek-v3", "kimi-k2", "glm5")
#: ``snapcompact.systemPrompt``: what of the system prompt inline imaging may send as frames.
SYSTEM_PROMPT_MODES: tuple[str, ...] = ("none", "agents-md", "all")


@dataclass(frozen=True)
class CompactionSettings:
    """``compaction.*``. ``threshold_percent``/``threshold_tokens`` of -1 mean "not set"."""

    enabled: bool = True
    strategy: str = "context-full"
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000
    auto_continue: bool = True
    remote_enabled: bool = True
    remote_endpoint: str | None = None
    threshold_percent: float = -1
    threshold_tokens: int = -1
    idle_enabled: bool = False
    idle_threshold_tokens: int = 200000
    idle_timeout_seconds: float = 300
    drop_useless: bool = True
    #: Switch to the model's configured larger-window ``promotion_target`` before compacting.
    context_promotion: bool = True
    #: ``compaction.methodOrder``: the coding agent's ordered methods (remote, snapcompact,
    #: handoff, shake, soft), tried in turn until one is accepted (``snapcompact.agent``).
    #: None = the agent's default order. ``strategy`` is the seed pipeline's single choice.
    method_order: tuple[str, ...] | None = None
    #: How message text is counted (one of :data:`TEXT_TOKENIZERS`).
    text_tokenizer: str = "auto"

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"compaction.strategy must be one of {', '.join(STRATEGIES)}, got "
                             f"{self.strategy!r}")
        _check_int("compaction.reserveTokens", self.reserve_tokens, minimum=0)
        _check_int("compaction.keepRecentTokens", self.keep_recent_tokens, minimum=1)
        _check_int("compaction.thresholdTokens", self.threshold_tokens, minimum=-1)
        _check_number("compaction.thresholdPercent", self.threshold_percent, minimum=-1)
        _check_int("compaction.idleThresholdTokens", self.idle_threshold_tokens, minimum=0)
        _check_number("compaction.idleTimeoutSeconds", self.idle_timeout_seconds, minimum=0)
        for name in ("enabled", "auto_continue", "remote_enabled", "idle_enabled", "drop_useless",
                     "context_promotion"):
            _check_bool(f"compaction.{_camel(name)}", getattr(self, name))
        if self.method_order is not None:
            if isinstance(self.method_order, str) or not all(
                    isinstance(m, str) for m in self.method_order):
                raise ValueError("compaction.methodOrder must be a list of method names, got "
                                 f"{self.method_order!r}")
            object.__setattr__(self, "method_order", tuple(self.method_order))
            unknown = [m for m in self.method_order if m not in METHODS]
            if unknown:
                raise ValueError(f"compaction.methodOrder: unknown method(s) {unknown}; known: "
                                 f"{', '.join(METHODS)}")
        if self.text_tokenizer not in TEXT_TOKENIZERS:
            raise ValueError("compaction.textTokenizer must be one of "
                             f"{', '.join(TEXT_TOKENIZERS)}, got {self.text_tokenizer!r}")
        if self.remote_endpoint is not None and not isinstance(self.remote_endpoint, str):
            raise ValueError("compaction.remoteEndpoint must be a string, got "
                             f"{self.remote_endpoint!r}")


@dataclass(frozen=True)
class BranchSummarySettings:
    """``branchSummary.*``: summarize the abandoned side on tree navigation."""

    enabled: bool = False
    reserve_tokens: int = 16384

    def __post_init__(self) -> None:
        _check_bool("branchSummary.enabled", self.enabled)
        _check_int("branchSummary.reserveTokens", self.reserve_tokens, minimum=0)


@dataclass(frozen=True)
class PruneSettings:
    """``pruning.*`` (the reference's ``DEFAULT_PRUNE_CONFIG``)."""

    enabled: bool = True
    protect_tokens: int = 40000
    minimum_savings: int = 20000
    min_prune_tokens: int = 50
    protected_tools: tuple[str, ...] = ("skill",)
    prune_useless: bool = True
    #: Older reads of a file a newer read covers are blanked too (the agent's readToolSupersedeKey).
    supersede_reads: bool = True
    #: Threshold prune leaves results followed by more message tokens than this alone (the warm
    #: prompt-cache prefix); None: no such guard. The coding agent passes 8,000.
    cache_warm_suffix_tokens: int | None = None
    #: Per-turn stale-result pass: prune a candidate only when the suffix after it is this small ...
    cache_suffix_tokens: int = 8000
    #: ... or when the session has idled past the provider prompt-cache lifetime (seconds).
    cache_idle_seconds: float = 1800

    def __post_init__(self) -> None:
        object.__setattr__(self, "protected_tools", tuple(self.protected_tools))
        _check_bool("pruning.enabled", self.enabled)
        _check_bool("pruning.pruneUseless", self.prune_useless)
        _check_bool("pruning.supersedeReads", self.supersede_reads)
        if self.cache_warm_suffix_tokens is not None:
            _check_int("pruning.cacheWarmSuffixTokens", self.cache_warm_suffix_tokens, minimum=0)
        for name in ("protect_tokens", "minimum_savings", "min_prune_tokens",
                     "cache_suffix_tokens"):
            _check_int(f"pruning.{_camel(name)}", getattr(self, name), minimum=0)
        _check_number("pruning.cacheIdleSeconds", self.cache_idle_seconds, minimum=0)
        if not all(isinstance(t, str) for t in self.protected_tools):
            raise ValueError("pruning.protectedTools must be a list of tool names")


@dataclass(frozen=True)
class SnapcompactSettings:
    """``snapcompact.*``: the archive strategy's knobs (shape ``auto`` resolves from the model)."""

    shape: str = "auto"
    #: ``foveated`` is what coding agent 18.3.4 runs (its only planner); ``pinned`` is the
    #: seed's design (carry, pin, evict, text tail), kept as a labelled research arm.
    policy: str = "foveated"
    max_frames: int | None = None
    frame_size: int | None = None
    max_frame_data_bytes: int = 3_000_000
    #: Inline imaging of each request (:mod:`.inline`): the system prompt's loaded context files
    #: (``agents-md``) or all of it (``all``) sent as frames on the first user message ...
    system_prompt: str = "none"
    #: ... and large older tool results sent as frames.
    tool_results: bool = False
    # Research knobs (issue 24). Each defaults to what production does, so a default settings
    # block reproduces the coding agent exactly; docs/research-knobs.md says what each changes.
    #: Tokens each frame counts in the agent's thresholds, frame cap and guards: ``production``
    #: (the tokenizer's flat 5,024) or ``billed`` (the provider's bill for the frame at the size
    #: its encoder sees it, from :mod:`snapcompact.pricing`).
    frame_charge: str = "production"
    #: What the frame-count cap assumes of the 3 MB base64 budget: ``estimate`` (170,000 bytes a
    #: frame, 17 frames) or ``actual`` (no count from the estimate: the frames drawn are
    #: measured, and the pass is redrawn with fewer frames until they fit the budget).
    frame_cap_bytes: str = "estimate"
    #: Size of each of the foveated archive's two verbatim text edges, in tokens
    #: (``CHARS_PER_TOKEN`` characters each); None = one frame capacity (production).
    text_edge_tokens: int | None = None
    #: Shape of the foveated archive's dense middle: ``production`` (8on16-bw when it holds more
    #: than the shape asked for), ``same`` (the shape asked for), or a shape name (named, or a
    #: parametric ``px-`` name), drawn at the archive's frame size.
    middle_shape: str = "production"

    def __post_init__(self) -> None:
        if isinstance(self.shape, Mapping):
            object.__setattr__(self, "shape", _shape_from_params("snapcompact.shape",
                                                                 self.shape))
        if self.frame_charge not in FRAME_CHARGES:
            raise ValueError("snapcompact.frameCharge must be one of "
                             f"{', '.join(FRAME_CHARGES)}, got {self.frame_charge!r}")
        if self.frame_cap_bytes not in FRAME_CAP_BYTES:
            raise ValueError("snapcompact.frameCapBytes must be one of "
                             f"{', '.join(FRAME_CAP_BYTES)}, got {self.frame_cap_bytes!r}")
        if self.text_edge_tokens is not None:
            _check_int("snapcompact.textEdgeTokens", self.text_edge_tokens, minimum=0)
        if isinstance(self.middle_shape, Mapping):
            object.__setattr__(self, "middle_shape", _shape_from_params(
                "snapcompact.middleShape", self.middle_shape))
        if not isinstance(self.middle_shape, str):
            raise ValueError(f"snapcompact.middleShape must be a string, got "
                             f"{self.middle_shape!r}")
        if self.middle_shape not in MIDDLE_SHAPES:
            _check_shape_name("snapcompact.middleShape", self.middle_shape,
                              f"{', '.join(MIDDLE_SHAPES)}, ")
        if self.system_prompt not in SYSTEM_PROMPT_MODES:
            raise ValueError("snapcompact.systemPrompt must be one of "
                             f"{', '.join(SYSTEM_PROMPT_MODES)}, "
                             f"got {self.system_prompt!r}")
        _check_bool("snapcompact.toolResults", self.tool_results)
        if not isinstance(self.shape, str):
            raise ValueError(f"snapcompact.shape must be a string, got {self.shape!r}")
        if self.shape != "auto":
            _check_shape_name("snapcompact.shape", self.shape, "'auto', ")
        if self.policy not in _POLICIES:
            raise ValueError(f"snapcompact.policy must be one of {', '.join(_POLICIES)}, got "
                             f"{self.policy!r}")
        if self.max_frames is not None:
            _check_int("snapcompact.maxFrames", self.max_frames, minimum=1)
        if self.frame_size is not None:
            _check_int("snapcompact.frameSize", self.frame_size, minimum=1)
        _check_int("snapcompact.maxFrameDataBytes", self.max_frame_data_bytes, minimum=0)


#: ``snapcompact.frameCharge`` values (first = production's).
FRAME_CHARGES: tuple[str, ...] = ("production", "billed")
#: ``snapcompact.frameCapBytes`` values (first = production's).
FRAME_CAP_BYTES: tuple[str, ...] = ("estimate", "actual")
#: ``snapcompact.middleShape`` values besides a shape name (first = production's).
MIDDLE_SHAPES: tuple[str, ...] = ("production", "same")
#: Keys of a shape given by its parameters (``snapcompact.shape = {font = "8x13", ...}``).
_SHAPE_PARAMS = ("font", "cell_width", "cell_height", "ink", "line_repeat", "layout",
                 "stopword_dim", "stretch")


def _check_shape_name(key: str, name: str, also: str) -> None:
    try:
        get_shape(name)
    except ValueError as exc:
        raise ValueError(f"{key} {name!r} is not {also}a named shape ({', '.join(NAMED_SHAPES)}) "
                         f"or a parametric px- name: {exc}") from None


def _shape_from_params(key: str, params: Mapping[str, Any]) -> str:
    """A shape given by its parameters (camelCase or snake_case keys) as its ``px-`` name."""
    values = {_snake(str(k)): v for k, v in params.items()}
    unknown = sorted(set(values) - set(_SHAPE_PARAMS))
    if unknown:
        raise ValueError(f"{key}: unknown shape parameter(s) {unknown} (known: "
                         f"{', '.join(_camel(k) for k in _SHAPE_PARAMS)}; the frame size is "
                         "snapcompact.frameSize)")
    missing = [k for k in ("font", "cell_width", "cell_height") if k not in values]
    if missing:
        raise ValueError(f"{key}: missing shape parameter(s) "
                         f"{', '.join(_camel(k) for k in missing)}")
    try:
        return parametric_shape(**values).name
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{key}: {exc}") from None


@dataclass(frozen=True)
class Settings:
    """All compaction settings by section, as the reference's settings file groups them."""

    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    branch_summary: BranchSummarySettings = field(default_factory=BranchSummarySettings)
    pruning: PruneSettings = field(default_factory=PruneSettings)
    snapcompact: SnapcompactSettings = field(default_factory=SnapcompactSettings)


_SECTIONS = {"compaction": "compaction", "branchSummary": "branch_summary",
             "branch_summary": "branch_summary", "pruning": "pruning", "snapcompact": "snapcompact"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def _check_number(name: str, value: object, minimum: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


DEFAULT_SETTINGS = Settings()


def merge_settings(base: Settings, overrides: Mapping[str, Any]) -> Settings:
    """``base`` with the sections/keys of ``overrides`` (camelCase or snake_case) applied."""
    if not isinstance(overrides, Mapping):
        raise ValueError(f"settings overrides must be a mapping, got {type(overrides).__name__}")
    result = base
    for section_key, values in overrides.items():
        attr = _SECTIONS.get(section_key)
        if attr is None:
            raise ValueError(f"unknown settings section {section_key!r} (known: compaction, "
                             "branchSummary, "
                             "pruning, snapcompact)")
        if not isinstance(values, Mapping):
            raise ValueError(f"settings section {section_key!r} must be a table/object")
        current = getattr(result, attr)
        known = {f.name for f in fields(current)}
        changes: dict[str, Any] = {}
        for key, value in values.items():
            name = _snake(key)
            if name not in known:
                raise ValueError(f"unknown setting {section_key}.{key} (known: "
                                 f"{', '.join(sorted(_camel(k) for k in known))})")
            if name in ("protected_tools", "method_order") and isinstance(value, list):
                value = tuple(value)
            changes[name] = value
        if attr == "compaction" and "method_order" not in changes and (
                "strategy" in changes or "remote_enabled" in changes):
            # The coding agent migrates a settings file that names one strategy (and no method
            # list) to the list that strategy meant (config/settings.ts:2551-2600).
            strategy = changes.get("strategy", current.strategy)
            remote = changes.get("remote_enabled", current.remote_enabled)
            if strategy in _LEGACY_ORDERS:
                changes["method_order"] = legacy_method_order(strategy, remote is not False)
        result = replace(result, **{attr: replace(current, **changes)})
    return result


def load_settings(path: str | Path | None = None, base: Settings = DEFAULT_SETTINGS) -> Settings:
    """Defaults merged with the project file at ``path`` (``.toml`` or ``.json``); None =
    defaults."""
    if path is None:
        return base
    p = Path(path)
    if not p.exists():
        raise ValueError(f"settings file {p} does not exist")
    raw = p.read_bytes()
    try:
        if p.suffix == ".json":
            data = json.loads(raw)
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"settings file {p} is not valid {p.suffix.lstrip('.') or 'TOML'}: "
                         f"{exc}") from exc
    try:
        return merge_settings(base, data)
    except ValueError as exc:
        raise ValueError(f"settings file {p}: {exc}") from exc


#: Config file names the agent reads, in its order, in the user directory and in ``.omp/``.
CONFIG_FILE_NAMES = ("config.yml", "config.yaml", "settings.json")


def settings_paths(cwd: str | Path | None = None, *, home: str | Path | None = None,
                   env: Mapping[str, str] | None = None) -> list[Path]:
    """The existing settings files the agent would read: the user's, then the project's.

    User: ``$PI_CODING_AGENT_DIR`` or ``~/.omp/agent``; project: ``<cwd>/.omp``. In each, the first
    of ``config.yml``, ``config.yaml``, ``settings.json`` that exists.
    """
    import os

    env = os.environ if env is None else env
    home_dir = Path(home) if home is not None else Path.home()
    user_dir = (Path(env["PI_CODING_AGENT_DIR"]) if env.get("PI_CODING_AGENT_DIR")
                else home_dir / ".omp" / "agent")
    project_dir = Path(cwd if cwd is not None else Path.cwd()) / ".omp"
    found = []
    for directory in (user_dir, project_dir):
        for name in CONFIG_FILE_NAMES:
            if (directory / name).is_file():
                found.append(directory / name)
                break
    return found


def _read_config(path: Path) -> Mapping[str, Any]:
    raw = path.read_bytes()
    try:
        if path.suffix == ".json":
            data = json.loads(raw)
        elif path.suffix in (".yml", ".yaml"):
            try:
                import yaml
            except ImportError as exc:
                raise ValueError(f"settings file {path} is YAML: install PyYAML to read "
                                 "it") from exc
            data = yaml.safe_load(raw.decode("utf-8")) or {}
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"settings file {path} is not valid {path.suffix.lstrip('.') or 'TOML'}: "
                         f"{exc}") from exc
    except Exception as exc:
        if type(exc).__module__.startswith("yaml"):
            raise ValueError(f"settings file {path} is not valid YAML: {exc}") from exc
        raise
    if not isinstance(data, Mapping):
        raise ValueError(f"settings file {path} must hold a table/object at the top")
    return data


def discover_settings(cwd: str | Path | None = None, *, home: str | Path | None = None,
                      env: Mapping[str, str] | None = None,
                      base: Settings = DEFAULT_SETTINGS) -> tuple[Settings, tuple[str, ...]]:
    """Defaults, then the user file, then the project file (:func:`settings_paths`).

    These files are the agent's whole configuration, so sections and keys this library does not
    know are skipped (listed in the returned notes, one per key) rather than errors; a known key
    with a bad value still fails, naming the file.
    """
    result = base
    notes: list[str] = []
    for path in settings_paths(cwd, home=home, env=env):
        data = _read_config(path)
        known: dict[str, dict[str, Any]] = {}
        for section, values in data.items():
            attr = _SECTIONS.get(section)
            if attr is None or not isinstance(values, Mapping):
                continue
            names = {f.name for f in fields(getattr(result, attr))}
            for key, value in values.items():
                if _snake(key) in names:
                    known.setdefault(section, {})[key] = value
                else:
                    notes.append(f"{path}: {section}.{key} is not a setting this library uses "
                                 "(ignored)")
        try:
            result = merge_settings(result, known)
        except ValueError as exc:
            raise ValueError(f"settings file {path}: {exc}") from exc
    return result, tuple(notes)


def effective_reserve_tokens(context_window: int, settings: CompactionSettings) -> int:
    """The headroom kept free for the reply: max(15% of the window, ``reserveTokens``)."""
    return max(math.floor(0.15 * context_window), settings.reserve_tokens)


def resolve_threshold_tokens(context_window: int, settings: CompactionSettings) -> int:
    """Context size above which threshold maintenance runs.

    An explicit positive ``thresholdTokens`` wins (clamped to [1, window-1]), then a positive
    ``thresholdPercent`` (clamped to [1, 99] % of the window); otherwise window minus
    max(15 %, reserve), capped at window-1, falling back to 15 % headroom when the reserve
    would leave no budget at all.
    """
    _check_int("context_window", context_window, minimum=2)
    if settings.threshold_tokens > 0:
        return min(max(settings.threshold_tokens, 1), context_window - 1)
    if settings.threshold_percent > 0:
        pct = min(max(settings.threshold_percent, 1), 99)
        return math.floor(context_window * (pct / 100))  # w * (p/100), as the agent rounds
    threshold = context_window - effective_reserve_tokens(context_window, settings)
    if threshold < 1:
        threshold = context_window - math.floor(0.15 * context_window)
    return max(1, min(threshold, context_window - 1))
