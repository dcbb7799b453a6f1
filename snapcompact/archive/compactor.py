"""Compacting into the archive: new history serialized, planned onto frames, rendered, accounted.

Why it exists: a compaction discards old turns; snapcompact keeps them, serialized, normalized
and printed onto PNG frames that a vision model reads back for a fraction of the text tokens.
The frames persist under ``preserveData["snapcompact"]`` in the reference's JSON shape
(``{frames[], totalChars, truncatedChars, text?, textHead?, textTail?}``), and every context
rebuild turns them back into ordered text and image blocks (:func:`history_blocks`).

Two archive policies (see :mod:`snapcompact.archive.plan`): ``pinned`` (the documented seed
design, the default) carries frames forward, pins the first, evicts the oldest unpinned ones
and keeps the unframed newest slice as a text tail; ``foveated`` reproduces the reference
18.2.11 re-layout (text edges, HQ/dense middle).

How each policy grows the archive (what carries forward, which pages are drawn, and the
visible-character accounting) is :mod:`snapcompact.archive.growth`; this module is the rest of
a compaction: arguments, serialization, shape, reading guide and token projection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from snapcompact.archive.dataurl import elide_data_urls
from snapcompact.archive.file_ops import (
    FileLists,
    FileOperations,
    compute_file_lists,
    format_file_list,
)
from snapcompact.archive.growth import CharAccounting, grow_foveated, grow_pinned
from snapcompact.archive.history import _previous_text, _to_plain, history_blocks
from snapcompact.archive.messages import (
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    message_from_json,
)
from snapcompact.archive.model import (
    POLICIES,
    PRESERVE_KEY,
    PROVIDER_COMPACTION_KEYS,
    Archive,
    Policy,
    get_preserved_archive,
)
from snapcompact.archive.reading_guide import (
    NO_HISTORY,
    GuideFacts,
    render_guide,
    short_summary,
)
from snapcompact.archive.serialize import (
    SerializeOptions,
    js_json_stringify,
    serialize_conversation,
)
from snapcompact.core import (
    NEWLINE_GLYPH,
    Geometry,
    Shape,
    estimate_text_tokens,
    geometry,
    get_shape,
)
from snapcompact.pricing import (
    api_family,
    api_for,
    family_image_detail,
    frame_token_estimate,
    provider_frame_budget,
    resolve_shape_for_text,
)
from snapcompact.text import normalize


@dataclass(frozen=True)
class CompactionResult:
    """What a compaction entry stores, plus the figures a caller needs to accept or reject it."""

    summary: str
    short_summary: str
    details: FileLists
    preserve_data: dict[str, Any]
    archive: Archive
    policy: str
    shape: Shape
    frame_token_estimate: int
    accounting: CharAccounting
    projected_tokens: int
    #: Frames drawn by this compaction; frames carried from the previous archive are not counted.
    rendered_frames: int = 0
    tokens_before: int | None = None
    first_kept_entry_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Reference ``CompactionResult`` shape (camelCase keys)."""
        out: dict[str, Any] = {"summary": self.summary, "shortSummary": self.short_summary}
        if self.first_kept_entry_id is not None:
            out["firstKeptEntryId"] = self.first_kept_entry_id
        if self.tokens_before is not None:
            out["tokensBefore"] = self.tokens_before
        out["details"] = self.details.to_json()
        out["preserveData"] = self.preserve_data
        return out


class CompactionRejected(Exception):
    """The archive would not shrink the context; ``result`` is what it would have been."""

    def __init__(self, reason: str, result: CompactionResult) -> None:
        super().__init__(reason)
        self.reason = reason
        self.result = result


def _check_positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _resolve(shape: Shape | str | None, probe: str, model_id: str | None, api: str | None,
             provider: str | None, frame_size: int | None) -> tuple[Shape, int, str | None]:

    family = api_family(api_for(api, provider))
    if shape is None:
        base = resolve_shape_for_text(probe, model_id or "", api=api, provider=provider).shape
    elif isinstance(shape, str):
        base = get_shape(shape)
    elif isinstance(shape, Shape):
        base = shape
    else:
        raise ValueError("shape must be a Shape, a shape name or None, got "
                         f"{type(shape).__name__}")
    high = base.at_size(frame_size)
    return high, frame_token_estimate(family, high.frame_size), family_image_detail(family)


def _message_chars(messages: Sequence[Any]) -> int:

    total = 0
    for i, raw in enumerate(messages):
        msg = message_from_json(raw, i)
        content = msg.content
        if isinstance(content, str):
            total += len(content)
            continue
        for block in content:
            if isinstance(block, TextBlock):
                total += len(block.text)
            elif isinstance(block, ThinkingBlock):
                total += len(block.thinking)
            elif isinstance(block, ToolCallBlock):
                total += len(block.name) + len(js_json_stringify(dict(block.arguments)))
    return total


def _tokens_of_text(chars: int) -> int:
    return estimate_text_tokens(chars)


def _archive_tokens(summary: str, archive: Archive, frame_tokens: int) -> int:
    blocks = history_blocks(archive)
    text_chars = len(summary) + sum(len(b["text"]) for b in blocks if b["type"] == "text")
    n_images = sum(1 for b in blocks if b["type"] == "image")
    return _tokens_of_text(text_chars) + n_images * frame_tokens


def compact(
    messages: Sequence[Any],
    *,
    model_id: str | None = None,
    api: str | None = None,
    provider: str | None = None,
    shape: Shape | str | None = None,
    policy: Policy = "pinned",
    previous: Mapping[str, Any] | Archive | None = None,
    previous_summary: str | None = None,
    max_frames: int | None = None,
    frame_size: int | None = None,
    serialize_options: Any = None,
    file_ops: FileOperations | None = None,
    tokens_before: int | None = None,
    kept_tokens: int | None = None,
    first_kept_entry_id: str | None = None,
    workers: int | None = None,
    text_edge_chars: int | None = None,
    middle_shape: str = "production",
) -> CompactionResult:
    """Archive ``messages`` (the discarded history, oldest first) as snapcompact frames.

    ``previous`` is the previous compaction's ``preserveData`` (or its :class:`Archive`);
    ``previous_summary`` the previous entry's text summary, folded in as
    ``[Summary of earlier history]`` when there is no previous archive text. The shape is
    ``shape`` (a Shape or shape name) or resolved from ``model_id``/``api``/``provider`` and the
    text; ``frame_size`` overrides its frame side. Frame budget: ``pinned`` uses the
    provider's (``provider_frame_budget``: the image cap clamped to 8, unknown providers 5),
    lowered to ``max_frames`` if given; ``foveated`` uses ``max_frames`` clamped to [1, 80]
    (default 80), as the reference. ``file_ops`` are the cumulative file operations.

    When ``tokens_before`` is given, the result is projected (summary and text blocks at 4
    characters per token, each image at the shape's per-frame estimate, plus ``kept_tokens``,
    by default ``tokens_before`` minus an estimate of the replaced messages and previous archive)
    and :class:`CompactionRejected` is raised when it would not be smaller.

    Research knobs of the foveated policy (defaults = the reference): ``text_edge_chars`` sizes
    each text edge (None = one frame capacity), ``middle_shape`` picks the dense middle's shape
    (:func:`~snapcompact.archive.plan.dense_companion`).

    The steps, in order: check the arguments, read the previous archive, serialize the
    messages, resolve the shape, build the new text, grow the archive by the policy, write the
    reading guide, and project the tokens (rejecting an archive that would not shrink).
    """
    options = _checked_options(policy, max_frames, previous_summary, file_ops, serialize_options)
    prev_archive, prev_preserve = _previous_archive(previous)
    serialized, replaced_chars = _serialize(
        messages, options, count_replaced=tokens_before is not None and kept_tokens is None)
    prev_raw = _previous_text(prev_archive) if prev_archive else ""
    high, frame_tokens, detail = _resolve(shape, _shape_probe(prev_raw, previous_summary,
                                                              serialized),
                                          model_id, api, provider, frame_size)
    geo = _checked_geometry(high)
    included_summary = not prev_raw and bool(previous_summary)
    new_text = _new_text(serialized, previous_summary if included_summary else None, high.font)

    if policy == "foveated":
        grown = grow_foveated(prev_archive, prev_raw, new_text, high, max_frames, detail,
                              options.include_thinking, workers, text_edge_chars, middle_shape)
    else:
        grown = grow_pinned(prev_archive, prev_raw, new_text, high,
                            _pinned_budget(provider, api, max_frames),
                            detail, options.include_thinking, workers)
    archive = grown.archive
    lists, files = _file_lists(file_ops)
    text_chars = len(archive.text_head or "") + len(archive.text_tail or "")
    result = CompactionResult(
        summary=_reading_guide(archive, high, geo, files, text_chars, included_summary,
                               options.include_thinking),
        short_summary=short_summary(archive.total_chars, len(archive.frames), text_chars),
        details=lists, preserve_data=_preserve_data(prev_preserve, archive), archive=archive,
        policy=policy, shape=high, frame_token_estimate=frame_tokens,
        accounting=grown.accounting, projected_tokens=0, rendered_frames=grown.rendered,
        tokens_before=tokens_before, first_kept_entry_id=first_kept_entry_id)
    return _projected(result, tokens_before, kept_tokens, replaced_chars, prev_archive,
                      previous_summary)


def _checked_geometry(high: Shape) -> Geometry:
    """The shape's grid at its frame size; a frame too small for one cell is refused."""
    geo = geometry(high)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(f"frame size {high.frame_size} px is too small for shape {high.name!r}")
    return geo


def _file_lists(file_ops: FileOperations | None) -> tuple[FileLists, str]:
    """The entry's file lists from the cumulative file operations, and their printed form."""
    ops = file_ops or FileOperations()
    lists = compute_file_lists(ops)
    return lists, format_file_list(lists, ops.read)


def _preserve_data(prev_preserve: Mapping[str, Any], archive: Archive) -> dict[str, Any]:
    """The new entry's preserve data: the previous one's keys carried forward (a provider's
    own compaction state dropped), the archive under ``snapcompact``."""
    base = {k: v for k, v in prev_preserve.items() if k not in PROVIDER_COMPACTION_KEYS}
    return {**base, PRESERVE_KEY: archive.to_json()}


def _pinned_budget(provider: str | None, api: str | None, max_frames: int | None) -> int:
    """Frames a pinned archive may hold: the provider's frame budget, lowered to the caller's
    ``max_frames`` (the foveated policy clamps ``max_frames`` itself, as the reference)."""
    budget = provider_frame_budget(provider, api)
    return budget if max_frames is None else min(budget, max_frames)


def _checked_options(policy: object, max_frames: int | None, previous_summary: object,
                     file_ops: object, serialize_options: Any) -> SerializeOptions:
    """Refuse bad arguments before any work (a clear error naming the argument), and the
    serialization options as :class:`SerializeOptions` whatever form the caller passed."""
    if policy not in POLICIES:
        raise ValueError(f"unknown archive policy {policy!r} (known: {', '.join(POLICIES)})")
    if max_frames is not None:
        _check_positive("max_frames", max_frames)
    if previous_summary is not None and not isinstance(previous_summary, str):
        raise ValueError("previous_summary must be a string, got "
                         f"{type(previous_summary).__name__}")
    if file_ops is not None and not isinstance(file_ops, FileOperations):
        raise ValueError(f"file_ops must be FileOperations, got {type(file_ops).__name__}")
    if isinstance(serialize_options, SerializeOptions):
        return serialize_options
    return SerializeOptions.from_mapping(serialize_options)


def _previous_archive(previous: object) -> tuple[Archive | None, dict[str, Any]]:
    """The previous archive (None when there is none or it is empty) and the preserve data it
    came in, whose other keys the new entry carries forward."""
    if isinstance(previous, Archive):
        return (None if previous.is_empty else previous), {}
    if previous is None:
        return None, {}
    if isinstance(previous, Mapping):
        return get_preserved_archive(previous), dict(previous)
    raise ValueError("previous must be preserve data, an Archive or None, got "
                     f"{type(previous).__name__}")


def _serialize(messages: Sequence[Any], options: SerializeOptions,
               count_replaced: bool) -> tuple[str, int]:
    """The messages as the reference serializes them, and (when ``count_replaced``) their
    characters for the replaced-token estimate, else 0.

    Parsed once, for both: the parsed copy is let go here, before planning and drawing (the
    peak of a compaction).
    """
    parsed = [message_from_json(m, i) for i, m in enumerate(list(messages))]
    serialized = serialize_conversation(parsed, options)
    replaced_chars = _message_chars(parsed) if count_replaced else 0
    return serialized, replaced_chars


def _shape_probe(prev_raw: str, previous_summary: str | None, serialized: str) -> str:
    """The text an automatic shape is chosen for: everything the new archive may hold (the
    previous archive's text, else the previous summary, then the new messages)."""
    if prev_raw:
        return f"{_to_plain(prev_raw)}{NEWLINE_GLYPH}{serialized}"
    if previous_summary:
        return f"{previous_summary}{NEWLINE_GLYPH}{serialized}"
    return serialized


def _new_text(serialized: str, folded_summary: str | None, font: str) -> str:
    """The printable text this compaction adds: the messages normalized for ``font``, behind
    the previous summary when one is folded in (no previous archive text to carry it), with
    data URLs elided."""
    new_text = normalize(serialized, font)
    if folded_summary:
        head = f"[Summary of earlier history] {normalize(folded_summary, font)}"
        new_text = f"{head} [Recent conversation] {new_text}" if new_text else head
    return elide_data_urls(new_text)


def _reading_guide(archive: Archive, high: Shape, geo: Any, files: str, text_chars: int,
                   included_summary: bool, include_thinking: bool) -> str:
    """The summary the entry stores: the reading guide for the frames (how to read them), or
    the no-history line when the archive holds nothing at all."""
    if not archive.frames and not text_chars and not files:
        return NO_HISTORY
    cols: list[int] = []
    for f in archive.frames:
        if f.cols not in cols:
            cols.append(f.cols)
    # The current shape's rows, unless some frame (a denser tier, a carried frame of
    # another shape) holds more: "at most N rows" must stay true for every frame.
    rows = max([geo.rows, *(f.rows for f in archive.frames)])
    return render_guide(GuideFacts(
        frame_count=len(archive.frames),
        cols=" or ".join(map(str, cols)) if cols else str(geo.cols),
        rows=rows, doc_columns=high.is_doc, sentence_ink=high.ink == "sent",
        stopword_dim=high.stopword_dim, line_repeat=high.line_repeat,
        included_previous_summary=included_summary, truncated_chars=archive.truncated_chars,
        include_thinking=include_thinking, files=files))


def _projected(result: CompactionResult, tokens_before: int | None, kept_tokens: int | None,
               replaced_chars: int, prev_archive: Archive | None,
               previous_summary: str | None) -> CompactionResult:
    """``result`` with the context size it leads to, so a caller can compare before and after;
    :class:`CompactionRejected` when that is not smaller than ``tokens_before``.

    Without ``kept_tokens`` the kept part is estimated as ``tokens_before`` minus the replaced
    messages and the previous archive (or summary) they replace.
    """
    archive, summary, frame_tokens = result.archive, result.summary, result.frame_token_estimate
    if tokens_before is None and kept_tokens is None:
        return _with_projection(result, _archive_tokens(summary, archive, frame_tokens))
    if kept_tokens is None:
        replaced = _tokens_of_text(replaced_chars)
        if prev_archive is not None:
            replaced += _archive_tokens(previous_summary or "", prev_archive, frame_tokens)
        elif previous_summary:
            replaced += _tokens_of_text(len(previous_summary))
        kept_tokens = max(0, (tokens_before or 0) - replaced)
    projected = kept_tokens + _archive_tokens(summary, archive, frame_tokens)
    result = _with_projection(result, projected)
    if tokens_before is not None and projected >= tokens_before:
        raise CompactionRejected(
            f"snapcompact would not shrink the context: projected {projected:,} tokens "
            f"({len(archive.frames)} frames at {frame_tokens:,} each) >= {tokens_before:,} before",
            result)
    return result


def _with_projection(result: CompactionResult, projected: int) -> CompactionResult:
    return replace(result, projected_tokens=projected)
