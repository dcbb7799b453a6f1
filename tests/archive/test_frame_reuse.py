"""Carrying unchanged frames forward (foveated policy): the result must be exactly a fresh one.

The independent expectation is a from-scratch compaction of the same input: the same previous
preserve data compacted again with the page ledger emptied, so every frame is drawn. A
compaction that carries frames forward must equal it byte for byte (frame data included), in
every shape variant, in both foveated regimes (all pages high quality, and the HQ/dense split
when the pages outnumber the frame cap), and must never carry a frame whose bytes it cannot
vouch for.
"""

from __future__ import annotations

import json
import random

import pytest

from snapcompact.archive import compact, get_preserved_archive
from snapcompact.archive.frame_reuse import LEDGER, DrawnPage, PageLedger, page_key
from snapcompact.core import SHAPE_NAMES, get_shape

WORDS = ("the archive keeps every turn as pixels while a reader model looks back at old "
         "tool output and decides what to do next def return value None self path file "
         "naïve café über 漢字 かな 한국어 emoji 🙂 done").split()
FRAME_SIZE = 256


def _turns(seed: int, n_pairs: int) -> list[dict]:
    rng = random.Random(seed)
    msgs: list[dict] = []
    for i in range(n_pairs):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120)))
        msgs.append({"role": "user", "content": f"question {seed}.{i}: {text[:200]}"})
        cid = f"c{seed}_{i}"
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": text},
            {"type": "toolCall", "id": cid, "name": "read", "arguments": {"path": f"src/{i}.py"}}]})
        msgs.append({"role": "toolResult", "toolCallId": cid, "toolName": "read",
                     "content": [{"type": "text", "text": text[::-1]}], "isError": False})
    return msgs


def _rounds(variant: str, max_frames: int | None, pairs: int = 12) -> tuple[dict, dict, dict]:
    """(second compaction carrying frames, the same drawn from scratch, its previous data)."""
    kw = {"shape": variant, "frame_size": FRAME_SIZE, "policy": "foveated",
          "max_frames": max_frames, "workers": 1}
    first = compact(_turns(1, pairs), **kw)
    # Through JSON, as a stored session reloads it: the link is the bytes, not the objects.
    previous = json.loads(json.dumps(first.preserve_data))
    carried = compact(_turns(2, 4), previous=previous, **kw)
    LEDGER.clear()
    fresh = compact(_turns(2, 4), previous=previous, **kw)
    return carried.to_json() | {"rendered": carried.rendered_frames}, \
        fresh.to_json() | {"rendered": fresh.rendered_frames}, previous


@pytest.mark.parametrize("variant", SHAPE_NAMES)
@pytest.mark.parametrize("max_frames", [None, 6], ids=["cap-80", "cap-6"])
def test_carried_compaction_equals_fresh(variant: str, max_frames: int | None) -> None:
    carried, fresh, previous = _rounds(variant, max_frames)
    n_frames = len(fresh["preserveData"]["snapcompact"]["frames"])
    assert n_frames > 1
    # The fresh run drew every frame; the carried one fewer, and nothing else differs.
    assert fresh.pop("rendered") == n_frames
    drawn = carried.pop("rendered")
    assert json.dumps(carried, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    if max_frames is None:
        # Under the cap every page is high quality and pages are cut from the front, so the
        # previous frames recur, except the last (the old end of the text, now continued).
        assert drawn <= n_frames - len(previous["snapcompact"]["frames"]) + 1


def test_over_the_cap_most_frames_still_recur() -> None:
    # 30 turn pairs give more pages than the 80-frame cap: a dense middle with dropped pages,
    # re-split at every compaction; the high-quality edges and most dense pages still recur.
    carried, fresh, previous = _rounds("11on16-bw", None, pairs=30)
    drawn = carried.pop("rendered")
    fresh.pop("rendered")
    assert json.dumps(carried, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    n_prev = len(previous["snapcompact"]["frames"])
    assert n_prev > 60
    assert drawn < len(fresh["preserveData"]["snapcompact"]["frames"]) - n_prev // 2


def test_frame_with_other_bytes_is_drawn_again() -> None:
    kw = {"shape": "8on16-bw", "frame_size": FRAME_SIZE, "policy": "foveated", "workers": 1}
    first = compact(_turns(3, 30), **kw)
    previous = json.loads(json.dumps(first.preserve_data))
    honest = compact(_turns(4, 3), previous=previous, **kw)
    # Damage the stored bytes of the first frame (a stale encoder, a corrupted store): the
    # ledger's digest no longer matches, so that page must be drawn, not carried.
    previous["snapcompact"]["frames"][0]["data"] = previous["snapcompact"]["frames"][1]["data"]
    damaged = compact(_turns(4, 3), previous=previous, **kw)
    assert damaged.rendered_frames == honest.rendered_frames + 1
    assert [f.data for f in damaged.archive.frames] == [f.data for f in honest.archive.frames]


def test_archive_without_ledger_entries_is_drawn_in_full() -> None:
    kw = {"shape": "8x13-bw", "frame_size": FRAME_SIZE, "policy": "foveated", "workers": 1}
    first = compact(_turns(5, 30), **kw)
    LEDGER.clear()  # another process made it (or the reference): nothing is known
    second = compact(_turns(6, 3), previous=first.preserve_data, **kw)
    assert second.rendered_frames == len(second.archive.frames)
    assert get_preserved_archive(second.preserve_data) == second.archive


def test_pinned_policy_draws_only_new_pages() -> None:
    kw = {"shape": "8on16-bw", "frame_size": FRAME_SIZE, "policy": "pinned", "max_frames": 8,
          "workers": 1}
    first = compact(_turns(7, 30), **kw)
    second = compact(_turns(8, 3), previous=first.preserve_data, **kw)
    kept = [f for f in second.archive.frames if f in first.archive.frames]
    assert second.rendered_frames == len(second.archive.frames) - len(kept)


def test_page_key_separates_text_and_shape() -> None:
    small, large = get_shape("8on16-bw", 256), get_shape("8on16-bw", 512)
    keys = {page_key("abc", small), page_key("abd", small), page_key("abc", large),
            page_key("abc", get_shape("8on16-bw", 256).at_size(256))}
    assert len(keys) == 3


def test_ledger_forgets_least_recently_used() -> None:
    ledger = PageLedger(max_pages=2)
    pages = [DrawnPage(bytes([i]) * 32, 1, 1, i) for i in range(3)]
    ledger.record(b"a", pages[0])
    ledger.record(b"b", pages[1])
    assert ledger.lookup(b"a") == pages[0]  # now the most recent
    ledger.record(b"c", pages[2])
    assert ledger.lookup(b"b") is None
    assert (ledger.lookup(b"a"), ledger.lookup(b"c"), len(ledger)) == (pages[0], pages[2], 2)
    with pytest.raises(ValueError, match="max_pages must be at least 1"):
        PageLedger(max_pages=0)
