"""Answer scoring: SQuAD v1.1 exact match and token F1, with abstentions counted apart.

Why SQuAD's metric: it is the measure the upstream research reports (F1 in the digest's eval
table), it forgives case, punctuation and articles (so a model is not penalised for writing
"The 7342-KESTREL." instead of "7342-KESTREL"), and it gives partial credit per token.

Normalization follows the official v1.1 evaluation script, in this order:
  1. lowercase;
  2. delete every ASCII punctuation character (Python's `string.punctuation`);
  3. replace the whole words "a", "an", "the" with a space;
  4. split on whitespace and rejoin with single spaces.
EM is 1.0 when the normalized prediction equals a normalized gold answer. F1 is the harmonic
mean of token precision and recall over the normalized tokens, with tokens counted as a
multiset; it is 0 when no token is shared (so an empty prediction or empty gold scores 0, as in
v1.1 -- v2.0 changed that case). Both take the maximum over the gold answers.

Abstentions ("unanswerable", "I cannot read the image", "not visible", an empty reply, and a
model's free-text "not stated / unknown / don't know": "The session does not mention it", "that
was never stated", "I don't have that information", "there is no record of it", "the value is
unknown") are flagged apart: a reader that says it cannot see is different from one that
misreads, and the shape table needs both rates. An abstention scores 0 for EM and F1. A reply
that mentions an abstention phrase but still contains a whole gold answer (a hedge: "hard to
read, but 7342") is scored as an answer, not flagged.

`correct` is EM = 1 or F1 >= CORRECT_F1_THRESHOLD (0.8). 0.8 accepts one wrong or missing token
in five (a long code line read with one token garbled) but rejects half-right short answers
(one token of two is F1 0.5 or 0.67). It is a convenience for accuracy-style tables; EM and F1
are the primary figures.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

CORRECT_F1_THRESHOLD = 0.8

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

# Phrases matched against the *normalized* reply (lowercase, punctuation removed), so "can't"
# arrives as "cant" and "N/A" as "na".
_ABSTENTION_PATTERNS = tuple(
    re.compile(p)
    for p in (
        r"^(none|na|null|nil|unknown|no answer|unanswerable|not answerable|no idea|idk)$",
        r"\bunanswerable\b",
        r"\b(cannot|cant|can not|could not|couldnt|unable to|not able to) "
        r"(read|see|make out|find|locate|determine|tell|answer|identify|decipher|be determined)",
        r"\b(dont|do not|did not|didnt) (know|see)\b",
        r"\bnot (visible|legible|readable|found|mentioned|provided|present|shown|stated|given|"
        r"available|specified|clear|in (text|image|images|context|history|document))\b",
        r"\b(illegible|unreadable|indecipherable|too blurry|blurry)\b",
        r"\bno (such|relevant) (information|text|mention)\b",
        r"\binsufficient (information|context)\b",
        # a model's free-text "not stated" family (issue 47: a never-stated probe's right reply
        # from a real model is a sentence, not the offline readers' "unanswerable")
        r"\b(does not|doesnt|did not|didnt|do not|dont) (mention|say|state|specify|contain|"
        r"include|provide|give|record|show)\b",
        r"\b(isnt|wasnt|arent|werent|was not|were not|has not been|have not been|hasnt been|"
        r"havent been|never|never been) (mentioned|stated|specified|given|provided|recorded|"
        r"said|discussed|listed|included)\b",
        r"\bnot (known|recorded|included|said|discussed|listed|in (conversation|session|"
        r"transcript))\b",
        r"\b(dont|do not) have (any |that |this |enough |the )?(information|data|context|"
        r"details|record)\b",
        r"\bno (information|mention|record|indication|details?|data) (about|of|on|regarding|"
        r"for|in)\b",
        r"\b(is|remains) unknown\b",
    )
)


@dataclass(frozen=True)
class Score:
    """The score of one reply against one question's gold answers."""

    em: float
    f1: float
    abstained: bool
    correct: bool


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalization: lowercase, drop punctuation, drop articles, squeeze spaces."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 if the normalized strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    """Token-level F1 between normalized prediction and gold (multiset overlap)."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    shared = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(pred_tokens)
    recall = shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _contains_tokens(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return False
    width = len(needle)
    return any(haystack[i : i + width] == needle for i in range(len(haystack) - width + 1))


def is_abstention(prediction: str | None, answers: Sequence[str] = ()) -> bool:
    """True if the reply declines to answer rather than attempting one.

    Empty/None replies abstain. A reply matching an abstention phrase abstains unless it still
    contains one of `answers` (normalized, as a whole token run).
    """
    if prediction is None:
        return True
    normalized = normalize_answer(prediction)
    if not normalized:
        return True
    if not any(p.search(normalized) for p in _ABSTENTION_PATTERNS):
        return False
    tokens = normalized.split()
    return not any(_contains_tokens(tokens, normalize_answer(a).split()) for a in answers)


def score(
    prediction: str | None,
    answers: Sequence[str],
    *,
    f1_threshold: float = CORRECT_F1_THRESHOLD,
) -> Score:
    """Score one reply against its gold answers (max over answers). None counts as empty."""
    if isinstance(answers, str):
        raise ValueError("answers must be a sequence of strings, not a single string")
    answers = tuple(answers)
    if not answers:
        raise ValueError("answers is empty: a question needs at least one gold answer")
    if any(not isinstance(a, str) for a in answers):
        raise ValueError("answers must all be strings")
    if prediction is not None and not isinstance(prediction, str):
        raise ValueError(f"prediction must be a string or None, got {type(prediction).__name__}")
    if not 0.0 < f1_threshold <= 1.0:
        raise ValueError(f"f1_threshold must be in (0, 1], got {f1_threshold}")

    text = prediction or ""
    em = max(exact_match(text, a) for a in answers)
    if em < 1.0 and is_abstention(prediction, answers):
        return Score(em=0.0, f1=0.0, abstained=True, correct=False)
    best_f1 = max(f1(text, a) for a in answers)
    return Score(em=em, f1=best_f1, abstained=False, correct=em == 1.0 or best_f1 >= f1_threshold)
