"""The stable prefix, by its definition (docs: the analysis's next-turns column).

A compaction rewrites the prompt-cache prefix from its first changed block on. What survives at
the head of the final context is "the summary text when unchanged, then the leading history
blocks both archives share, in order"; with no compaction the whole context is stable, after
the first compaction none of it is (it replaced the raw conversation). Each case below builds a
branch whose answer follows from that sentence alone.
"""

from __future__ import annotations

from snapcompact.archive import PRESERVE_KEY, Archive, ArchiveFrame, history_blocks
from snapcompact.billing import RequestBill, bill_image, stable_prefix_of
from snapcompact.compaction import CompactionEntry
from snapcompact.pricing import count_text_tokens

MODEL = "claude-sonnet-4-5"
SUMMARY = "The user asked for a parser; the archive below holds the earlier turns."
HEAD = "[session head kept as text]"
#: claude-sonnet-4-5 sees a 1568 px frame at 1092 px: ceil(1092/28)^2 = 39*39 = 1,521 tokens
#: (Anthropic's vision docs; the agent's frameCharge note); a 1568x392 strip far fewer.
FULL, STRIP = (1568, 1568), (1568, 392)


def _frame(data: str) -> ArchiveFrame:
    return ArchiveFrame(data=data, mime_type="image/png", cols=80, rows=40, chars=3200)


def _compaction(n: int, summary: str, frames: tuple[str, ...] | None) -> CompactionEntry:
    preserve = None
    if frames is not None:
        archive = Archive(frames=tuple(_frame(d) for d in frames), total_chars=9_600,
                          text_head=HEAD)
        preserve = {PRESERVE_KEY: archive.to_json()}
    return CompactionEntry(id=f"c{n}", parent_id=None, timestamp="2026-12-01T00:00:00Z",
                           summary=summary, first_kept_entry_id=f"m{n}", tokens_before=100_000,
                           preserve_data=preserve)


def _bill(sizes: list[tuple[int, int]]) -> RequestBill:
    images = tuple(bill_image(MODEL, w, h) for w, h in sizes)
    return RequestBill(text_tokens=20_000, text_token_method="test", images=images,
                       image_tokens=sum(b.tokens for b in images), text_chars=80_000)


CHAT = [{"role": "user", "content": [{"type": "text", "text": SUMMARY},
                                     {"type": "image_url", "image_url": {"url": "x"}}]}]


def test_no_compaction_keeps_the_whole_context_stable():
    bill = _bill([FULL])
    assert stable_prefix_of([], CHAT, bill, MODEL) == 20_000 + 1_521


def test_the_first_compaction_rewrites_everything():
    branch = [_compaction(1, SUMMARY, ("AAAA", "BBBB"))]
    assert stable_prefix_of(branch, CHAT, _bill([FULL, FULL]), MODEL) == 0


def test_a_changed_summary_rewrites_everything():
    branch = [_compaction(1, SUMMARY, ("AAAA",)), _compaction(2, SUMMARY + " More.", ("AAAA",))]
    assert stable_prefix_of(branch, CHAT, _bill([FULL]), MODEL) == 0


def test_summary_then_the_shared_head_text_and_leading_frames_stay_stable():
    # the second archive carries the first two frames forward, then a new third one
    branch = [_compaction(1, SUMMARY, ("AAAA", "BBBB", "CCCC")),
              _compaction(2, SUMMARY, ("AAAA", "BBBB", "DDDD", "EEEE"))]
    bill = _bill([FULL, STRIP, FULL, FULL])
    # the archive's first block is its head text as the reference lays it out (head, then the
    # divider before the imaged middle): unchanged, so it stays in the prefix
    head_block = history_blocks(Archive(text_head=HEAD, frames=(_frame("AAAA"),)))[0]
    assert head_block["type"] == "text" and head_block["text"].startswith(HEAD)
    expected_text = count_text_tokens(SUMMARY + "\n" + head_block["text"], MODEL).tokens
    expected_images = 1_521 + bill_image(MODEL, *STRIP).tokens  # the two carried frames
    assert bill.images[0].tokens == 1_521
    assert stable_prefix_of(branch, CHAT, bill, MODEL) == expected_text + expected_images


def test_summaries_without_archives_keep_only_the_summary_text():
    branch = [_compaction(1, SUMMARY, None), _compaction(2, SUMMARY, None)]
    assert stable_prefix_of(branch, CHAT, _bill([]), MODEL) == count_text_tokens(SUMMARY,
                                                                                   MODEL).tokens
