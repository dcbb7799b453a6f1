"""``snapcompact-eval``: the Hydra entry point of the eval harness.

Why Hydra: a sweep is a product of choices (model x shape x dataset x reader), and Hydra makes
each choice a file in ``configs/`` and each product a command line (``-m shape='glob(*)'
model=a,b``), with launchers for parallel and cluster jobs. This module only wires Hydra to the
harness: it turns the composed config into a checked ``RunSpec`` (``evals.spec.run_spec``) and hands
it to ``evals.pipeline.run_loop.run``. Nothing here decides what is measured.

The configs are package data (``evals.spec.config_files``: ``configs/`` in a checkout, installed
with the wheel), so the command works from any working directory, editable install or not.
Relative paths in the config (``results_dir``, ``cache_dir``) are taken from the directory
the command was started in; Hydra does not change it (``hydra.job.chdir=false``). The run
directory is Hydra's output directory, made deterministic in ``configs/hydra/default.yaml`` so a
rerun of the same command resumes.

Safety at the edge: folder names are built by resolvers that refuse what would escape
``results_dir`` or land at the filesystem root, and redact secrets (``evals.support.redaction``);
every file written here or by Hydra (``run_config.yaml``, ``run_spec.json``, ``.hydra/``,
``multirun.yaml``) is redacted; a run folder is held by one runner at a time
(``evals.support.runlock``); and every error reaches the user as one line (``--debug`` or
``SNAPCOMPACT_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

# Offline by default: litellm must not fetch its price map, `datasets` must not probe the hub,
# and tesseract must not start one thread per core per request.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

import hydra
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from evals.analysis.search_objectives import INFEASIBLE, search_objectives
from evals.send.dollar_budget import BudgetExceeded
from evals.spec.config_files import CONFIG_DIR
from evals.spec.old_spellings import rename_old_overrides
from evals.support.console import console
from evals.support.redaction import redact, redact_data, secret_values
from evals.support.runlock import run_folder_lock

CONFIG_NAME = "eval"

log = logging.getLogger(__name__)


_MAX_SEGMENT_BYTES = 200  # file systems allow 255 bytes per name; leave room for Hydra's


def _run_name(override_dirname: str) -> str:
    """The run folder's last part: the command-line choices, or "defaults" when there are none.

    Secrets are redacted, and ``/`` is escaped so a value such as ``../..`` stays one folder
    name inside the experiment's folder; a name too long for the file system is cut and
    suffixed with a hash of the whole.
    """
    name = redact(str(override_dirname or "")).replace("/", "%2F").replace("\0", "")
    if name in ("", ".", ".."):
        name = "defaults" if not name else name.replace(".", "%2E")
    if len(name.encode()) > _MAX_SEGMENT_BYTES:
        digest = hashlib.sha256(name.encode()).hexdigest()[:12]
        name = name.encode()[: _MAX_SEGMENT_BYTES - 13].decode("utf-8", "ignore") + "~" + digest
    return name


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=,-]*$")


def _folder_name(value: Any) -> str:
    """``experiment_name`` as one folder name: refused if it could leave ``results_dir``."""
    text = str(value) if value is not None else ""
    if not _PLAIN_NAME.match(text) or ".." in text or len(text) > 100:
        raise ValueError(f"experiment_name {text!r} must be a plain folder name (letters, "
                         "digits, _ . + = , -; no '/' or '..')")
    return text


def _results_root(value: Any) -> str:
    """``results_dir`` for the run folder: refused when empty (that would write at the
    filesystem root) or when it names an existing file."""
    text = str(value) if value is not None else ""
    if not text.strip():
        raise ValueError("results_dir is empty: name a folder for the results, e.g. "
                         "results_dir=results")
    if "\0" in text:
        raise ValueError("results_dir contains a NUL character")
    path = Path(text).expanduser()
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"results_dir {text!r}: {parent} is a file, not a folder")
    return text


def _sqlite_url(value: Any) -> str:
    """A SQLite URL for the search's optuna study (``configs/experiment/search.yaml``), its
    folder created: the study survives the process, so rerunning the search resumes it."""
    path = Path(str(value)).expanduser().resolve()
    _results_root(str(path.parent))  # refuses an empty path or a parent that is a file
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


for _name, _fn in (("sc_run_name", _run_name), ("sc_folder_name", _folder_name),
                   ("sc_results_dir", _results_root), ("sc_sqlite", _sqlite_url)):
    if not OmegaConf.has_resolver(_name):
        OmegaConf.register_new_resolver(_name, _fn)


def _write_redacted(path: Path, text: str) -> None:
    """Write ``text`` atomically (a concurrent job rewriting the same file never tears it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _scrub_files(paths: Any, secrets: list[str]) -> None:
    """Redact YAML files Hydra wrote (the command line, the composed config)."""
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        clean = redact(text, secrets)
        if clean != text:
            _write_redacted(path, clean)


def _scrub_hydra_files(run_dir: Path, secrets: list[str] = ()) -> None:  # type: ignore[assignment]
    """Hydra saves the command line under .hydra/: remove anything that looks like a key."""
    _scrub_files((run_dir / ".hydra").glob("*.yaml"), list(secrets))


def _config_secrets(cfg: Any) -> list[str]:
    """Values stored under secret-bearing names anywhere in the composed config."""
    try:
        plain = OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else cfg
    except (ValueError, OmegaConfBaseException):  # best effort; the text patterns still apply
        return []
    return secret_values(plain)


def _write_run_files(cfg: DictConfig, spec: Any, run_dir: Path) -> None:
    from dataclasses import asdict

    secrets = _config_secrets(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    plain = redact_data(OmegaConf.to_container(cfg, resolve=True), secrets)
    _write_redacted(run_dir / "run_config.yaml", OmegaConf.to_yaml(OmegaConf.create(plain)))
    spec_json = json.loads(json.dumps({"run_id": spec.run_id(), **asdict(spec)}, default=str))
    _write_redacted(run_dir / "run_spec.json",
                    json.dumps(redact_data(spec_json, secrets), indent=2) + "\n")


def run_config(cfg: DictConfig, run_dir: str | os.PathLike[str], *,
               completion_fn: Any = None, base_dir: str | os.PathLike[str] | None = None):
    """Run one composed config into ``run_dir`` (what the Hydra app does; tests call it)."""
    # local (cost): the run's modules, +1.1 s, load only when a job runs (--help, --cfg: not)
    from evals.pipeline.run_loop import run
    from evals.send.response_cache import ResponseCache
    from evals.spec.run_spec import RunSpec

    spec = RunSpec.from_config(cfg, base_dir=base_dir)
    run_dir = Path(run_dir)
    if not spec.dry_run:
        ResponseCache(spec.cache_dir)  # an unusable cache folder fails now, before planning
    if spec.dry_run:  # reads only: may look at a folder another runner is filling
        return run(spec, run_dir, completion_fn=completion_fn, log=console)
    with run_folder_lock(run_dir):
        _write_run_files(cfg, spec, run_dir)
        return run(spec, run_dir, completion_fn=completion_fn, log=console)


def _output_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir)


def _check_choices() -> None:
    """Config group choices are names of files in ``configs/<group>/``, never paths."""
    from hydra.core.hydra_config import HydraConfig

    for group, choice in HydraConfig.get().runtime.choices.items():
        if choice is None or str(group).startswith("hydra"):
            continue
        text = str(choice)
        if not text.strip() or "/" in text or "\\" in text or ".." in text:
            raise ValueError(f"{group}={text!r} is not a config name: pick one of the files in "
                             f"configs/{group}/ by name")


def _scrub_sweep_file(secrets: list[str]) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        _scrub_files([Path(hydra_cfg.sweep.dir) / "multirun.yaml"], secrets)


_FAILURES: list[str] = []  # one-line errors of this process's jobs (see main)
_DEBUG = False


def _searching() -> bool:
    """True when the job is a trial of Hydra's optuna sweeper (``experiment=search``)."""
    from hydra.core.hydra_config import HydraConfig

    target = HydraConfig.get().sweeper.get("_target_") or ""
    return "optuna" in str(target).lower()


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name=CONFIG_NAME)
def hydra_main(cfg: DictConfig) -> tuple[float, float] | None:
    """The Hydra task: one composed config -> one run folder.

    Errors are caught here, not left to Hydra: Hydra would print the job's overrides (which
    may carry a key) and a traceback. Each failed job prints one line; the sweep goes on with
    the next job, and ``main`` exits with status 2. A trial of the optuna sweeper returns its
    objectives from the run's records (:mod:`evals.analysis.search_objectives`); a failed trial
    returns None, which the sweeper records as failed.
    """
    try:
        run_dir = _output_dir()
        secrets = _config_secrets(cfg)
        _scrub_hydra_files(run_dir, secrets)
        _scrub_sweep_file(secrets)
        _check_choices()
        try:
            run_config(cfg, run_dir)
        except ValueError as exc:
            if not _searching():
                raise

            # a trial's knobs or shape parameters the harness refuses (e.g. natural glyphs on
            # a cell smaller than the font's): a point of the space that cannot run
            console.error(f"snapcompact-eval: search trial infeasible: {_user_message(exc)}")
            return INFEASIBLE
        if _searching():
            objectives = search_objectives(run_dir)
            console.info("search trial: recall on discarded evidence "
                         f"{objectives.recall_discarded:.3f}, billed context "
                         f"{objectives.billed_tokens:,.0f} tokens"
                         + ("" if objectives.feasible
                            else f" (infeasible: {objectives.reason})"))
            return objectives.values()
    except Exception as exc:
        if _DEBUG:
            raise
        kind = "budget" if isinstance(exc, BudgetExceeded) else "error"
        line = f"snapcompact-eval: {kind}: {_user_message(exc)}"
        console.error(line)
        _FAILURES.append(line)
    return None


_CONTEXT_LINES = ("full_key:", "object_type=", "reference_type=")
_RAISED_WHILE = re.compile(r"^\w+ raised while resolving interpolation: ")


def _user_message(exc: BaseException) -> str:
    """One line for the user: the innermost cause that says what was wrong, redacted."""
    chain = [exc]
    while len(chain) < 20:
        last = chain[-1]
        nxt = last.__cause__ or (None if last.__suppress_context__ else last.__context__)
        if nxt is None:
            break
        chain.append(nxt)
    plain = [e for e in chain if isinstance(e, (ValueError, OSError, LookupError))
             and not type(e).__module__.startswith(("omegaconf", "hydra"))]
    seen = plain[-1] if plain else exc
    if isinstance(seen, OSError) and seen.strerror:
        where = f": {seen.filename}" if seen.filename else ""
        text = f"{seen.strerror}{where}"
    else:
        text = str(seen)
    lines = []
    for line in text.splitlines():
        if line.strip().startswith(_CONTEXT_LINES):
            break  # omegaconf's "full_key: ... object_type=..." trailer
        if line.strip():
            lines.append(_RAISED_WHILE.sub("", line.strip()))
    one = " ".join(lines) if lines else type(seen).__name__
    return redact(one)[:1000]


def _exit_now(status: int) -> None:
    """End the process after Ctrl-C without waiting for reader threads still OCR-ing a frame
    (the interpreter would join them at exit): say so, flush the streams and logs, leave.
    Records are flushed by the run loop before the interrupt reaches here."""
    import logging

    console.error("snapcompact-eval: interrupted (rerun the same command to resume)")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    logging.shutdown()
    os._exit(status)


def main() -> None:
    """Entry point of the ``snapcompact-eval`` console script (see configs/eval.yaml).

    Errors end the process with status 2 and one line on stderr; ``--debug`` (removed from the
    arguments before Hydra sees them) or ``SNAPCOMPACT_DEBUG=1`` re-raises with the traceback.
    """
    global _DEBUG

    _DEBUG = "--debug" in sys.argv[1:] or os.environ.get("SNAPCOMPACT_DEBUG") == "1"
    sys.argv = [sys.argv[0], *rename_old_overrides([a for a in sys.argv[1:] if a != "--debug"])]
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises; we decide how errors look
    _FAILURES.clear()
    try:
        hydra_main()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _exit_now(130)
    except Exception as exc:
        if _DEBUG:
            raise
        kind = "budget" if isinstance(exc, BudgetExceeded) else "error"
        console.error(f"snapcompact-eval: {kind}: {_user_message(exc)}")
        raise SystemExit(2) from None
    if _FAILURES:
        raise SystemExit(2)


if __name__ == "__main__":
    main()
