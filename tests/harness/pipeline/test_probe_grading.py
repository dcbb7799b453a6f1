"""Grading by probe kind: exact strings exactly, gist by keywords, never-stated by abstaining.

Expected outcomes are worked by hand from the rules in ``evals.pipeline.probe_grading``.
"""

from __future__ import annotations

import pytest

from evals.items.probes import is_confabulation, is_silent_wrong, probe_label
from evals.pipeline.probe_grading import exact_form, gist_share, grade
from evals.pipeline.reader_side import UNREACHABLE_SCORE
from evals.pipeline.scoring import is_abstention
from evals.readers.answer import ABSTENTION, locate

EXACT = {"probe": "exact"}


@pytest.mark.parametrize(("reply", "outcome"), [
    ("KX7-20481", "correct"),
    ("`kx7-20481`.", "correct"),          # quotes, case and a trailing period go
    ("The KX7-20481", "correct"),         # a leading article goes
    ("KX720481", "wrong"),                # SQuAD drops the hyphen (EM 1); exact does not
    ("KX7-2O481", "wrong"),               # one glyph swapped: 0 -> O
    ("unanswerable", "abstained"),
    ("I cannot find it", "abstained"),
])
def test_exact_probes_are_graded_exactly(reply, outcome):
    assert grade(reply, ("KX7-20481",), EXACT).outcome == outcome


def test_squad_would_have_accepted_what_exact_refuses():
    graded = grade("KX720481", ("KX7-20481",), EXACT)
    assert (graded.em, graded.outcome) == (1.0, "wrong")
    assert is_silent_wrong(graded.outcome, graded.probe)


def test_an_old_question_without_a_kind_keeps_the_old_rule_and_its_label():
    # "02.30 on Monday": SQuAD normalizes both to "0230 on monday" -> EM 1 -> correct
    assert grade("02.30 on Monday", ("02:30 on Monday",), {}).outcome == "correct"
    assert grade("02.30 on Monday", ("02:30 on Monday",), EXACT).outcome == "wrong"
    assert probe_label({}) == "exact (old default)"
    assert probe_label(EXACT) == "exact"


def test_gist_probes_need_half_of_the_keywords_stemmed():
    gold = ("the disk kept filling up every weekend",)
    meta = {"probe": "gist", "keywords": ["disk", "filling", "weekend"]}
    # "filled" and "filling" both stem to "fill"; "disks" to "disk": 2 of 3 keywords
    assert gist_share("the disks filled", gold, meta["keywords"]) == pytest.approx(2 / 3)
    assert grade("because the disks filled", gold, meta).outcome == "correct"
    # 1 of 3 < 0.5
    assert grade("it happened at the weekend", gold, meta).outcome == "wrong"
    # without keywords: the gold's non-stopwords (disk, kept, filling, up, every, weekend)
    assert gist_share("disk filling weekend", gold) == pytest.approx(3 / 6)


def test_never_stated_probes_want_an_abstention_and_a_value_is_a_confabulation():
    meta = {"probe": "never-stated", "lure_answer": "03:55 on Saturday"}
    right = grade("unanswerable", ("unanswerable",), meta)
    assert (right.outcome, right.abstained, right.em) == ("correct", True, 1.0)
    wrong = grade("03:55 on Saturday", ("unanswerable",), meta)
    assert wrong.outcome == "wrong"
    assert is_confabulation(wrong.outcome, wrong.probe)
    assert not is_silent_wrong(wrong.outcome, wrong.probe)


def test_the_told_reader_abstains_on_a_never_stated_probe():
    # told the lure line with the lure's value, at a threshold above 100: nothing is found
    history = "x " * 40 + "The nightly backup of the upper vault server now starts at 03:55."
    lure = "The nightly backup of the upper vault server now starts at 03:55."
    assert locate(history, lure, ["03:55"]).answer == "03:55"
    assert locate(history, lure, ["03:55"], UNREACHABLE_SCORE).answer == ABSTENTION


def test_exact_form():
    assert exact_form('  "An  Owl Key." ') == "owl key"


# -- a real model's free-text replies (issue 47 item 5) ------------------------------------------
NEVER = {"probe": "never-stated", "lure_answer": "4417-OSPREY"}


@pytest.mark.parametrize("reply", [
    "The session does not mention the access code for the amber quarry.",
    "That was never stated in the conversation.",
    "The access code for the amber quarry isn't mentioned anywhere.",
    "I don't have that information.",
    "There is no record of an access code for the amber quarry.",
    "The access code is unknown.",
    "It is not recorded in the session.",
])
def test_a_models_not_stated_sentence_abstains(reply):
    # each is one of the documented families; before them every one graded as a value
    assert grade(reply, ("unanswerable",), NEVER).outcome == "correct"
    graded = grade(reply, ("KX7-20481",), EXACT)
    assert (graded.outcome, graded.em, graded.f1) == ("abstained", 0.0, 0.0)


@pytest.mark.parametrize(("reply", "outcome"), [
    # a hedge carrying the lure's value is a confabulation, not an abstention
    ("It is not stated, but probably 4417-OSPREY.", "wrong"),
    ("The access code for the amber quarry is 4417-OSPREY.", "wrong"),
    ("The access code is 9931-CINDER.", "wrong"),
])
def test_a_never_stated_probe_answered_with_a_value_is_a_confabulation(reply, outcome):
    graded = grade(reply, ("unanswerable",), NEVER)
    assert graded.outcome == outcome and is_confabulation(graded.outcome, graded.probe)


@pytest.mark.parametrize("reply", [
    "The deploy was stopped because the certificate did not validate.",  # "did not" + verb
    "Nothing was stopped; the logs say the disk kept filling up every weekend.",
    "The code is KX7-20481, as the user said.",
])
def test_sentences_with_a_negation_that_answer_are_not_abstentions(reply):
    assert not is_abstention(reply)
