"""The typed run spec: a composed Hydra config, checked once, frozen, and handed to the pipeline.

Why a spec between Hydra and the pipeline: a DictConfig accepts any key and any value until the
moment it is read, so a typo in a sweep would surface an hour in, after money was spent. Here
every field the pipeline reads is pulled out, type-checked and validated against the library's
own tables (named shapes, strategies, policies, compaction settings, datasets) before a frame
is rendered; unknown keys in a group raise a ``ValueError`` that names them. The pipeline never
touches the DictConfig.

How, in rooms: each config group has a pydantic schema (``evals.spec.schema``: strict types,
unknown keys forbidden); ``evals.spec.schema_errors`` turns a refusal into one line naming the
key (``model.concurrency must be an integer >= 1, got 0``), the form every error of the harness
takes. The checked parts are frozen dataclasses: the run's inputs (``evals.spec.inputs``: model,
dataset, readers) and what each arm draws (``evals.spec.arms``: shape, arm, research knobs).
This module assembles them (``RunSpec.from_config``, step by step) and checks across keys (a
summarizer for the LLM strategies, one home for the shape). The pipeline's types do not depend
on pydantic.

Arms. Every item is a session replayed through the production compaction pipeline with a
``context_window``; an arm is what the pipeline does with the history that no longer fits:
``strategies`` (``full``: nothing compacted, the upper bound; ``truncate``: dropped, the lower
bound; ``snapcompact``; ``context-full`` and ``handoff``, which need a ``summarizer`` model)
crossed, for snapcompact, with ``policies`` (pinned, foveated) and the shape (``shape=NAME`` for
one, ``shapes`` for several: shape names or ``auto``, the shape production picks for the
target) at ``frame_size``. ``settings.snapcompact.shape`` is refused naming ``shape``: each arm
draws its own shape, so that setting would be silently overridden.

Keys. A model config names the environment variables its provider needs (``required_env``);
their *names* live in configs, their values only in the environment, read by litellm itself.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evals.spec.arms import ArmSpec, ResearchSpec, ShapeSpec
from evals.spec.inputs import DatasetSpec, ModelSpec, ReaderSpec
from evals.spec.schema import (
    DEFAULT_MAX_FRAMES,
    POLICIES,
    STRATEGIES,
    SUMMARIZER_STRATEGIES,
    TEXT_ARM,
    ChoiceConfig,
    EvalConfig,
)
from evals.spec.schema_errors import as_plain, validated
from evals.store.records import ORACLE_SUMMARIZER_PREFIX, is_oracle_summarizer
from snapcompact.compaction import DEFAULT_SETTINGS, merge_settings

__all__ = ["TEXT_ARM", "ArmSpec", "DatasetSpec", "ModelSpec", "ReaderSpec", "ResearchSpec",
           "RunSpec", "ShapeSpec", "STRATEGIES", "deep_merge"]


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
            # ``locate`` only when blind: ids of told runs made before it existed stay the same
            "reader": {k: v for k, v in _dataclass_json(self.reader).items()
                       if not (k == "locate" and v == "told")},
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
        raw = _composed(cfg)
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        research = ResearchSpec.from_schema(raw.research)
        _refuse_settings_shape(raw.settings, research.settings)
        shapes = _run_shapes(raw, research)
        strategies = _choices(raw.strategy, raw.strategies, "strategies", STRATEGIES)
        policies = _choices(raw.policy, raw.policies, "policies", POLICIES)
        policy_shapes = _policy_shapes(raw, research)
        _check_snapcompact_arms(strategies, shapes, policies)
        summarizer = _summarizer(raw, strategies)
        if raw.results_dir is not None:
            _path(raw.results_dir, base, "results_dir")
        reader = ReaderSpec.from_schema(raw.reader)
        spec = cls(
            experiment=raw.experiment_name,
            model=_answering_model(ModelSpec.from_schema(raw.model), reader),
            dataset=DatasetSpec.from_schema(raw.dataset),
            reader=reader,
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


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` applied key by key (nested mappings merged, ``over`` wins)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out




# --------------------------------------------------------------------------------------------
# the steps of from_config


def _composed(cfg: Any) -> EvalConfig:
    """The composed config checked against the schema, Hydra's own key removed."""
    data = as_plain(cfg)
    if isinstance(data, Mapping):
        data = {k: v for k, v in data.items() if k != "hydra"}
    return validated(EvalConfig, data, ())


def _refuse_settings_shape(*settings: Mapping[str, Any]) -> None:
    """Refuse ``settings.snapcompact.shape`` (the run's or a research file's): every snapcompact
    arm draws the shape it names, so the setting would be silently overridden. The shape has one
    key: ``shape``."""
    for section in settings:
        value = section.get("snapcompact", {})
        if isinstance(value, Mapping) and value.get("shape") is not None:
            raise ValueError("settings.snapcompact.shape is not read (each arm draws its own "
                             "shape): choose the shape with shape=NAME (or shapes=[...])")


def _run_shapes(raw: EvalConfig, research: ResearchSpec) -> tuple[ShapeSpec, ...]:
    """The shapes every snapcompact arm runs, from exactly one source: a shape chosen by name
    (``shape=NAME``), the research's shape (``research.shape``, a shape given by its
    parameters) or the list ``shapes``. ``shape=NAME`` (the command line's) replaces the
    experiment's research shape and its list, and says so when it replaces a research shape:
    nothing is overridden silently. Each shape at most once."""
    if raw.shape is not None and research.shape is not None:
        warnings.warn(f"shape={raw.shape.name} replaces research.shape ({research.shape}) for "
                      "this run", UserWarning, stacklevel=3)
    if raw.shape is not None:
        size = raw.shape.frame_size if raw.shape.frame_size is not None else raw.frame_size
        shapes: tuple[ShapeSpec, ...] = (ShapeSpec.parse(raw.shape.name, size, "shape.name"),)
    elif research.shape is not None:
        shapes = (ShapeSpec.parse(research.shape, raw.frame_size, "research.shape"),)
    else:
        shapes = tuple(ShapeSpec.parse(n, raw.frame_size, f"shapes[{i}]")
                       for i, n in enumerate(raw.shapes))
    labels = [(s.name, s.frame_size) for s in shapes]
    if len(set(labels)) != len(labels):
        raise ValueError(f"shapes lists a shape twice: {[s.name for s in shapes]}")
    return shapes


def _policy_shapes(raw: EvalConfig,
                   research: ResearchSpec) -> dict[str, tuple[ShapeSpec, ...]]:
    """``policy_shapes``: the shapes a policy runs instead of the run's list ``shapes``. A run
    whose one shape is chosen (``shape=NAME`` or ``research.shape``) runs it under every policy,
    as both keys say: the experiment's ``policy_shapes`` do not apply."""
    if raw.shape is not None or research.shape is not None:
        return {}
    out: dict[str, tuple[ShapeSpec, ...]] = {}
    for policy, names in raw.policy_shapes.items():
        if policy not in POLICIES:
            raise ValueError(f"policy_shapes has unknown policy {policy!r}; known: "
                             f"{list(POLICIES)}")
        if not names or len(set(names)) != len(names):
            raise ValueError(f"policy_shapes.{policy} must list at least one shape, each "
                             f"once, got {list(names)}")
        out[policy] = tuple(ShapeSpec.parse(n, raw.frame_size, f"policy_shapes.{policy}[{i}]")
                            for i, n in enumerate(names))
    return out


def _check_snapcompact_arms(strategies: Sequence[str], shapes: Sequence[ShapeSpec],
                            policies: Sequence[str]) -> None:
    if "snapcompact" in strategies and not shapes:
        raise ValueError("strategy snapcompact needs at least one shape (shapes=[auto] for the "
                         "shape production picks)")
    if "snapcompact" in strategies and not policies:
        raise ValueError("strategy snapcompact needs at least one policy (policies=[pinned])")


def _answering_model(model: ModelSpec, reader: ReaderSpec) -> ModelSpec:
    """The model line, its questions served by the blind reader when ``reader.locate`` is
    blind (only the offline reader can be blind: a real model is never told the evidence)."""
    if reader.locate != "blind":
        return model
    if not model.offline_reader:
        raise ValueError(f"reader {reader.name!r} (locate: blind) is the offline blind reader: "
                         f"it answers for model=ocr-style offline configs, not {model.name!r}, "
                         "which is never told the evidence anyway")
    from evals.blind.provider import MODEL_ID

    return dataclasses.replace(model, reader_ids={**model.reader_ids, "qa": MODEL_ID})


def _summarizer(raw: EvalConfig, strategies: Sequence[str]) -> ModelSpec | None:
    """The summarizer model, checked: present when an LLM strategy needs one, able to write
    summaries, and a stand-in only when it truly calls no model; the answering model is no
    stand-in."""
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
    if summarizer is not None:
        _check_stand_in(summarizer)
    return summarizer


def _check_stand_in(summarizer: ModelSpec) -> None:
    """An oracle is a stand-in with an oracle's id; a stand-in never calls a model."""
    if summarizer.oracle is not None and not summarizer.stand_in:
        raise ValueError(f"summarizer {summarizer.name!r} is an oracle ({summarizer.oracle}) "
                         "but not stand_in: true: no language model writes its summaries")
    if summarizer.oracle is not None and not is_oracle_summarizer(summarizer.litellm_id):
        raise ValueError(f"summarizer {summarizer.name!r} is an oracle ({summarizer.oracle}) "
                         f"but its litellm_id {summarizer.litellm_id!r} does not start with "
                         f"{ORACLE_SUMMARIZER_PREFIX!r}: its rows would share keys with a "
                         "model's")
    if summarizer.stand_in and summarizer.oracle is None and \
            "mock_response" not in summarizer.params:
        raise ValueError(f"summarizer {summarizer.name!r} says stand_in: true but has no "
                         "params.mock_response: a stand-in must not call a model")


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
    return json.loads(json.dumps(asdict(obj), default=lambda v: dict(v) if isinstance(v, Mapping)
                                 else str(v)))
