"""One runner per run folder: an exclusive ``flock`` on ``<run_dir>/.run.lock``.

Why: a run folder is a resume point (``records.jsonl`` says what is already answered). Two
runners started on the same folder would each plan the same missing rows and send every one of
them twice. The second runner is refused at once with a message naming the folder and the pid
holding it. The kernel drops the lock when its process dies, so a ``kill -9`` never leaves a
stale lock behind (the pid written in the file is only for the message).
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOCK_FILE", "RunFolderBusy", "run_folder_lock"]

LOCK_FILE = ".run.lock"


class RunFolderBusy(ValueError):
    """Another process holds the run folder."""


@contextmanager
def run_folder_lock(run_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``run_dir`` for the duration of the block; ``RunFolderBusy`` if another holds it."""
    run_dir = Path(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ValueError(f"run folder {run_dir} cannot be used: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise RunFolderBusy(
                f"run folder {run_dir} is in use by another snapcompact-eval run (pid {holder}); "
                "wait for it to finish, or give this run another experiment_name or "
                "results_dir") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield run_dir
    finally:
        os.close(fd)  # drops the lock
