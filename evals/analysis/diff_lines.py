"""One line per difference between a committed file and its re-derived text.

Why: a check that only says "stale" sends the reader hunting; a referee wants the file, the line
and both values, e.g. ``results/report.md:20: committed '0.175' != re-derived '0.275'``. The
values shown are the first figure-like words that differ on the line (the whole line, cut, when
no single word differs).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

__all__ = ["MAX_LINES", "compare_text"]

#: differing lines reported per file (the rest are counted)
MAX_LINES = 5

_WORD = re.compile(r"[^\s|,;()\[\]]+")


def _values(old: str, new: str) -> tuple[str, str]:
    """The first differing words of two lines, or both lines cut to 120 characters."""
    a, b = _WORD.findall(old), _WORD.findall(new)
    if len(a) == len(b):
        for x, y in zip(a, b, strict=True):
            if x != y:
                return x, y
    return old[:120], new[:120]


def compare_text(path: Path, want: str) -> list[str]:
    """``path:line: committed X != re-derived Y`` lines (empty when the texts are equal)."""
    if not path.is_file():
        return [f"{path}: not committed (re-derived it has {len(want.splitlines())} lines)"]
    have = path.read_text(encoding="utf-8")
    if have == want:
        return []
    old, new = have.splitlines(), want.splitlines()
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            a = old[i1 + k] if i1 + k < i2 else "(no line)"
            b = new[j1 + k] if j1 + k < j2 else "(no line)"
            x, y = _values(a, b)
            out.append(f"{path}:{min(i1 + k, len(old) - 1) + 1}: committed {x!r} != "
                       f"re-derived {y!r}")
    if len(out) > MAX_LINES:
        out = out[:MAX_LINES] + [f"{path}: ... and {len(out) - MAX_LINES} more differing lines"]
    if not out:  # only the line ends differ
        out = [f"{path}: differs from its re-derived text in whitespace or line ends"]
    return out
