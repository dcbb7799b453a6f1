"""The snapcompact frame archive: compaction entry point, persisted model, history blocks.

Why it exists: a compaction discards old turns; snapcompact keeps them, serialized, normalized
and printed onto PNG frames that a vision model reads back for a fraction of the text tokens.
The frames persist under ``preserveData["snapcompact"]`` in the reference's JSON shape
(``{frames[], totalChars, truncatedChars, text?, textHead?, textTail?}``), and every context
rebuild turns them back into ordered text and image blocks (:func:`history_blocks`).

Two archive policies (see :mod:`snapcompact.archive.plan`): ``pinned`` (the documented seed
design, the default) carries frames forward, pins the first, evicts the oldest unpinned ones
and keeps the unframed newest slice as a text tail; ``foveated`` reproduces the reference
18.2.11 re-layout (text edges, HQ/dense middle).

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

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from snapcompact.archive.plan import (
    PlannedFrame,
    dense_companion,
    dim_open_after,
    plan_foveated,
    plan_pinned,
    visible_len,
)
from snapcompact.pricing.budgets import MAX_FRAMES_DEFAULT, provider_frame_budget
from snapcompact.archive.dataurl import elide_data_urls
from snapcompact.archive.file_ops import FileLists, FileOperations, compute_file_lists, format_file_list
from snapcompact.core.glyphs import DIM_OFF, DIM_ON, NEWLINE_GLYPH
from snapcompact.archive.reading_guide import NO_HISTORY, GuideFacts, render_guide, short_summary
from snapcompact.core.shapes import Shape, geometry, get_shape

__all__ = [
    "POLICIES",
    "PRESERVE_KEY",
    "Archive",
    "ArchiveFrame",
    "CharAccounting",
    "CompactionRejected",
    "CompactionResult",
    "LazyFrameData",
    "archive_source_text",
    "compact",
    "get_preserved_archive",
    "history_blocks",
    "images",
    "strip_preserved_archive",
    "strip_thinking_sections",
]

PRESERVE_KEY = "snapcompact"
Policy = Literal["pinned", "foveated"]
POLICIES: tuple[str, ...] = ("pinned", "foveated")
#: Provider-native compaction payloads a snapcompact pass supersedes.
_PROVIDER_COMPACTION_KEYS = ("openaiRemoteCompaction", "anthropicCompaction")
_BLOB_PREFIX = "blob:sha256:"
_CHARS_PER_TOKEN = 4


# ---------------------------------------------------------------------------------------------
# Persisted model


def _int(raw: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{where}: {key} must be a number, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{where}: {key} must be a whole number, got {value!r}")
        value = int(value)
    return value


def _opt_str(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class ArchiveFrame:
    """One persisted frame: base64 PNG (or a ``blob:sha256:`` reference) plus its reading grid."""

    data: str
    mime_type: str
    cols: int
    rows: int
    chars: int
    font: str | None = None
    variant: str | None = None
    line_repeat: int | None = None
    columns: int | None = None
    stopword_dim: bool | None = None
    detail: str | None = None
    source_chars: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"data": self.data, "mimeType": self.mime_type, "cols": self.cols,
                               "rows": self.rows, "chars": self.chars}
        for key, value in (("font", self.font), ("variant", self.variant),
                           ("lineRepeat", self.line_repeat), ("columns", self.columns),
                           ("stopwordDim", self.stopword_dim), ("detail", self.detail),
                           ("sourceChars", self.source_chars)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str = "frame") -> ArchiveFrame:
        if not isinstance(raw, Mapping):
            raise ValueError(f"{where} must be an object, got {type(raw).__name__}")
        data = raw.get("data")
        if not isinstance(data, str) or not data:
            raise ValueError(f"{where}: data must be a non-empty string")
        mime = raw.get("mimeType")
        if not isinstance(mime, str):
            raise ValueError(f"{where}: mimeType must be a string, got {mime!r}")
        dim = raw.get("stopwordDim")
        if dim is not None and not isinstance(dim, bool):
            raise ValueError(f"{where}: stopwordDim must be a boolean, got {dim!r}")
        opt_ints = {k: (_int(raw, k, where) if raw.get(k) is not None else None)
                    for k in ("lineRepeat", "columns", "sourceChars")}
        if opt_ints["sourceChars"] is not None and opt_ints["sourceChars"] < 0:
            raise ValueError(f"{where}: sourceChars must be non-negative")
        return cls(data, mime, _int(raw, "cols", where), _int(raw, "rows", where),
                   _int(raw, "chars", where), _opt_str(raw, "font", where),
                   _opt_str(raw, "variant", where), opt_ints["lineRepeat"], opt_ints["columns"], dim,
                   _opt_str(raw, "detail", where), opt_ints["sourceChars"])


@dataclass(frozen=True)
class Archive:
    """The persisted archive: frames oldest to newest, counters, and the text they came from.

    ``text`` is the kept normalized source (the frames' text, then the tail); ``text_head`` and
    ``text_tail`` are the verbatim regions before and after the imaged middle.
    """

    frames: tuple[ArchiveFrame, ...] = ()
    total_chars: int = 0
    truncated_chars: int = 0
    text: str | None = None
    text_head: str | None = None
    text_tail: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "frames", tuple(self.frames))
        for name in ("text", "text_head", "text_tail"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"archive {name} must be a string, got {type(value).__name__}")
            if value == "":
                object.__setattr__(self, name, None)

    @property
    def is_empty(self) -> bool:
        return not self.frames and self.text is None and self.text_head is None and self.text_tail is None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"frames": [f.to_json() for f in self.frames],
                               "totalChars": self.total_chars, "truncatedChars": self.truncated_chars}
        for key, value in (("text", self.text), ("textHead", self.text_head), ("textTail", self.text_tail)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Archive:
        """Strict parse: every frame must be valid, and an archive must hold frames or text."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"archive must be an object, got {type(raw).__name__}")
        frames_raw = raw.get("frames", [])
        if not isinstance(frames_raw, list):
            raise ValueError("archive frames must be a list")
        frames = tuple(ArchiveFrame.from_json(f, f"frame {i}") for i, f in enumerate(frames_raw))
        texts = {k: _opt_str(raw, k, "archive") for k in ("text", "textHead", "textTail")}
        archive = cls(frames, _int(raw, "totalChars", "archive", 0), _int(raw, "truncatedChars", "archive", 0),
                      texts["text"], texts["textHead"], texts["textTail"])
        if archive.is_empty:
            raise ValueError("archive holds neither frames nor text")
        return archive


def get_preserved_archive(preserve_data: Mapping[str, Any] | None) -> Archive | None:
    """The archive under ``preserve_data["snapcompact"]``, or None (reference semantics).

    Lenient like the reference: frames missing a field are skipped, non-string or empty texts
    ignored, counters that are not numbers read as 0; an archive left with neither frames nor
    text is rejected (None). Use :meth:`Archive.from_json` for a strict parse.
    """
    if not isinstance(preserve_data, Mapping):
        return None
    raw = preserve_data.get(PRESERVE_KEY)
    if not isinstance(raw, Mapping):
        return None
    frames: list[ArchiveFrame] = []
    if isinstance(raw.get("frames"), list):
        for i, item in enumerate(raw["frames"]):
            try:
                frames.append(ArchiveFrame.from_json(item, f"frame {i}"))
            except ValueError:
                continue

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    def counter(key: str) -> int:
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            return 0
        return int(value) if float(value).is_integer() else value  # type: ignore[return-value]

    archive = Archive(tuple(frames), counter("totalChars"), counter("truncatedChars"),
                      text("text"), text("textHead"), text("textTail"))
    return None if archive.is_empty else archive


def strip_preserved_archive(preserve_data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``preserve_data`` without the archive key; None when nothing else remains."""
    if preserve_data is None:
        return None
    if not isinstance(preserve_data, Mapping):
        raise ValueError(f"preserve data must be a mapping, got {type(preserve_data).__name__}")
    if PRESERVE_KEY not in preserve_data:
        return dict(preserve_data)
    rest = {k: v for k, v in preserve_data.items() if k != PRESERVE_KEY}
    return rest or None


def _to_plain(text: str) -> str:
    return text.replace(DIM_ON, "").replace(DIM_OFF, "").replace(NEWLINE_GLYPH, "\n")


def _previous_text(archive: Archive) -> str:
    if archive.text is not None:
        return archive.text
    return NEWLINE_GLYPH.join(p for p in (archive.text_head, archive.text_tail) if p)


def archive_source_text(archive: Archive) -> str | None:
    """The archive's kept text as plain text (for an LLM summary that replaces the archive)."""
    text = _previous_text(archive)
    return elide_data_urls(_to_plain(text), "archive") if text else None


def images(archive: Archive) -> list[dict[str, Any]]:
    """Image blocks for every frame, oldest first (``detail`` only when the frame has one)."""
    return [_image_block(f) for f in archive.frames]


def _image_block(frame: ArchiveFrame) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "image", "data": frame.data, "mimeType": frame.mime_type}
    if frame.detail:
        block["detail"] = frame.detail
    return block


# ---------------------------------------------------------------------------------------------
# History blocks


@dataclass(frozen=True)
class LazyFrameData:
    """A frame payload priced before it is loaded (``read`` returns the base64)."""

    bytes: int
    read: Callable[[], str]


def _format_bytes(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    if n >= 1_000:
        return f"{n / 1_000:.1f} KB"
    return f"{n} B"


def _unavailable_notice(count: int) -> str:
    s = "" if count == 1 else "s"
    return f"-------------- {count:,} archived image frame{s} unavailable here --------------"


def _omitted_notice(count: int, omitted_bytes: int) -> str:
    s = "" if count == 1 else "s"
    budget = (f" {_format_bytes(omitted_bytes)} of base64 exceeded the per-request snapcompact payload budget."
              if omitted_bytes > 0 else "")
    return "\n".join([
        "-------------- snapcompact image middle omitted",
        (f"{count:,} archived image frame{s} could not be included.{budget} "
         "The compacted summary and visible text edges remain available."),
        "--------------",
    ])


def history_blocks(
    archive: Archive,
    max_frame_data_bytes: int | None = None,
    max_images: int | None = None,
    resolve_frame_data: Callable[[str], LazyFrameData | None] | None = None,
    pin_first: bool = False,
) -> list[dict[str, Any]]:
    """Ordered text and image blocks for the compaction summary message, oldest to newest.

    The text head comes first, then the frames, then the text tail (reference ``historyBlocks``).
    Frames are priced newest first: a frame whose payload cannot be resolved (or an unresolved
    ``blob:sha256:`` reference) becomes an "unavailable" gap; a frame that would push the
    base64 total past ``max_frame_data_bytes``, or the image count past ``max_images``, becomes
    an "omitted" gap (later, older frames may still fit). Each run of same-kind gaps turns into
    one notice at its chronological position.

    ``pin_first`` (the pinned policy's promise) prices the earliest frame before all others, so
    under a byte or image-count budget the session head is the last frame to be left out.
    """
    for name, value in (("max_frame_data_bytes", max_frame_data_bytes), ("max_images", max_images)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    slots: list[tuple[str, Any]] = []
    unresolved = any(f.data.startswith(_BLOB_PREFIX) for f in archive.frames)
    if max_frame_data_bytes is None and max_images is None and resolve_frame_data is None and not unresolved:
        slots = [("frame", f) for f in archive.frames]
    else:
        used_bytes = used_images = 0
        priced = list(reversed(archive.frames))
        if pin_first and len(priced) > 1:
            priced = [priced[-1], *priced[:-1]]  # the earliest frame first, then newest first
        for frame in priced:
            lazy = resolve_frame_data(frame.data) if resolve_frame_data is not None else None
            if lazy is None and (resolve_frame_data is not None or frame.data.startswith(_BLOB_PREFIX)):
                slots.append(("unavailable", None))
                continue
            size = lazy.bytes if lazy is not None else len(frame.data)
            if ((max_frame_data_bytes is not None and used_bytes + size > max_frame_data_bytes)
                    or (max_images is not None and used_images + 1 > max_images)):
                slots.append(("omitted", size if max_frame_data_bytes is not None
                              and used_bytes + size > max_frame_data_bytes else 0))
                continue
            used_bytes += size
            used_images += 1
            if lazy is not None:
                frame = ArchiveFrame(**{**frame.__dict__, "data": lazy.read()})
            slots.append(("frame", frame))
        if pin_first and len(slots) > 1:
            slots = [*slots[1:], slots[0]]  # back to newest-first order, the pinned one oldest
        slots.reverse()

    middle: list[dict[str, Any]] = []
    gap_kind: str | None = None
    gap_frames = gap_bytes = 0

    def flush() -> None:
        nonlocal gap_kind, gap_frames, gap_bytes
        if gap_kind is not None:
            text = _unavailable_notice(gap_frames) if gap_kind == "unavailable" else _omitted_notice(gap_frames, gap_bytes)
            middle.append({"type": "text", "text": text})
        gap_kind, gap_frames, gap_bytes = None, 0, 0

    for kind, value in slots:
        if kind == "frame":
            flush()
            middle.append(_image_block(value))
            continue
        if gap_kind is not None and gap_kind != kind:
            flush()
        gap_kind = kind
        gap_frames += 1
        if kind == "omitted":
            gap_bytes += value
    flush()

    has_images = any(b["type"] == "image" for b in middle)
    has_gaps = any(b["type"] == "text" for b in middle)
    blocks: list[dict[str, Any]] = []
    if archive.text_head:
        suffix = "\n-------------- imaged middle below\n" if has_images else ""
        blocks.append({"type": "text", "text": elide_data_urls(_to_plain(archive.text_head), "archive") + suffix})
    blocks.extend(middle)
    if archive.text_tail:
        if has_images:
            prefix = "-------------- imaged middle above\n"
        elif archive.truncated_chars > 0 or has_gaps:
            prefix = "\n-------------- middle history omitted above\n"
        else:
            prefix = ""
        tail = prefix + elide_data_urls(_to_plain(archive.text_tail), "archive")
        if blocks and blocks[-1]["type"] == "text":
            blocks[-1] = {**blocks[-1], "text": blocks[-1]["text"] + tail}
        else:
            blocks.append({"type": "text", "text": tail})
    return blocks


# ---------------------------------------------------------------------------------------------
# Compaction


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
    """Drop ``¶think:`` sections from archive text (sections start at a blank-line scope boundary)."""
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
    from snapcompact.pricing.billing import family_image_detail, frame_token_estimate
    from snapcompact.pricing.resolve import api_family, api_for, resolve_shape_for_text

    family = api_family(api_for(api, provider))
    if shape is None:
        base = resolve_shape_for_text(probe, model_id or "", api=api, provider=provider).shape
    elif isinstance(shape, str):
        base = get_shape(shape)
    elif isinstance(shape, Shape):
        base = shape
    else:
        raise ValueError(f"shape must be a Shape, a variant name or None, got {type(shape).__name__}")
    high = base.at_size(frame_size)
    return high, frame_token_estimate(family, high.frame_size), family_image_detail(family)


def _render(planned: Sequence[PlannedFrame], dim_open: bool, detail: str | None,
            source_chars: Sequence[int | None], workers: int | None) -> tuple[list[ArchiveFrame], bool]:
    """Render pages in order, re-opening a dim span a boundary cut and dimming stopwords."""
    from snapcompact.text.normalize import dim_stopwords
    from snapcompact.render.parallel import parallel_map
    from snapcompact.render.frames import render, warm_caches

    texts: list[str] = []
    for item in planned:
        page = DIM_ON + item.text if dim_open else item.text
        dim_open = dim_open_after(page)
        texts.append(dim_stopwords(page) if item.shape.stopword_dim else page)
    jobs = list(zip(texts, (p.shape for p in planned)))
    if len(jobs) > 1:
        for shape in {s for _, s in jobs}:
            warm_caches(shape)
    rendered = parallel_map(lambda job: render(job[0], job[1]), jobs, workers)
    frames = []
    for r, item, n in zip(rendered, planned, source_chars):
        s = item.shape
        frames.append(ArchiveFrame(
            data=r.data, mime_type="image/png", cols=r.cols, rows=r.rows, chars=r.chars,
            font=s.font, variant=s.ink, line_repeat=s.line_repeat, columns=2 if s.is_doc else None,
            stopword_dim=True if s.stopword_dim else None, detail=detail, source_chars=n))
    return frames, dim_open


def _message_chars(messages: Sequence[Any]) -> int:
    from snapcompact.archive.messages import TextBlock, ThinkingBlock, ToolCallBlock, message_from_json
    from snapcompact.archive.serialize import js_json_stringify

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
    return math.ceil(chars / _CHARS_PER_TOKEN)


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
) -> CompactionResult:
    """Archive ``messages`` (the discarded history, oldest first) as snapcompact frames.

    ``previous`` is the previous compaction's ``preserveData`` (or its :class:`Archive`);
    ``previous_summary`` the previous entry's text summary, folded in as
    ``[Summary of earlier history]`` when there is no previous archive text. The shape is
    ``shape`` (a Shape or variant name) or resolved from ``model_id``/``api``/``provider`` and the
    text; ``frame_size`` overrides its frame side. Frame budget: ``pinned`` uses the
    provider's (``provider_frame_budget``: the image cap clamped to 8, unknown providers 5),
    lowered to ``max_frames`` if given; ``foveated`` uses ``max_frames`` clamped to [1, 80]
    (default 80), as the reference. ``file_ops`` are the cumulative file operations.

    When ``tokens_before`` is given, the result is projected (summary and text blocks at 4
    characters per token, each image at the shape's per-frame estimate, plus ``kept_tokens``,
    by default ``tokens_before`` minus an estimate of the replaced messages and previous archive)
    and :class:`CompactionRejected` is raised when it would not be smaller.
    """
    from snapcompact.text.normalize import normalize
    from snapcompact.archive.serialize import SerializeOptions, serialize_conversation

    if policy not in POLICIES:
        raise ValueError(f"unknown archive policy {policy!r} (known: {', '.join(POLICIES)})")
    if max_frames is not None:
        _check_positive("max_frames", max_frames)
    if previous_summary is not None and not isinstance(previous_summary, str):
        raise ValueError(f"previous_summary must be a string, got {type(previous_summary).__name__}")
    if file_ops is not None and not isinstance(file_ops, FileOperations):
        raise ValueError(f"file_ops must be FileOperations, got {type(file_ops).__name__}")
    if isinstance(serialize_options, SerializeOptions):
        options = serialize_options
    else:
        options = SerializeOptions.from_mapping(serialize_options)

    if isinstance(previous, Archive):
        prev_archive: Archive | None = None if previous.is_empty else previous
        prev_preserve: dict[str, Any] = {}
    elif previous is None:
        prev_archive, prev_preserve = None, {}
    elif isinstance(previous, Mapping):
        prev_archive, prev_preserve = get_preserved_archive(previous), dict(previous)
    else:
        raise ValueError(f"previous must be preserve data, an Archive or None, got {type(previous).__name__}")

    serialized = serialize_conversation(list(messages), options)
    prev_raw = _previous_text(prev_archive) if prev_archive else ""
    if prev_raw:
        probe = f"{_to_plain(prev_raw)}{NEWLINE_GLYPH}{serialized}"
    elif previous_summary:
        probe = f"{previous_summary}{NEWLINE_GLYPH}{serialized}"
    else:
        probe = serialized
    high, frame_tokens, detail = _resolve(shape, probe, model_id, api, provider, frame_size)
    geo = geometry(high)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(f"frame size {high.frame_size} px is too small for shape {high.name!r}")

    new_text = normalize(serialized, high.font)
    included_summary = not prev_raw and bool(previous_summary)
    if included_summary:
        head = f"[Summary of earlier history] {normalize(previous_summary or '', high.font)}"
        new_text = f"{head} [Recent conversation] {new_text}" if new_text else head
    new_text = elide_data_urls(new_text)

    if policy == "foveated":
        archive, acct, rendered = _compact_foveated(prev_archive, prev_raw, new_text, high, max_frames,
                                                       detail, options.include_thinking, workers)
    else:
        budget = provider_frame_budget(provider, api)
        if max_frames is not None:
            budget = min(budget, max_frames)
        archive, acct, rendered = _compact_pinned(prev_archive, prev_raw, new_text, high, budget,
                                                     detail, options.include_thinking, workers)

    ops = file_ops or FileOperations()
    lists = compute_file_lists(ops)
    files = format_file_list(lists, ops.read)
    text_chars = len(archive.text_head or "") + len(archive.text_tail or "")
    if not archive.frames and not text_chars and not files:
        summary = NO_HISTORY
    else:
        cols: list[int] = []
        for f in archive.frames:
            if f.cols not in cols:
                cols.append(f.cols)
        # The current shape's rows, unless some frame (a denser tier, a carried frame of
        # another shape) holds more: "at most N rows" must stay true for every frame.
        rows = max([geo.rows, *(f.rows for f in archive.frames)])
        summary = render_guide(GuideFacts(
            frame_count=len(archive.frames), cols=" or ".join(map(str, cols)) if cols else str(geo.cols),
            rows=rows, doc_columns=high.is_doc, sentence_ink=high.ink == "sent",
            stopword_dim=high.stopword_dim, line_repeat=high.line_repeat,
            included_previous_summary=included_summary, truncated_chars=archive.truncated_chars,
            include_thinking=options.include_thinking, files=files))
    base = {k: v for k, v in prev_preserve.items() if k not in _PROVIDER_COMPACTION_KEYS}
    preserve = {**base, PRESERVE_KEY: archive.to_json()}
    result = CompactionResult(
        summary=summary,
        short_summary=short_summary(archive.total_chars, len(archive.frames), text_chars),
        details=lists, preserve_data=preserve, archive=archive, policy=policy, shape=high,
        frame_token_estimate=frame_tokens, accounting=acct,
        projected_tokens=0, rendered_frames=rendered, tokens_before=tokens_before, first_kept_entry_id=first_kept_entry_id)
    if tokens_before is None and kept_tokens is None:
        return _with_projection(result, _archive_tokens(summary, archive, frame_tokens))
    if kept_tokens is None:
        replaced = _tokens_of_text(_message_chars(messages))
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
            f"({len(archive.frames)} frames at {frame_tokens:,} each) >= {tokens_before:,} before", result)
    return result


def _with_projection(result: CompactionResult, projected: int) -> CompactionResult:
    from dataclasses import replace

    return replace(result, projected_tokens=projected)


def _compact_foveated(prev: Archive | None, prev_raw: str, new_text: str, high: Shape, max_frames: int | None,
                      detail: str | None, include_thinking: bool, workers: int | None):
    prev_text = elide_data_urls(prev_raw, "archive") if prev_raw else ""
    if not include_thinking and prev_text:
        prev_text = strip_thinking_sections(prev_text)
    joiner = 1 if prev_text and new_text else 0
    if prev_text:
        text = f"{prev_text}{NEWLINE_GLYPH}{new_text}" if new_text else prev_text
    else:
        text = new_text
    text = elide_data_urls(text)
    cap = max(1, min(max_frames if max_frames is not None else MAX_FRAMES_DEFAULT, MAX_FRAMES_DEFAULT))
    layout = plan_foveated(text, high, dense_companion(high), cap)
    dim_open = dim_open_after(layout.text_head)
    frames, dim_open = _render(layout.frames, dim_open, detail, [None] * len(layout.frames), workers)
    tail = (DIM_ON if dim_open else "") + layout.text_tail if layout.text_tail else ""
    kept = layout.kept_text
    persisted = kept[: len(kept) - len(layout.text_tail)] + tail if kept and layout.text_tail else kept
    truncated = (prev.truncated_chars if prev else 0) + layout.truncated_chars
    total = sum(f.chars for f in frames) + len(layout.text_head) + len(tail)
    archive = Archive(tuple(frames), total, truncated, persisted or None, layout.text_head or None, tail or None)
    carried = visible_len(prev_raw)
    new = visible_len(new_text)
    kept_visible = visible_len(persisted)
    acct = CharAccounting(carried + joiner + new, kept_visible, carried + joiner + new - kept_visible,
                          carried, joiner, new)
    return archive, acct, len(frames)


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
    if prev is not None and _carryable(prev) and (include_thinking or "\u00b6think:" not in prev_raw):
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
    cleaning_dropped = carried - sum(visible_len(s) for s in carried_sources) - visible_len(unframed)
    joiner = 1 if unframed and new_text else 0
    material = f"{unframed}{NEWLINE_GLYPH}{new_text}" if joiner else (unframed or new_text)

    layout = plan_pinned(carried_sources, material, high, budget)
    kept_frames = [carried_frames[i] for i in layout.kept_carried]
    kept_sources = [carried_sources[i] for i in layout.kept_carried]
    planned = [PlannedFrame(p.render_text, high) for p in layout.new_pages]
    dim_open = dim_open_after("".join(carried_sources))
    new_frames, _ = _render(planned, dim_open, detail, [len(p.source) for p in layout.new_pages], workers)
    frames = kept_frames + new_frames
    text = "".join(kept_sources) + "".join(p.source for p in layout.new_pages) + layout.tail
    dropped = layout.dropped + cleaning_dropped
    kept_visible = visible_len(text)
    truncated = (prev.truncated_chars if prev else 0) + dropped
    archive = Archive(tuple(frames), kept_visible, truncated, text or None, None, layout.tail or None)
    new = visible_len(new_text)
    acct = CharAccounting(carried + joiner + new, kept_visible, dropped, carried, joiner, new)
    return archive, acct, len(new_frames)
