"""One line per difference between a committed file and its re-derived text.

Why: a check that only says "stale" sends the reader hunting; a referee wants the file, the line
and both values, e.g. ``results/report.md:20: committed '0.175' != re-derived '0.275'``. The
values shown are the first figure-like words that differ on the line. When the lines differ in
more than one word's place (a column added, a sentence reworded), the first difference is shown
instead: in a CSV file the first differing field, named by the header
(``results/summary.csv:2: field 31 recall_session_lo: committed '0.21' != re-derived '0.20'``),
elsewhere the character column and both lines around it, so the differing part is never cut
off behind a long common start.
"""

from __future__ import annotations

import csv
import difflib
import os
import re
from pathlib import Path

__all__ = ["MAX_LINES", "compare_text", "first_difference"]

#: differing lines reported per file (the rest are counted)
MAX_LINES = 5
#: characters shown of each line before and after the first difference
BEFORE, AFTER = 24, 56

_WORD = re.compile(r"[^\s|,;()\[\]]+")
_SEP = " \t|,;()[]"


def _words(old: str, new: str) -> tuple[str, str] | None:
    """The first differing words of two lines with as many words, else None."""
    a, b = _WORD.findall(old), _WORD.findall(new)
    if len(a) == len(b):
        for x, y in zip(a, b, strict=True):
            if x != y:
                return x, y
    return None


def _field(old: str, new: str, header: list[str]) -> str | None:
    """``field K NAME: committed 'X' != re-derived 'Y'`` for two CSV lines, else None."""
    try:
        a, b = next(csv.reader([old])), next(csv.reader([new]))
    except (csv.Error, StopIteration):
        return None
    for k in range(max(len(a), len(b))):
        x = a[k] if k < len(a) else "(no field)"
        y = b[k] if k < len(b) else "(no field)"
        if x != y:
            name = f" {header[k]}" if k < len(header) else ""
            return f"field {k + 1}{name}: committed {x!r} != re-derived {y!r}"
    return None


def _around(line: str, start: int, after: int = AFTER) -> str:
    cut = max(0, start - BEFORE)
    end = start + after
    return ("…" if cut else "") + line[cut:end] + ("…" if end < len(line) else "")


def first_difference(old: str, new: str, header: list[str] | None = None) -> str:
    """How two differing lines differ, for one message: the first differing CSV field
    (``header``: the file's column names, None: not a CSV file), the first differing words
    (``committed 'X' != re-derived 'Y'``) or, from the first differing character, both lines
    around it."""
    if "(no line)" in (old, new):
        width = BEFORE + AFTER
        return (f"committed {_around(old, 0, width)!r} != "
                f"re-derived {_around(new, 0, width)!r}")
    if header is not None:
        field = _field(old, new, header)
        if field is not None:
            return field
    words = _words(old, new)
    if words is not None:
        return f"committed {words[0]!r} != re-derived {words[1]!r}"
    at = len(os.path.commonprefix([old, new]))
    start = at
    while start > 0 and old[start - 1] not in _SEP:  # from the start of the differing word
        start -= 1
    return (f"column {at + 1}: committed {_around(old, start)!r} != "
            f"re-derived {_around(new, start)!r}")


def compare_text(path: Path, want: str) -> list[str]:
    """``path:line: committed X != re-derived Y`` lines (empty when the texts are equal)."""
    if not path.is_file():
        return [f"{path}: not committed (re-derived it has {len(want.splitlines())} lines)"]
    have = path.read_text(encoding="utf-8")
    if have == want:
        return []
    old, new = have.splitlines(), want.splitlines()
    header = (next(csv.reader([new[0]])) if path.suffix == ".csv" and new else None)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            a = old[i1 + k] if i1 + k < i2 else "(no line)"
            b = new[j1 + k] if j1 + k < j2 else "(no line)"
            out.append(f"{path}:{min(i1 + k, i2) + 1}: {first_difference(a, b, header)}")
    if len(out) > MAX_LINES:
        out = out[:MAX_LINES] + [f"{path}: ... and {len(out) - MAX_LINES} more differing lines"]
    if not out:  # only the line ends differ
        out = [f"{path}: differs from its re-derived text in whitespace or line ends"]
    return out
