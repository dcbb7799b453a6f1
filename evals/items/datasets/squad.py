"""SQuAD v1.1 reading comprehension, packed into long histories.

Why SQuAD: human-written questions over real paragraphs with exact answer spans (answer_start),
the prose benchmark the upstream research reported F1 on. Several paragraphs are packed into one
history up to `target_tokens` (estimate: CHARS_PER_TOKEN characters per token), so a rendered
history spans several frames and every question of every packed paragraph is asked against it.
The evidence of a question is the sentence of its paragraph that holds the first gold answer's
span; the sentence splitter is a small heuristic (see `sentence_spans`), and when an answer
crosses a boundary the evidence is the run of sentences that covers it.

Where the data comes from:
- `data_file=...`: a local file in SQuAD layout, read offline. Row layout (what
  `datasets.load_dataset("rajpurkar/squad")` yields: id, title, context, question,
  answers={text: [...], answer_start: [...]}) as .jsonl/.parquet (through `datasets`) or .json
  (a JSON list of rows), or the official nested v1.1 JSON ({"data": [{"title", "paragraphs":
  [{"context", "qas": [...]}]}]}), read with `json`.
- otherwise `datasets.load_dataset("rajpurkar/squad", split=split)`. With HF_DATASETS_OFFLINE=1
  or HF_HUB_OFFLINE=1 set, the hub is not tried at all (`datasets` reads those variables once,
  at import, so a later change would not reach it; failing at once is the predictable choice);
  without them the hub is first probed with a 3-second TCP connect, because a hub call from a
  machine without network takes ~23 s to fail. Both raise `SquadUnavailable`, whose message
  says how to pass a local file.

`datasets` is imported lazily (about 1.4 s) and only here.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from evals.items.datasets.common import (
    CHARS_PER_TOKEN,
    PARAGRAPH_SEPARATOR,
    check_int,
    check_seed,
    check_target_tokens,
    estimate_tokens,
    python_version,
    target_chars,
)
from evals.items.qa_items import QAItem, Question, content_id, make_item

HUB_DATASET = "rajpurkar/squad"
SPLITS = ("train", "validation")
HUB_PROBE_SECONDS = 3.0
_OFFLINE_ENV = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")
_HOW_TO_FIX = (
    "pass a local SQuAD-layout file instead: load_dataset('squad', data_file='dev-v1.1.json') "
    "(official nested JSON, or row-layout .jsonl/.parquet/.json as exported by "
    "datasets.Dataset.to_json / to_parquet)"
)


class SquadUnavailable(RuntimeError):
    """SQuAD could not be loaded from the hub (offline or unreachable)."""


# --- sentences ---------------------------------------------------------------------------------

_BOUNDARY = re.compile(r"[.!?][\"')\]]*(\s+)(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof gen col lt sgt rev fr vs etc inc ltd co corp no vol fig approx "
    "e.g i.e u.s u.k a.d b.c c ca jan feb mar apr jun jul aug sep sept oct nov dec mt ft".split()
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence; whitespace between sentences belongs to neither.

    A boundary is sentence punctuation (plus closing quotes/brackets), whitespace, and an
    upper-case letter or digit, unless the word before the period is a known abbreviation or a
    single letter (an initial: "J. R. Tolkien").
    """
    spans = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        word = text[: m.start() + 1].rsplit(None, 1)[-1].strip("\"'([").rstrip(".").lower()
        if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue
        end = m.start(1)
        if end > start:
            spans.append((start, end))
        start = m.end(1)
    if start < len(text.rstrip()):
        spans.append((start, len(text.rstrip())))
    return spans


def evidence_for_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence run of `text` that covers [start, end)."""
    spans = sentence_spans(text)
    covering = [s for s in spans if s[0] < end and s[1] > start]
    if not covering:  # the span sits in inter-sentence whitespace: cannot happen for real answers
        return start, end
    return covering[0][0], covering[-1][1]


# --- rows --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Paragraph:
    title: str
    context: str
    qas: tuple[Mapping, ...]  # each: id, question, answers {text: [...], answer_start: [...]}


def _flatten_official(data: Mapping, source: str) -> list[dict]:
    rows = []
    for article in data["data"]:
        for paragraph in article.get("paragraphs", ()):
            for qa in paragraph.get("qas", ()):
                answers = qa.get("answers", ())
                rows.append({
                    "id": qa.get("id"),
                    "title": article.get("title", ""),
                    "context": paragraph["context"],
                    "question": qa["question"],
                    "answers": {
                        "text": [a["text"] for a in answers],
                        "answer_start": [a["answer_start"] for a in answers],
                    },
                })
    if not rows:
        raise ValueError(f"{source}: official SQuAD JSON holds no questions")
    return rows


def _read_local(path: Path, cache_dir: str | None) -> list[dict]:
    if not path.is_file():
        raise ValueError(f"data_file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".json":
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
        if isinstance(data, Mapping) and "data" in data:
            return _flatten_official(data, str(path))
        if isinstance(data, list):
            return list(data)
        raise ValueError(
            f"{path}: JSON must be the official SQuAD layout ({{'data': [...]}}) or a list of rows"
        )
    builder = {".jsonl": "json", ".parquet": "parquet"}.get(suffix)
    if builder is None:
        raise ValueError(f"data_file must end in .json, .jsonl or .parquet, got {path.name!r}")
    import datasets  # lazy: ~1.4 s

    return list(datasets.load_dataset(
        builder, data_files=str(path), split="train", cache_dir=cache_dir
    ))


def _offline_env() -> str | None:
    for name in _OFFLINE_ENV:
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return name
    return None


def _hub_reachable(timeout: float = HUB_PROBE_SECONDS) -> bool:
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def _read_hub(split: str, cache_dir: str | None) -> list[dict]:
    offline = _offline_env()
    if offline is not None:
        raise SquadUnavailable(
            f"{offline} is set, so {HUB_DATASET} is not fetched from the hub; {_HOW_TO_FIX} "
            f"(a copy already in the Hugging Face cache can be passed the same way: its parquet "
            f"files are SQuAD row layout)"
        )
    if not _hub_reachable():
        raise SquadUnavailable(
            f"the Hugging Face hub is not reachable (TCP probe failed within "
            f"{HUB_PROBE_SECONDS:.0f} s), so {HUB_DATASET} cannot be downloaded; {_HOW_TO_FIX}"
        )
    import datasets  # lazy: ~1.4 s

    try:
        return list(datasets.load_dataset(HUB_DATASET, split=split, cache_dir=cache_dir))
    except (ConnectionError, OSError) as exc:
        raise SquadUnavailable(f"cannot load {HUB_DATASET}: {exc}; {_HOW_TO_FIX}") from exc


def _paragraphs(rows: Iterable[Mapping], source: str) -> list[_Paragraph]:
    """Group question rows by (title, context) in first-appearance order."""
    grouped: dict[tuple[str, str], list[Mapping]] = {}
    for number, row in enumerate(rows):
        for key in ("context", "question", "answers"):
            if key not in row:
                raise ValueError(f"{source}: row {number} has no {key!r} field (SQuAD layout)")
        answers = row["answers"]
        if not isinstance(answers, Mapping) or not {"text", "answer_start"} <= answers.keys():
            raise ValueError(
                f"{source}: row {number} answers must be {{'text': [...], 'answer_start': [...]}}"
            )
        grouped.setdefault((row.get("title") or "", row["context"]), []).append(row)
    return [_Paragraph(title, context, tuple(qas)) for (title, context), qas in grouped.items()]


# --- items -------------------------------------------------------------------------------------


def _question(qa: Mapping, context: str, context_offset: int, history: str) -> Question | None:
    texts = [t for t in qa["answers"]["text"] if isinstance(t, str) and t.strip()]
    starts = list(qa["answers"]["answer_start"])
    if not texts:
        return None  # unanswerable (SQuAD 2.0 style) rows carry no gold answer: skipped
    first, start = texts[0], starts[0] if starts else -1
    if context[start : start + len(first)] != first:  # a bad offset: fall back to the first hit
        start = context.find(first)
        if start < 0:
            return None
    ev_start, ev_end = evidence_for_span(context, start, start + len(first))
    evidence = context[ev_start:ev_end]
    offset = context_offset + ev_start
    qid = qa.get("id") or content_id("squad", context, qa["question"], texts)
    return Question(
        question_id=str(qid),
        question=qa["question"].strip(),
        answers=tuple(dict.fromkeys(texts)),
        evidence=evidence,
        meta={
            "kind": "squad",
            "squad_id": qa.get("id"),
            "answer_start_in_evidence": start - ev_start,
            "evidence_offset": offset,
            "depth_actual": round(offset / len(history), 4),
        },
    )


def build_squad_items(
    rows: Iterable[Mapping],
    *,
    source: str,
    split: str,
    seed: int,
    target_tokens: int,
    n_items: int | None,
    max_questions_per_item: int | None,
) -> list[QAItem]:
    paragraphs = _paragraphs(rows, source)
    if not paragraphs:
        raise ValueError(f"{source}: no SQuAD rows")
    rng = random.Random(f"squad:{seed}")
    order = list(range(len(paragraphs)))
    rng.shuffle(order)
    budget = target_chars(target_tokens)
    groups: list[list[_Paragraph]] = []
    current: list[_Paragraph] = []
    used = 0
    for index in order:
        para = paragraphs[index]
        cost = len(para.context) + (len(PARAGRAPH_SEPARATOR) if current else 0)
        if current and used + cost > budget:
            groups.append(current)
            if n_items is not None and len(groups) >= n_items:
                current = []
                break
            current, used, cost = [], 0, len(para.context)
        current.append(para)
        used += cost
    if current:
        groups.append(current)

    items = []
    for group_index, group in enumerate(groups):
        history = PARAGRAPH_SEPARATOR.join(p.context for p in group)
        questions: list[Question] = []
        offset = 0
        for para in group:
            for qa in para.qas:
                q = _question(qa, para.context, offset, history)
                if q is not None and all(q.question_id != seen.question_id for seen in questions):
                    questions.append(q)
            offset += len(para.context) + len(PARAGRAPH_SEPARATOR)
        if max_questions_per_item is not None and len(questions) > max_questions_per_item:
            keep = sorted(rng.sample(range(len(questions)), max_questions_per_item))
            questions = [questions[i] for i in keep]
        if not questions:
            continue
        items.append(make_item("squad", history, questions, seed, {
            "source": source,
            "split": split,
            "item_index": group_index,
            "titles": [p.title for p in group],
            "python": python_version(),
            "target_tokens": target_tokens,
            "estimated_tokens": estimate_tokens(history),
            "chars_per_token_estimate": CHARS_PER_TOKEN,
        }))
    return items


def load_squad(
    *,
    split: str = "validation",
    data_file: str | os.PathLike | None = None,
    seed: int = 0,
    target_tokens: int = 8_000,
    n_items: int | None = None,
    max_questions_per_item: int | None = None,
    cache_dir: str | None = None,
) -> list[QAItem]:
    """SQuAD items: paragraphs shuffled by `seed`, packed to ~target_tokens (estimate) each.

    `split` picks the hub split and is recorded in meta; a local `data_file` is one split.
    `n_items` caps the number of items (None: all), `max_questions_per_item` samples questions
    (seeded, kept in history order). `cache_dir` is passed to `datasets`.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    seed = check_seed(seed)
    target_tokens = check_target_tokens(target_tokens)
    if n_items is not None:
        n_items = check_int("n_items", n_items, minimum=1)
    if max_questions_per_item is not None:
        max_questions_per_item = check_int(
            "max_questions_per_item", max_questions_per_item, minimum=1
        )
    if data_file is not None:
        path = Path(data_file)
        rows = _read_local(path, cache_dir)
        source = f"file:{path.name}"
    else:
        rows = _read_hub(split, cache_dir)
        source = f"hub:{HUB_DATASET}"
    return build_squad_items(
        rows, source=source, split=split, seed=seed, target_tokens=target_tokens,
        n_items=n_items, max_questions_per_item=max_questions_per_item,
    )
