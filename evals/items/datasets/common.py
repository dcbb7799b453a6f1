"""Helpers every generator shares: the token estimate, parameter checks, packing.

Why an estimate and not a tokenizer: targets such as "200k tokens of history" only size the
input; the bill the harness records comes from the library's billing formulas and the
provider's reported usage. A fixed CHARS_PER_TOKEN keeps generation fast, offline and identical
on every machine. It is an ESTIMATE (English prose and code run at roughly 3.5-4.5 characters
per token on current BPE tokenizers).
"""

from __future__ import annotations

import platform
from collections.abc import Sequence

from snapcompact.core import CHARS_PER_TOKEN, estimate_text_tokens

MAX_TARGET_TOKENS = 200_000
PARAGRAPH_SEPARATOR = "\n\n"


def estimate_tokens(text: str) -> int:
    """Estimated token count of `text` at CHARS_PER_TOKEN characters per token."""
    return estimate_text_tokens(len(text))


def target_chars(target_tokens: int) -> int:
    return target_tokens * CHARS_PER_TOKEN


def python_version() -> str:
    return platform.python_version()


def check_int(name: str, value: object, *, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum:,}" if maximum is not None else ""
        raise ValueError(f"{name} must be at least {minimum:,}{upper}, got {value:,}")
    return value


def check_target_tokens(value: object, *, minimum: int = 50,
                        maximum: int = MAX_TARGET_TOKENS) -> int:
    return check_int("target_tokens", value, minimum=minimum, maximum=maximum)


def check_seed(value: object) -> int:
    return check_int("seed", value, minimum=0)


def check_depths(depths: object) -> tuple[float, ...]:
    """Depths are fractions of the history in [0, 1]; at least one, no duplicates."""
    if isinstance(depths, (int, float)) and not isinstance(depths, bool):
        depths = (depths,)
    if isinstance(depths, str) or not isinstance(depths, Sequence) or not depths:
        raise ValueError(f"depths must be a non-empty list of fractions in [0, 1], got {depths!r}")
    checked = []
    for d in depths:
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0.0 <= d <= 1.0:
            raise ValueError(f"each depth must be a number in [0, 1], got {d!r}")
        checked.append(float(d))
    if len(set(checked)) != len(checked):
        raise ValueError(f"depths must be distinct, got {list(depths)!r}")
    return tuple(checked)


def pack_paragraphs(
    paragraphs: Sequence[str],
    start: int,
    budget_chars: int,
    *,
    separator: str = PARAGRAPH_SEPARATOR,
) -> list[str]:
    """Take paragraphs cyclically from `start` until the next one would pass `budget_chars`.

    Always returns at least one paragraph (truncated at a word boundary if even the first one is
    longer than the budget), and never repeats a paragraph within one call unless the corpus is
    smaller than the budget, in which case it wraps around.
    """
    if not paragraphs:
        raise ValueError("cannot pack an empty corpus")
    picked: list[str] = []
    used = 0
    n = len(paragraphs)
    i = start % n
    while True:
        para = paragraphs[i]
        cost = len(para) + (len(separator) if picked else 0)
        if used + cost > budget_chars:
            if not picked:
                cut = para[:budget_chars].rsplit(" ", 1)[0] or para[:budget_chars]
                picked.append(cut)
            break
        picked.append(para)
        used += cost
        i = (i + 1) % n
        if len(picked) >= budget_chars:  # guard against pathological one-char corpora
            break
    return picked
