"""``snapcompact-eval``: the Hydra entry point of the eval harness.

Why Hydra: a sweep is a product of choices (model x shape x dataset x reader), and Hydra makes
each choice a file in ``configs/`` and each product a command line (``-m shape='glob(*)'
model=a,b``), with launchers for parallel and cluster jobs. This module only wires Hydra to the
harness: it turns the composed config into a checked ``RunSpec`` (``evals.spec``) and hands it
to ``evals.pipeline.run``. Nothing here decides what is measured.

The configs are found next to this package (``<repo>/configs``), so the command works from any
working directory of an editable install. Relative paths in the config (``results_dir``,
``cache_dir``) are taken from the directory the command was started in; Hydra does not change
it (``hydra.job.chdir=false``). The run directory is Hydra's output directory, made
deterministic in ``configs/hydra/default.yaml`` so a rerun of the same command resumes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

# Offline by default: litellm must not fetch its price map, `datasets` must not probe the hub,
# and tesseract must not start one thread per core per request.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

import hydra
from omegaconf import DictConfig, OmegaConf

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
CONFIG_NAME = "eval"

log = logging.getLogger("snapcompact-eval")


def _run_name(override_dirname: str) -> str:
    """The run folder's last part: the command-line choices, or "defaults" when there are none."""
    return override_dirname or "defaults"


if not OmegaConf.has_resolver("sc_run_name"):
    OmegaConf.register_new_resolver("sc_run_name", _run_name)


def _scrub_hydra_files(run_dir: Path) -> None:
    """Hydra saves the command line under .hydra/: remove anything that looks like a key."""
    from evals.client import redact

    for path in (run_dir / ".hydra").glob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        clean = redact(text)
        if clean != text:
            path.write_text(clean, encoding="utf-8")


def _write_run_files(cfg: DictConfig, spec: Any, run_dir: Path) -> None:
    from dataclasses import asdict

    run_dir.mkdir(parents=True, exist_ok=True)
    plain = OmegaConf.to_container(cfg, resolve=True)
    (run_dir / "run_config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(plain)))
    (run_dir / "run_spec.json").write_text(
        json.dumps({"run_id": spec.run_id(), **asdict(spec)}, indent=2, default=str) + "\n")


def run_config(cfg: DictConfig, run_dir: str | os.PathLike[str], *,
               completion_fn: Any = None, base_dir: str | os.PathLike[str] | None = None):
    """Run one composed config into ``run_dir`` (what the Hydra app does; tests call it)."""
    from evals.pipeline import run
    from evals.spec import RunSpec

    spec = RunSpec.from_config(cfg, base_dir=base_dir)
    run_dir = Path(run_dir)
    _write_run_files(cfg, spec, run_dir)
    return run(spec, run_dir, completion_fn=completion_fn, log=print)


def _output_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir)


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name=CONFIG_NAME)
def main(cfg: DictConfig) -> None:
    """Entry point of the ``snapcompact-eval`` console script (see configs/eval.yaml)."""
    from evals.budget import BudgetExceeded
    from evals.pipeline import MissingCredentials

    run_dir = _output_dir()
    _scrub_hydra_files(run_dir)
    try:
        run_config(cfg, run_dir)
    except (BudgetExceeded, MissingCredentials, ValueError) as exc:
        kind = "budget" if isinstance(exc, BudgetExceeded) else "error"
        print(f"snapcompact-eval: {kind}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
