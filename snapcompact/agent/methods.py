"""Which compaction method the coding agent tries, in which order, and which it may use.

Why: production does not run "a strategy". Coding agent 18.3.4 keeps an ordered preference
list, ``compaction.methodOrder`` (``compaction-methods.ts:44-50``: remote, snapcompact, handoff,
shake, soft), skips the methods that cannot run for this model and reason
(``session-maintenance.ts:187-203``), and when a method is rejected moves on to the next one.
Settings files written before the list existed name one ``compaction.strategy``; the agent
migrates them to a list (``config/settings.ts:2551-2600``), which :func:`legacy_method_order`
reproduces so an old settings file means what it meant to the agent.
"""

from __future__ import annotations

from collections.abc import Iterable

from snapcompact.compaction import legacy_method_order

__all__ = [
    "COMPACTION_METHODS",
    "DEFAULT_METHOD_ORDER",
    "LLM_METHODS",
    "is_method_usable",
    "legacy_method_order",
    "resolve_method_order",
    "unusable_why",
]

#: Every method the agent knows, in the order its settings list presents them.
COMPACTION_METHODS: tuple[str, ...] = ("remote", "snapcompact", "handoff", "soft", "shake")
#: 18.3.4's default preference: server-native first, the portable LLM summary last.
DEFAULT_METHOD_ORDER: tuple[str, ...] = ("remote", "snapcompact", "handoff", "shake", "soft")
#: Methods that need a language model (a summarizer, the live chat or the provider's endpoint).
LLM_METHODS: frozenset[str] = frozenset({"remote", "handoff", "soft"})


def resolve_method_order(value: Iterable[object]) -> tuple[str, ...]:
    """A configured list with unknown entries dropped and duplicates after the first removed."""
    out: list[str] = []
    for method in value:
        if isinstance(method, str) and method in COMPACTION_METHODS and method not in out:
            out.append(method)
    return tuple(out)


def is_method_usable(method: str, reason: str, *, supports_images: bool,
                     remote_available: bool, exclude_media: bool = False) -> bool:
    """Whether the agent would select ``method`` for ``reason`` at all.

    remote: only with a configured endpoint or a provider-native route; snapcompact: only for
    image-input models and never when recovering from a media/payload rejection; handoff: never
    for an overflow (the handoff request itself would overflow); shake and soft: always.
    """
    if method == "remote":
        return remote_available
    if method == "snapcompact":
        return supports_images and not exclude_media
    if method == "handoff":
        return reason != "overflow"
    return method in ("shake", "soft")


def unusable_why(method: str, reason: str, model_id: str) -> str:
    """The pass's note for a method :func:`is_method_usable` turned away."""
    if method == "remote":
        return f"no server compaction for {model_id} (no endpoint, no native route)"
    if method == "snapcompact":
        return f"{model_id} takes no image input"
    if method == "handoff":
        return f"handoff is never used for {reason}"
    return "not usable"
