"""Needle-in-a-haystack QA: short facts placed at chosen depths in long real prose.

Why needles: recall of one exact fact (an access code, a tracking number) at a known depth of a
long history is the cleanest test of legibility -- the answer is unique, cannot be guessed from
world knowledge, and its position is controlled, so recall can be plotted against depth and
history length. The haystack is real English (stdlib docstrings, see `stdlib_corpus`) rather
than repeated filler, so a frame looks like a real archive page.

Each needle is one sentence inserted at the sentence boundary nearest to its depth (a fraction
of the history's characters). Values mix digits, capitals and words the way real codes do
("7342-KESTREL", "KX7-20481", "amber lantern 58"); legibility is what is measured, so nothing
is done to avoid look-alike characters. Everything is drawn from `random.Random` seeded by
(dataset, seed, item index), so a seed gives the same items on every run of one interpreter.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evals.items.datasets.common import (
    CHARS_PER_TOKEN,
    PARAGRAPH_SEPARATOR,
    check_depths,
    check_int,
    check_seed,
    check_target_tokens,
    estimate_tokens,
    pack_paragraphs,
    python_version,
    target_chars,
)
from evals.items.datasets.stdlib_corpus import docstring_paragraphs
from evals.items.qa_items import QAItem, Question, content_id, make_item

DEFAULT_DEPTHS = (0.1, 0.5, 0.9)

_PLACES = (
    "north archive", "east greenhouse", "harbour office", "river mill", "old observatory",
    "west laboratory", "print room", "signal tower", "cold store", "map library",
    "boat house", "clock workshop", "south gatehouse", "upper vault", "glass studio",
    "bell foundry", "salt warehouse", "night clinic", "rail depot", "weather station",
)
_PEOPLE = (
    "Amara Okafor", "Tomasz Wrobel", "Ines Carvalho", "Kenji Mori", "Freya Lindqvist",
    "Rahul Menon", "Lucia Ferrante", "Owen Pritchard", "Zeynep Aydin", "Mateo Ruiz",
    "Hana Novak", "Selim Haddad", "Greta Holm", "Bao Tran", "Nadia Petrova",
    "Callum Reid", "Yara Nasser", "Pieter de Vries", "Aiko Sato", "Dmitri Volkov",
)
_CODE_WORDS = (
    "KESTREL", "MARIGOLD", "BASALT", "OSPREY", "JUNIPER", "COBALT", "HALCYON", "TUNDRA",
    "SAFFRON", "ORCHID", "GRANITE", "PELICAN", "CINDER", "WILLOW", "QUARTZ", "FALCON",
)
_ADJECTIVES = (
    "amber", "quiet", "silver", "crooked", "velvet", "hollow", "scarlet", "frozen", "gentle",
    "distant", "copper", "restless", "golden", "humble", "paper", "winter",
)
_NOUNS = (
    "lantern", "harbour", "meadow", "compass", "falcon", "orchard", "anchor", "violin",
    "thimble", "glacier", "teapot", "ribbon", "canyon", "pebble", "bicycle", "feather",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"


def _access_code(rng: random.Random) -> str:
    return f"{rng.randrange(1000, 10000)}-{rng.choice(_CODE_WORDS)}"


def _tracking_number(rng: random.Random) -> str:
    prefix = "".join(rng.choice(_LETTERS) for _ in range(2))
    return f"{prefix}{rng.randrange(10)}-{rng.randrange(10000, 100000)}"


def _passphrase(rng: random.Random) -> str:
    return f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} {rng.randrange(10, 100)}"


def _locker(rng: random.Random) -> str:
    return f"{rng.choice(_LETTERS)}-{rng.randrange(100, 1000)}"


def _time_slot(rng: random.Random) -> str:
    return f"{rng.randrange(24):02d}:{rng.choice(range(0, 60, 5)):02d} on {rng.choice(_WEEKDAYS)}"


@dataclass(frozen=True)
class _Template:
    name: str
    subjects: tuple[str, ...]
    statement: str  # {subject} and {value}
    question: str  # {subject}
    value: Callable[[random.Random], str]


_TEMPLATES = (
    _Template(
        "access_code", _PLACES,
        "The access code for the {subject} is {value}.",
        "What is the access code for the {subject}?", _access_code,
    ),
    _Template(
        "tracking_number", _PEOPLE,
        "The parcel for {subject} left the depot with tracking number {value}.",
        "What is the tracking number of the parcel for {subject}?", _tracking_number,
    ),
    _Template(
        "passphrase", _PEOPLE,
        "The wifi passphrase {subject} chose for the guest network is {value}.",
        "What wifi passphrase did {subject} choose for the guest network?", _passphrase,
    ),
    _Template(
        "locker", _PLACES,
        "The spare key to the {subject} is kept in locker {value}.",
        "In which locker is the spare key to the {subject} kept?", _locker,
    ),
    _Template(
        "backup_time", _PLACES,
        "The nightly backup of the {subject} server now starts at {value}.",
        "When does the nightly backup of the {subject} server start?", _time_slot,
    ),
)

#: The fact templates, for the probes planted beside them (``probe_plants``).
TEMPLATES = _TEMPLATES

_SENTENCE_END = re.compile(r"[.!?](?=\s)|[.!?]$")


@dataclass(frozen=True)
class _Needle:
    sentence: str
    question: str
    value: str
    template: str
    depth: float


def draw_needles(rng: random.Random, depths: Sequence[float]) -> list[_Needle]:
    used: set[tuple[str, str]] = set()
    needles = []
    for depth in depths:
        while True:
            template = rng.choice(_TEMPLATES)
            subject = rng.choice(template.subjects)
            if (template.name, subject) not in used:
                used.add((template.name, subject))
                break
        value = template.value(rng)
        needles.append(
            _Needle(
                sentence=template.statement.format(subject=subject, value=value),
                question=template.question.format(subject=subject),
                value=value,
                template=template.name,
                depth=depth,
            )
        )
    return needles


def _insertion_points(haystack: str) -> list[int]:
    """Offsets right after a sentence end (and the very start): where a sentence may go."""
    return [0] + [m.end() for m in _SENTENCE_END.finditer(haystack)]


def _insert(haystack: str, needles: list[_Needle]) -> str:
    points = _insertion_points(haystack)
    taken: set[int] = set()
    placements: list[tuple[int, _Needle]] = []
    for needle in needles:
        goal = needle.depth * len(haystack)
        for point in sorted(points, key=lambda p: (abs(p - goal), p)):
            if point not in taken:
                taken.add(point)
                placements.append((point, needle))
                break
    text = haystack
    for point, needle in sorted(placements, key=lambda pn: pn[0], reverse=True):
        if point == 0:
            text = needle.sentence + " " + text
        else:
            text = text[:point] + " " + needle.sentence + text[point:]
    return text


def build_needle_items(
    paragraphs: Sequence[str],
    *,
    dataset: str,
    corpus: str,
    seed: int,
    n_items: int,
    target_tokens: int,
    depths: Sequence[float],
) -> list[QAItem]:
    """Items of `n_items` haystacks cut from `paragraphs`, one needle per depth."""
    seed = check_seed(seed)
    n_items = check_int("n_items", n_items, minimum=1, maximum=10_000)
    target_tokens = check_target_tokens(target_tokens)
    depths = check_depths(depths)
    budget = target_chars(target_tokens)
    items = []
    for index in range(n_items):
        rng = random.Random(f"{dataset}:{seed}:{index}")
        for _attempt in range(10):
            needles = draw_needles(rng, depths)
            needle_chars = sum(len(n.sentence) + 1 for n in needles)
            if needle_chars >= budget:
                raise ValueError(
                    f"target_tokens={target_tokens} is too small to hold {len(depths)} needles "
                    f"({needle_chars} characters)"
                )
            start = rng.randrange(len(paragraphs))
            haystack = PARAGRAPH_SEPARATOR.join(
                pack_paragraphs(paragraphs, start, budget - needle_chars)
            )
            history = _insert(haystack, needles)
            if all(history.count(n.value) == 1 for n in needles):
                break
        else:  # pragma: no cover - ten collisions of random codes with prose do not happen
            raise RuntimeError(f"could not place unique needles for {dataset} seed={seed}")
        questions = []
        for needle in needles:
            offset = history.index(needle.sentence)
            questions.append(
                Question(
                    question_id=content_id(dataset, needle.question, needle.value, needle.sentence),
                    question=needle.question,
                    answers=(needle.value,),
                    evidence=needle.sentence,
                    meta={
                        "kind": "needle",
                        "template": needle.template,
                        "depth": needle.depth,
                        "depth_actual": round(offset / len(history), 4),
                        "evidence_offset": offset,
                        "answer_start_in_evidence": needle.sentence.index(needle.value),
                    },
                )
            )
        items.append(
            make_item(
                dataset,
                history,
                questions,
                seed,
                {
                    "corpus": corpus,
                    "item_index": index,
                    "python": python_version(),
                    "target_tokens": target_tokens,
                    "estimated_tokens": estimate_tokens(history),
                    "chars_per_token_estimate": CHARS_PER_TOKEN,
                    "depths": list(depths),
                    "corpus_start_paragraph": start,
                },
            )
        )
    return items


def load_needles(
    *,
    seed: int = 0,
    n_items: int = 1,
    target_tokens: int = 8_000,
    depths: Sequence[float] = DEFAULT_DEPTHS,
) -> list[QAItem]:
    """Needles in stdlib docstring prose; `target_tokens` up to 200k (4-chars/token estimate)."""
    return build_needle_items(
        docstring_paragraphs(),
        dataset="needles",
        corpus="stdlib-docstrings",
        seed=seed,
        n_items=n_items,
        target_tokens=target_tokens,
        depths=depths,
    )
