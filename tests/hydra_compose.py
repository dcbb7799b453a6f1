"""The one way the tests compose the harness's Hydra config, as ``snapcompact-eval`` would.

Why one place: the config folder, the primary config's name and the version base are the
harness's (``evals.spec.config_files``); a test that composes them itself drifts when any of them
moves. Tests take the ``compose_eval`` fixture (tests/conftest.py); module-level helpers that
build a config for several tests import the function.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from evals.spec.config_files import CONFIG_DIR

CONFIG_NAME = "eval"


def compose_eval(overrides: Sequence[str] = (), *, hydra_config: bool = False) -> DictConfig:
    """``configs/eval.yaml`` with ``overrides``; ``hydra_config`` adds the ``hydra`` node."""
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        return compose(CONFIG_NAME, overrides=list(overrides), return_hydra_config=hydra_config)
