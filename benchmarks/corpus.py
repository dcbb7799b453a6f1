"""A deterministic mixed-text corpus for the benchmarks, built from what every Python install has.

Why mixed: a renderer tuned on source code alone can be slow where users are not looking, on
prose, on one-sentence lines (many newline cells, many sentence hues) and on non-Latin text (wide
CJK cells, emoji folding, combining marks).  Four streams are interleaved in blocks of about
2,000 characters so that every page holds each kind:

* prose: the paragraphs of the standard library's ``pydoc_data.topics`` (the language
  reference), reflowed into running text;
* code: the standard library's top-level ``*.py`` sources, in name order;
* sentences: the same prose, one sentence per line;
* non-Latin: generated from a fixed seed: CJK ideographs, kana, Hangul, Cyrillic, Greek,
  Latin letters with combining accents, emoji (with skin-tone modifiers and ZWJ sequences) and
  fullwidth punctuation.

The same Python version gives the same text, byte for byte.
"""

from __future__ import annotations

import random
import re
import sysconfig
from collections.abc import Iterator
from pathlib import Path

BLOCK_CHARS = 2000
SEED = 12


def prose_paragraphs() -> list[str]:
    """Running-text paragraphs of the language reference (indented grammar and code dropped)."""
    from pydoc_data.topics import topics

    paragraphs: list[str] = []
    for key in sorted(topics):
        for para in re.split(r"\n\s*\n", topics[key]):
            lines = para.splitlines()
            if not lines or any(line.startswith(" ") for line in lines):
                continue
            if set(lines[-1]) <= set("*=-"):  # a heading underline
                continue
            text = " ".join(line.strip() for line in lines)
            if len(text) > 80:
                paragraphs.append(text)
    return paragraphs


def _prose() -> Iterator[str]:
    while True:
        for para in prose_paragraphs():
            yield para + "\n\n"


def _sentences() -> Iterator[str]:
    while True:
        for para in prose_paragraphs():
            for sentence in re.split(r"(?<=[.!?])\s+", para):
                yield sentence + "\n"


def _code() -> Iterator[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    while True:
        for path in sorted(stdlib.glob("*.py")):
            yield path.read_text(encoding="utf-8", errors="replace")


_SCRIPTS = (
    (0x4E00, 0x9FFF),  # CJK ideographs
    (0x3041, 0x3096),  # hiragana
    (0x30A1, 0x30FA),  # katakana
    (0xAC00, 0xD7A3),  # Hangul syllables
    (0x0430, 0x044F),  # Cyrillic
    (0x03B1, 0x03C9),  # Greek
)
_COMBINING = (0x0301, 0x0300, 0x0308, 0x0302, 0x0327, 0x030C, 0x0323)
_EMOJI = (0x1F600, 0x1F64F)
_SKIN = (0x1F3FB, 0x1F3FF)
_ZWJ_SEQUENCES = ("\U0001F468\u200D\U0001F469\u200D\U0001F467", "\U0001F3F3\uFE0F\u200D\U0001F308",
                  "\u2764\uFE0F", "\U0001F44D\U0001F3FD")
_FULLWIDTH_PUNCT = ("\u3002", "\uFF0C", "\uFF01", "\uFF1F", "\u3001")


def _non_latin() -> Iterator[str]:
    rnd = random.Random(SEED)
    while True:
        words = []
        for _ in range(rnd.randint(4, 14)):
            kind = rnd.random()
            if kind < 0.55:
                lo, hi = rnd.choice(_SCRIPTS)
                word = "".join(chr(rnd.randint(lo, hi)) for _ in range(rnd.randint(1, 6)))
            elif kind < 0.8:
                word = "".join(
                    rnd.choice("aeiouncszy") + (chr(rnd.choice(_COMBINING)) if rnd.random() < 0.5 else "")
                    for _ in range(rnd.randint(2, 8))
                )
            elif kind < 0.92:
                word = chr(rnd.randint(*_EMOJI))
                if rnd.random() < 0.3:
                    word += chr(rnd.randint(*_SKIN))
            else:
                word = rnd.choice(_ZWJ_SEQUENCES)
            words.append(word)
        end = rnd.choice(_FULLWIDTH_PUNCT) if rnd.random() < 0.5 else rnd.choice([".", "!", "?"])
        yield " ".join(words) + end + ("\n" if rnd.random() < 0.3 else " ")


def mixed(n_chars: int, block_chars: int = BLOCK_CHARS) -> str:
    """``n_chars`` characters: blocks of prose, code, sentence lines and non-Latin text in turn."""
    streams = [_prose(), _code(), _sentences(), _non_latin()]
    pending = ["", "", "", ""]
    out: list[str] = []
    total = 0
    turn = 0
    while total < n_chars:
        k = turn % len(streams)
        while len(pending[k]) < block_chars:
            pending[k] += next(streams[k])
        block, pending[k] = pending[k][:block_chars], pending[k][block_chars:]
        out.append(block)
        total += len(block)
        turn += 1
    return "".join(out)[:n_chars]


def stdlib_source(n_chars: int) -> str:
    """The first ``n_chars`` characters of the standard library's top-level sources."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts: list[str] = []
    total = 0
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        total += len(text)
        if total >= n_chars:
            break
    return "".join(parts)[:n_chars]
