"""Tests for the offline reader (evals.readers): OCR, evidence locator, litellm provider.

Frames come from the project's renderer, so the reader is tested on the pixels production
sends. Expectations are independent of the reader's code: gold answers written into the
fixture prose, textbook edit distances, and the documented legibility floor (tesseract reads
the 8x13 layouts and cannot read the 6x6 squeezed layout at native size).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import socket
import subprocess
import sys

import pytest
from locations import FIXTURES
from PIL import Image

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from evals.readers import ocr, provider  # noqa: E402
from evals.readers.answer import (  # noqa: E402
    ABSTENTION,
    answer_from_text,
    answer_from_transcript,
    character_error_rate,
)
from snapcompact.core import NEWLINE_GLYPH  # noqa: E402
from snapcompact.render import render_many  # noqa: E402

pytest.importorskip("tesserocr")

FIXTURE = json.loads((FIXTURES / "readers" / "qa.json").read_text())
HISTORY: str = FIXTURE["history"]
QUESTIONS: list[dict] = FIXTURE["questions"]
LEGIBLE = ["11on16-bw", "8on22-bw", "doc-8on16-bw"]
ILLEGIBLE = ["6x6u-bw"]


@pytest.fixture(scope="module")
def frames() -> dict[str, list]:
    return {shape: render_many(HISTORY, shape) for shape in LEGIBLE + ILLEGIBLE}


@pytest.fixture(scope="module")
def transcripts(frames) -> dict[str, str]:
    return {shape: "".join(ocr.transcribe(f.png, None) for f in fs) for shape, fs in frames.items()}


def _data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _messages(frame_list, question: str) -> list[dict]:
    parts = [{"type": "image_url", "image_url": {"url": _data_url(f.png)}} for f in frame_list]
    return [{"role": "user", "content": [*parts, {"type": "text", "text": question}]}]


# ---------------------------------------------------------------------------------------------
# character error rate


@pytest.mark.parametrize(
    ("reference", "hypothesis", "expected"),
    [
        ("kitten", "sitting", 3 / 6),  # the textbook Levenshtein example: 3 edits
        ("flaw", "lawn", 2 / 4),
        ("same text", "same text", 0.0),
        ("a  b\n\tc", "a b c", 0.0),  # whitespace runs collapse
        (f"one{NEWLINE_GLYPH}two", "one two", 0.0),  # the newline glyph is whitespace
        ("abc", "", 1.0),
        ("", "", 0.0),
        ("", "x", 1.0),
        ("ab", "abxyz", 3 / 2),  # insertions can push it past 1
    ],
)
def test_character_error_rate_known_strings(reference, hypothesis, expected):
    assert character_error_rate(reference, hypothesis) == pytest.approx(expected)


# ---------------------------------------------------------------------------------------------
# the evidence locator, on text


@pytest.mark.parametrize("item", QUESTIONS, ids=lambda q: q["answers"][-1])
def test_text_baseline_returns_gold_answer(item):
    got = answer_from_text(HISTORY, item["question"], item["evidence"], item["answers"])
    assert got in item["answers"]


def test_locator_returns_the_span_as_read_with_its_errors():
    evidence = QUESTIONS[0]["evidence"]
    # what a noisy reader might produce: a misread letter inside the answer, one outside it,
    # newlines already glyphs, runs of spaces
    noisy = ("The lighthouse keeper kept a ledger." + NEWLINE_GLYPH
             + "The access c0de for the north gate is  7342-KESTRFL, valid until the end of May.")
    assert answer_from_transcript(noisy, "q", evidence, ["7342-KESTREL"]) == "7342-KESTRFL"


def test_locator_survives_inserted_and_dropped_characters():
    evidence = QUESTIONS[3]["evidence"]
    noisy = "His assistant, a yung man named Tobias  Wren,, repaired the lamp mechanism twice that"
    assert answer_from_transcript(noisy, "q", evidence, ["Tobias Wren"]) == "Tobias Wren"


def test_locator_abstains_when_evidence_is_missing():
    evidence = QUESTIONS[0]["evidence"]
    assert answer_from_transcript("", "q", evidence, ["7342-KESTREL"]) == ABSTENTION
    unrelated = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 10
    assert answer_from_transcript(unrelated, "q", evidence, ["7342-KESTREL"]) == ABSTENTION


def test_locator_abstains_on_a_sibling_sentence_of_its_template():
    # the evidence is gone (discarded); two lines of the same template with other subjects and
    # values remain, as in a generated session: the told reader must abstain, not copy one
    evidence = "The nightly backup of the harbour office server starts at 18:40 on Tuesday."
    siblings = ("The nightly backup of the north archive server starts at 23:25 on Thursday. "
                "Unrelated tool output follows here. "
                "The nightly backup of the glass studio server starts at 20:40 on Thursday.")
    assert answer_from_transcript(siblings, "q", evidence, ["18:40 on Tuesday"]) == ABSTENTION
    # the sentence itself, read with a few garbled characters (about 5 %), is still found
    garbled = "The nightly backup 0f the harbour offlce server startz at 18:40 on Tuesday."
    assert answer_from_transcript(siblings + " " + garbled, "q", evidence,
                                  ["18:40 on Tuesday"]) == "18:40 on Tuesday"


def test_locator_rejects_bad_input():
    with pytest.raises(ValueError, match="evidence"):
        answer_from_text(HISTORY, "q", "  ", ["x"])
    with pytest.raises(ValueError, match="sequence of strings"):
        answer_from_text(HISTORY, "q", QUESTIONS[0]["evidence"], "7342-KESTREL")
    with pytest.raises(ValueError, match="occurs in the evidence"):
        answer_from_text(HISTORY, "q", QUESTIONS[0]["evidence"], ["Halifax"])


# ---------------------------------------------------------------------------------------------
# OCR on rendered frames: the legibility floor


@pytest.mark.parametrize("shape", LEGIBLE)
def test_ocr_reads_legible_shapes(shape, transcripts):
    assert character_error_rate(HISTORY, transcripts[shape]) < 0.05


@pytest.mark.parametrize("shape", ILLEGIBLE)
def test_ocr_cannot_read_squeezed_shape_at_native_size(shape, transcripts):
    assert character_error_rate(HISTORY, transcripts[shape]) > 0.5


@pytest.mark.parametrize("shape", LEGIBLE)
@pytest.mark.parametrize("item", QUESTIONS, ids=lambda q: q["answers"][-1])
def test_reader_answers_on_legible_frames(shape, item, transcripts):
    """The reply is the gold answer as read: found (no abstention), and off by at most an
    OCR slip (a fast-model misread such as "Tabias" for "Tobias" is honest reading)."""
    got = answer_from_transcript(transcripts[shape], item["question"], item["evidence"],
                                 item["answers"])
    assert got != ABSTENTION
    assert min(character_error_rate(gold, got) for gold in item["answers"]) <= 0.25


@pytest.mark.parametrize("shape", LEGIBLE)
def test_reader_gets_most_answers_exactly_on_legible_frames(shape, transcripts):
    exact = sum(
        answer_from_transcript(transcripts[shape], q["question"], q["evidence"], q["answers"])
        in q["answers"] for q in QUESTIONS)
    assert exact >= len(QUESTIONS) - 1


@pytest.mark.parametrize("shape", ILLEGIBLE)
@pytest.mark.parametrize("item", QUESTIONS, ids=lambda q: q["answers"][-1])
def test_reader_fails_on_illegible_frames(shape, item, transcripts):
    got = answer_from_transcript(transcripts[shape], item["question"], item["evidence"],
                                 item["answers"])
    assert got not in item["answers"]


def test_grid_rows_join_mid_word_and_repeated_rows_drop():
    """Rows of a 10-cell grid at 8 px pitch (text block x = 0..80) holding the stream
    "A lighthouse stands on rocks and reefs.": full rows continue mid-word; a row whose ink
    stops a cell short ended with a blank cell; in a line-repeat frame every row is read once."""
    line = ocr.TextLine
    rows = [
        line("A lighthou", (0, 0, 80, 10)),
        line("se stands", (0, 20, 71, 30)),  # "se stands " : last cell blank
        line("on rocks a", (0, 30, 80, 40)),
        line("nd reefs.", (0, 40, 70, 50)),
    ]
    expected = "A lighthouse stands on rocks and reefs."
    assert ocr.join_grid_lines(rows) == expected
    # line-repeat shapes: each row again on a band below, read with an error or two
    misread = {"A lighthou": "A Iighthou", "on rocks a": "on rooks a"}
    repeated = [copy for row in rows
                for copy in (row, line(misread.get(row.text, row.text), row.box))]
    assert ocr.join_grid_lines(repeated) == expected
    # a row that starts with a blank cell: its ink begins one pitch right of the block's edge
    assert ocr.join_grid_lines([line("abcdefghij", (0, 0, 80, 10)),
                                line("klm", (9, 10, 32, 20))]) == "abcdefghij klm"
    assert ocr.join_grid_lines([]) == ""


def test_provider_resize_is_applied_before_reading(frames):
    """A legible frame shown at a third of its size (what a small image budget would do)
    is no longer legible: the reader sees what the model sees, not the original pixels."""
    frame = frames["11on16-bw"][0]
    seen = (frame.width // 3, frame.height // 3)
    assert ocr.seen_image(frame.png, seen).size == seen
    assert character_error_rate(HISTORY, ocr.transcribe(frame.png, seen)) > 0.5


def test_transcribe_rejects_bad_input():
    with pytest.raises(ValueError, match="png_bytes"):
        ocr.transcribe(b"not a png", None)
    png = io.BytesIO()
    Image.new("L", (40, 20), 255).save(png, format="PNG")
    with pytest.raises(ValueError, match="seen_size"):
        ocr.transcribe(png.getvalue(), (0, 10))
    with pytest.raises(ValueError, match="upscale"):
        ocr.OcrSettings(upscale=0)


def test_transcripts_are_cached_in_memory_and_on_disk(frames, tmp_path, monkeypatch):
    frame = frames["8on22-bw"][0]
    ocr.clear_memory_cache()
    first = ocr.transcribe(frame.png, None, cache_dir=tmp_path)
    assert list(tmp_path.rglob("*.txt")), "nothing written to the disk cache"

    def no_ocr(*args, **kwargs):
        raise AssertionError("OCR ran although the transcript is cached")

    monkeypatch.setattr(ocr, "read_lines", no_ocr)
    assert ocr.transcribe(frame.png, None) == first  # in-process LRU
    ocr.clear_memory_cache()
    assert ocr.transcribe(frame.png, None, cache_dir=tmp_path) == first  # disk
    with pytest.raises(AssertionError, match="OCR ran"):
        ocr.transcribe(frame.png, (frame.width // 2, frame.height // 2))  # other size: a miss


# ---------------------------------------------------------------------------------------------
# the litellm provider, with the network unplugged


@pytest.fixture()
def no_network(monkeypatch):
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


@pytest.fixture(scope="module")
def litellm():
    provider.register()
    provider.register()  # idempotent
    import litellm as module

    return module


def test_register_is_idempotent(litellm):
    entries = [e for e in litellm.custom_provider_map if e["provider"] == provider.PROVIDER]
    assert len(entries) == 1
    for model_id in provider.MODEL_IDS:
        assert litellm.model_cost[model_id]["input_cost_per_token"] == 0.0


def test_completion_through_litellm_offline(litellm, frames, no_network):
    item = QUESTIONS[0]
    meta = provider.reader_metadata(evidence=item["evidence"], answers=item["answers"],
                                    billed_prompt_tokens=1234)
    response = litellm.completion(model="snapocr/ocr-qa",
                                  messages=_messages(frames["11on16-bw"], item["question"]),
                                  metadata=meta)
    assert response.choices[0].message.content in item["answers"]
    assert response.usage.prompt_tokens == 1234
    assert litellm.completion_cost(completion_response=response) == 0.0
    assert no_network == []


def test_acompletion_through_litellm_offline(litellm, frames, no_network):
    async def ask_all():
        calls = [
            litellm.acompletion(
                model="snapocr/ocr-qa",
                messages=_messages(frames[shape], item["question"]),
                metadata=provider.reader_metadata(evidence=item["evidence"],
                                                  answers=item["answers"]))
            for shape in ("11on16-bw", "6x6u-bw") for item in QUESTIONS[:2]
        ]
        return await asyncio.gather(*calls)

    legible_a, legible_b, squeezed_a, squeezed_b = asyncio.run(ask_all())
    assert legible_a.choices[0].message.content in QUESTIONS[0]["answers"]
    assert legible_b.choices[0].message.content in QUESTIONS[1]["answers"]
    assert squeezed_a.choices[0].message.content == ABSTENTION
    assert squeezed_b.choices[0].message.content == ABSTENTION
    assert no_network == []


def test_text_and_transcribe_models(litellm, frames, no_network):
    item = QUESTIONS[2]
    text_messages = [{"role": "user", "content": [{"type": "text", "text": HISTORY},
                                                   {"type": "text", "text": item["question"]}]}]
    response = litellm.completion(model="snapocr/text-qa", messages=text_messages,
                                  metadata=provider.reader_metadata(item["evidence"],
                                                                    item["answers"]))
    assert response.choices[0].message.content in item["answers"]

    frame = frames["8on22-bw"][0]
    seen = [(frame.width, frame.height)]
    response = litellm.completion(model="snapocr/transcribe",
                                  messages=_messages([frame], "Transcribe the image."),
                                  metadata=provider.reader_metadata(seen_sizes=seen))
    assert character_error_rate(HISTORY, response.choices[0].message.content) < 0.05
    assert no_network == []


def test_provider_rejects_requests_it_cannot_answer(litellm, frames, no_network):
    with pytest.raises(Exception, match="evidence"):
        litellm.completion(model="snapocr/ocr-qa",
                           messages=_messages(frames["8on22-bw"], "What?"))
    with pytest.raises(ValueError, match="data:image"):
        provider.parse_request("snapocr/transcribe", [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}], {})
    with pytest.raises(ValueError, match="unknown snapocr model"):
        provider.parse_request("snapocr/gpt", [{"role": "user", "content": "hi"}], {})
    assert no_network == []


def test_importing_the_readers_does_not_import_litellm():
    """litellm costs ~5 s to import; only provider.register() may pay it."""
    code = ("import sys, evals.readers, evals.readers.provider; "
            "assert 'litellm' not in sys.modules, 'litellm imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
