"""Where the harness's Hydra configs live, in a checkout and in an installed wheel.

The configs sit at the repository's top level (``configs/``) where the README points users.
``evals/configs`` is a symlink to ``../configs`` that the wheel build follows, so an installed
wheel carries every config as package data (``pkg://evals.configs`` for Hydra) and an editable
install reads the checkout's folder through the same name.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["CONFIG_DIR", "CONFIG_PACKAGE", "config_dir"]

#: The package (a namespace package of YAML files) that holds the configs.
CONFIG_PACKAGE = "evals.configs"


def config_dir() -> Path:
    """The folder of ``eval.yaml`` and the config groups; a clear error when it is missing."""
    candidates = [Path(str(files("evals") / "configs")),
                  Path(__file__).resolve().parents[2] / "configs"]  # no-symlink checkout
    for path in candidates:
        if (path / "eval.yaml").is_file():
            return path
    raise FileNotFoundError("snapcompact-eval configs not found (looked in: "
                            f"{', '.join(str(p) for p in candidates)}); reinstall the package")


CONFIG_DIR = config_dir()
