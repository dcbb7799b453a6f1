"""History blocks: an archive turned back into the ordered text and image blocks a request carries.

Why separate: every context rebuild (each turn, not only each compaction) turns the stored archive
into blocks, under a byte budget for the frames' data, with notices for frames left out; this is
the read path, while :mod:`snapcompact.archive.compactor` is the write path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Mapping

from snapcompact.archive.dataurl import elide_data_urls
from snapcompact.archive.model import (
    BLOB_PREFIX,
    Archive,
    ArchiveFrame,
    get_preserved_archive,
)
from snapcompact.core import DIM_OFF, DIM_ON, NEWLINE_GLYPH
from snapcompact.pricing import FRAME_DATA_BYTES_BUDGET


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
    budget = (f" {_format_bytes(omitted_bytes)} of base64 exceeded the per-request snapcompact "
              "payload budget."
              if omitted_bytes > 0 else "")
    return "\n".join([
        "-------------- snapcompact image middle omitted",
        (f"{count:,} archived image frame{s} could not be included.{budget} "
         "The compacted summary and visible text edges remain available."),
        "--------------",
    ])


#: One frame's place in the history: ("frame", the frame to send), ("unavailable", None) or
#: ("omitted", base64 bytes over the byte budget, 0 when only the image count left it out).
_Slot = tuple[str, Any]


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
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    unresolved = any(f.data.startswith(BLOB_PREFIX) for f in archive.frames)
    if (max_frame_data_bytes is None and max_images is None and resolve_frame_data is None
        and not unresolved):
        slots: list[_Slot] = [("frame", f) for f in archive.frames]
    else:
        slots = _priced_slots(archive, max_frame_data_bytes, max_images, resolve_frame_data,
                              pin_first)
    return _with_text_edges(archive, _middle_blocks(slots))


def _priced_slots(
    archive: Archive,
    max_frame_data_bytes: int | None,
    max_images: int | None,
    resolve_frame_data: Callable[[str], LazyFrameData | None] | None,
    pin_first: bool,
) -> list[_Slot]:
    """Each frame's slot, oldest first, priced newest first (the pinned earliest one before
    all) against the byte and image budgets; a resolved frame's payload is loaded."""
    slots: list[_Slot] = []
    used_bytes = used_images = 0
    priced = list(reversed(archive.frames))
    if pin_first and len(priced) > 1:
        priced = [priced[-1], *priced[:-1]]  # the earliest frame first, then newest first
    for frame in priced:
        lazy = resolve_frame_data(frame.data) if resolve_frame_data is not None else None
        if lazy is None and (resolve_frame_data is not None
                             or frame.data.startswith(BLOB_PREFIX)):
            slots.append(("unavailable", None))
            continue
        size = lazy.bytes if lazy is not None else len(frame.data)
        over_bytes = max_frame_data_bytes is not None and used_bytes + size > max_frame_data_bytes
        if over_bytes or (max_images is not None and used_images + 1 > max_images):
            slots.append(("omitted", size if over_bytes else 0))
            continue
        used_bytes += size
        used_images += 1
        if lazy is not None:
            frame = ArchiveFrame(**{**frame.__dict__, "data": lazy.read()})
        slots.append(("frame", frame))
    if pin_first and len(slots) > 1:
        slots = [*slots[1:], slots[0]]  # back to newest-first order, the pinned one oldest
    slots.reverse()
    return slots


def _middle_blocks(slots: list[_Slot]) -> list[dict[str, Any]]:
    """An image block per sent frame and one notice per run of same-kind gaps, in order."""
    middle: list[dict[str, Any]] = []
    for kind, run in groupby(slots, key=lambda slot: slot[0]):
        values = [value for _, value in run]
        if kind == "frame":
            middle.extend(_image_block(frame) for frame in values)
        elif kind == "unavailable":
            middle.append({"type": "text", "text": _unavailable_notice(len(values))})
        else:
            middle.append({"type": "text", "text": _omitted_notice(len(values), sum(values))})
    return middle


def _with_text_edges(archive: Archive, middle: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The text head, the middle and the text tail, with the separator lines the reference
    prints between them (the tail joins a text block before it)."""
    has_images = any(b["type"] == "image" for b in middle)
    has_gaps = any(b["type"] == "text" for b in middle)
    blocks: list[dict[str, Any]] = []
    if archive.text_head:
        suffix = "\n-------------- imaged middle below\n" if has_images else ""
        blocks.append({"type": "text",
                       "text": elide_data_urls(_to_plain(archive.text_head), "archive") + suffix})
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


def archive_blocks(
    message: Mapping[str, Any], max_frame_data_bytes: int = FRAME_DATA_BYTES_BUDGET
) -> list[dict[str, Any]] | None:
    """History blocks of a compactionSummary message that carries an archive, else None."""
    archive = get_preserved_archive(message.get("preserveData"))
    if archive is None:
        return None
    # Pinned-policy archives mark their frames with the source span they cover; their earliest
    # frame (the session head) is the last to be left out under the byte budget.
    pinned = any(frame.source_chars is not None for frame in archive.frames)
    return history_blocks(archive, max_frame_data_bytes=max_frame_data_bytes, pin_first=pinned)
