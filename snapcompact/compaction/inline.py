"""Inline imaging: send the system prompt and large older tool results as frames, per request.

Why: the same dense frames that archive discarded history also carry text the model must still
see but rarely re-reads verbatim: the loaded context files of the system prompt (or all of it)
and big tool outputs from earlier in the turn. Swapped for frames they cost a fraction of their
text tokens on vision models. Nothing persisted changes: :class:`InlineImager` builds new
message dicts for one outgoing request (the session keeps the text).

Settings (the seed's ``snapcompact.systemPrompt`` ∈ none | agents-md | all and
``snapcompact.toolResults``; ``snapcompact.shape`` picks the frames). The rules follow the coding
agent (18.3.4 ``snapcompact-inline.ts``), which the seeds leave to it:

* only on models that take image input, and only within the provider's image budget less the
  images the request already carries;
* tool results oldest first, never the newest one, never an error result, never one under 3,000
  tokens; one whose frames do not fit the remaining budget is skipped (a later smaller one may
  fit); frames are used only when ``frames x frame estimate <= 0.9 x text tokens``;
* the system prompt with what budget is left, at most 6 frames, under the same 0.9 gate, and only
  when a user message exists to carry the frames (they go at the start of the first one, behind a
  note; the prompt keeps a stub saying where they are). ``agents-md`` images only the
  ``<repo-rules>`` and ``## Context`` ``<instructions>`` sections;
* a swapped tool result keeps its original images after the frames, each behind a marker that the
  frame text points to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from snapcompact.compaction.model import ModelInfo
from snapcompact.compaction.prompts import prompt
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator
from snapcompact.pricing import provider_image_budget, resolve_shape
from snapcompact.render import frames, render_many

__all__ = [
    "MAX_SYSTEM_PROMPT_FRAMES",
    "MIN_TOOL_RESULT_TOKENS",
    "SAVINGS_MARGIN",
    "InlineImager",
    "InlineOptions",
    "InlinePlan",
    "InlineRequest",
    "InlineSavings",
    "PromptCandidate",
    "SystemPromptTarget",
    "ToolResultCandidate",
    "estimate_inline_savings",
    "plan_inline_swaps",
    "select_system_prompt_target",
    "tool_result_text",
]

#: The system prompt is imaged only when it fits this many frames.
MAX_SYSTEM_PROMPT_FRAMES = 6
#: Tool results under this many tokens stay text (the swap cannot save enough).
MIN_TOOL_RESULT_TOKENS = 3000
#: Frames must cost at most this share of the text tokens they replace.
SAVINGS_MARGIN = 0.9
_MODES = ("none", "agents-md", "all")
# The loaded context-file sections of the agent's system prompt (what ``agents-md`` images).
_CONTEXT_SECTIONS = (re.compile(r"<repo-rules>\n[\s\S]*?\n</repo-rules>"),
                     re.compile(r"## Context\n<instructions>\n[\s\S]*?\n</instructions>"))


@dataclass(frozen=True)
class InlineOptions:
    """``snapcompact.systemPrompt``, ``snapcompact.toolResults`` and the frame shape."""

    system_prompt: str = "none"
    tool_results: bool = False
    shape: str = "auto"
    frame_size: int | None = None

    def __post_init__(self) -> None:
        if self.system_prompt not in _MODES:
            raise ValueError(f"snapcompact.systemPrompt must be one of {', '.join(_MODES)}, "
                             f"got {self.system_prompt!r}")
        if type(self.tool_results) is not bool:
            raise ValueError("snapcompact.toolResults must be true or false, got "
                             f"{self.tool_results!r}")

    @classmethod
    def from_settings(cls, snapcompact: Any) -> InlineOptions:
        """From a :class:`~.settings.SnapcompactSettings`."""
        return cls(snapcompact.system_prompt, snapcompact.tool_results, snapcompact.shape,
                   snapcompact.frame_size)

    @property
    def enabled(self) -> bool:
        """Whether any inline imaging is switched on (tool results or the system prompt)."""
        return self.tool_results or self.system_prompt != "none"


@dataclass(frozen=True)
class ToolResultCandidate:
    """A tool result as the planner sees it (``id`` is its tool call id)."""

    id: str
    text_tokens: int
    frames: int
    is_error: bool = False


@dataclass(frozen=True)
class PromptCandidate:
    """The system prompt as frames, priced: what imaging it would cost against its text tokens."""

    text_tokens: int
    frames: int


@dataclass(frozen=True)
class InlinePlan:
    """What to swap: tool results oldest first, and the system prompt when it is imaged."""

    tool_results: tuple[ToolResultCandidate, ...]
    system_prompt: PromptCandidate | None


def _passes_gate(frames: int, frame_tokens: int, text_tokens: int) -> bool:
    return frames * frame_tokens <= text_tokens * SAVINGS_MARGIN


def plan_inline_swaps(options: InlineOptions, *, frame_tokens: int, budget: int,
                      tool_results: Sequence[ToolResultCandidate],
                      system_prompt: PromptCandidate | None, has_user_message: bool) -> InlinePlan:
    """Which content goes out as frames (pure; the request transform and the estimate share it).

    ``tool_results`` are every tool result of the request in order, the newest included (it is
    never swapped); ``budget`` is the provider's image budget less the images already attached.
    """
    swaps: list[ToolResultCandidate] = []
    if options.tool_results:
        for candidate in tool_results[:-1]:
            if budget <= 0:
                break
            if candidate.is_error or candidate.text_tokens < MIN_TOOL_RESULT_TOKENS:
                continue
            if candidate.frames == 0 or candidate.frames > budget:
                continue  # too big for what is left; a later, smaller one may still fit
            if not _passes_gate(candidate.frames, frame_tokens, candidate.text_tokens):
                continue
            swaps.append(candidate)
            budget -= candidate.frames
    prompt_swap = None
    if (options.system_prompt != "none" and system_prompt is not None and budget > 0
            and 0 < system_prompt.frames <= min(budget, MAX_SYSTEM_PROMPT_FRAMES)
            and _passes_gate(system_prompt.frames, frame_tokens, system_prompt.text_tokens)
            and has_user_message):
        prompt_swap = system_prompt
    return InlinePlan(tuple(swaps), prompt_swap)


@dataclass(frozen=True)
class SystemPromptTarget:
    """The system-prompt text to image, what the prompt becomes, and the note before the frames."""

    scope: str
    text: str
    replacement: tuple[str, ...]
    user_note: str


def select_system_prompt_target(system_prompt: Sequence[str] | None,
                                mode: str) -> SystemPromptTarget | None:
    """``all``: the whole prompt (joined by blank lines) becomes a stub; ``agents-md``: only its
    context-file sections, each replaced by a stub in place. None when there is nothing to image."""
    if not system_prompt or mode == "none":
        return None
    if mode == "all":
        text = "\n\n".join(system_prompt)
        if not text:
            return None
        return SystemPromptTarget("all", text, (prompt("inline-system-stub"),),
                                  prompt("inline-system-note"))
    extracted: list[str] = []
    stub = prompt("inline-context-stub").strip()

    def swap(match: re.Match[str]) -> str:
        extracted.append(match.group(0).strip())
        return stub

    replacement = []
    for block in system_prompt:
        for pattern in _CONTEXT_SECTIONS:
            block = pattern.sub(swap, block)
        replacement.append(block)
    text = "\n\n".join(extracted)
    if not text:
        return None
    return SystemPromptTarget("agents-md", text, tuple(replacement), prompt("inline-context-note"))


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    return ([b for b in content if isinstance(b, Mapping)] if isinstance(content, (list, tuple))
            else [])


def tool_result_text(content: Any) -> str:
    """The text a tool result is imaged from: its texts, each image marked where it stood."""
    parts: list[str] = []
    images = 0
    for block in _blocks(content):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "image":
            images += 1
            parts.append(f"[Source image {images} was attached here in the original tool result.]")
    return "\n".join(parts)


def _count_images(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for m in messages for b in _blocks(m.get("content")) if b.get("type") == "image")


def _resolve(model: ModelInfo, options: InlineOptions) -> Any:
    return resolve_shape(model.id, api=model.api, provider=model.provider, shape=options.shape,
                         frame_size=options.frame_size)


def _budget(model: ModelInfo, messages: Sequence[Mapping[str, Any]]) -> int:
    return provider_image_budget(model.provider) - _count_images(messages)


def _candidate(message: Mapping[str, Any], shape: Any,
               estimator: TokenEstimator) -> tuple[ToolResultCandidate, str]:
    text = tool_result_text(message.get("content"))
    tokens = estimator.count_text([text]) if text else 0
    is_error = message.get("isError") is True
    count = frames(text, shape) if not is_error and tokens >= MIN_TOOL_RESULT_TOKENS else 0
    return ToolResultCandidate(str(message.get("toolCallId")), tokens, count, is_error), text


def _prompt_candidate(target: SystemPromptTarget | None, shape: Any,
                      estimator: TokenEstimator) -> PromptCandidate | None:
    if target is None:
        return None
    return PromptCandidate(estimator.count_text([target.text]), frames(target.text, shape))


@dataclass(frozen=True)
class InlineSavings:
    """What inline imaging would save on the next request (the ``/context`` estimate)."""

    vision_capable: bool
    saved_tokens: int = 0
    #: System prompt (when its imaging is on): applied, why not (empty | budget | margin),
    #: text tokens, frames, image tokens, saved tokens, scope.
    system_prompt: Mapping[str, Any] | None = None
    #: Tool results (when their imaging is on): total, swapped, text tokens, frames, image tokens,
    #: saved tokens.
    tool_results: Mapping[str, Any] | None = None


def estimate_inline_savings(options: InlineOptions, model: ModelInfo, system_prompt: Sequence[str],
                            messages: Sequence[Mapping[str, Any]], *,
                            estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> InlineSavings:
    """The transform's plan for the next request, priced; a user prompt is assumed to come."""
    if "image" not in model.input:
        return InlineSavings(False)
    resolved = _resolve(model, options)
    shape, frame_tokens = resolved.shape, resolved.frame_token_estimate
    budget = _budget(model, messages)
    candidates = [_candidate(m, shape, estimator)[0] for m in messages
                  if options.tool_results and m.get("role") == "toolResult"
                  and isinstance(m.get("toolCallId"), str)]
    target = select_system_prompt_target(system_prompt, options.system_prompt)
    prompt_candidate = _prompt_candidate(target, shape, estimator)
    plan = plan_inline_swaps(options, frame_tokens=frame_tokens, budget=budget,
                             tool_results=candidates,
                             system_prompt=prompt_candidate, has_user_message=True)
    saved = 0
    prompt_part = None
    if options.system_prompt != "none":
        c = prompt_candidate or PromptCandidate(0, 0)
        applied = plan.system_prompt is not None
        image_tokens = c.frames * frame_tokens
        prompt_saved = max(0, c.text_tokens - image_tokens) if applied else 0
        reason = None
        if not applied:
            leftover = budget - sum(s.frames for s in plan.tool_results)
            reason = ("empty" if c.frames == 0 else "budget"
                      if c.frames > min(leftover, MAX_SYSTEM_PROMPT_FRAMES) else "margin")
        prompt_part = {"applied": applied, "reason": reason, "text_tokens": c.text_tokens,
                       "frames": c.frames,
                       "image_tokens": image_tokens, "saved_tokens": prompt_saved,
                       "scope": target.scope if target is not None else options.system_prompt}
        saved += prompt_saved
    results_part = None
    if options.tool_results:
        text_tokens = sum(s.text_tokens for s in plan.tool_results)
        frame_count = sum(s.frames for s in plan.tool_results)
        results_saved = max(0, text_tokens - frame_count * frame_tokens)
        results_part = {"total": len(candidates), "swapped": len(plan.tool_results),
                        "text_tokens": text_tokens,
                        "frames": frame_count, "image_tokens": frame_count * frame_tokens,
                        "saved_tokens": results_saved}
        saved += results_saved
    return InlineSavings(True, saved, prompt_part, results_part)


@dataclass(frozen=True)
class InlineRequest:
    """One outgoing request after inline imaging (new objects; the inputs are not touched)."""

    system_prompt: tuple[str, ...]
    messages: list[dict[str, Any]]
    #: Per swapped tool result: (tool call id, text tokens kept off the wire less the frames).
    tool_result_savings: tuple[tuple[str, int], ...] = ()
    changed: bool = False


def _default_render(text: str, shape: Any, max_frames: int | None) -> list[Any]:
    return render_many(text, shape, max_frames=max_frames)


@dataclass
class InlineImager:
    """The per-request transform, with frame caches that live as long as the session.

    ``render(text, shape, max_frames)`` returns frames with ``.data`` (base64 PNG); inject one to
    count or fake renders. Tool-result frames are cached by tool call id (re-rendered when the
    text or shape changes, dropped when the result leaves the context); the system prompt's too.
    """

    options: InlineOptions = field(default_factory=InlineOptions)
    estimator: TokenEstimator = DEFAULT_ESTIMATOR
    render: Callable[[str, Any, int | None], list[Any]] = _default_render
    _tool_cache: dict[str, tuple[str, Any, list[dict[str, Any]]]] = field(default_factory=dict,
                                                                          repr=False)
    _prompt_cache: tuple[str, Any, list[dict[str, Any]]] | None = field(default=None, repr=False)

    def _frames(self, text: str, resolved: Any, max_frames: int | None,
                cached: Any) -> list[dict[str, Any]]:
        key = (resolved.shape, resolved.image_detail)
        if cached is not None and cached[0] == text and cached[1] == key:
            return cached[2]
        blocks = []
        for frame in self.render(text, resolved.shape, max_frames):
            block: dict[str, Any] = {"type": "image", "data": frame.data, "mimeType": "image/png"}
            if resolved.image_detail:
                block["detail"] = resolved.image_detail
            blocks.append(block)
        return blocks

    def transform(self, system_prompt: Sequence[str] | str | None,
                  messages: Sequence[Mapping[str, Any]], model: ModelInfo) -> InlineRequest:
        """``messages`` are wire-role JSON messages (user/assistant/toolResult/developer)."""
        options = self.options
        prompt_parts = ((system_prompt,) if isinstance(system_prompt, str)
                        else tuple(system_prompt or ()))
        unchanged = InlineRequest(prompt_parts, [dict(m) for m in messages])
        if not options.tool_results:
            self._tool_cache.clear()
        if options.system_prompt == "none":
            self._prompt_cache = None
        # Providers drop images on text-only models: imaging would lose the content.
        if not options.enabled or "image" not in model.input:
            return unchanged
        resolved = _resolve(model, options)
        budget = _budget(model, messages)
        if budget <= 0:
            return unchanged
        out = [dict(m) for m in messages]
        candidates: list[ToolResultCandidate] = []
        targets: dict[str, tuple[int, str]] = {}
        if options.tool_results:
            for i, message in enumerate(out):
                if message.get("role") != "toolResult":
                    continue
                candidate, text = _candidate(message, resolved.shape, self.estimator)
                candidates.append(candidate)
                targets[candidate.id] = (i, text)
        target = select_system_prompt_target(prompt_parts, options.system_prompt)
        user_index = next((i for i, m in enumerate(out) if m.get("role") == "user"), -1)
        plan = plan_inline_swaps(options, frame_tokens=resolved.frame_token_estimate, budget=budget,
                                 tool_results=candidates,
                                 system_prompt=_prompt_candidate(target, resolved.shape,
                                                                 self.estimator),
                                 has_user_message=user_index >= 0)
        savings = []
        for swap in plan.tool_results:
            index, text = targets[swap.id]
            frames = self._frames(text, resolved, None, self._tool_cache.get(swap.id))
            self._tool_cache[swap.id] = (text, (resolved.shape, resolved.image_detail), frames)
            note = {"type": "text", "text": prompt("inline-tool-result-note")}
            content: list[dict[str, Any]] = [note, *frames]
            images = 0
            for block in _blocks(out[index].get("content")):
                if block.get("type") == "image":
                    images += 1
                    content.append({"type": "text",
                                    "text": f"[Original source image {images}; it belongs "
                                                            "where its marker stands in the frame "
                                                            "text.]"})
                    content.append(dict(block))
            out[index] = {**out[index], "content": content}
            savings.append((swap.id,
                            max(0, swap.text_tokens - swap.frames * resolved.frame_token_estimate)))
        if options.tool_results:
            live = set(targets)
            for key in [k for k in self._tool_cache if k not in live]:
                del self._tool_cache[key]
        new_prompt = prompt_parts
        if plan.system_prompt is not None and target is not None and user_index >= 0:
            frames = self._frames(target.text, resolved, MAX_SYSTEM_PROMPT_FRAMES,
                                  self._prompt_cache)
            self._prompt_cache = (target.text, (resolved.shape, resolved.image_detail), frames)
            original = out[user_index].get("content")
            original_blocks = ([{"type": "text", "text": original}] if isinstance(original, str)
                               else [dict(b) for b in _blocks(original)])
            out[user_index] = {**out[user_index],
                               "content": [{"type": "text", "text": target.user_note}, *frames,
                                                              *original_blocks]}
            new_prompt = target.replacement
        changed = bool(savings) or new_prompt is not prompt_parts
        if not changed:
            return unchanged
        return InlineRequest(new_prompt, out, tuple(savings), True)

