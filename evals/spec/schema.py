"""The config schemas: what each Hydra config group may hold, declared once.

Why declarative: a DictConfig accepts any key and any value until the moment it is read, so a
typo in a sweep would surface an hour in, after money was spent. Each group here is a pydantic
schema that declares its keys, their types and their bounds, strictly (``"3"`` is not a number,
``1`` is not ``true``) and with unknown keys forbidden; ``evals.spec.schema_errors`` turns a
refusal into one line naming the key. The names every room of the run spec shares (strategies,
policies, the text arm's label) live here, beside the keys they validate.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from evals.spec.old_spellings import renamed_group_keys
from evals.support.redaction import is_secret_name

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
    # how the offline reader finds the answer: told its evidence (the legibility floor) or
    # blind (BM25 over what it read; evals.blind). configs/reader/blind.yaml
    locate: Literal["told", "blind"] = "told"


class ShapeConfig(_Group):
    """A ``configs/shape/*.yaml`` file (checked against the shape table by ``ShapeSpec``).

    A key in an old spelling (``evals.spec.old_spellings``) is still read, with a warning naming
    its new spelling (``shape.name``).
    """

    name: Any = None
    frame_size: Any = None  # checked by snapcompact.core.shapes.check_frame_size

    @model_validator(mode="before")
    @classmethod
    def _old_spelling(cls, data: Any) -> Any:
        return renamed_group_keys("shape", data) if isinstance(data, Mapping) else data


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
    context_window: Window  # its one default is configs/eval.yaml's
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
