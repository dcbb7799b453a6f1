"""Config keys and command-line overrides in their old spelling, read with a warning.

Why: "one word per thing" renamed keys (a shape is called a shape, not the reference's word),
but commands in notes, scripts and shell histories still spell them the old way. They keep
working: each old key is mapped to its new spelling by the library's one converter
(``snapcompact.core.old_spellings``, table ``config_keys``), with a ``FutureWarning`` (shown by
default: the reader is the person running the harness) that names the new spelling.

Hydra refuses an override of a key the composed config lacks before any of our code sees it,
so the old spelling of an override is rewritten on the command line (``rename_old_overrides``);
a key in the old spelling inside a config file is renamed by its group's schema
(``evals.spec.schema.ShapeConfig``), which calls ``renamed_group_keys``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from snapcompact.core import renamed_keys

#: Old config key -> its new spelling (the converter's ``config_keys`` table).
OLD_CONFIG_KEYS: Mapping[str, str] = renamed_keys("config_keys")

_OVERRIDE = re.compile(r"^(?P<prefix>~|\+\+|\+)?(?P<key>[\w.\-/@]+)(?P<rest>=.*)?$", re.DOTALL)


def warn_old_config_key(old: str) -> None:
    """Warn that config key ``old`` is the old spelling, naming the new one."""
    warnings.warn(f"config key {old} is the old spelling; use {OLD_CONFIG_KEYS[old]}",
                  FutureWarning, stacklevel=3)


def renamed_group_keys(group: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A config group's mapping with its old keys renamed (each warned about); the key a user
    typed in the old spelling wins over the file's value under the new one."""
    out = dict(data)
    for old, new in OLD_CONFIG_KEYS.items():
        old_group, _, old_key = old.rpartition(".")
        new_group, _, new_key = new.rpartition(".")
        if old_group == new_group == group and old_key in out:
            warn_old_config_key(old)
            out[new_key] = out.pop(old_key)
    return out


def rename_old_overrides(args: Sequence[str]) -> list[str]:
    """``args`` with every override of an old key spelled the new way (each warned about).

    An old key becomes its new spelling (``shape.name=8on22-bw``); ``+``/``++``/``~`` prefixes are
    kept; anything that is not an override of an old key is returned unchanged.
    ``+settings.<section>.<key>=v`` (needed while ``settings`` was ``{}``; configs/eval.yaml now
    declares every key, and Hydra refuses ``+`` on a key it holds) becomes ``++settings...``,
    which sets the key whether or not it is declared.
    """
    out = []
    for arg in args:
        m = _OVERRIDE.match(arg)
        if m is not None and m["prefix"] == "+" and m["key"].startswith("settings."):
            arg = "+" + arg
        elif m is not None and m["key"] in OLD_CONFIG_KEYS:
            warn_old_config_key(m["key"])
            arg = f"{m['prefix'] or ''}{OLD_CONFIG_KEYS[m['key']]}{m['rest'] or ''}"
        out.append(arg)
    return out
