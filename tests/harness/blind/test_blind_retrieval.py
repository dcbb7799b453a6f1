"""The blind reader finds the answer itself: hand-worked transcripts, expected values by hand.

Each expectation below was worked out from the rules in ``evals.blind.retrieval``'s docstring
(segments, BM25, idf-weighted coverage >= 0.6, the words after the last shared word), not by
running the code: a change of rule fails here.
"""

from __future__ import annotations

from evals.blind.provider import question_of, run_blind
from evals.blind.retrieval import ABSTENTION, answer_blind, extract, segments
from evals.items.probes import is_confabulation
from evals.items.prompts import question_text
from evals.pipeline.probe_grading import grade
from snapcompact.core import NEWLINE_GLYPH

# Five lines, as OCR reads a frame: the frames' newline glyph between them.
TRANSCRIPT = NEWLINE_GLYPH.join([
    "The access code for the north archive is 7342-KESTREL.",
    "Some prose about modules, functions and the code they share.",
    "The parcel for Amara Okafor left the depot with tracking number KX7-20481.",
    "The nightly backup of the cold store server now starts at 02:30 on Monday.",
    "The spare key to the boat house is kept in locker B-123.",
])


def test_the_newline_glyph_and_sentence_ends_cut_segments():
    assert segments(f"one two. three{NEWLINE_GLYPH}four") == ["one two.", "three", "four"]


def test_bm25_finds_the_line_and_the_value_after_the_last_shared_word():
    # "tracking number" appears once: the parcel line; the words after "number" are the answer
    found = answer_blind(TRANSCRIPT, "What is the tracking number of the parcel for Amara Okafor?")
    assert found.segment == ("The parcel for Amara Okafor left the depot with tracking number "
                             "KX7-20481.")
    assert found.answer == "KX7-20481"
    assert found.coverage == 1.0
    # "is" after "archive" is a function word and the trailing "." goes
    assert answer_blind(TRANSCRIPT, "What is the access code for the north archive?"
                        ).answer == "7342-KESTREL"
    # "starts" shares the stem of "start"; "at" is dropped
    assert answer_blind(TRANSCRIPT, "When does the nightly backup of the cold store server start?"
                        ).answer == "02:30 on Monday"


def test_an_unheard_of_subject_abstains():
    # "east" and "greenhouse" occur nowhere: idf ln(1 + 5.5/0.5) = ln 12 each, against
    # ln(1 + 4.5/1.5) = ln 4 for "access" and "code" (one line each: "code" is also in the prose
    # line, so ln(1 + 3.5/2.5) = ln 2.4): coverage of the access line is
    # (ln 4 + ln 2.4) / (2 ln 12 + ln 4 + ln 2.4) = 0.31 < 0.6
    found = answer_blind(TRANSCRIPT, "What is the access code for the east greenhouse?")
    assert found.answer == ABSTENTION
    assert round(found.coverage, 2) == 0.31


def test_a_near_duplicate_lure_is_a_confabulation():
    # the lure shares "spare", "key", "boat", "locker", "kept" with a question about another
    # key of the boat house: coverage 5 terms of 6 -> the lure's value comes back
    question = "In which locker is the spare key to the boat shed kept?"
    found = answer_blind(TRANSCRIPT, question)
    assert found.answer == "B-123"
    graded = grade(found.answer, ("unanswerable",), {"probe": "never-stated"})
    assert graded.outcome == "wrong"
    assert is_confabulation(graded.outcome, graded.probe)


def test_nothing_after_the_shared_words_takes_the_words_before_them():
    assert extract("KX7-20481 is the tracking number", "What is the tracking number?") == \
        "KX7-20481"
    assert extract("nothing here matches", "What is the tracking number?") == ABSTENTION


def test_the_provider_reads_the_question_out_of_the_harness_prompt():
    q = "What is the access code for the north archive?"
    assert question_of(question_text(q)) == q
    messages = [{"role": "user", "content": TRANSCRIPT.replace(NEWLINE_GLYPH, "\n")},
                {"role": "user", "content": question_text(q)}]
    text, prompt, _, details = run_blind(messages, {"snapblind": {"billed_prompt_tokens": 77}})
    assert (text, prompt, details["abstained"]) == ("7342-KESTREL", 77, False)
