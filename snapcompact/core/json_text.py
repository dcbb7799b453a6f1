"""``json.dumps(value, indent=n, ensure_ascii=False)``, written without the encoder's generators.

Why: with ``indent`` the standard library encodes in pure Python, one generator step per token;
the compact command's summary (a round per maintenance pass) and ``context.json`` of a long
session run to millions of tokens, and that encoder took seconds of a replay. This writer walks
the value once, appending to a list, and leaves strings, numbers and keys to the same encoding
functions ``json`` uses, so the text is identical; anything it does not handle itself (another
type, a cycle, a non-finite float rule) goes to ``json.dumps``.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

from snapcompact.core.collector import collector_paused

__all__ = ["indented_json"]


class _Unhandled(Exception):
    """A value the writer leaves to ``json.dumps``."""


def _float(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        raise _Unhandled  # NaN / Infinity: json's own spelling and allow_nan rule
    return float.__repr__(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return encode_basestring(key)
    if key is True:
        return '"true"'
    if key is False:
        return '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int):
        return '"' + int.__repr__(key) + '"'
    if isinstance(key, float):
        return '"' + _float(key) + '"'
    raise _Unhandled


def _scalar(item: Any) -> str | None:
    """The text of a str, int (not a subclass), bool or None, else None: these are the values a
    summary is made of, written by the containers without a call of :meth:`_Writer.write` each
    (the compact command's summary of a 60,000-message replay has millions)."""
    kind = type(item)
    if kind is str:
        return encode_basestring(item)
    if kind is int:
        return int.__repr__(item)
    if item is None:
        return "null"
    if item is True:
        return "true"
    if item is False:
        return "false"
    return None


#: Deeper values (or a cycle) go to json.dumps, which says what is wrong.
_DEPTH_LIMIT = 900


class _Writer:
    """One value's indented text, appended piece by piece (``out``), with the line breaks of
    each nesting level made once."""

    def __init__(self, indent: int) -> None:
        self.out: list[str] = []
        self.append = self.out.append
        self.pad = " " * indent
        #: Per level: (the break before its first item, before the others, before the closer).
        self.breaks: list[tuple[str, str, str]] = []

    def breaks_at(self, level: int) -> tuple[str, str, str]:
        """The three line breaks of items at nesting ``level``."""
        breaks = self.breaks
        while len(breaks) <= level:
            n = len(breaks)
            inner = "\n" + self.pad * (n + 1)
            breaks.append((inner, "," + inner, "\n" + self.pad * n))
        return breaks[level]

    def write(self, item: Any, level: int) -> None:
        """Append ``item`` (nested at ``level``) as ``json.dumps`` spells it."""
        append = self.append
        if isinstance(item, str):
            append(encode_basestring(item))
        elif item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif isinstance(item, int):
            append(int.__repr__(item))
        elif isinstance(item, float):
            append(_float(item))
        elif isinstance(item, (list, tuple)):
            self._array(item, level)
        elif isinstance(item, dict):
            self._object(item, level)
        else:
            raise _Unhandled

    def _array(self, items: list[Any] | tuple[Any, ...], level: int) -> None:
        """``[`` and ``]`` around the items, one per line at ``level + 1``."""
        append = self.append
        if not items:
            append("[]")
            return
        if level >= _DEPTH_LIMIT:
            raise _Unhandled
        first, other, close = self.breaks_at(level)
        append("[")
        sep = first
        for element in items:
            text = _scalar(element)
            if text is not None:
                append(sep + text)
            else:
                append(sep)
                if isinstance(element, (list, tuple)):  # one stack frame per level
                    self._array(element, level + 1)
                elif isinstance(element, dict):
                    self._object(element, level + 1)
                else:
                    self.write(element, level + 1)
            sep = other
        append(close + "]")

    def _object(self, mapping: dict[Any, Any], level: int) -> None:
        """``{`` and ``}`` around ``"key": value`` lines at ``level + 1`` (keys as json's)."""
        append = self.append
        if not mapping:
            append("{}")
            return
        if level >= _DEPTH_LIMIT:
            raise _Unhandled
        first, other, close = self.breaks_at(level)
        append("{")
        sep = first
        for key, element in mapping.items():
            name = encode_basestring(key) if type(key) is str else _key(key)
            text = _scalar(element)
            if text is not None:
                append(sep + name + ": " + text)
            else:
                append(sep + name + ": ")
                if isinstance(element, (list, tuple)):
                    self._array(element, level + 1)
                elif isinstance(element, dict):
                    self._object(element, level + 1)
                else:
                    self.write(element, level + 1)
            sep = other
        append(close + "}")


def indented_json(value: Any, indent: int = 1) -> str:
    """The text ``json.dumps(value, indent=indent, ensure_ascii=False)`` returns."""
    writer = _Writer(indent)
    try:
        with collector_paused():  # millions of short strings, no cycles
            writer.write(value, 0)
    except _Unhandled:
        return json.dumps(value, indent=indent, ensure_ascii=False)
    return "".join(writer.out)
