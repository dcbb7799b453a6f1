"""Archive tests: foveated parity with the reference, the seed's pinned policy, history blocks,
the reading guide's structure, rejection, and property tests over random multi-round sessions.

Reference outputs come from ``tests/golden/archive/make_golden.py`` (``sc.compact`` of npm
@oh-my-pi/snapcompact 18.2.11 run over the same inputs).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
from functools import cache, lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from locations import GOLDEN
from PIL import Image

from snapcompact.archive import (
    Archive,
    ArchiveFrame,
    CompactionRejected,
    FileOperations,
    LazyFrameData,
    archive_source_text,
    compact,
    elide_middle,
    get_preserved_archive,
    history_blocks,
    serialize_conversation,
    strip_preserved_archive,
    visible_len,
)
from snapcompact.core import DIM_OFF, DIM_ON, NEWLINE_GLYPH, geometry, get_shape
from snapcompact.text import normalize

GOLDEN = GOLDEN / "archive" / "reference.json.gz"


@lru_cache(maxsize=1)
def golden() -> dict:
    return json.loads(gzip.decompress(GOLDEN.read_bytes()))


def _ops(raw: dict | None) -> FileOperations:
    raw = raw or {}
    return FileOperations(frozenset(raw.get("read", ())), frozenset(raw.get("written", ())),
                          frozenset(raw.get("edited", ())))


def _pixels(data: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))


@cache
def _run_scenario(index: int) -> tuple:
    """Our foveated compaction of one reference scenario, round by round."""
    scenario = golden()["inputs"]["scenarios"][index]
    prev = None
    results = []
    for rnd in scenario["rounds"]:
        opts = {**scenario["options"], **rnd.get("options", {})}
        previous = {**(prev or {}), **rnd["previousPreserveData"]} if rnd.get("previousPreserveData") else prev
        res = compact(rnd["messages"], shape=scenario["variant"], api=scenario["api"],
                      frame_size=scenario.get("frameSize"), policy="foveated", max_frames=opts.get("maxFrames"),
                      previous=previous, previous_summary=rnd.get("previousSummary"),
                      serialize_options={k: v for k, v in opts.items() if k != "maxFrames"},
                      file_ops=_ops(rnd.get("fileOps")), first_kept_entry_id="kept-1")
        results.append(res)
        prev = res.preserve_data
    return tuple(results)


ROUNDS = [(i, r, s["name"]) for i, s in enumerate(golden()["inputs"]["scenarios"]) for r in range(len(s["rounds"]))]
ROUND_IDS = [f"{name}-r{r}" for _, r, name in ROUNDS]


def _without_data(blocks: list[dict]) -> list[dict]:
    return [{k: ("<img>" if k == "data" else v) for k, v in b.items()} for b in blocks]


# ---------------------------------------------------------------------------------------------
# Foveated policy vs the reference


@pytest.mark.parametrize(("scenario", "rnd", "name"), ROUNDS, ids=ROUND_IDS)
def test_foveated_matches_reference(scenario: int, rnd: int, name: str) -> None:
    ref = golden()["outputs"]["scenarios"][scenario]["rounds"][rnd]
    ours = _run_scenario(scenario)[rnd]
    ref_archive = ref["result"]["preserveData"]["snapcompact"]
    our_archive = ours.preserve_data["snapcompact"]
    for key in ("totalChars", "truncatedChars", "text", "textHead", "textTail"):
        assert our_archive.get(key) == ref_archive.get(key), key
    assert set(ours.preserve_data) == set(ref["result"]["preserveData"])
    assert len(our_archive["frames"]) == len(ref_archive["frames"])
    for a, b in zip(our_archive["frames"], ref_archive["frames"]):
        assert {k: v for k, v in a.items() if k != "data"} == {k: v for k, v in b.items() if k != "data"}
        assert np.array_equal(_pixels(a["data"]), _pixels(b["data"]))
    assert ours.short_summary == ref["result"]["shortSummary"]
    assert ours.details.to_json() == ref["result"]["details"]
    assert _without_data(history_blocks(ours.archive)) == _without_data(ref["historyBlocks"] or [])


_REF_GRID = re.compile(r"one grid (.+?) characters wide, up to (\d+) rows")
_REF_DOC = re.compile(r"each (.+?) characters wide, up to (\d+) rows")
_OUR_GRID = re.compile(r"one grid (.+?) characters wide and at most (\d+) rows")
_OUR_DOC = re.compile(r"each (.+?) characters wide and at most (\d+) rows")


def _files_section(summary: str) -> str | None:
    m = re.search(r"\nFILES\n={19}\n(.*?)\n\nHISTORY\n", summary, re.DOTALL)
    return m.group(1) if m else None


@pytest.mark.parametrize(("scenario", "rnd", "name"), ROUNDS, ids=ROUND_IDS)
def test_reading_guide_structure_matches_reference(scenario: int, rnd: int, name: str) -> None:
    ref = golden()["outputs"]["scenarios"][scenario]["rounds"][rnd]["result"]["summary"]
    ours = _run_scenario(scenario)[rnd]
    if ref == "No prior history.":
        assert ours.summary == ref
        return
    assert ours.summary.endswith("HISTORY\n" + "=" * 19)
    for marker in ("`¶user:`", "`¶ai:`", "`¶call:", "<out>"):
        assert marker in ours.summary
    assert ("`¶think:`" in ours.summary) == ("`¶think:`" in ref)
    ref_files, our_files = _files_section(ref), _files_section(ours.summary)
    assert (ref_files is None) == (our_files is None)
    if ref_files is not None and "elided" not in ref_files:
        assert our_files == ref_files
    for ref_re, our_re in ((_REF_GRID, _OUR_GRID), (_REF_DOC, _OUR_DOC)):
        r, o = ref_re.search(ref), our_re.search(ours.summary)
        assert (r is None) == (o is None)
        if r and o:
            assert o.group(1) == r.group(1)
            if len({f.rows for f in ours.archive.frames}) == 1:
                assert o.group(2) == r.group(2)
    ref_trunc = re.search(r"About (\d+) characters", ref)
    our_trunc = re.search(r"About (\d+) characters", ours.summary)
    assert (ref_trunc and ref_trunc.group(1)) == (our_trunc and our_trunc.group(1))
    assert ("condensed digest" in ref) == ("condensed digest" in ours.summary)
    assert ("six colors" in ref) == ("colour changes" in ours.summary)
    assert ("dim gray" in ref) == ("light gray" in ours.summary)
    assert ("printed twice" in ref) == ("printed twice" in ours.summary)


def test_more_than_twenty_files_use_the_seed_overflow_line() -> None:
    ref = golden()["outputs"]["scenarios"][4]["rounds"][1]["result"]["summary"]
    ours = _run_scenario(4)[1].summary
    ref_lines, our_lines = _files_section(ref).split("\n"), _files_section(ours).split("\n")
    assert our_lines[:-1] == ref_lines[:-1]
    n = re.fullmatch(r"\[…(\d+) files elided…\]", ref_lines[-1]).group(1)
    assert our_lines[-1] == f"… ({n} more files omitted)"


# ---------------------------------------------------------------------------------------------
# Persisted model helpers vs the reference


def test_get_preserved_archive_matches_reference() -> None:
    for raw, expected in zip(golden()["inputs"]["malformed"], golden()["outputs"]["malformed"]):
        got = get_preserved_archive(raw)
        assert (got.to_json() if got else None) == expected, raw


@pytest.mark.parametrize("case", range(6))
def test_history_blocks_budgets_match_reference(case: int) -> None:
    entry = golden()["outputs"]["blocks"][case]
    if "archive" in entry:
        archive = Archive.from_json(entry["archive"])
        assert history_blocks(archive) == entry["blocks"]
        return
    archive = get_preserved_archive(golden()["outputs"]["scenarios"][0]["rounds"][0]["result"]["preserveData"])
    drop = {archive.frames[i].data for i in entry["dropFrames"]}

    def resolver(data: str) -> LazyFrameData | None:
        return None if data in drop else LazyFrameData(len(data), lambda: data)

    got = history_blocks(archive, max_frame_data_bytes=entry["maxFrameDataBytes"],
                         resolve_frame_data=resolver if entry["dropFrames"] else None)
    assert got == entry["blocks"]


def test_history_blocks_image_count_budget_keeps_newest() -> None:
    archive = get_preserved_archive(golden()["outputs"]["scenarios"][0]["rounds"][0]["result"]["preserveData"])
    blocks = history_blocks(archive, max_images=2)
    kinds = [b["type"] for b in blocks]
    assert kinds.count("image") == 2
    assert [b["data"] for b in blocks if b["type"] == "image"] == [f.data for f in archive.frames[-2:]]
    assert "5 archived image frames could not be included." in blocks[1]["text"]


def test_strip_preserved_archive() -> None:
    assert strip_preserved_archive(None) is None
    assert strip_preserved_archive({"other": 1}) == {"other": 1}
    assert strip_preserved_archive({"snapcompact": {}, "other": 1}) == {"other": 1}
    assert strip_preserved_archive({"snapcompact": {}}) is None


def test_archive_round_trips_and_rejects_malformed() -> None:
    for res in _run_scenario(0) + _run_scenario(4):
        raw = res.preserve_data["snapcompact"]
        assert Archive.from_json(raw).to_json() == raw
    with pytest.raises(ValueError, match="neither frames nor text"):
        Archive.from_json({"frames": [], "totalChars": 0, "truncatedChars": 0})
    with pytest.raises(ValueError, match="frame 0: cols"):
        Archive.from_json({"frames": [{"data": "AA", "mimeType": "image/png", "cols": "x", "rows": 1, "chars": 1}]})
    with pytest.raises(ValueError, match="data must be a non-empty string"):
        ArchiveFrame.from_json({"data": "", "mimeType": "image/png", "cols": 1, "rows": 1, "chars": 1})


def test_archive_source_text_is_plain() -> None:
    archive = Archive(text=f"a{NEWLINE_GLYPH}{DIM_ON}b{DIM_OFF}")
    assert archive_source_text(archive) == "a\nb"
    assert archive_source_text(Archive(text_head="h", text_tail="t")) == "h\nt"


# ---------------------------------------------------------------------------------------------
# Pinned policy (seed): worked examples at 8on16-bw / 64 px (8 cols x 4 rows = 32 chars a frame)

SMALL = "8on16-bw"
CAP = 32


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_pinned_frames_everything_within_budget() -> None:
    text = "a" * 94  # "¶user:" + 94 = 100 chars: 4 pages
    res = compact(_user(text), shape=SMALL, frame_size=64, provider="anthropic")
    assert [f.chars for f in res.archive.frames] == [32, 32, 32, 4]
    assert res.archive.text_tail is None and res.archive.text_head is None
    assert res.archive.total_chars == 100 and res.archive.truncated_chars == 0
    assert [f.source_chars for f in res.archive.frames] == [32, 32, 32, 4]


def test_pinned_overflow_becomes_an_elided_text_tail() -> None:
    text = "b" * 194  # 200 chars = 7 pages; budget 3 frames, 104 chars left as tail
    res = compact(_user(text), shape=SMALL, frame_size=64, provider="anthropic", max_frames=3)
    archive = res.archive
    assert len(archive.frames) == 3
    tail = archive.text_tail
    assert visible_len(tail) <= 2 * CAP
    elided = re.search(r"\[\.\.\.(\d+)ch elided\.\.\.\]", tail)
    kept_tail = len(tail) - len(elided.group(0)) - 2
    assert kept_tail + int(elided.group(1)) == 200 - 96
    assert archive.truncated_chars == int(elided.group(1)) - (len(elided.group(0)) + 2)
    assert archive.total_chars + archive.truncated_chars == 200


def test_pinned_keeps_first_frame_and_evicts_oldest_unpinned() -> None:
    first = compact(_user("H" * 26 + "x" * 64), shape=SMALL, frame_size=64, provider="anthropic", max_frames=4)
    assert len(first.archive.frames) == 3  # 96 chars
    second = compact(_user("y" * 58), shape=SMALL, frame_size=64, provider="anthropic", max_frames=4,
                     previous=first.preserve_data)
    frames1, frames2 = first.archive.frames, second.archive.frames
    assert len(frames2) == 4
    # Pinned head kept; the oldest unpinned frame (frames1[1]) evicted; the newest carried kept.
    assert frames2[0] == frames1[0]
    assert frames2[1] == frames1[2]
    assert second.archive.text.startswith("\u00b6user:" + "H" * 26)
    assert second.accounting.dropped == 32
    assert second.archive.truncated_chars == 32
    assert second.archive.total_chars + second.archive.truncated_chars == 96 + 64


def test_pinned_tail_is_folded_into_frames_next_time() -> None:
    first = compact(_user("t" * 194), shape=SMALL, frame_size=64, provider="anthropic", max_frames=6)
    assert len(first.archive.frames) == 6 and first.archive.text_tail == "t" * 8
    second = compact(_user("u" * 10), shape=SMALL, frame_size=64, provider="anthropic", max_frames=8,
                     previous=first.preserve_data)
    assert second.archive.text_tail is None
    assert second.archive.frames[:6] == first.archive.frames
    assert second.archive.frames[6].chars == 8 + 1 + 16
    assert second.archive.text.endswith("t" * 8 + NEWLINE_GLYPH + "\u00b6user:" + "u" * 10)
    assert second.accounting.joiner == 1


def test_pinned_budget_follows_the_provider() -> None:
    text = "p" * 400
    assert len(compact(_user(text), shape=SMALL, frame_size=64, provider="openrouter").archive.frames) == 8
    assert len(compact(_user(text), shape=SMALL, frame_size=64, provider="groq").archive.frames) == 5
    assert len(compact(_user(text), shape=SMALL, frame_size=64, provider="anthropic").archive.frames) == 8


def test_previous_text_summary_is_filmed_at_the_head() -> None:
    res = compact(_user("now"), shape=SMALL, frame_size=64, provider="anthropic",
                  previous_summary="We fixed the parser.")
    assert res.archive.text.startswith("[Summary of earlier history] We fixed the parser. [Recent conversation] ")
    assert "condensed digest" in res.summary
    again = compact(_user("later"), shape=SMALL, frame_size=64, provider="anthropic",
                    previous=res.preserve_data, previous_summary="ignored")
    assert again.archive.frames[0] == res.archive.frames[0]
    assert "condensed digest" not in again.summary


def test_preserve_data_drops_provider_compaction_keys_only() -> None:
    res = compact(_user("x"), shape=SMALL, frame_size=64,
                  previous={"openaiRemoteCompaction": 1, "anthropicCompaction": 2, "keep": 3})
    assert set(res.preserve_data) == {"keep", "snapcompact"}


def test_foreign_archive_is_unfolded_by_the_pinned_policy() -> None:
    fov = _run_scenario(0)[0]
    res = compact(_user("next"), shape=SMALL, frame_size=64, provider="anthropic", previous=fov.preserve_data)
    prev_text = fov.preserve_data["snapcompact"]["text"]
    assert res.accounting.carried == visible_len(prev_text)
    assert res.accounting.kept + res.accounting.dropped == res.accounting.input
    assert res.archive.text.startswith(prev_text[:CAP])


def test_rejects_a_compaction_that_does_not_shrink_the_context() -> None:
    small = _user("tiny request")
    with pytest.raises(CompactionRejected) as err:
        compact(small, shape="11on16-bw", api="anthropic-messages", tokens_before=200)
    assert "would not shrink" in err.value.reason
    assert err.value.result.projected_tokens >= 200
    big = _user("w " * 40_000)
    ok = compact(big, shape="11on16-bw", api="anthropic-messages", tokens_before=21_000, kept_tokens=1_000)
    n = len(ok.archive.frames)
    assert ok.frame_token_estimate == 3293
    assert ok.projected_tokens >= 1_000 + n * 3293
    assert ok.projected_tokens < 21_000


def test_elide_middle_accounting() -> None:
    text = "x" * 50 + DIM_ON + "y" * 100 + DIM_OFF + "z" * 50
    kept, net = elide_middle(text, 60)
    assert visible_len(kept) <= 60
    assert visible_len(kept) + net == visible_len(text)
    assert kept.startswith("x") and kept.endswith("z" * 10)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="unknown archive policy"):
        compact([], policy="lru")
    with pytest.raises(ValueError, match="max_frames"):
        compact([], max_frames=0)
    with pytest.raises(ValueError, match="previous"):
        compact([], previous="nope")
    # 8on16 cells are 16 px tall: a 12 px frame holds no row.
    with pytest.raises(ValueError, match="frame size 12 px is too small for shape '8on16-bw'"):
        compact([{"role": "user", "content": "hello"}], shape="8on16-bw", frame_size=12)


# ---------------------------------------------------------------------------------------------
# Property tests: random multi-round sessions

ALPHABET = "abcdefgh ijk lmn opq\n.!?,:()你好"
SHAPES = ("11on16-bw", "8on16-bw", "8on22-bw", "doc-8on16-bw", "8x8r-bw")
GRID_SHAPES = ("11on16-bw", "8on16-bw", "8on22-bw", "8x8r-bw")


@st.composite
def messages(draw: st.DrawFn) -> list[dict]:
    out: list[dict] = []
    for i in range(draw(st.integers(0, 3))):
        out.append({"role": "user", "content": draw(st.text(ALPHABET, max_size=160))})
        blocks = [{"type": "text", "text": draw(st.text(ALPHABET, max_size=160))}]
        with_call = draw(st.booleans())
        if with_call:
            blocks.append({"type": "toolCall", "id": f"c{i}", "name": "bash",
                           "arguments": {"command": draw(st.text(ALPHABET, max_size=30))}})
        out.append({"role": "assistant", "content": blocks})
        if with_call:
            out.append({"role": "toolResult", "toolCallId": f"c{i}", "toolName": "bash",
                        "content": [{"type": "text", "text": draw(st.text(ALPHABET, max_size=300))}],
                        "isError": False})
    return out


def _new_text(msgs: list[dict], font: str) -> str:
    return normalize(serialize_conversation(msgs), font)


session = st.lists(messages(), min_size=1, max_size=4)
PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(rounds=session, variant=st.sampled_from(SHAPES), size=st.sampled_from([64, 96, 128, 160]),
       budget=st.integers(1, 8))
def test_pinned_policy_invariants(rounds: list[list[dict]], variant: str, size: int, budget: int) -> None:
    shape = get_shape(variant, size)
    cap = geometry(shape).capacity
    prev = None
    pinned: ArchiveFrame | None = None
    admitted = 0
    for msgs in rounds:
        res = compact(msgs, shape=variant, frame_size=size, provider="anthropic", max_frames=budget,
                      previous=prev, workers=1)
        a = res.archive
        new = visible_len(_new_text(msgs, shape.font))
        prev_archive = get_preserved_archive(prev)
        prev_text = (prev_archive.text or "") if prev_archive else ""
        prev_tail = (prev_archive.text_tail or "") if prev_archive else ""
        joiner = 1 if prev_tail and new else 0
        admitted += new + joiner
        # Budget, pinned head, tail cap.
        assert len(a.frames) <= budget
        if pinned is not None:
            assert a.frames[0] == pinned
        elif a.frames:
            pinned = a.frames[0]
        assert visible_len(a.text_tail or "") <= 2 * cap
        # Carried frames: pinned + the newest carried ones, unchanged and in order.
        if prev_archive and prev_archive.frames:
            k = len(a.frames) - res.rendered_frames
            assert k >= 1
            assert list(a.frames[:k]) == [prev_archive.frames[0]] + (list(prev_archive.frames[-(k - 1):]) if k > 1 else [])
        # Text = frame sources + tail.
        assert sum(f.source_chars for f in a.frames) + len(a.text_tail or "") == len(a.text or "")
        # Exact accounting.
        acct = res.accounting
        assert acct.input == visible_len(prev_text) + joiner + new
        assert acct.kept == visible_len(a.text or "") == a.total_chars
        assert acct.kept + acct.dropped == acct.input
        assert a.total_chars + a.truncated_chars == admitted
        prev = res.preserve_data


@PROPS
@given(rounds=session, variant=st.sampled_from(SHAPES), size=st.sampled_from([64, 96, 128, 160]),
       max_frames=st.integers(1, 9))
def test_foveated_policy_invariants(rounds: list[list[dict]], variant: str, size: int, max_frames: int) -> None:
    shape = get_shape(variant, size)
    cap = geometry(shape).capacity
    prev = None
    first_head: str | None = None
    for msgs in rounds:
        res = compact(msgs, shape=variant, frame_size=size, policy="foveated", max_frames=max_frames,
                      previous=prev, workers=1)
        a = res.archive
        new_text = _new_text(msgs, shape.font)
        prev_archive = get_preserved_archive(prev)
        prev_text = (prev_archive.text or "") if prev_archive else ""
        material = f"{prev_text}{NEWLINE_GLYPH}{new_text}" if prev_text and new_text else prev_text or new_text
        assert len(a.frames) <= max_frames
        assert visible_len(a.text_tail or "") <= cap <= 2 * cap
        text = a.text or ""
        if first_head is None and material:
            first_head = material[:cap]
        if first_head is not None:
            assert text.startswith(first_head)
        acct = res.accounting
        joiner = 1 if prev_text and new_text else 0
        assert acct.input == visible_len(prev_text) + joiner + visible_len(new_text)
        assert acct.kept + acct.dropped == acct.input
        if variant in GRID_SHAPES:
            # Kept text = the material minus one contiguous slice (the oldest dense pages);
            # compared without dim toggles, since the tail may gain a re-opening DIM_ON.
            plain_text = text.replace(DIM_ON, "").replace(DIM_OFF, "")
            plain_material = material.replace(DIM_ON, "").replace(DIM_OFF, "")
            dropped = len(plain_material) - len(plain_text)
            assert dropped == acct.dropped
            cut = next((i for i in range(len(plain_text)) if plain_text[i] != plain_material[i]), len(plain_text))
            assert plain_text[cut:] == plain_material[cut + dropped:]
            # The reference's counter also counts the toggles inside the dropped slice.
            prev_trunc = prev_archive.truncated_chars if prev_archive else 0
            toggles = len(material) - len(plain_material)
            assert dropped <= a.truncated_chars - prev_trunc <= dropped + toggles
        prev = res.preserve_data


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=session, policy=st.sampled_from(["pinned", "foveated"]), variant=st.sampled_from(SHAPES),
       budget=st.integers(1, 8))
def test_output_is_deterministic(rounds: list[list[dict]], policy: str, variant: str, budget: int) -> None:
    def run() -> list[bytes]:
        prev, out = None, []
        for msgs in rounds:
            res = compact(msgs, shape=variant, frame_size=96, provider="anthropic", policy=policy,
                          max_frames=budget, previous=prev)
            out.append(json.dumps([res.summary, res.preserve_data], sort_keys=True).encode())
            prev = res.preserve_data
        return out

    assert run() == run()


def test_history_blocks_pin_first_keeps_the_session_head_under_budgets() -> None:
    from snapcompact.archive import Archive, ArchiveFrame, history_blocks

    frames = tuple(
        ArchiveFrame(data=f"{'A' * 100}{i}", mime_type="image/png", cols=10, rows=10, chars=100)
        for i in range(5)
    )
    archive = Archive(frames=frames, total_chars=500, truncated_chars=0)
    images = lambda blocks: [b["data"][-1] for b in blocks if b["type"] == "image"]  # noqa: E731
    # Reference order prices newest first: the head frame is the first to go.
    assert images(history_blocks(archive, max_images=2)) == ["3", "4"]
    # Pinned: the head frame is kept, then the newest that still fit, in chronological order.
    assert images(history_blocks(archive, max_images=2, pin_first=True)) == ["0", "4"]
    assert images(history_blocks(archive, max_frame_data_bytes=3 * 101, pin_first=True)) == ["0", "3", "4"]
    gaps = [b["text"] for b in history_blocks(archive, max_images=2, pin_first=True) if b["type"] == "text"]
    assert any("3 archived image frame" in g for g in gaps)
