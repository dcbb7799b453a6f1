"""What the pipeline needs to know about the current model.

Why a small record instead of a provider client: the thresholds depend on the context window,
snapcompact on image input and the wire API (shape and billing), the summarizer on the output
cap, context promotion on a configured larger model; nothing else. ``include_thinking`` is False for
Anthropic-dialect models, whose reasoning classifier rejects replayed thinking.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ModelInfo"]


@dataclass(frozen=True)
class ModelInfo:
    """The model an agent talks to: id, context window, wire API, output cap, input kinds."""

    id: str
    context_window: int
    provider: str | None = None
    api: str | None = None
    max_tokens: int = 16384
    input: tuple[str, ...] = ("text", "image")
    include_thinking: bool = True
    #: Estimated prompt tokens per image block; None = this model's snapcompact frame estimate.
    image_tokens: int | None = None
    #: Context promotion: a larger-window model to switch to instead of compacting (its ``id``;
    #: the pipeline looks it up among the models it was given).
    promotion_target: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", tuple(self.input))
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("model id must be a non-empty string")
        for name in ("context_window", "max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"model {name} must be a positive integer, got {value!r}")
        if self.image_tokens is not None and (not isinstance(self.image_tokens, int)
                                              or self.image_tokens < 0):
            raise ValueError("model image_tokens must be a non-negative integer, got "
                             f"{self.image_tokens!r}")

    @property
    def supports_images(self) -> bool:
        """Whether the model takes images, which the snapcompact strategy needs."""
        return "image" in self.input
