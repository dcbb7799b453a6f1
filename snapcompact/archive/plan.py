"""Deciding which archived text becomes frames, which stays text, and which is dropped.

Pure text arithmetic, no pixels: the planners take normalized archive text and frame shapes and
return pages to render plus the text regions to keep, so the policies can be tested (and
property-tested) without rendering anything.

Two policies, because the documented design and the reference's current code disagree:

* ``pinned`` (the seed, "Snapcompact strategy"): frames are carried forward between
  compactions; the first frame ever made (the session head, or the filmed summary of older
  history) is pinned; when the provider's frame budget is exceeded the oldest *unpinned* frames
  are evicted; pages of the current compaction beyond the budget are not rendered but kept as a
  verbatim text tail, capped at two frame capacities with the middle elided.
* ``foveated`` (reference 18.2.11 ``planArchive``): the whole kept text is re-laid out every time:
  one frame capacity of text at each edge, high-quality frames at the edges of the imaged middle,
  a denser shape in its centre, and the oldest dense pages dropped.

Units. Slicing and lengths are in code points (the reference counts UTF-16 units; the two agree
on BMP text, and code points never split a surrogate pair). Character accounting uses *visible*
characters: code points other than the zero-width DIM_ON/DIM_OFF toggles, so the dim markers the
archive inserts to re-open a span across a boundary never disturb the books.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapcompact.core import DIM_OFF, DIM_ON, JS_WHITESPACE, Shape, geometry, get_shape
from snapcompact.render import doc_pages as _group_doc_lines
from snapcompact.render import paginate_cells
from snapcompact.text import wrap

__all__ = [
    "HQ_EDGE_FRAMES",
    "TEXT_EDGE_PAGES",
    "FoveatedLayout",
    "PinnedLayout",
    "PlannedFrame",
    "SourcePage",
    "dense_companion",
    "dim_open_after",
    "elide_middle",
    "plan_foveated",
    "plan_pinned",
    "source_pages",
    "visible_len",
    "wide_cells",
]

#: High-quality frames at each edge of a foveated imaged middle (reference constant).
HQ_EDGE_FRAMES = 3
#: Frame capacities of verbatim text kept at each edge by the foveated policy.
TEXT_EDGE_PAGES = 1
_WS = frozenset(JS_WHITESPACE)


def visible_len(text: str) -> int:
    """Code points of ``text`` that print (everything but the DIM_ON/DIM_OFF toggles)."""
    return len(text) - text.count(DIM_ON) - text.count(DIM_OFF)


def dim_open_after(text: str, open_before: bool = False) -> bool:
    """Whether a dim span is open at the end of ``text`` (given the state before it)."""
    on, off = text.rfind(DIM_ON), text.rfind(DIM_OFF)
    if on < 0 and off < 0:
        return open_before
    return on > off


def wide_cells(shape: Shape) -> bool:
    """Bitmap shapes give wide (CJK) glyphs two cells; the Silver shape gives them one."""
    return shape.font != "silver"


@dataclass(frozen=True)
class SourcePage:
    """One page: the slice of archive text it holds, and the text the renderer is handed.

    For grid shapes both are the same string. For doc shapes ``render_text`` is the page's
    word-wrapped lines joined by newlines, while ``source`` is the untouched slice (including
    the whitespace the wrap consumed), so the sources of consecutive pages concatenate back to
    the original text exactly.
    """

    source: str
    render_text: str


def _doc_source_pages(text: str, shape: Shape) -> list[SourcePage]:

    geo = geometry(shape)
    lines = wrap(text, geo.cols, wide_cells(shape))
    per_page = 2 * geo.rows
    pages: list[SourcePage] = []
    pos, n = 0, len(text)
    start = 0
    for first in range(0, len(lines), per_page):
        chunk = lines[first:first + per_page]
        for line in chunk:
            while pos < n and text[pos] in _WS:
                pos += 1
            for ch in line:
                if ch == " ":  # wrap joined a whitespace run with one space
                    if pos >= n or text[pos] not in _WS:
                        raise ValueError("doc page does not match its source text")
                    while pos < n and text[pos] in _WS:
                        pos += 1
                else:
                    if pos >= n or text[pos] != ch:
                        raise ValueError("doc page does not match its source text")
                    pos += 1
        while pos < n and text[pos] in _WS:  # trailing separator belongs to this page
            pos += 1
        end = pos if first + per_page < len(lines) else n
        pages.append(SourcePage(text[start:end], "\n".join(chunk)))
        start = end
    return pages


def source_pages(text: str, shape: Shape) -> list[SourcePage]:
    """Split normalized ``text`` into the pages ``shape`` renders, keeping each page's source.

    Grid shapes paginate by cells (no wrap); doc shapes word-wrap into pages of ``2 * rows``
    lines. The sources always concatenate to ``text``, except that text holding no glyph at all
    gives no page.
    """
    geo = geometry(shape)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(f"frame size {shape.frame_size} px is too small for shape {shape.name!r}")
    if shape.is_doc:
        return _doc_source_pages(text, shape)
    return [SourcePage(p, p)
            for p in paginate_cells(text, geo.capacity, geo.cols, wide_cells(shape))]


def _marker(elided: int) -> str:
    # ASCII dots: the archive text is already normalized, and fonts draw no ellipsis.
    return f" [...{elided}ch elided...] "


def elide_middle(text: str, limit: int) -> tuple[str, int]:
    """Cap ``text`` at ``limit`` visible characters by replacing its middle with a marker.

    Returns ``(kept, net_dropped)`` where the marker `` [...Nch elided...] `` states the N
    visible characters removed, and ``net_dropped = N - visible_len(marker)``: the kept text
    counts the marker, so ``visible_len(kept) + net_dropped == visible_len(text)`` exactly.
    A dim span cut by the elision is closed before the marker and re-opened after it. When
    ``limit`` is too small for a marker, only the newest ``limit`` characters are kept.
    """
    if limit < 0:
        raise ValueError(f"limit must be non-negative, got {limit}")
    total = visible_len(text)
    if total <= limit:
        return text, 0
    worst = len(_marker(total))
    budget = limit - worst
    if budget < 2:
        kept = _last_visible(text, limit)
        if dim_open_after(text[: len(text) - len(kept)]):
            kept = DIM_ON + kept
        return kept, total - visible_len(kept)
    head_n = budget // 2
    tail_n = budget - head_n
    head = _first_visible(text, head_n)
    tail = _last_visible(text, tail_n)
    middle = text[len(head): len(text) - len(tail)]
    elided = visible_len(middle)
    marker = _marker(elided)
    if dim_open_after(head):
        marker = DIM_OFF + marker
    if dim_open_after(text[: len(text) - len(tail)]):
        marker = marker + DIM_ON
    kept = head + marker + tail
    return kept, elided - visible_len(marker)


def _first_visible(text: str, count: int) -> str:
    seen = 0
    for i, ch in enumerate(text):
        if ch != DIM_ON and ch != DIM_OFF:
            if seen == count:
                return text[:i]
            seen += 1
    return text


def _last_visible(text: str, count: int) -> str:
    if count <= 0:
        return ""
    seen = 0
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch != DIM_ON and ch != DIM_OFF:
            seen += 1
            if seen == count:
                return text[i:]
    return text


# ---------------------------------------------------------------------------------------------
# Foveated policy (reference planArchive)


@dataclass(frozen=True)
class PlannedFrame:
    """A page to render and the shape (quality tier) to render it in."""

    text: str
    shape: Shape


@dataclass(frozen=True)
class FoveatedLayout:
    """Reference layout: text head, imaged middle (HQ/LQ/HQ), text tail, kept text, drops."""

    frames: tuple[PlannedFrame, ...]
    text_head: str
    text_tail: str
    kept_text: str
    truncated_chars: int


def dense_companion(high: Shape, middle: str = "production") -> Shape:
    """The denser middle tier: 8on16-bw at the same frame size, when it holds more per frame.

    Doc and Silver shapes have no companion (the tier is ``high`` itself), as in the reference.
    ``middle`` is the research knob ``snapcompact.middleShape``: ``production`` is the rule
    above, ``same`` is ``high`` itself, any other value a shape name drawn at ``high``'s frame
    size (doc shapes, which the planner draws whole, still have no companion).
    """

    if middle == "same" or high.is_doc:
        return high
    if middle != "production":
        return get_shape(middle, high.frame_size)
    if high.font == "silver":
        return high
    low = get_shape("8on16-bw", high.frame_size)
    return low if geometry(low).capacity > geometry(high).capacity else high


def plan_foveated(text: str, high: Shape, low: Shape, max_frames: int,
                  edge_chars: int | None = None) -> FoveatedLayout:
    """The reference's foveated plan of ``text`` (oldest to newest).

    ``truncated_chars`` is in code points including dim toggles, like the reference's count;
    for grid shapes ``kept_text`` plus the dropped slice is exactly ``text``. Doc shapes follow
    the reference's flattening (page lines re-joined by spaces), so there the kept text may
    differ from the source by whitespace. ``edge_chars`` sizes each verbatim text edge (a
    research knob); None = one frame capacity of ``high``, as the reference.
    """
    cap_hi = geometry(high).capacity
    if edge_chars is not None and (isinstance(edge_chars, bool) or not isinstance(edge_chars, int)
                                   or edge_chars < 0):
        raise ValueError(f"edge_chars must be a non-negative integer, got {edge_chars!r}")
    edge = TEXT_EDGE_PAGES * cap_hi if edge_chars is None else edge_chars
    if len(text) <= 2 * edge:
        return FoveatedLayout((), text, "", text, 0)
    head, tail = text[:edge], text[len(text) - edge:] if edge else ""
    if max_frames < 1:
        return FoveatedLayout((), head, tail, head + tail, len(text) - len(head) - len(tail))
    image_text = text[edge: len(text) - edge]
    if high.is_doc:

        geo = geometry(high)
        pages = _group_doc_lines(wrap(image_text, geo.cols, wide_cells(high)), geo.rows)
        kept = pages
        truncated = 0
        if len(pages) > max_frames:
            dropped = pages[1: len(pages) - (max_frames - 1)]
            truncated = sum(len(p) for p in dropped)
            kept = pages[:1] + pages[len(pages) - (max_frames - 1):]
        flat = " ".join(p.replace("\n", " ") for p in kept)
        return FoveatedLayout(tuple(PlannedFrame(p, high) for p in kept), head, tail,
                              head + flat + tail, truncated)
    geo_hi = geometry(high)
    hi_pages = paginate_cells(image_text, cap_hi, geo_hi.cols, wide_cells(high))
    if len(hi_pages) <= max_frames:
        return FoveatedLayout(tuple(PlannedFrame(p, high) for p in hi_pages), head, tail,
                              head + image_text + tail, 0)
    geo_lo = geometry(low)
    edge_frames = min(HQ_EDGE_FRAMES, (max_frames - 1) // 2)
    head_pages = hi_pages[:edge_frames]
    tail_pages = hi_pages[len(hi_pages) - edge_frames:] if edge_frames > 0 else []
    image_head, image_tail = "".join(head_pages), "".join(tail_pages)
    middle_source = image_text[len(image_head): len(image_text) - len(image_tail)]
    middle_pages = paginate_cells(middle_source, geo_lo.capacity, geo_lo.cols, wide_cells(low))
    middle_budget = max_frames - 2 * edge_frames
    truncated = 0
    middle_text = middle_source
    if len(middle_pages) > middle_budget:
        dropped_middle = "".join(middle_pages[: len(middle_pages) - middle_budget])
        truncated = len(dropped_middle)
        middle_text = middle_source[len(dropped_middle):]
        middle_pages = middle_pages[len(middle_pages) - middle_budget:]
    frames = ([PlannedFrame(p, high) for p in head_pages]
              + [PlannedFrame(p, low) for p in middle_pages]
              + [PlannedFrame(p, high) for p in tail_pages])
    return FoveatedLayout(tuple(frames), head, tail,
                          head + image_head + middle_text + image_tail + tail, truncated)


# ---------------------------------------------------------------------------------------------
# Pinned policy (seed)


@dataclass(frozen=True)
class PinnedLayout:
    """Seed layout of one compaction.

    ``kept_carried`` are indices into the carried frames that survive (the pinned one, index 0,
    always survives); ``evicted`` the indices dropped; ``new_pages`` the pages of this
    compaction's material to render (oldest first); ``tail`` the unframed newest slice as it is
    stored (middle-elided, dim re-opened); ``dropped`` the visible characters removed this round
    (evicted frame sources plus the net tail elision).
    """

    kept_carried: tuple[int, ...]
    evicted: tuple[int, ...]
    new_pages: tuple[SourcePage, ...]
    tail: str
    dropped: int


def plan_pinned(carried_sources: list[str], material: str, shape: Shape,
                budget: int) -> PinnedLayout:
    """Fit carried frames plus new ``material`` into ``budget`` frames, the seed way.

    The first carried frame (or, with none carried, the first new page) is pinned. New pages are
    framed oldest first while slots remain (evicting the oldest unpinned carried frames to make
    room); the pages that still do not fit form the text tail, capped at two frame capacities
    of ``shape`` with its middle elided.
    """
    if budget < 1:
        raise ValueError(f"frame budget must be at least 1, got {budget}")
    pages = source_pages(material, shape) if material else []
    pinned_present = bool(carried_sources)
    slots = budget - (1 if pinned_present else 0)
    n_new = min(len(pages), slots)
    framed = pages[:n_new]
    rest = "".join(p.source for p in pages[n_new:])
    if pages:
        # Text past the last page holding a glyph (only dim toggles) stays with the tail.
        covered = sum(len(p.source) for p in pages)
        rest += material[covered:]
    else:
        rest = material
    old_slots = max(0, budget - n_new - (1 if pinned_present else 0))
    unpinned = list(range(1, len(carried_sources)))
    kept_unpinned = unpinned[max(0, len(unpinned) - old_slots):] if old_slots > 0 else []
    evicted = tuple(i for i in unpinned if i not in set(kept_unpinned))
    kept = ((0,) if pinned_present else ()) + tuple(kept_unpinned)
    dropped = sum(visible_len(carried_sources[i]) for i in evicted)
    tail, tail_dropped = elide_middle(rest, 2 * geometry(shape).capacity)
    before_tail = "".join(carried_sources) + "".join(p.source for p in framed)
    if tail and dim_open_after(before_tail) and not tail.startswith(DIM_ON):
        tail = DIM_ON + tail
    return PinnedLayout(kept, evicted, tuple(framed), tail, dropped + tail_dropped)
