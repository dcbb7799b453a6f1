"""The eval harness: rooms that follow one run's flow (docs/architecture.md, the evals layers).

    items     sessions and dataset items, the prompts
    replay    a session replayed through production's maintenance -> the next context, its bill
    send      the request to a model: client, response cache, budget, prices, limits, preflight
    readers   the offline OCR reader and the provider reader's request/answer parsing
    blind     the blind offline reader: told only the question, BM25 over what it read
    store     records, transcripts, pixel keys
    pipeline  one run: the Hydra entry point, the plan, the loop, rows, scoring, the report
    analysis  records -> tables, intervals, plots, the winner per model line
    study     pre-registered studies: the plan, its power analysis, its order in git
    view      the static records viewer
    spec      the typed run spec, the configs' location, the versions behind a row
    twins     every fake: provider wire twins, the loopback chat server, the soak run
    support   redaction, the console voice, the run-folder lock

Outside the rooms: ``transcripts`` and ``pixel_keys``, the old paths the offline reader still
imports (re-exporting :mod:`evals.store`'s names, so the reader's hashed source stays the same).
"""

import importlib.util as _util
import os as _os
import sys as _sys

#: Modules of the ``[evals]`` extra every harness command imports first: without them a
#: library-only install (``pip install snapcompact``) would stop on a bare ModuleNotFoundError.
_EXTRA_MODULES = ("pandas", "hydra", "omegaconf", "litellm", "tqdm", "pyarrow")


def _require_the_evals_extra() -> None:
    """Name the ``[evals]`` extra when a module of it is missing: one line and exit 2 from a
    ``snapcompact-eval*`` console script, a ModuleNotFoundError saying so elsewhere."""
    missing = [name for name in _EXTRA_MODULES if _util.find_spec(name) is None]
    if not missing:
        return
    message = (f"the eval harness needs the [evals] extra (missing: {', '.join(missing)}): "
               "pip install 'snapcompact[evals]' (from a checkout: pip install -e '.[evals]'); "
               "the library alone is `python -m snapcompact`")
    program = _os.path.basename(_sys.argv[0]) if _sys.argv and _sys.argv[0] else ""
    if program.startswith("snapcompact-eval"):
        _sys.stderr.write(f"{program}: error: {message}\n")
        raise SystemExit(2)
    raise ModuleNotFoundError(message, name=missing[0])


_require_the_evals_extra()

