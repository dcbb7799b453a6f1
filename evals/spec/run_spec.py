"""The typed run spec: a composed Hydra config, checked once, frozen, and handed to the pipeline.

Why a spec between Hydra and the pipeline: a DictConfig accepts any key and any value until the
moment it is read, so a typo in a sweep would surface an hour in, after money was spent. Here
every field the pipeline reads is pulled out, type-checked and validated against the library's
own tables (named shapes, strategies, policies, compaction settings, datasets) before a frame
is rendered; unknown keys in a group raise a ``ValueError`` that names them. The pipeline never
touches the DictConfig.

How: each config group has a pydantic schema (``ModelConfig``, ``DatasetConfig``,
``ReaderConfig``, ``ShapeConfig``, and ``EvalConfig`` for the whole composed config) that
declares its keys, their types and their bounds, strictly (``"3"`` is not a number, ``1`` is not
``true``) and with unknown keys forbidden. ``_one_line`` turns pydantic's report into one line
naming the key (``model.concurrency must be an integer >= 1, got 0``), the form every error of
the harness takes. Checks against the library's tables and across keys (a summarizer for the
LLM strategies, the dataset's own params) follow the schema in ``from_config``. The results are
frozen dataclasses: the pipeline's types do not depend on pydantic.

Arms. Every item is a session replayed through the production compaction pipeline with a
``context_window``; an arm is what the pipeline does with the history that no longer fits:
``strategies`` (``full``: nothing compacted, the upper bound; ``truncate``: dropped, the lower
bound; ``snapcompact``; ``context-full`` and ``handoff``, which need a ``summarizer`` model)
crossed, for snapcompact, with ``policies`` (pinned, foveated) and ``shapes`` (shape names or
``auto``, the shape production picks for the target) at ``frame_size``.

Keys. A model config names the environment variables its provider needs (``required_env``);
their *names* live in configs, their values only in the environment, read by litellm itself.
"""

from __future__ import annotations

import hashlib
import json
import re
import typing
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from evals.items.datasets import dataset_params
from evals.spec.old_spellings import warn_old_config_key
from evals.store.records import ORACLE_SUMMARIZER_PREFIX, is_oracle_summarizer
from evals.support.redaction import is_secret_name
from snapcompact.compaction import DEFAULT_SETTINGS, merge_settings
from snapcompact.core import (
    PARAMETRIC_PREFIX,
    SHAPE_NAMES,
    check_frame_size,
    get_shape,
)

TEXT_ARM = "text"  # the shape label of an arm that sends no frames
AUTO_SHAPE = "auto"
READERS = ("qa",)
STRATEGIES = ("full", "truncate", "snapcompact", "context-full", "handoff", "shake")
SUMMARIZER_STRATEGIES = ("context-full", "handoff", "shake")
POLICIES = ("pinned", "foveated")
IMAGE_DETAILS = ("low", "high", "auto", "original")
#: Frames per (item, shape) when the config does not say: above every provider's images per
#: request, far below what a tiny frame size on a long history would produce (300 KB of text at
#: 16 px is 300,000 frames).
DEFAULT_MAX_FRAMES = 500
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=,-]*$")


# --------------------------------------------------------------------------------------------
# the schemas: what each config group may hold

Text = Annotated[str, StringConstraints(pattern=r"\S")]  # a string that is not blank
PositiveCount = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Dollars = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Window = Annotated[int, Field(ge=1000)]


class _Group(BaseModel):
    """A config group: strict types, no unknown keys; ``null`` for a list or a mapping is
    taken as empty, and one string where a list is expected as a list of one."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _nulls_and_single_names(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for name, info in cls.model_fields.items():
            if name not in data:
                continue
            origin = typing.get_origin(info.annotation)
            if origin is list:
                if data[name] is None:
                    data[name] = []
                elif isinstance(data[name], str):
                    data[name] = [data[name]]
            elif origin is dict and data[name] is None:
                data[name] = {}
        return data


class ReaderIdsConfig(_Group):
    """``model.reader_ids``: the litellm model serving each reader, where not ``litellm_id``."""

    qa: Text | None = None


class ModelConfig(_Group):
    """A ``configs/model/*.yaml`` (or ``configs/summarizer/*.yaml``) file."""

    name: Text
    litellm_id: Text
    reader_ids: ReaderIdsConfig = ReaderIdsConfig()
    target_model: Text
    api: Text | None = None
    provider: Text | None = None
    price_model: Text
    required_env: list[Text] = []
    offline_reader: bool = False
    # a summarizer that is not a language model (litellm's mock path): the summaries it writes
    # carry no facts, and the rows whose context holds one are labelled and never ranked
    stand_in: bool = False
    # ``perfect``: the oracle summarizer (evals.replay.perfect_summary), bound per session to the
    # questions' evidence lines; a stand-in (no language model), labelled as an upper bound
    oracle: Literal["perfect"] | None = None
    concurrency: PositiveCount = 4
    rate_limit_rps: PositiveNumber | None = None
    tokens_per_minute: PositiveNumber | None = None
    params: dict[str, Any] = {}
    reasoning_headroom_tokens: Count = 0
    image_detail: Literal["low", "high", "auto", "original"] | None = None
    notes: Any = None

    @field_validator("reader_ids", mode="before")
    @classmethod
    def _no_reader_ids(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("params")
    @classmethod
    def _params_are_the_callers(cls, params: dict[str, Any]) -> dict[str, Any]:
        for reserved in ("model", "messages", "max_tokens", "metadata"):
            if reserved in params:
                raise ValueError(f"model.params must not set {reserved!r} (the runner sets it)")
        for name in params:
            if is_secret_name(name):
                raise ValueError(
                    f"model.params.{name} looks like a credential; API keys are read from "
                    "the environment only (see the model's required_env)")
        return params


class DatasetConfig(_Group):
    """A ``configs/dataset/*.yaml`` file: a loader of ``evals.items.datasets`` and its params."""

    name: Text
    params: dict[str, Any] = {}


class ReaderConfig(_Group):
    """A ``configs/reader/*.yaml`` file."""

    name: Text
    readers: list[Text] = ["qa"]
    answer_max_tokens: PositiveCount = 64


class ShapeConfig(_Group):
    """A ``configs/shape/*.yaml`` file (checked against the shape table by ``ShapeSpec``).

    ``variant`` is the old spelling of ``name``: still read, with a warning naming ``shape.name``.
    """

    name: Any = None
    frame_size: Any = None  # checked by snapcompact.core.shapes.check_frame_size

    @model_validator(mode="before")
    @classmethod
    def _old_spelling(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "variant" in data:
            data = dict(data)
            warn_old_config_key("shape.variant")
            data["name"] = data.pop("variant")  # the key a user typed wins over the file's
        return data


class ResearchConfig(_Group):
    """A ``configs/research/*.yaml`` file: research knobs applied to every run.

    ``settings`` are snapcompact settings sections (as ``settings:``; the run's own
    ``settings:`` win over them key by key); ``shape``, when set, is the one shape every
    snapcompact arm draws instead of ``shapes``: a shape name, a parametric ``px-`` name, or the
    parameters (font, cellWidth, cellHeight, ink, lineRepeat, layout, stopwordDim, stretch).
    """

    name: Text
    settings: dict[str, Any] = {}
    shape: Any = None


class ChoiceConfig(_Group):
    """A ``configs/strategy/*.yaml`` file: ``{name: ...}``."""

    name: Text


def _without_nulls(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` without null keys, and without sections that held only nulls."""
    out: dict[str, Any] = {}
    for section, values in settings.items():
        if isinstance(values, Mapping):
            kept = {k: v for k, v in values.items() if v is not None}
            if kept:
                out[section] = kept
        elif values is not None:
            out[section] = values  # not a section: merge_settings names the mistake
    return out


class EvalConfig(_Group):
    """The composed config (``configs/eval.yaml`` with its groups), Hydra's own key removed."""

    experiment_name: Text = "default"
    model: ModelConfig
    dataset: DatasetConfig
    reader: ReaderConfig
    shape: ShapeConfig | None = None
    shapes: list[Text] = []
    # Shapes for one policy instead of ``shapes`` (e.g. {pinned: [auto]}: the research policy
    # at production's shape only); a policy not named here runs every shape of ``shapes``.
    policy_shapes: dict[str, list[Text]] = {}
    frame_size: Any = None  # checked by snapcompact.core.shapes.check_frame_size
    strategy: ChoiceConfig | None = None  # one choice: ``strategy=NAME`` or its group file
    strategies: list[Text] = []
    policy: ChoiceConfig | None = None
    policies: list[Text] = []
    context_window: Window = 32000
    settings: dict[str, Any] = {}
    research: ResearchConfig | None = None
    summarizer: ModelConfig | None = None
    max_items: PositiveCount | None = None
    max_questions_per_item: PositiveCount | None = None
    budget_usd: Dollars | None = None
    allow_unpriced: bool = False
    dry_run: bool = False
    prompt_cache: bool = True
    progress: bool = True
    results_dir: Text | None = None
    cache_dir: Text
    ocr_cache_dir: Text | None = None
    limits_dir: Text | None = None
    timeout_s: PositiveNumber = 120.0
    max_attempts: PositiveCount = 6
    max_frames: PositiveCount = DEFAULT_MAX_FRAMES
    seed: Count | None = None

    @field_validator("strategy", "policy", mode="before")
    @classmethod
    def _a_name_is_a_choice(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("settings", mode="before")
    @classmethod
    def _declared_keys_left_null(cls, value: Any) -> Any:
        """Drop the keys configs/eval.yaml declares as null (production's value) and the
        sections left empty: they are there so every key can be overridden without ``+``,
        and an override names only what it changes."""
        return _without_nulls(value) if isinstance(value, Mapping) else value

    @field_validator("experiment_name")
    @classmethod
    def _plain_folder_name(cls, name: str) -> str:
        if not _PLAIN_NAME.match(name) or ".." in name:
            raise ValueError(f"experiment_name {name!r} must be a plain folder name "
                             "(letters, digits, _ . + = , -; no '/' or '..')")
        return name


# --------------------------------------------------------------------------------------------
# pydantic's report -> one line naming the key


_Schema = typing.TypeVar("_Schema", bound=BaseModel)


def _as_plain(value: Any) -> Any:
    """A DictConfig/ListConfig (or plain data) as plain dicts and lists, resolved."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover - hydra is a harness dependency
        pass
    return value


def _validated(schema: type[_Schema], value: Any, where: tuple[str, ...]) -> _Schema:
    """``value`` checked against ``schema``; ``ValueError`` with one line if it does not fit.
    ``where`` is the key path of ``value`` in the composed config (``()`` for the whole)."""
    value = _as_plain(value)
    if value is None:
        value = {}
    if not isinstance(value, Mapping):  # a config error (one line, exit 2), not a TypeError
        raise ValueError(f"{_dotted(where) or 'config'} must be a mapping, "  # noqa: TRY004
                         f"got {type(value).__name__}")
    try:
        return schema.model_validate(dict(value))
    except ValidationError as exc:
        raise ValueError(_one_line(schema, exc, where)) from None


def _dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _group_name(loc: tuple[Any, ...]) -> str:
    if not loc:
        return "eval config"
    return f"{loc[0]} config" if len(loc) == 1 else _dotted(loc)


def _field_type(schema: type[BaseModel], loc: Sequence[Any]) -> tuple[Any, list[Any]]:
    """The declared type at ``loc`` inside ``schema`` and its constraints (``Ge`` ...);
    ``(None, [])`` where ``loc`` leaves the schemas."""
    annotation: Any = schema
    metadata: list[Any] = []
    for part in loc:
        if isinstance(part, int):  # an item of list[X]: X
            annotation, metadata = next(iter(_type_args(annotation)), None), []
            continue
        model = _model_in(annotation)
        if model is None or part not in model.model_fields:
            return None, []
        info = model.model_fields[part]
        annotation, metadata = info.annotation, list(info.metadata)
    return annotation, metadata


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The schema in ``annotation`` (itself, or a member of ``X | None``), if any."""
    return next((a for a in (annotation, *_type_args(annotation))
                 if isinstance(a, type) and issubclass(a, BaseModel)), None)


def _type_args(annotation: Any) -> tuple[Any, ...]:
    """Every type nested in ``annotation`` (union members, Annotated's base, list items)."""
    out: list[Any] = []
    for arg in typing.get_args(annotation):
        if isinstance(arg, type) or typing.get_args(arg):
            out += [arg, *_type_args(arg)]
    return tuple(out)


def _minimum(annotation: Any, metadata: list[Any]) -> Any:
    """The ``ge`` bound declared for an integer field (0 if none)."""
    found = list(metadata)
    for arg in (annotation, *_type_args(annotation)):
        for meta in getattr(arg, "__metadata__", ()):
            found += getattr(meta, "metadata", [meta])
    return next((b.ge for b in found if getattr(b, "ge", None) is not None), 0)


def _one_line(schema: type[BaseModel], exc: ValidationError, where: tuple[str, ...]) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    kind = first["type"]
    got = first.get("input")
    ctx = first.get("ctx") or {}
    if kind == "extra_forbidden":
        parent = loc[:-1]
        unknown = sorted(str(e["loc"][-1]) for e in errors
                         if e["type"] == "extra_forbidden" and tuple(e["loc"][:-1]) == parent)
        model = _model_in(_field_type(schema, parent)[0])
        allowed = sorted(model.model_fields) if model is not None else []
        return (f"{_group_name(where + parent)} has unknown key(s) {unknown}; "
                f"allowed: {allowed}")
    if kind == "value_error":
        return str(ctx.get("error", first["msg"]))
    # a union (`ChoiceConfig | Text`) reports each member: the key is the part before it
    while loc and isinstance(loc[-1], str) and _field_type(schema, loc)[0] is None:
        loc = loc[:-1]
    annotation, metadata = _field_type(schema, loc)
    name = _dotted(where + loc)
    types = {a for a in (annotation, *_type_args(annotation)) if isinstance(a, type)}
    if kind == "missing":
        got = None
    if str in types and (kind.startswith("string") or kind == "missing"):
        return f"{name} must be a non-empty string, got {got!r}"
    if int in types and (kind.startswith(("int", "greater_than")) or kind == "missing"):
        minimum = ctx.get("ge", _minimum(annotation, metadata))
        return f"{name} must be an integer >= {minimum}, got {got!r}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"{name} must be a finite number, got {got!r}"
    if kind == "greater_than":
        return f"{name} must be > {ctx.get('gt'):g}, got {got!r}"
    if kind == "greater_than_equal":
        return f"{name} must be >= {ctx.get('ge'):g}, got {got!r}"
    if kind == "bool_type":
        return f"{name} must be true or false, got {got!r}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"{name} must be a mapping, got {type(got).__name__}"
    if kind in ("list_type", "tuple_type"):
        return f"{name} must be a list, got {got!r}"
    if kind == "literal_error":
        return f"{name} must be one of {ctx.get('expected')} (or null), got {got!r}"
    if kind == "missing":
        return f"{name} is missing"
    return f"{name}: {first['msg']}, got {got!r}"


# --------------------------------------------------------------------------------------------
# model


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
    stand_in: bool = False  # a summarizer whose summaries no language model wrote (mock path)
    oracle: str | None = None  # "perfect": the evidence-keeping oracle summarizer (an upper bound)
    concurrency: int = 4
    rate_limit_rps: float | None = None
    tokens_per_minute: float | None = None  # input tokens/minute (send.token_rate); None: no limit
    params: Mapping[str, Any] = field(default_factory=dict)
    reasoning_headroom_tokens: int = 0
    image_detail: str | None = None  # None: the detail snapcompact.pricing.resolve gives the family

    def model_for(self, reader: str) -> str:
        """The litellm model id that serves ``reader``."""
        return self.reader_ids.get(reader, self.litellm_id)

    @classmethod
    def from_config(cls, cfg: Any) -> ModelSpec:
        return cls.from_schema(_validated(ModelConfig, cfg, ("model",)))

    @classmethod
    def from_schema(cls, model: ModelConfig) -> ModelSpec:
        return cls(
            name=model.name,
            litellm_id=model.litellm_id,
            target_model=model.target_model,
            api=model.api,
            provider=model.provider,
            price_model=model.price_model,
            reader_ids={k: v for k, v in model.reader_ids.model_dump().items() if v is not None},
            required_env=tuple(model.required_env),
            offline_reader=model.offline_reader,
            stand_in=model.stand_in,
            oracle=model.oracle,
            concurrency=model.concurrency,
            rate_limit_rps=model.rate_limit_rps,
            tokens_per_minute=model.tokens_per_minute,
            params=dict(model.params),
            reasoning_headroom_tokens=model.reasoning_headroom_tokens,
            image_detail=model.image_detail,
        )


# --------------------------------------------------------------------------------------------
# dataset, reader, shapes


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset name from ``evals.items.datasets`` and the keyword params of its loader."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, cfg: Any) -> DatasetSpec:
        return cls.from_schema(_validated(DatasetConfig, cfg, ("dataset",)))

    @classmethod
    def from_schema(cls, dataset: DatasetConfig) -> DatasetSpec:
        accepted = dataset_params(dataset.name)  # ValueError for an unknown dataset
        unknown = sorted(set(dataset.params) - set(accepted))
        if unknown:
            raise ValueError(f"dataset {dataset.name!r} got unknown params {unknown}; "
                             f"it accepts {sorted(accepted)}")
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in dataset.params.items()}
        return cls(name=dataset.name, params=params)

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
        return cls.from_schema(_validated(ReaderConfig, cfg, ("reader",)))

    @classmethod
    def from_schema(cls, reader: ReaderConfig) -> ReaderSpec:
        if not reader.readers:
            raise ValueError("reader.readers is empty: name at least one of " + ", ".join(READERS))
        bad = [r for r in reader.readers if r not in READERS]
        if bad:
            raise ValueError(f"reader.readers has unknown reader(s) {bad}; known: {list(READERS)}")
        return cls(name=reader.name, readers=tuple(reader.readers),
                   answer_max_tokens=reader.answer_max_tokens)


@dataclass(frozen=True)
class ShapeSpec:
    """A snapcompact shape: a shape name (or ``auto``) at a frame side."""

    name: str
    frame_size: int | None = None  # None: the shape's research size (resolve decides for auto)

    @property
    def variant(self) -> str:
        """Old spelling of ``name`` (deprecated)."""
        warnings.warn("ShapeSpec.variant is the old spelling; use ShapeSpec.name",
                      DeprecationWarning, stacklevel=2)
        return self.name

    def id_json(self) -> dict[str, Any]:
        """The shape as run ids hash it: under the key ``variant``, the spelling run ids were
        first computed with, so a run's id (and the rows it resumes) survives the rename."""
        return {"variant": self.name, "frame_size": self.frame_size}

    @classmethod
    def parse(cls, name: Any, frame_size: Any, where: str) -> ShapeSpec:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{where} must be a non-empty string, got {name!r}")
        if name == TEXT_ARM:
            raise ValueError(f"{where}: 'text' is not a shape; the whole history as text is the "
                             "strategy 'full' (strategies=[full,...])")
        if name != AUTO_SHAPE and name not in SHAPE_NAMES:
            if not name.startswith(PARAMETRIC_PREFIX):
                raise ValueError(
                    f"{where}: unknown shape {name!r}; known: {AUTO_SHAPE}, "
                    + ", ".join(SHAPE_NAMES) + f", or a parametric {PARAMETRIC_PREFIX} "
                    "name")
            try:
                get_shape(name)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        size: int | None = None
        if frame_size is not None:
            try:
                size = check_frame_size(frame_size)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        return cls(name=name, frame_size=size)


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
        return f"snapcompact/{self.policy}/{self.shape.name}{size}"



def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` applied key by key (nested mappings merged, ``over`` wins)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


PRODUCTION_RESEARCH = "production"


@dataclass(frozen=True)
class ResearchSpec:
    """The research knobs of a run (``configs/research/NAME.yaml``), checked.

    ``label`` keeps results of different knobs apart: ``production`` only when the knobs are
    production's values; otherwise the name and a short hash of the knobs in effect (a search
    trial overrides single knobs under one name).
    """

    name: str = PRODUCTION_RESEARCH
    settings: Mapping[str, Any] = field(default_factory=dict)
    shape: str | None = None  # a shape name (parameters are turned into their px- name)

    @property
    def is_production(self) -> bool:
        return self.shape is None and merge_settings(DEFAULT_SETTINGS,
                                                     self.settings) == DEFAULT_SETTINGS

    @property
    def label(self) -> str:
        if self.is_production:
            return PRODUCTION_RESEARCH
        material = json.dumps({"settings": self.settings, "shape": self.shape}, sort_keys=True,
                              default=str)
        return f"{self.name}-{hashlib.sha256(material.encode()).hexdigest()[:8]}"

    def to_json(self) -> dict[str, Any]:
        """The knobs as rows record them."""
        return {"name": self.name, "label": self.label, "settings": dict(self.settings),
                "shape": self.shape}

    @classmethod
    def from_schema(cls, raw: ResearchConfig | None) -> ResearchSpec:
        if raw is None:
            return cls()

        try:
            merge_settings(DEFAULT_SETTINGS, raw.settings)
            # Only the knobs that differ from production's are kept: a research file that
            # spells production's values out leaves the run's settings (and its id) as they were.
            settings: dict[str, Any] = {}
            for section, values in raw.settings.items():
                for key, value in values.items():
                    one = {section: {key: value}}
                    if value is not None and merge_settings(DEFAULT_SETTINGS,
                                                            one) != DEFAULT_SETTINGS:
                        settings.setdefault(section, {})[key] = value
        except (ValueError, AttributeError) as exc:
            raise ValueError(f"research {raw.name}: {exc}") from None
        shape = raw.shape
        if isinstance(shape, Mapping):
            try:
                shape = merge_settings(DEFAULT_SETTINGS, {"snapcompact": {"shape": dict(shape)}}
                                       ).snapcompact.shape
            except ValueError as exc:
                raise ValueError(f"research {raw.name}: {exc}".replace(
                    "snapcompact.shape", "research.shape")) from None
        elif shape is not None and not isinstance(shape, str):
            raise ValueError(f"research {raw.name}: shape must be a name or a mapping of "
                             f"parameters, got {shape!r}")
        return cls(name=raw.name, settings=settings, shape=shape)


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
    limits_dir: Path | None = None  # shared token-limit state (send.token_rate); None: per process
    prompt_cache: bool = True  # use the providers' prompt caches (evals.send.prompt_cache)
    #: policy -> the shapes it runs instead of ``shapes`` (config ``policy_shapes``)
    policy_shapes: Mapping[str, tuple[ShapeSpec, ...]] = field(default_factory=dict)
    #: the research knobs in effect (``research=NAME``); their settings are already merged
    #: into ``settings_overrides``, this names them for rows and labels
    research: ResearchSpec = field(default_factory=lambda: ResearchSpec())
    #: run even when a price model has no price row (its dollars are then unknown, never $0)
    allow_unpriced: bool = False

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
                       for policy in self.policies
                       for shape in self.policy_shapes.get(policy, self.shapes))
        return tuple(out)

    def settings(self):
        """The compaction settings every arm starts from (snapcompact's defaults + overrides)."""
        return merge_settings(DEFAULT_SETTINGS, self.settings_overrides)

    def run_id(self) -> str:
        """A stable id of what this run measures (not of where or how it is run)."""
        material = {
            "experiment": self.experiment,
            # ``oracle`` only when set (a summarizer's field, never a target's): ids of runs
            # made before it existed stay the same, so they resume
            "model": {k: v for k, v in _dataclass_json(self.model).items()
                      if k not in ("concurrency", "rate_limit_rps", "tokens_per_minute",
                                   "required_env") and not (k == "oracle" and v is None)},
            "dataset": _dataclass_json(self.dataset),
            "reader": _dataclass_json(self.reader),
            "arms": [{**_dataclass_json(a), "shape": a.shape.id_json()} for a in self.arms()],
            "context_window": self.context_window,
            "settings": dict(self.settings_overrides),
            **({} if self.research.is_production else {"research": self.research.label}),
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
        data = _as_plain(cfg)
        if isinstance(data, Mapping):
            data = {k: v for k, v in data.items() if k != "hydra"}
        raw = _validated(EvalConfig, data, ())
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        research = ResearchSpec.from_schema(raw.research)
        if raw.shape is not None:  # one shape chosen by name wins over the research's shape
            size = raw.shape.frame_size if raw.shape.frame_size is not None else raw.frame_size
            shapes: tuple[ShapeSpec, ...] = (ShapeSpec.parse(raw.shape.name, size,
                                                             "shape.name"),)
        elif research.shape is not None:
            shapes = (ShapeSpec.parse(research.shape, raw.frame_size, "research.shape"),)
        else:
            shapes = tuple(ShapeSpec.parse(n, raw.frame_size, f"shapes[{i}]")
                           for i, n in enumerate(raw.shapes))
        labels = [(s.name, s.frame_size) for s in shapes]
        if len(set(labels)) != len(labels):
            raise ValueError(f"shapes lists a shape twice: {[s.name for s in shapes]}")
        strategies = _choices(raw.strategy, raw.strategies, "strategies", STRATEGIES)
        policies = _choices(raw.policy, raw.policies, "policies", POLICIES)
        policy_shapes: dict[str, tuple[ShapeSpec, ...]] = {}
        for policy, names in ({} if research.shape is not None else raw.policy_shapes).items():
            if policy not in POLICIES:
                raise ValueError(f"policy_shapes has unknown policy {policy!r}; known: "
                                 f"{list(POLICIES)}")
            if not names or len(set(names)) != len(names):
                raise ValueError(f"policy_shapes.{policy} must list at least one shape, each "
                                 f"once, got {list(names)}")
            policy_shapes[policy] = tuple(
                ShapeSpec.parse(n, raw.frame_size, f"policy_shapes.{policy}[{i}]")
                for i, n in enumerate(names))
        if "snapcompact" in strategies and not shapes:
            raise ValueError("strategy snapcompact needs at least one shape (shapes=[auto] for the "
                             "shape production picks)")
        if "snapcompact" in strategies and not policies:
            raise ValueError("strategy snapcompact needs at least one policy (policies=[pinned])")
        summarizer = (ModelSpec.from_schema(raw.summarizer) if raw.summarizer is not None
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
        if raw.model.stand_in:
            raise ValueError(f"model {raw.model.name!r} is a summarizer stand-in (stand_in: "
                             "true), which cannot answer questions: choose a reader model")
        if summarizer is not None and summarizer.oracle is not None and not summarizer.stand_in:
            raise ValueError(f"summarizer {summarizer.name!r} is an oracle ({summarizer.oracle}) "
                             "but not stand_in: true: no language model writes its summaries")
        if summarizer is not None and summarizer.oracle is not None and \
                not is_oracle_summarizer(summarizer.litellm_id):
            raise ValueError(f"summarizer {summarizer.name!r} is an oracle ({summarizer.oracle}) "
                             f"but its litellm_id {summarizer.litellm_id!r} does not start with "
                             f"{ORACLE_SUMMARIZER_PREFIX!r}: its rows would share keys with a "
                             "model's")
        if summarizer is not None and summarizer.stand_in and summarizer.oracle is None and \
                "mock_response" not in summarizer.params:
            raise ValueError(f"summarizer {summarizer.name!r} says stand_in: true but has no "
                             "params.mock_response: a stand-in must not call a model")
        if raw.results_dir is not None:
            _path(raw.results_dir, base, "results_dir")
        spec = cls(
            experiment=raw.experiment_name,
            model=ModelSpec.from_schema(raw.model),
            dataset=DatasetSpec.from_schema(raw.dataset),
            reader=ReaderSpec.from_schema(raw.reader),
            strategies=strategies,
            policies=policies,
            shapes=shapes,
            context_window=raw.context_window,
            settings_overrides=deep_merge(research.settings, raw.settings),
            summarizer=summarizer,
            max_items=raw.max_items,
            max_questions_per_item=raw.max_questions_per_item,
            budget_usd=raw.budget_usd,
            allow_unpriced=raw.allow_unpriced,
            dry_run=raw.dry_run,
            prompt_cache=raw.prompt_cache,
            progress=raw.progress,
            cache_dir=_path(raw.cache_dir, base, "cache_dir"),
            ocr_cache_dir=(_path(raw.ocr_cache_dir, base, "ocr_cache_dir")
                           if raw.ocr_cache_dir is not None else None),
            timeout_s=raw.timeout_s,
            max_attempts=raw.max_attempts,
            max_frames=raw.max_frames,
            limits_dir=(_path(raw.limits_dir, base, "limits_dir")
                        if raw.limits_dir is not None else None),
            policy_shapes=policy_shapes,
            research=research,
        )
        try:
            spec.settings()
        except ValueError as exc:
            raise ValueError(f"settings: {exc}") from None
        return spec


def _choices(single: ChoiceConfig | None, names: Sequence[str], many: str,
             known: Sequence[str]) -> tuple[str, ...]:
    """One choice (``strategy=NAME`` or its group file ``{name: NAME}``) wins over the list
    ``many``; each must be in ``known``."""
    if single is not None:
        chosen: tuple[str, ...] = (single.name,)
    else:
        chosen = tuple(names)
    bad = [n for n in chosen if n not in known]
    if bad:
        raise ValueError(f"{many} has unknown value(s) {bad}; known: {list(known)}")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"{many} lists a value twice: {list(chosen)}")
    return chosen


def _path(text: str, base: Path, where: str) -> Path:
    """An absolute folder path; refused if NUL-bearing, or if it (or a parent) is a file, so
    the error comes now and not as a traceback when the first file is written."""
    if "\0" in text:
        raise ValueError(f"{where} contains a NUL character")
    path = Path(text).expanduser()
    path = path if path.is_absolute() else (base / path).resolve()
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{where} {text!r}: {parent} is a file, not a folder")
    return path


def _dataclass_json(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return json.loads(json.dumps(asdict(obj), default=lambda v: dict(v) if isinstance(v, Mapping)
                                 else str(v)))
