"""The run's inputs, checked: the model that answers, the dataset it is asked about, the readers.

Why apart from the run: each is read from its own config group and checked against its own
table (a model's params, a dataset loader's keyword params, the known readers); the run
(``evals.spec.run_spec``) only assembles them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evals.items.datasets import dataset_params
from evals.spec.schema import READERS, DatasetConfig, ModelConfig, ReaderConfig
from evals.spec.schema_errors import validated


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
        return cls.from_schema(validated(ModelConfig, cfg, ("model",)))

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
        return cls.from_schema(validated(DatasetConfig, cfg, ("dataset",)))

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
    locate: str = "told"  # the offline reader: told its evidence, or blind (evals.blind)

    @classmethod
    def from_config(cls, cfg: Any) -> ReaderSpec:
        return cls.from_schema(validated(ReaderConfig, cfg, ("reader",)))

    @classmethod
    def from_schema(cls, reader: ReaderConfig) -> ReaderSpec:
        if not reader.readers:
            raise ValueError("reader.readers is empty: name at least one of " + ", ".join(READERS))
        bad = [r for r in reader.readers if r not in READERS]
        if bad:
            raise ValueError(f"reader.readers has unknown reader(s) {bad}; known: {list(READERS)}")
        return cls(name=reader.name, readers=tuple(reader.readers),
                   answer_max_tokens=reader.answer_max_tokens, locate=reader.locate)
