"""Old spellings of persisted data, read through one table (``old_spellings.toml``).

Why one place: the reference has its own word for a shape; this project says shape. Configs,
shape tables and model tables written in the old word still load, and two on-disk formats keep
the old word on purpose (the reference's archive JSON, the key run ids hash a shape under). If
every reader spelt the old word itself, the word would survive in a dozen modules and no one
could tell a leftover from a format. Here the old spellings are data, in one table, and each
reader asks this module: "which key replaced this one?" or "which key does this format write?".
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any


@lru_cache(maxsize=1)
def _table() -> Mapping[str, Any]:
    raw = resources.files("snapcompact.core").joinpath("old_spellings.toml").read_text()
    return tomllib.loads(raw)


def renamed_keys(kind: str) -> Mapping[str, str]:
    """Old key -> the key that replaced it, for one kind of data (``config_keys``,
    ``shape_table``, ``model_table``)."""
    kinds = _table()["renamed"]
    if kind not in kinds:
        raise ValueError(f"no old spellings for {kind!r}; known: {', '.join(sorted(kinds))}")
    return MappingProxyType(dict(kinds[kind]))


def on_disk_key(fmt: str) -> str:
    """The key a persisted format writes in the old word on purpose (``archive_ink``,
    ``run_id_shape``): a format kept byte for byte, not an old spelling to convert."""
    keys = _table()["on_disk"]
    if fmt not in keys:
        raise ValueError(f"no on-disk key {fmt!r}; known: {', '.join(sorted(keys))}")
    return str(keys[fmt])


def rename_old_keys(kind: str, data: Mapping[str, Any], where: str) -> tuple[dict[str, Any],
                                                                            list[str]]:
    """``data`` with every old key of ``kind`` renamed, and the old keys found (in order).

    A mapping holding both an old key and the key that replaced it is refused (``ValueError``
    naming both): which one was meant cannot be told. Warning is the caller's (a library table
    warns a developer, a config warns the person running the harness).
    """
    renames = renamed_keys(kind)
    out: dict[str, Any] = {}
    found: list[str] = []
    for key, value in data.items():
        new = renames.get(key)
        if new is not None:
            if new in data:
                raise ValueError(f"{where}: both {new!r} and its old spelling {key!r} are set; "
                                 f"keep {new!r} only")
            found.append(key)
            key = new
        out[key] = value
    return out, found
