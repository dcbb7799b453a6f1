"""Lazy public names for the package ``__init__`` files.

Why: each stage package names its public API in ``__all__`` but must not import every module
when one name is asked for (``import snapcompact.core`` must not load the renderer, and a
render must not load the compaction pipeline). A package keeps a ``_WHERE`` map (public name ->
submodule) and takes its module ``__getattr__``/``__dir__`` (PEP 562) from :func:`lazy_exports`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str], public: list[str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: a name's submodule is imported on first use.

    The value is cached in the package's namespace, so the next lookup is an ordinary attribute.
    """
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
