"""What an arm draws: a shape at a frame size, the arm (strategy, policy, shape), the research
knobs in effect.

Why apart from the run: a shape name is checked against the library's shape table, and a
research file's knobs against production's settings; these are the facts a run id hashes per
arm, and the only place the harness turns a config's shape into the name the library draws.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evals.spec.schema import AUTO_SHAPE, TEXT_ARM, ResearchConfig
from snapcompact.compaction import DEFAULT_SETTINGS, merge_settings
from snapcompact.core import (
    PARAMETRIC_PREFIX,
    SHAPE_NAMES,
    check_frame_size,
    get_shape,
    on_disk_key,
)


@dataclass(frozen=True)
class ShapeSpec:
    """A snapcompact shape: a shape name (or ``auto``) at a frame side."""

    name: str
    frame_size: int | None = None  # None: the shape's research size (resolve decides for auto)

    def id_json(self) -> dict[str, Any]:
        """The shape as run ids hash it: under the key run ids were first computed with (the
        reference's word, kept in the old-spellings table), so a run's id (and the rows it
        resumes, and the committed results/runs folders) survives the rename."""
        return {on_disk_key("run_id_shape"): self.name, "frame_size": self.frame_size}

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
