"""The prompt templates, loaded from ``prompts/*.md`` next to this module.

Why files: prompts are prose that reviewers read and tune; keeping them out of code makes a
wording change a one-file diff. Templates use ``{{name}}`` placeholders only.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["PROMPT_NAMES", "prompt", "render"]

_DIR = Path(__file__).resolve().parent / "prompts"
PROMPT_NAMES: tuple[str, ...] = (
    "summarization-system", "compaction-summary", "compaction-update-summary",
    "compaction-turn-prefix",
    "compaction-short-summary", "handoff-document", "branch-summary", "branch-summary-preamble",
    "compaction-summary-context", "branch-summary-context", "auto-continue",
    "inline-system-note", "inline-system-stub", "inline-context-note", "inline-context-stub",
    "inline-tool-result-note",
)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@cache
def prompt(name: str) -> str:
    """The template text (trailing newline stripped)."""
    if name not in PROMPT_NAMES:
        raise ValueError(f"unknown prompt {name!r} (known: {', '.join(PROMPT_NAMES)})")
    return (_DIR / f"{name}.md").read_text(encoding="utf-8").rstrip("\n")


def render(name: str, **values: str) -> str:
    """Fill ``{{key}}`` placeholders; a missing value is an error, not an empty string."""
    template = prompt(name)

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ValueError(f"prompt {name!r} needs a value for {{{{{key}}}}}")
        return values[key]

    return _PLACEHOLDER.sub(fill, template)
