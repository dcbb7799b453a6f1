"""The harness's one voice on the console, also written to the run's log file.

Why: a sweep's progress and tables belong on the console for the person who started it, and in
the job's log file for everyone afterwards: under Hydra's joblib or submitit launchers a job's
stdout is lost or scattered, while Hydra's per-job ``<job>.log`` sits in the run folder. Every
console line of ``snapcompact-eval`` goes through :data:`console`: it is written to stdout (errors
to stderr), unchanged, and logged to the ``snapcompact-eval`` logger, which
``configs/hydra/default.yaml`` wires to the job's file handler only (no second console copy).

Diagnostics that are not console output (a cache warning, a library fallback) go through
ordinary module loggers (``logging.getLogger(__name__)``) and reach both console and file through
Hydra's root handlers; the library's ``snapcompact`` logger has no handler of its own.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

__all__ = ["CONSOLE_LOGGER", "Reporter", "console"]

#: Logger that mirrors console lines into the job log (file handler only, see the docstring).
CONSOLE_LOGGER = "snapcompact-eval"


class Reporter:
    """Writes lines for the user and mirrors them into the log.

    ``out``/``err`` default to the *current* ``sys.stdout``/``sys.stderr`` at each call, so a
    redirected stream (pytest's capture, a notebook) receives the text.
    """

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None,
                 logger: logging.Logger | None = None) -> None:
        self._out = out
        self._err = err
        self.logger = logger or logging.getLogger(CONSOLE_LOGGER)
        # the line is on the console already: never hand it to a root console handler too
        self.logger.propagate = False
        # before Hydra wires the job's file handler (an error while composing the config), a
        # logger without handlers would fall back to logging's last-resort stderr handler and
        # print the line a second time
        if not self.logger.handlers:
            self.logger.addHandler(logging.NullHandler())

    def info(self, text: str) -> None:
        """A progress line, plan or table: stdout and the log (INFO)."""
        print(text, file=self._out or sys.stdout, flush=True)
        self.logger.info("%s", text)

    def error(self, text: str) -> None:
        """A one-line failure: stderr and the log (ERROR)."""
        print(text, file=self._err or sys.stderr, flush=True)
        self.logger.error("%s", text)

    __call__ = info  # a Reporter is the ``log`` callable evals.pipeline.run_loop.run takes


#: The harness's console (see the module docstring).
console = Reporter()
