"""The typed run spec: a composed Hydra config, checked once, frozen, and handed to the pipeline.

Why a spec between Hydra and the pipeline: a DictConfig accepts any key and any value until the
moment it is read, so a typo in a sweep would surface an hour in, after money was spent. Here
every field the pipeline reads is pulled out, type-checked and validated against the library's
own tables (shape variants, strategies, policies, compaction settings, datasets) before a frame
is rendered; unknown keys in a group raise a ``ValueError`` that names them. The pipeline never
touches the DictConfig.

Arms. Every item is a session replayed through the production compaction pipeline with a
``context_window``; an arm is what the pipeline does with the history that no longer fits:
``strategies`` (``full``: nothing compacted, the upper bound; ``truncate``: dropped, the lower
bound; ``snapcompact``; ``context-full`` and ``handoff``, which need a ``summarizer`` model)
crossed, for snapcompact, with ``policies`` (pinned, foveated) and ``shapes`` (variant names or
``auto``, the shape production picks for the target) at ``frame_size``.

Keys. A model config names the environment variables its provider needs (``required_env``);
their *names* live in configs, their values only in the environment, read by litellm itself.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.redaction import is_secret_name
from snapcompact.shapes import SHAPE_VARIANT_NAMES, check_frame_size

TEXT_ARM = "text"  # the shape label of an arm that sends no frames
AUTO_SHAPE = "auto"
READERS = ("qa",)
STRATEGIES = ("full", "truncate", "snapcompact", "context-full", "handoff")
SUMMARIZER_STRATEGIES = ("context-full", "handoff")
POLICIES = ("pinned", "foveated")


def _as_plain(value: Any) -> Any:
    """A DictConfig/ListConfig (or plain data) as plain dicts and lists, resolved."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover - hydra is a harness dependency
        pass
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    value = _as_plain(value)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a mapping, got {type(value).__name__}")
    return dict(value)


def _only(data: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _str(value: Any, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _int(value: Any, where: str, *, minimum: int, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{where} must be an integer >= {minimum}, got {value!r}")
    return value


def _number(value: Any, where: str, *, optional: bool = False, positive: bool = False
            ) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{where} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where} must be true or false, got {value!r}")
    return value


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    value = _as_plain(value)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence):
        raise ValueError(f"{where} must be a list of strings, got {value!r}")
    return tuple(_str(v, f"{where}[{i}]") for i, v in enumerate(value))  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# model


_MODEL_KEYS = ("name", "litellm_id", "reader_ids", "target_model", "api", "provider",
               "price_model", "required_env", "offline_reader", "concurrency", "rate_limit_rps",
               "tokens_per_minute", "params", "reasoning_headroom_tokens", "image_detail", "notes")
IMAGE_DETAILS = ("low", "high", "auto", "original")


@dataclass(frozen=True)
class ModelSpec:
    """Who answers, and which production model its requests stand for.

    ``litellm_id`` is called; ``reader_ids`` overrides it per reader (the offline reader has one
    litellm model per reader). ``target_model``/``api``/``provider`` choose the shape (resolve),
    the bill and the resize (billing); ``price_model`` is the key into litellm's cost map for
    the target's dollars. ``offline_reader`` marks the OCR stand-in: its requests are free and
    carry the reader's side channel (evidence, answers, seen sizes).
    """

    name: str
    litellm_id: str
    target_model: str
    api: str | None
    provider: str | None
    price_model: str
    reader_ids: Mapping[str, str] = field(default_factory=dict)
    required_env: tuple[str, ...] = ()
    offline_reader: bool = False
    concurrency: int = 4
    rate_limit_rps: float | None = None
    tokens_per_minute: float | None = None  # input tokens per minute (evals.tpm); None: no limit
    params: Mapping[str, Any] = field(default_factory=dict)
    reasoning_headroom_tokens: int = 0
    image_detail: str | None = None  # None: the detail snapcompact.resolve gives the family

    def model_for(self, reader: str) -> str:
        """The litellm model id that serves ``reader``."""
        return self.reader_ids.get(reader, self.litellm_id)

    @classmethod
    def from_config(cls, cfg: Any) -> ModelSpec:
        data = _mapping(cfg, "model")
        _only(data, _MODEL_KEYS, "model config")
        reader_ids = _mapping(data.get("reader_ids"), "model.reader_ids")
        _only(reader_ids, READERS, "model.reader_ids")
        params = _mapping(data.get("params"), "model.params")
        for reserved in ("model", "messages", "max_tokens", "metadata"):
            if reserved in params:
                raise ValueError(f"model.params must not set {reserved!r} (the runner sets it)")
        for name in params:
            if is_secret_name(name):
                raise ValueError(
                    f"model.params.{name} looks like a credential; API keys are read from "
                    "the environment only (see the model's required_env)")
        return cls(
            name=_str(data.get("name"), "model.name"),  # type: ignore[arg-type]
            litellm_id=_str(data.get("litellm_id"), "model.litellm_id"),  # type: ignore[arg-type]
            target_model=_str(data.get("target_model"), "model.target_model"),  # type: ignore[arg-type]
            api=_str(data.get("api"), "model.api", optional=True),
            provider=_str(data.get("provider"), "model.provider", optional=True),
            price_model=_str(data.get("price_model"), "model.price_model"),  # type: ignore[arg-type]
            reader_ids={k: _str(v, f"model.reader_ids.{k}") for k, v in reader_ids.items()},  # type: ignore[misc]
            required_env=_str_list(data.get("required_env"), "model.required_env"),
            offline_reader=_bool(data.get("offline_reader", False), "model.offline_reader"),
            concurrency=_int(data.get("concurrency", 4), "model.concurrency", minimum=1),  # type: ignore[arg-type]
            rate_limit_rps=_number(data.get("rate_limit_rps"), "model.rate_limit_rps",
                                   optional=True, positive=True),
            tokens_per_minute=_number(data.get("tokens_per_minute"), "model.tokens_per_minute",
                                      optional=True, positive=True),
            params=params,
            reasoning_headroom_tokens=_int(data.get("reasoning_headroom_tokens", 0),  # type: ignore[arg-type]
                                           "model.reasoning_headroom_tokens", minimum=0),
            image_detail=_detail(data.get("image_detail")),
        )


def _detail(value: Any) -> str | None:
    if value is None or value in IMAGE_DETAILS:
        return value
    raise ValueError(f"model.image_detail must be one of {list(IMAGE_DETAILS)} or null, "
                     f"got {value!r}")


# --------------------------------------------------------------------------------------------
# dataset, reader, shapes


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset name from ``evals.datasets`` and the keyword params of its loader."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, cfg: Any) -> DatasetSpec:
        from evals.datasets import dataset_params

        data = _mapping(cfg, "dataset")
        _only(data, ("name", "params"), "dataset config")
        name = _str(data.get("name"), "dataset.name")
        accepted = dataset_params(name)  # ValueError for an unknown dataset
        params = _mapping(data.get("params"), "dataset.params")
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ValueError(
                f"dataset {name!r} got unknown params {unknown}; it accepts {sorted(accepted)}")
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
        return cls(name=name, params=params)  # type: ignore[arg-type]

    @property
    def seed(self) -> int:
        return int(self.params.get("seed", 0))


@dataclass(frozen=True)
class ReaderSpec:
    """Which readers run, and how many tokens each may answer with."""

    name: str
    readers: tuple[str, ...]
    answer_max_tokens: int = 64

    @classmethod
    def from_config(cls, cfg: Any) -> ReaderSpec:
        data = _mapping(cfg, "reader")
        _only(data, ("name", "readers", "answer_max_tokens"),
              "reader config")
        name = _str(data.get("name"), "reader.name")
        readers = _str_list(data.get("readers", ["qa"]), "reader.readers")
        if not readers:
            raise ValueError("reader.readers is empty: name at least one of " + ", ".join(READERS))
        bad = [r for r in readers if r not in READERS]
        if bad:
            raise ValueError(f"reader.readers has unknown reader(s) {bad}; known: {list(READERS)}")
        return cls(
            name=name,  # type: ignore[arg-type]
            readers=readers,
            answer_max_tokens=_int(data.get("answer_max_tokens", 64), "reader.answer_max_tokens",  # type: ignore[arg-type]
                                   minimum=1),
        )


@dataclass(frozen=True)
class ShapeSpec:
    """A snapcompact shape: a variant (or ``auto``) at a frame side."""

    variant: str
    frame_size: int | None = None  # None: the shape's research size (resolve decides for auto)

    @classmethod
    def parse(cls, variant: Any, frame_size: Any, where: str) -> ShapeSpec:
        name = _str(variant, where)
        if name == TEXT_ARM:
            raise ValueError(f"{where}: 'text' is not a shape; the whole history as text is the "
                             "strategy 'full' (strategies=[full,...])")
        if name != AUTO_SHAPE and name not in SHAPE_VARIANT_NAMES:
            raise ValueError(
                f"{where}: unknown shape {name!r}; known: {AUTO_SHAPE}, "
                + ", ".join(SHAPE_VARIANT_NAMES))
        if frame_size is not None:
            try:
                check_frame_size(frame_size)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        return cls(variant=name, frame_size=frame_size)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# arms and the run


@dataclass(frozen=True)
class ArmSpec:
    """What the replay does with discarded history: a strategy, and for snapcompact a policy and
    a shape. Baseline and LLM strategies send no frames: their policy is "" and shape "text"."""

    strategy: str
    policy: str = ""
    shape: ShapeSpec = ShapeSpec(TEXT_ARM)

    @property
    def is_snapcompact(self) -> bool:
        return self.strategy == "snapcompact"

    @property
    def label(self) -> str:
        if not self.is_snapcompact:
            return self.strategy
        size = f"@{self.shape.frame_size}" if self.shape.frame_size else ""
        return f"snapcompact/{self.policy}/{self.shape.variant}{size}"


_TOP_KEYS = ("experiment_name", "model", "dataset", "reader", "shape", "shapes", "frame_size",
             "strategy", "strategies", "policy", "policies", "context_window", "settings",
             "summarizer", "max_items", "max_questions_per_item", "budget_usd", "dry_run",
             "progress", "results_dir", "cache_dir", "ocr_cache_dir", "limits_dir", "timeout_s",
             "max_attempts", "max_frames", "seed", "hydra")
#: Frames per (item, shape) when the config does not say: above every provider's images per
#: request, far below what a tiny frame size on a long history would produce (300 KB of text at
#: 16 px is 300,000 frames).
DEFAULT_MAX_FRAMES = 500
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=,-]*$")


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs, validated. Paths are absolute."""

    experiment: str
    model: ModelSpec
    dataset: DatasetSpec
    reader: ReaderSpec
    strategies: tuple[str, ...]
    policies: tuple[str, ...]
    shapes: tuple[ShapeSpec, ...]
    context_window: int
    settings_overrides: Mapping[str, Any]  # sections of snapcompact's settings file
    summarizer: ModelSpec | None
    max_items: int | None
    max_questions_per_item: int | None
    budget_usd: float | None
    dry_run: bool
    progress: bool
    cache_dir: Path
    ocr_cache_dir: Path | None
    timeout_s: float
    max_attempts: int
    max_frames: int = DEFAULT_MAX_FRAMES
    limits_dir: Path | None = None  # shared token-limit state (evals.tpm); None: per process

    @property
    def seed(self) -> int:
        return self.dataset.seed

    def arms(self) -> tuple[ArmSpec, ...]:
        """Every arm, in a stable order: strategies as listed, then policies x shapes."""
        out: list[ArmSpec] = []
        for strategy in self.strategies:
            if strategy != "snapcompact":
                out.append(ArmSpec(strategy))
                continue
            out.extend(ArmSpec(strategy, policy, shape)
                       for policy in self.policies for shape in self.shapes)
        return tuple(out)

    def settings(self):
        """The compaction settings every arm starts from (snapcompact's defaults + overrides)."""
        from snapcompact.compaction.settings import DEFAULT_SETTINGS, merge_settings

        return merge_settings(DEFAULT_SETTINGS, self.settings_overrides)

    def run_id(self) -> str:
        """A stable id of what this run measures (not of where or how it is run)."""
        material = {
            "experiment": self.experiment,
            "model": {k: v for k, v in _dataclass_json(self.model).items()
                      if k not in ("concurrency", "rate_limit_rps", "tokens_per_minute",
                                   "required_env")},
            "dataset": _dataclass_json(self.dataset),
            "reader": _dataclass_json(self.reader),
            "arms": [_dataclass_json(a) for a in self.arms()],
            "context_window": self.context_window,
            "settings": dict(self.settings_overrides),
            "summarizer": (_dataclass_json(self.summarizer)["litellm_id"]
                           if self.summarizer is not None else None),
            "max_items": self.max_items,
            "max_questions_per_item": self.max_questions_per_item,
        }
        text = json.dumps(material, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def from_config(cls, cfg: Any, *, base_dir: str | Path | None = None) -> RunSpec:
        """Validate a composed config. Relative paths are taken from ``base_dir`` (the cwd)."""
        data = _mapping(cfg, "config")
        data.pop("hydra", None)
        _only(data, _TOP_KEYS, "eval config")
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        frame_size = data.get("frame_size")
        shape_group = data.get("shape")
        if shape_group is not None:
            group = _mapping(shape_group, "shape")
            _only(group, ("variant", "frame_size"), "shape config")
            size = group.get("frame_size") if group.get("frame_size") is not None else frame_size
            shapes = (ShapeSpec.parse(group.get("variant"), size, "shape.variant"),)
        else:
            names = _str_list(data.get("shapes"), "shapes")
            shapes = tuple(ShapeSpec.parse(n, frame_size, f"shapes[{i}]")
                           for i, n in enumerate(names))
        labels = [(s.variant, s.frame_size) for s in shapes]
        if len(set(labels)) != len(labels):
            raise ValueError(f"shapes lists a shape twice: {[s.variant for s in shapes]}")
        strategies = _choices(data, "strategy", "strategies", STRATEGIES)
        policies = _choices(data, "policy", "policies", POLICIES)
        if "snapcompact" in strategies and not shapes:
            raise ValueError("strategy snapcompact needs at least one shape (shapes=[auto] for the "
                             "shape production picks)")
        if "snapcompact" in strategies and not policies:
            raise ValueError("strategy snapcompact needs at least one policy (policies=[pinned])")
        summarizer_cfg = data.get("summarizer")
        summarizer = (ModelSpec.from_config(summarizer_cfg) if summarizer_cfg is not None
                      else None)
        needs = [s for s in strategies if s in SUMMARIZER_STRATEGIES]
        if needs and summarizer is None:
            raise ValueError(
                f"strategy {needs[0]!r} summarizes the discarded history with an LLM: choose a "
                "summarizer model (summarizer=<model config>, e.g. summarizer=mock for a dry "
                "plumbing run), or drop the strategy")
        if summarizer is not None and summarizer.offline_reader:
            raise ValueError(f"summarizer {summarizer.name!r} is the offline OCR reader, which "
                             "cannot write summaries: choose an LLM model config")
        context_window = _int(data.get("context_window", 32000), "context_window", minimum=1000)
        overrides = _mapping(data.get("settings"), "settings")
        reader = ReaderSpec.from_config(data.get("reader"))
        experiment = _str(data.get("experiment_name", "default"), "experiment_name")
        if not _PLAIN_NAME.match(experiment) or ".." in experiment:  # type: ignore[arg-type]
            raise ValueError(f"experiment_name {experiment!r} must be a plain folder name "
                             "(letters, digits, _ . + = , -; no '/' or '..')")
        if "results_dir" in data:
            _path(data.get("results_dir"), base, "results_dir")
        if data.get("seed") is not None:
            _int(data["seed"], "seed", minimum=0)
        spec = cls(
            experiment=experiment,  # type: ignore[arg-type]
            model=ModelSpec.from_config(data.get("model")),
            dataset=DatasetSpec.from_config(data.get("dataset")),
            reader=reader,
            strategies=strategies,
            policies=policies,
            shapes=shapes,
            context_window=context_window,  # type: ignore[arg-type]
            settings_overrides=overrides,
            summarizer=summarizer,
            max_items=_int(data.get("max_items"), "max_items", minimum=1, optional=True),
            max_questions_per_item=_int(data.get("max_questions_per_item"),
                                        "max_questions_per_item", minimum=1, optional=True),
            budget_usd=_number(data.get("budget_usd"), "budget_usd", optional=True),
            dry_run=_bool(data.get("dry_run", False), "dry_run"),
            progress=_bool(data.get("progress", True), "progress"),
            cache_dir=_path(data.get("cache_dir"), base, "cache_dir"),  # type: ignore[arg-type]
            ocr_cache_dir=_path(data.get("ocr_cache_dir"), base, "ocr_cache_dir", optional=True),
            limits_dir=_path(data.get("limits_dir"), base, "limits_dir", optional=True),
            timeout_s=_number(data.get("timeout_s", 120), "timeout_s", positive=True),  # type: ignore[arg-type]
            max_attempts=_int(data.get("max_attempts", 6), "max_attempts", minimum=1),  # type: ignore[arg-type]
            max_frames=_int(data.get("max_frames", DEFAULT_MAX_FRAMES), "max_frames",  # type: ignore[arg-type]
                            minimum=1),
        )
        try:
            spec.settings()
        except ValueError as exc:
            raise ValueError(f"settings: {exc}") from None
        return spec


def _choices(data: Mapping[str, Any], one: str, many: str, known: Sequence[str]) -> tuple[str, ...]:
    """``one=NAME`` (a single choice) wins over the list ``many``; each must be in ``known``."""
    single = _as_plain(data.get(one))
    if isinstance(single, Mapping):  # a config group file: {name: ...}
        _only(single, ("name",), f"{one} config")
        single = single.get("name")
    if single is not None:
        names: tuple[str, ...] = (_str(single, one),)  # type: ignore[assignment]
    else:
        names = _str_list(data.get(many), many)
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"{many} has unknown value(s) {bad}; known: {list(known)}")
    if len(set(names)) != len(names):
        raise ValueError(f"{many} lists a value twice: {list(names)}")
    return names




def _path(value: Any, base: Path, where: str, *, optional: bool = False) -> Path | None:
    """An absolute folder path; refused if empty, NUL-bearing, or if it (or a parent) is a
    file, so the error comes now and not as a traceback when the first file is written."""
    if value is None and optional:
        return None
    text = _str(value, where)
    if "\0" in text:  # type: ignore[operator]
        raise ValueError(f"{where} contains a NUL character")
    path = Path(text).expanduser()  # type: ignore[arg-type]
    path = path if path.is_absolute() else (base / path).resolve()
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{where} {text!r}: {parent} is a file, not a folder")
    return path


def _dataclass_json(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return json.loads(json.dumps(asdict(obj), default=lambda v: dict(v) if isinstance(v, Mapping)
                                 else str(v)))
