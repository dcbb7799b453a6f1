"""Command line verbs (``python -m snapcompact``): render, resolve, bill, compact, session, demo.

Modules: ``commands`` (the verbs and flags of the reference oracle, so outputs diff), ``session``
(the ``session`` verb over a recorded conversation), ``demo`` (a frame from sample text).

The names below are the public API; everything else is internal and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.cli.commands import main

#: Public name -> the module that defines it (imported on first use, so importing one stage
#: does not load the others).
_WHERE: dict[str, str] = {
    "main": "commands",
}

__all__ = [
    "main",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
