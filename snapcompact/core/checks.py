"""Argument checks shared by the stages, so every bad argument is reported the same way.

Why ValueError throughout (not TypeError): callers of the library and the harness catch one
exception type for "this input is wrong" and print its one-line message.
"""

from __future__ import annotations


def check_text(text: object) -> str:
    """``text`` itself when it is a ``str``, else a ValueError naming the type received."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")  # noqa: TRY004
    return text
