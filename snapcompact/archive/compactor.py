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

The foveated policy lays its whole text out again at every compaction, but a page whose exact
render input the previous archive already shows as a frame (drawn in this process) is carried
forward rather than redrawn (:mod:`snapcompact.archive.frame_reuse`); the result is byte for
byte the one redrawing would give, only ``rendered_frames`` is smaller.

Character accounting (both policies). The unit is the *visible character*: a code point of the
normalized archive text other than the zero-width DIM_ON/DIM_OFF toggles. Each compaction admits

    input = visible(previous archive text) + joiner + visible(new text)

where the previous archive text is its persisted ``text`` (or ``textHead`` + █ + ``textTail``),
the joiner is one █ when both the carried unframed text and the new text are non-empty (the
pinned policy carries frames as they are, so only its unframed tail is joined; the foveated
policy joins the whole previous text like the reference), and the new text is the normalized
serialization (with the ``[Summary of earlier history]`` head when a text summary is folded in).
Then ``kept = visible(new archive text)`` and ``dropped = input - kept``: the characters removed
by eviction, dense-middle drops, and middle elision (net of the elision marker, which the kept
text contains and states the true count), and by healing/scrubbing a previous text. For the
pinned policy the archive's ``totalChars`` is ``kept`` and ``truncatedChars`` the running sum of
``dropped``, so ``totalChars + truncatedChars`` equals the sum of every round's admitted new
characters (joiners included). The foveated policy keeps the reference's own counters
(``truncatedChars`` in code points including toggles; ``totalChars`` = printed frame characters
plus the text edges), so its persisted numbers match the reference.

Pinned archives add one key the reference does not write, ``sourceChars`` on each frame: the
length of that frame's slice of ``text``. It lets a later compaction evict a frame together with
its text. The reference ignores unknown keys; an archive without it (from the reference or the
foveated policy) is unfolded and re-framed from its text.
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
from snapcompact.archive.frame_reuse import CarriedFrames, page_key
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
    ArchiveFrame,
    Policy,
    get_preserved_archive,
)
from snapcompact.archive.plan import (
    PlannedFrame,
    dense_companion,
    dim_open_after,
    plan_foveated,
    plan_pinned,
    visible_len,
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
    DIM_ON,
    NEWLINE_GLYPH,
    Shape,
    estimate_text_tokens,
    geometry,
    get_shape,
)
from snapcompact.pricing import (
    MAX_FRAMES_DEFAULT,
    api_family,
    api_for,
    family_image_detail,
    frame_token_estimate,
    provider_frame_budget,
    resolve_shape_for_text,
)
from snapcompact.render import parallel_map, render, warm_caches
from snapcompact.text import dim_stopwords, normalize


@dataclass(frozen=True)
class CharAccounting:
    """Visible characters of one compaction (see the module docstring for the definitions)."""

    input: int
    kept: int
    dropped: int
    carried: int
    joiner: int
    new: int


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


def strip_thinking_sections(text: str) -> str:
    """Drop ``¶think:`` sections from archive text (sections start at a blank-line scope
    boundary)."""
    import re

    boundary = re.compile("\n\n(?=\u00b6(?:user|think|ai|call):)")
    segments = []
    for segment in text.split(NEWLINE_GLYPH):
        kept = [s for s in boundary.split(segment) if not s.startswith("\u00b6think:")]
        joined = "\n\n".join(kept)
        if joined:
            segments.append(joined)
    return NEWLINE_GLYPH.join(segments)


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


def _render(planned: Sequence[PlannedFrame], dim_open: bool, detail: str | None,
            source_chars: Sequence[int | None], workers: int | None,
            carried: CarriedFrames | None = None) -> tuple[list[ArchiveFrame], bool, int]:
    """Render pages in order, re-opening a dim span a boundary cut and dimming stopwords.

    With ``carried`` (the previous archive's frames), a page whose exact render input the
    previous archive already shows is carried forward instead of drawn. Returns the frames, the
    dim state after the last page, and how many frames were drawn.
    """

    texts: list[str] = []
    for item in planned:
        page = DIM_ON + item.text if dim_open else item.text
        dim_open = dim_open_after(page)
        texts.append(dim_stopwords(page) if item.shape.stopword_dim else page)
    jobs = list(zip(texts, (p.shape for p in planned)))
    keys = [page_key(text, s) for text, s in jobs] if carried is not None else []
    grids: list[tuple[str, int, int, int] | None] = [None] * len(jobs)
    if carried is not None:
        for i, key in enumerate(keys):
            found = carried.find(key)
            if found is not None:
                data, seen = found
                grids[i] = (data, seen.cols, seen.rows, seen.chars)
    to_draw = [i for i, grid in enumerate(grids) if grid is None]
    if len(to_draw) > 1:
        for shape in {jobs[i][1] for i in to_draw}:
            # The page texts tell it whether workers will need Silver's glyphs too.
            warm_caches(shape, [jobs[i][0] for i in to_draw if jobs[i][1] == shape])
    drawn = parallel_map(lambda i: render(*jobs[i]), to_draw, workers)
    for i, r in zip(to_draw, drawn):
        grids[i] = (r.data, r.cols, r.rows, r.chars)
        if carried is not None:
            carried.record(keys[i], r.data, r.cols, r.rows, r.chars)
    frames = []
    for grid, item, n in zip(grids, planned, source_chars):
        assert grid is not None
        data, cols, rows, chars = grid
        s = item.shape
        frames.append(ArchiveFrame(
            data=data, mime_type="image/png", cols=cols, rows=rows, chars=chars,
            font=s.font, ink=s.ink, line_repeat=s.line_repeat, columns=2 if s.is_doc else None,
            stopword_dim=True if s.stopword_dim else None, detail=detail, source_chars=n))
    return frames, dim_open, len(to_draw)


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
    geo = geometry(high)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(f"frame size {high.frame_size} px is too small for shape {high.name!r}")
    included_summary = not prev_raw and bool(previous_summary)
    new_text = _new_text(serialized, previous_summary if included_summary else None, high.font)

    if policy == "foveated":
        archive, acct, rendered = _compact_foveated(prev_archive, prev_raw, new_text, high,
                                                    max_frames,
                                                    detail, options.include_thinking, workers,
                                                    text_edge_chars, middle_shape)
    else:
        archive, acct, rendered = _compact_pinned(prev_archive, prev_raw, new_text, high,
                                                  _pinned_budget(provider, api, max_frames),
                                                  detail, options.include_thinking, workers)
    ops = file_ops or FileOperations()
    lists = compute_file_lists(ops)
    files = format_file_list(lists, ops.read)
    text_chars = len(archive.text_head or "") + len(archive.text_tail or "")
    summary = _reading_guide(archive, high, geo, files, text_chars, included_summary,
                             options.include_thinking)
    base = {k: v for k, v in prev_preserve.items() if k not in PROVIDER_COMPACTION_KEYS}
    preserve = {**base, PRESERVE_KEY: archive.to_json()}
    result = CompactionResult(
        summary=summary,
        short_summary=short_summary(archive.total_chars, len(archive.frames), text_chars),
        details=lists, preserve_data=preserve, archive=archive, policy=policy, shape=high,
        frame_token_estimate=frame_tokens, accounting=acct,
        projected_tokens=0, rendered_frames=rendered, tokens_before=tokens_before,
        first_kept_entry_id=first_kept_entry_id)
    return _projected(result, tokens_before, kept_tokens, replaced_chars, prev_archive,
                      previous_summary)


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


def _compact_foveated(prev: Archive | None, prev_raw: str, new_text: str, high: Shape,
                      max_frames: int | None,
                      detail: str | None, include_thinking: bool, workers: int | None,
                      text_edge_chars: int | None = None, middle_shape: str = "production"):
    prev_text = elide_data_urls(prev_raw, "archive") if prev_raw else ""
    if not include_thinking and prev_text:
        prev_text = strip_thinking_sections(prev_text)
    joiner = 1 if prev_text and new_text else 0
    if prev_text:
        text = f"{prev_text}{NEWLINE_GLYPH}{new_text}" if new_text else prev_text
    else:
        text = new_text
    text = elide_data_urls(text)
    cap = max(1,
              min(max_frames if max_frames is not None else MAX_FRAMES_DEFAULT, MAX_FRAMES_DEFAULT))
    layout = plan_foveated(text, high, dense_companion(high, middle_shape), cap,
                           text_edge_chars)
    dim_open = dim_open_after(layout.text_head)
    previous_frames = CarriedFrames(prev.frames if prev is not None else ())
    frames, dim_open, drawn = _render(layout.frames, dim_open, detail,
                                      [None] * len(layout.frames), workers, previous_frames)
    tail = (DIM_ON if dim_open else "") + layout.text_tail if layout.text_tail else ""
    kept = layout.kept_text
    persisted = (kept[: len(kept) - len(layout.text_tail)] + tail if kept and layout.text_tail
                 else kept)
    truncated = (prev.truncated_chars if prev else 0) + layout.truncated_chars
    total = sum(f.chars for f in frames) + len(layout.text_head) + len(tail)
    archive = Archive(tuple(frames), total, truncated, persisted or None, layout.text_head or None,
                      tail or None)
    carried = visible_len(prev_raw)
    new = visible_len(new_text)
    kept_visible = visible_len(persisted)
    acct = CharAccounting(carried + joiner + new, kept_visible,
                          carried + joiner + new - kept_visible, carried, joiner, new)
    return archive, acct, drawn


def _carryable(prev: Archive) -> bool:
    """True when ``prev`` is a pinned archive whose frames map onto its text."""
    if not prev.frames or prev.text is None or any(f.source_chars is None for f in prev.frames):
        return False
    framed = sum(f.source_chars or 0 for f in prev.frames)
    return framed <= len(prev.text) and prev.text[framed:] == (prev.text_tail or "")


def _compact_pinned(prev: Archive | None, prev_raw: str, new_text: str, high: Shape, budget: int,
                    detail: str | None, include_thinking: bool, workers: int | None):
    carried_frames: list[ArchiveFrame] = []
    carried_sources: list[str] = []
    if prev is not None and _carryable(prev) and (include_thinking
                                                  or "\u00b6think:" not in prev_raw):
        pos = 0
        for f in prev.frames:
            n = f.source_chars or 0
            carried_frames.append(f)
            carried_sources.append(prev_raw[pos:pos + n])
            pos += n
        unframed = prev_raw[pos:]
    else:
        unframed = elide_data_urls(prev_raw, "archive") if prev_raw else ""
        if not include_thinking and unframed:
            unframed = strip_thinking_sections(unframed)
    carried = visible_len(prev_raw)
    cleaning_dropped = (carried - sum(visible_len(s) for s in carried_sources)
                        - visible_len(unframed))
    joiner = 1 if unframed and new_text else 0
    material = f"{unframed}{NEWLINE_GLYPH}{new_text}" if joiner else (unframed or new_text)

    layout = plan_pinned(carried_sources, material, high, budget)
    kept_frames = [carried_frames[i] for i in layout.kept_carried]
    kept_sources = [carried_sources[i] for i in layout.kept_carried]
    planned = [PlannedFrame(p.render_text, high) for p in layout.new_pages]
    dim_open = dim_open_after("".join(carried_sources))
    new_frames, _, _ = _render(planned, dim_open, detail,
                               [len(p.source) for p in layout.new_pages], workers)
    frames = kept_frames + new_frames
    text = "".join(kept_sources) + "".join(p.source for p in layout.new_pages) + layout.tail
    dropped = layout.dropped + cleaning_dropped
    kept_visible = visible_len(text)
    truncated = (prev.truncated_chars if prev else 0) + dropped
    archive = Archive(tuple(frames), kept_visible, truncated, text or None, None,
                      layout.tail or None)
    new = visible_len(new_text)
    acct = CharAccounting(carried + joiner + new, kept_visible, dropped, carried, joiner, new)
    return archive, acct, len(new_frames)
