"""SQuAD v1.1 EM/F1 and abstention flags, checked on worked examples.

Expected values are worked by hand from the official v1.1 evaluation rules: normalize by
lowercasing, deleting ASCII punctuation (string.punctuation), replacing the words a/an/the by a
space and squeezing whitespace -- in that order; EM compares normalized strings; F1 is the
harmonic mean of precision and recall over the multiset of shared normalized tokens, 0 when
nothing is shared; both take the maximum over gold answers.
"""

import pytest

from evals.pipeline.scoring import (
    CORRECT_F1_THRESHOLD,
    Score,
    exact_match,
    f1,
    is_abstention,
    normalize_answer,
    score,
)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("The  Quick, brown FOX!", "quick brown fox"),  # case, punctuation, article, spaces
        ("An apple a day", "apple day"),  # all three articles are whole words
        ("Theatre another anathema", "theatre another anathema"),  # not inside words
        ("7342-KESTREL", "7342kestrel"),  # punctuation is deleted, not replaced by a space
        ("don't", "dont"),
        ("the.cat", "thecat"),  # punctuation goes first, so "the" is no longer a word
        ("a\u2014b", "\u2014b"),  # the em dash is not ASCII punctuation: kept, and splits words
        ("  \t\n ", ""),
        ("THE", ""),
    ],
)
def test_normalize_answer_follows_squad_v11_order(raw, normalized):
    assert normalize_answer(raw) == normalized


def test_exact_match_ignores_case_punctuation_and_articles():
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("Eiffel Towers", "eiffel tower") == 0.0


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        # pred {big, red, barn} vs gold {red, barn, door}: 2 shared, P = R = 2/3
        ("the big red barn", "red barn door", 2 / 3),
        # multiset: "north" is shared once; P = 1/2, R = 1, F1 = 2/3
        ("north north", "north", 2 / 3),
        # P = 1, R = 1/2 -> F1 = 2/3
        ("Broncos", "Denver Broncos", 2 / 3),
        # 4 of 5 tokens shared both ways -> 0.8
        ("return value of cached keys", "return the value of the cached key", 0.8),
        ("nothing shared", "completely different", 0.0),
        # v1.1 quirk: an answer that normalizes to nothing shares no tokens -> F1 0
        ("the", "a", 0.0),
    ],
)
def test_token_f1_worked_examples(prediction, gold, expected):
    assert f1(prediction, gold) == pytest.approx(expected)


def test_empty_normalized_strings_match_exactly_but_have_zero_f1():
    # v1.1 compares normalized strings for EM ("" == "") but F1 needs a shared token.
    assert exact_match("the", "a") == 1.0
    assert f1("the", "a") == 0.0


def test_score_takes_the_maximum_over_gold_answers():
    s = score("Denver Broncos", ["Broncos", "Denver Broncos", "the Broncos"])
    assert s == Score(em=1.0, f1=1.0, abstained=False, correct=True)
    partial = score("Broncos", ["Denver Broncos", "Denver"])
    assert partial.em == 0.0
    assert partial.f1 == pytest.approx(2 / 3)  # best is "Denver Broncos"


@pytest.mark.parametrize(
    ("prediction", "gold", "correct"),
    [
        ("return value of cached keys", "return the value of the cached key", True),  # F1 0.8
        ("Broncos", "Denver Broncos", False),  # F1 0.67
        ("7342-kestrel", "7342-KESTREL", True),  # EM
    ],
)
def test_correct_is_em_or_f1_at_threshold(prediction, gold, correct):
    assert CORRECT_F1_THRESHOLD == 0.8
    assert score(prediction, [gold]).correct is correct


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        None,
        "Unanswerable",
        "I cannot read the text in the image.",
        "I can't make out the code.",
        "Not visible.",
        "N/A",
        "The image is too blurry to tell.",
        "This information is not in the text.",
        "I don't know",
    ],
)
def test_abstentions_are_flagged_and_score_zero(reply):
    s = score(reply, ["7342-KESTREL"])
    assert s == Score(em=0.0, f1=0.0, abstained=True, correct=False)


def test_abstention_flag_beats_token_overlap():
    # Shares "in" with the gold answer, so plain F1 would give partial credit.
    assert f1("The answer is not visible in the image", "in the north archive") > 0
    s = score("The answer is not visible in the image", ["in the north archive"])
    assert s.abstained and s.f1 == 0.0


def test_hedged_reply_containing_the_answer_is_scored_not_flagged():
    s = score("I cannot read it clearly, but it looks like 7342-KESTREL", ["7342-KESTREL"])
    assert not s.abstained
    assert s.em == 0.0 and 0.0 < s.f1 < 1.0


@pytest.mark.parametrize("gold", ["unknown", "none"])
def test_a_gold_answer_that_looks_like_an_abstention_is_an_answer(gold):
    assert score(gold.title(), [gold]) == Score(em=1.0, f1=1.0, abstained=False, correct=True)


@pytest.mark.parametrize("reply", ["7342-KESTREL", "The visible code is 7342", "north archive"])
def test_ordinary_answers_are_not_abstentions(reply):
    assert not is_abstention(reply, ["7342-KESTREL"])


def test_wrong_answer_is_neither_correct_nor_abstained():
    assert score("4417-OSPREY", ["7342-KESTREL"]) == Score(0.0, 0.0, False, False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prediction": "x", "answers": []}, "at least one gold answer"),
        ({"prediction": "x", "answers": "x"}, "not a single string"),
        ({"prediction": "x", "answers": [1]}, "strings"),
        ({"prediction": 3, "answers": ["x"]}, "prediction must be a string"),
        ({"prediction": "x", "answers": ["x"], "f1_threshold": 0.0}, "f1_threshold"),
    ],
)
def test_bad_input_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        score(**kwargs)
