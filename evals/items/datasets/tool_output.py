"""Tool-output QA: questions about read/grep/find output over real stdlib source files.

Why: coding agents archive mostly tool output, and the upstream research chose shapes on a
tool-result legibility bench (line numbers, paths, identifiers), where prose-only evals mislead.
Here the history is a shell-like transcript of three tool styles over the interpreter's own
library (see `stdlib_corpus`):

- read:  `$ cat -n PATH | sed -n 'A,Bp'` then `cat -n` lines: six-column right-aligned number, a
  tab, the source line with its indentation;
- grep:  `$ grep -rn 'PATTERN' DIR/` then `path:line:text` hits (`line:text` for one file);
- find:  `$ find DIR -name '*.py'` then one path per line.

Question kinds (each answer is exact; evidence is the single output line holding it, checked to
occur exactly once in the history):
- definition_line: "On which line of json/decoder.py is class JSONDecoder defined?" -> "254"
- line_content:    "What does line 40 of X contain?" -> the stripped source line
- file_of_definition: "Which file under email/ defines class Charset?" -> "email/charset.py"
- find_directory:  "In which directory is the file named X.py listed?" -> "xml/etree"
- indentation:     "How many spaces of indentation does line N of X have?" -> "8"
  The answer is derived, not printed, and the library's normalizer collapses runs of spaces to
  one, so frames cannot show it: it is off by default (ask for it with kinds=[...]) and is only
  meaningful for the text arm or renderers that keep spaces.

Only ASCII source files are used, so font coverage never confounds legibility. File choice,
windows and questions come from `random.Random` seeded by (seed, item index); content depends
on the Python version (recorded in item meta).
"""

from __future__ import annotations

import functools
import os
import random
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evals.items.datasets.common import (
    CHARS_PER_TOKEN,
    check_int,
    check_seed,
    check_target_tokens,
    estimate_tokens,
    python_version,
    target_chars,
)
from evals.items.datasets.stdlib_corpus import (
    SourceFile,
    read_source,
    stdlib_root,
    stdlib_source_files,
)
from evals.items.qa_items import QAItem, Question, content_id, make_item

ALL_KINDS = (
    "definition_line", "line_content", "file_of_definition", "find_directory", "indentation",
)
DEFAULT_KINDS = ALL_KINDS[:4]
EXTRACTIVE_KINDS = frozenset(ALL_KINDS[:4])

_DEFINITION = re.compile(r"^(\s*)(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)")
_BLOCK_SEPARATOR = "\n\n"
_MIN_BLOCK_LINES = 3
_MAX_CAT_LINE = 120
_GREP_PATTERNS = (("^class ", r"^class "), ("^def ", r"^def "), ("def ", r"def "))


@dataclass(frozen=True)
class _Candidate:
    kind: str
    question: str
    answer: str
    evidence: str
    block: int


@dataclass(frozen=True)
class _Block:
    text: str
    candidates: tuple[_Candidate, ...]


@functools.lru_cache(maxsize=4096)
def _lines(source: SourceFile) -> tuple[str, ...] | None:
    text = read_source(source)
    if text is None or not text.isascii():
        return None
    return tuple(text.splitlines())


@functools.lru_cache(maxsize=4096)
def _definitions(source: SourceFile) -> dict[int, tuple[str, str]]:
    """line number -> ('class'|'function', name) for every def/class line of the file."""
    found = {}
    for number, line in enumerate(_lines(source) or (), start=1):
        if "def" in line or "class" in line:  # cheap filter before the regex
            m = _DEFINITION.match(line)
            if m:
                found[number] = ("class" if m.group(2) == "class" else "function", m.group(3))
    return found


@functools.lru_cache(maxsize=4096)
def _unique_definitions(source: SourceFile) -> frozenset[str]:
    """Names defined exactly once in the file (so "on which line is X defined" has one answer)."""
    counts = Counter(name for _, name in _definitions(source).values())
    return frozenset(name for name, n in counts.items() if n == 1)


@functools.lru_cache(maxsize=1)
def _ascii_files() -> tuple[SourceFile, ...]:
    return tuple(f for f in stdlib_source_files() if (_lines(f) or ()) and len(_lines(f)) >= 30)


@functools.lru_cache(maxsize=1)
def _package_dirs() -> tuple[str, ...]:
    """Directories (relative) holding at least three public ASCII source files, recursively."""
    counts: dict[str, int] = defaultdict(int)
    for f in stdlib_source_files():
        parts = f.rel.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            counts["/".join(parts[:depth])] += 1
    return tuple(sorted(d for d, n in counts.items() if n >= 3))


def _fit(header: str, lines: list[str], max_chars: int) -> list[str]:
    """The longest prefix of `lines` that fits in max_chars after the header line."""
    used = len(header) + 1
    kept = []
    for line in lines:
        if used + len(line) + 1 > max_chars:
            break
        kept.append(line)
        used += len(line) + 1
    return kept


def _cat_block(rng: random.Random, source: SourceFile, index: int, max_chars: int) -> _Block | None:
    lines = _lines(source)
    if not lines:
        return None
    width = rng.randrange(25, 70)
    first = rng.randrange(1, max(2, len(lines) - width + 2))
    window = range(first, min(len(lines), first + width - 1) + 1)
    rendered = [f"{n:6d}\t{lines[n - 1]}" for n in window]
    provisional = f"$ cat -n {source.rel} | sed -n '{first},{window[-1]}p'"
    rendered = _fit(provisional, rendered, max_chars)
    if len(rendered) < _MIN_BLOCK_LINES:
        return None
    last = first + len(rendered) - 1
    header = f"$ cat -n {source.rel} | sed -n '{first},{last}p'"
    definitions = _definitions(source)
    unique = _unique_definitions(source)
    candidates = []
    for number, out_line in zip(range(first, last + 1), rendered):
        src = lines[number - 1]
        stripped = src.strip()
        what, name = definitions.get(number, ("", ""))
        if name in unique:
            candidates.append(_Candidate(
                "definition_line",
                f"On which line of {source.rel} is {what} {name} defined?",
                str(number), out_line, index,
            ))
        if 12 <= len(stripped) <= _MAX_CAT_LINE and any(c.isalpha() for c in stripped):
            candidates.append(_Candidate(
                "line_content", f"What does line {number} of {source.rel} contain?",
                stripped, out_line, index,
            ))
            indent = len(src) - len(src.lstrip(" "))
            if indent and "\t" not in src[: indent + 1]:
                candidates.append(_Candidate(
                    "indentation",
                    f"How many spaces of indentation does line {number} of {source.rel} have?",
                    str(indent), out_line, index,
                ))
    return _Block("\n".join([header, *rendered]), tuple(candidates))


def _files_under(directory: str) -> list[SourceFile]:
    prefix = directory + "/"
    return [f for f in stdlib_source_files() if f.rel.startswith(prefix) and _lines(f)]


def _grep_block(rng: random.Random, directory: str, index: int, max_chars: int) -> _Block | None:
    shown, regex = rng.choice(_GREP_PATTERNS)
    pattern = re.compile(regex)
    hits: list[tuple[SourceFile, int, str]] = []
    files = _files_under(directory)
    for source in files:
        for number, line in enumerate(_lines(source), start=1):
            if pattern.search(line):
                hits.append((source, number, line))
    if len(hits) < _MIN_BLOCK_LINES:
        return None
    rendered = [f"{s.rel}:{n}:{line}" for s, n, line in hits]
    command = f"$ grep -rn '{shown}' {directory}/"
    kept = _fit(command + " | head -n 999999", rendered, max_chars)
    if len(kept) < _MIN_BLOCK_LINES:
        return None
    header = command if len(kept) == len(rendered) else f"{command} | head -n {len(kept)}"
    shown_hits = hits[: len(kept)]
    # Names defined once across the whole directory (not just the shown hits) and once per file.
    defined_in: dict[str, set[str]] = defaultdict(set)
    for source in files:
        for _, name in _definitions(source).values():
            defined_in[name].add(source.rel)
    candidates = []
    for (source, number, _line), out_line in zip(shown_hits, kept):
        if number not in _definitions(source):
            continue
        what, name = _definitions(source)[number]
        if name in _unique_definitions(source):
            candidates.append(_Candidate(
                "definition_line", f"On which line of {source.rel} is {what} {name} defined?",
                str(number), out_line, index,
            ))
            if defined_in[name] == {source.rel}:
                candidates.append(_Candidate(
                    "file_of_definition", f"Which file under {directory}/ defines {what} {name}?",
                    source.rel, out_line, index,
                ))
    return _Block("\n".join([header, *kept]), tuple(candidates))


def _find_block(rng: random.Random, directory: str, index: int, max_chars: int) -> _Block | None:
    root = stdlib_root()
    paths = []
    for dirpath, dirnames, filenames in os.walk(root / directory):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        paths.extend(f"{rel_dir}/{fn}" for fn in sorted(filenames) if fn.endswith(".py"))
    command = f"$ find {directory} -name '*.py'"
    kept = _fit(command + " | head -n 999999", paths, max_chars)
    if len(kept) < _MIN_BLOCK_LINES:
        return None
    header = command if len(kept) == len(paths) else f"{command} | head -n {len(kept)}"
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in kept:
        by_name[path.rsplit("/", 1)[1]].append(path)
    candidates = [
        _Candidate(
            "find_directory",
            f"In which directory does `find {directory}` list the file {name}?",
            found[0].rsplit("/", 1)[0], found[0], index,
        )
        for name, found in by_name.items()
        if len(found) == 1 and name != "__init__.py"
    ]
    return _Block("\n".join([header, *kept]), tuple(candidates))


def _check_kinds(kinds: object) -> tuple[str, ...]:
    if isinstance(kinds, str) or not isinstance(kinds, Sequence) or not kinds:
        raise ValueError(f"kinds must be a non-empty list drawn from {ALL_KINDS}, got {kinds!r}")
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown:
        raise ValueError(f"unknown question kinds {unknown}; choose from {ALL_KINDS}")
    return tuple(dict.fromkeys(kinds))


def _pick_questions(
    rng: random.Random,
    history: str,
    candidates: list[_Candidate],
    kinds: tuple[str, ...],
    count: int,
) -> list[_Candidate]:
    """Round-robin over kinds (in a seeded order) so every kind present is asked about.

    Candidates arrive with evidence lines that are unique as whole lines; a picked one must also
    be unique as a substring ("12:def f" hides inside "112:def f"), checked here, lazily, because
    counting substrings of an 800k-character history for every candidate is slow.
    """
    by_kind: dict[str, list[_Candidate]] = {k: [] for k in kinds}
    for c in candidates:
        if c.kind in by_kind:
            by_kind[c.kind].append(c)
    for pool in by_kind.values():
        rng.shuffle(pool)
    order = list(kinds)
    rng.shuffle(order)
    picked: list[_Candidate] = []
    asked: set[str] = set()
    while len(picked) < count and any(by_kind.values()):
        for kind in order:
            pool = by_kind[kind]
            while pool:
                c = pool.pop()
                if c.question not in asked and history.count(c.evidence) == 1:
                    asked.add(c.question)
                    picked.append(c)
                    break
            if len(picked) >= count:
                break
    return picked


def _build_history(rng: random.Random, budget: int, index: int) -> tuple[str, list[_Candidate]]:
    files = list(_ascii_files())
    rng.shuffle(files)
    directories = list(_package_dirs())
    rng.shuffle(directories)
    blocks: list[_Block] = []
    used = 0
    failures = 0
    while failures < 20 and files:
        remaining = budget - used - (len(_BLOCK_SEPARATOR) if blocks else 0)
        if remaining < 200:
            break
        style = rng.choices(("cat", "grep", "find"), weights=(5, 3, 1))[0]
        if style == "cat" or not directories:
            block = _cat_block(rng, files.pop(), len(blocks), remaining)
        elif style == "grep":
            block = _grep_block(rng, directories.pop(), len(blocks), remaining)
        else:
            block = _find_block(rng, directories.pop(), len(blocks), remaining)
        if block is None:
            failures += 1
            continue
        blocks.append(block)
        used += len(block.text) + (len(_BLOCK_SEPARATOR) if len(blocks) > 1 else 0)
    if not blocks:
        raise ValueError("target_tokens is too small for a single tool-output block")
    history = _BLOCK_SEPARATOR.join(b.text for b in blocks)
    line_counts = Counter(history.split("\n"))
    candidates = [c for b in blocks for c in b.candidates if line_counts[c.evidence] == 1]
    return history, candidates


def load_tool_output(
    *,
    seed: int = 0,
    n_items: int = 1,
    target_tokens: int = 8_000,
    questions_per_item: int = 12,
    kinds: Sequence[str] = DEFAULT_KINDS,
) -> list[QAItem]:
    """Shell-transcript items of cat/grep/find output with exact-answer questions."""
    seed = check_seed(seed)
    n_items = check_int("n_items", n_items, minimum=1, maximum=10_000)
    target_tokens = check_target_tokens(target_tokens, minimum=100)
    questions_per_item = check_int("questions_per_item", questions_per_item, minimum=1)
    kinds = _check_kinds(kinds)
    budget = target_chars(target_tokens)
    items = []
    for index in range(n_items):
        rng = random.Random(f"tool_output:{seed}:{index}")
        history, candidates = _build_history(rng, budget, index)
        picked = _pick_questions(rng, history, candidates, kinds, questions_per_item)
        if not picked:
            raise ValueError(
                f"no question of kinds {kinds} fits in target_tokens={target_tokens}; raise it"
            )
        questions = []
        for c in picked:
            offset = history.index(c.evidence)
            span = c.evidence.find(c.answer) if c.kind in EXTRACTIVE_KINDS else -1
            meta = {
                "kind": c.kind,
                "extractive": c.kind in EXTRACTIVE_KINDS,
                "block": c.block,
                "evidence_offset": offset,
                "depth_actual": round(offset / len(history), 4),
            }
            if span >= 0:
                meta["answer_start_in_evidence"] = span
            questions.append(Question(
                question_id=content_id("tool_output", c.question, c.answer, c.evidence),
                question=c.question, answers=(c.answer,), evidence=c.evidence, meta=meta,
            ))
        items.append(make_item(
            "tool_output", history, questions, seed,
            {
                "corpus": "stdlib-sources",
                "item_index": index,
                "python": python_version(),
                "target_tokens": target_tokens,
                "estimated_tokens": estimate_tokens(history),
                "chars_per_token_estimate": CHARS_PER_TOKEN,
                "kinds": list(kinds),
            },
        ))
    return items
