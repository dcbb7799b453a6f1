"""Growing an archive by its policy: carry or heal the previous text, plan, draw, account.

Why a room of its own: both archive policies (see :mod:`snapcompact.archive.plan`) turn the
previous archive and this compaction's new text into the next archive the same way: decide
what of the previous archive carries forward, plan the pages, draw the new ones (in parallel,
re-opening a dim span a page boundary cut) and count the visible characters kept and dropped.
:mod:`snapcompact.archive.compactor` does what is around it (arguments, serialization, shape,
reading guide, projection).

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

import re
from collections.abc import Sequence
from dataclasses import dataclass

from snapcompact.archive.dataurl import elide_data_urls
from snapcompact.archive.frame_reuse import CarriedFrames, page_key
from snapcompact.archive.model import Archive, ArchiveFrame
from snapcompact.archive.plan import (
    PlannedFrame,
    dense_companion,
    dim_open_after,
    plan_foveated,
    plan_pinned,
    visible_len,
)
from snapcompact.core import DIM_ON, NEWLINE_GLYPH, Shape
from snapcompact.pricing import MAX_FRAMES_DEFAULT
from snapcompact.render import parallel_map, render, warm_caches
from snapcompact.text import dim_stopwords


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
class Grown:
    """The next archive, its character accounting, and how many of its frames were drawn now
    (frames carried from the previous archive are not counted)."""

    archive: Archive
    accounting: CharAccounting
    rendered: int


def strip_thinking_sections(text: str) -> str:
    """Drop ``¶think:`` sections from archive text (sections start at a blank-line scope
    boundary)."""
    boundary = re.compile("\n\n(?=\u00b6(?:user|think|ai|call):)")
    segments = []
    for segment in text.split(NEWLINE_GLYPH):
        kept = [s for s in boundary.split(segment) if not s.startswith("\u00b6think:")]
        joined = "\n\n".join(kept)
        if joined:
            segments.append(joined)
    return NEWLINE_GLYPH.join(segments)


def draw_pages(planned: Sequence[PlannedFrame], dim_open: bool, detail: str | None,
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


def grow_foveated(prev: Archive | None, prev_raw: str, new_text: str, high: Shape,
                  max_frames: int | None, detail: str | None, include_thinking: bool,
                  workers: int | None, text_edge_chars: int | None = None,
                  middle_shape: str = "production") -> Grown:
    """The reference 18.2.11 re-layout: the whole previous text (healed: data URLs elided,
    thinking scrubbed unless kept) joined to the new text, laid out again as text edges and
    an HQ/dense middle of at most ``max_frames`` (clamped to [1, 80]) frames."""
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
    frames, dim_open, drawn = draw_pages(layout.frames, dim_open, detail,
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
    return Grown(archive, acct, drawn)


def _carryable(prev: Archive) -> bool:
    """True when ``prev`` is a pinned archive whose frames map onto its text."""
    if not prev.frames or prev.text is None or any(f.source_chars is None for f in prev.frames):
        return False
    framed = sum(f.source_chars or 0 for f in prev.frames)
    return framed <= len(prev.text) and prev.text[framed:] == (prev.text_tail or "")


def _carried_part(prev: Archive | None, prev_raw: str,
                  include_thinking: bool) -> tuple[list[ArchiveFrame], list[str], str]:
    """What a pinned compaction keeps of the previous archive: its frames with their slices of
    text, and the unframed text after them.  An archive whose frames do not map onto its text
    (or that holds thinking this run scrubs) carries no frames: its whole text, healed, is
    unframed and is framed again."""
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
        return carried_frames, carried_sources, prev_raw[pos:]
    unframed = elide_data_urls(prev_raw, "archive") if prev_raw else ""
    if not include_thinking and unframed:
        unframed = strip_thinking_sections(unframed)
    return carried_frames, carried_sources, unframed


def grow_pinned(prev: Archive | None, prev_raw: str, new_text: str, high: Shape, budget: int,
                detail: str | None, include_thinking: bool, workers: int | None) -> Grown:
    """The seed design: carried frames stay as they are, the first pinned, the oldest unpinned
    evicted to fit ``budget`` frames; the unframed text plus the new text is framed and its
    unframed newest slice kept as the text tail."""
    carried_frames, carried_sources, unframed = _carried_part(prev, prev_raw, include_thinking)
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
    new_frames, _, _ = draw_pages(planned, dim_open, detail,
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
    return Grown(archive, acct, len(new_frames))
