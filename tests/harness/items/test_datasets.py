"""Dataset loaders: invariants, determinism, real tool output, SQuAD fixture parsing.

Generated text comes from this interpreter's standard library, which differs between Python
versions, so nothing here hard-codes generated text: tests check invariants (evidence occurs
once, answers sit in their evidence, lengths stay under the target), determinism for a fixed
seed, and -- for tool output -- every answer against the real source files, read independently.
SQuAD expectations come from the hand-written fixture (tests/fixtures/datasets).
"""

from __future__ import annotations

import ast
import json
import os
import platform
import re
import time
from pathlib import Path

import pytest
from locations import FIXTURES

from evals.items.datasets import (
    CHARS_PER_TOKEN,
    SquadUnavailable,
    dataset_names,
    load_dataset,
    stdlib_corpus,
)
from evals.items.datasets.squad import load_squad, sentence_spans
from evals.items.datasets.tiny import TINY_PARAGRAPHS, load_tiny
from evals.items.datasets.tool_output import ALL_KINDS, DEFAULT_KINDS
from evals.items.qa_items import QAItem, Question

FIXTURES = FIXTURES / "datasets"
SQUAD_FIXTURE = FIXTURES / "squad_tiny.jsonl"


@pytest.fixture(scope="session", autouse=True)
def corpus_cache(tmp_path_factory):
    """Keep the docstring cache of this session in a temp dir, not the user's home."""
    old = os.environ.get(stdlib_corpus.CACHE_ENV)
    os.environ[stdlib_corpus.CACHE_ENV] = str(tmp_path_factory.mktemp("corpus-cache"))
    stdlib_corpus.docstring_paragraphs.cache_clear()
    yield Path(os.environ[stdlib_corpus.CACHE_ENV])
    if old is None:
        os.environ.pop(stdlib_corpus.CACHE_ENV, None)
    else:
        os.environ[stdlib_corpus.CACHE_ENV] = old
    stdlib_corpus.docstring_paragraphs.cache_clear()


# name -> params small enough for a fast test; squad reads the fixture.
SMALL = {
    "tiny": {},
    "needles": {"target_tokens": 3_000, "n_items": 2},
    "tool_output": {"target_tokens": 3_000, "n_items": 2},
    "squad": {"data_file": str(SQUAD_FIXTURE), "target_tokens": 150},
}
GENERATED = ("tiny", "needles", "tool_output")


@pytest.fixture(scope="module")
def squad_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hf-cache"))


def _load(name, squad_cache, **overrides):
    params = {**SMALL[name], **overrides}
    if name == "squad":
        params["cache_dir"] = squad_cache
    return load_dataset(name, **params)


# --- every dataset -----------------------------------------------------------------------------


def test_registry_names():
    assert set(dataset_names()) == {"squad", "needles", "tool_output", "tiny", "agent_session",
                                    "session", "session-file"}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_items_keep_evidence_answers_and_ids(name, squad_cache):
    items = _load(name, squad_cache)
    assert items and all(isinstance(it, QAItem) and it.dataset == name for it in items)
    assert len({it.item_id for it in items}) == len(items)
    question_ids = [q.question_id for it in items for q in it.questions]
    assert len(set(question_ids)) == len(question_ids)
    for item in items:
        assert item.meta["python"] == platform.python_version()
        for q in item.questions:
            assert q.answers and q.evidence in item.history
            if q.meta.get("extractive", True):
                start, end = q.answer_span()
                assert q.evidence[start:end] == q.answers[0]
            offset = q.meta["evidence_offset"]
            assert item.history[offset : offset + len(q.evidence)] == q.evidence


@pytest.mark.parametrize("name", GENERATED)
def test_generated_evidence_is_unique_and_history_fits_target(name, squad_cache):
    for item in _load(name, squad_cache):
        assert len(item.history) <= item.meta["target_tokens"] * CHARS_PER_TOKEN
        assert item.meta["estimated_tokens"] <= item.meta["target_tokens"]
        for q in item.questions:
            assert item.history.count(q.evidence) == 1, q.evidence


@pytest.mark.parametrize("name", sorted(SMALL))
def test_same_seed_same_items_other_seed_other_items(name, squad_cache):
    first = [it.to_dict() for it in _load(name, squad_cache, seed=3)]
    again = [it.to_dict() for it in _load(name, squad_cache, seed=3)]
    assert first == again
    if name == "squad":  # 4 paragraphs: some seed among a few must reorder them
        others = [[it.history for it in _load(name, squad_cache, seed=s)] for s in range(6)]
        assert len({tuple(h) for h in others}) > 1
    else:
        other = _load(name, squad_cache, seed=4)
        assert [it.history for it in other] != [d["history"] for d in first]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_items_round_trip_through_dicts(name, squad_cache):
    for item in _load(name, squad_cache):
        data = json.loads(json.dumps(item.to_dict()))
        again = QAItem.from_dict(data)
        assert again == item and dict(again.meta) == dict(item.meta)


def test_items_refuse_evidence_missing_from_history():
    q = Question("q1", "What is it?", ("x",), "not in the history")
    with pytest.raises(ValueError, match="does not occur verbatim"):
        QAItem("i1", "tiny", "some history text", (q,), 0, {})
    with pytest.raises(ValueError, match="non-empty answer"):
        Question("q2", "What?", (), "evidence")


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("nope", {}, "unknown dataset"),
        ("needles", {"depth": [0.5]}, r"unknown params \['depth'\]"),
        ("needles", {"depths": [1.5]}, "depth must be a number in"),
        ("needles", {"depths": []}, "non-empty list"),
        ("needles", {"depths": "0.5"}, "non-empty list"),
        ("needles", {"depths": [0.5, 0.5]}, "distinct"),
        ("needles", {"target_tokens": 0}, "target_tokens"),
        ("needles", {"target_tokens": 200_001}, "at most 200,000"),
        ("needles", {"seed": -1}, "seed"),
        ("needles", {"n_items": 0}, "n_items"),
        ("needles", {"target_tokens": 50, "depths": [0, 0.2, 0.4, 0.6, 0.8]}, "too small"),
        ("tiny", {"seed": 1.5}, "seed must be an integer"),
        ("tool_output", {"kinds": ["bogus"]}, "unknown question kinds"),
        ("tool_output", {"kinds": "line_content"}, "non-empty list"),
        ("tool_output", {"questions_per_item": 0}, "questions_per_item"),
        ("squad", {"split": "test"}, "split must be one of"),
        ("squad", {"data_file": "/nonexistent/dev.json"}, "does not exist"),
        ("squad", {"data_file": str(SQUAD_FIXTURE), "n_items": 0}, "n_items"),
    ],
)
def test_bad_params_raise_value_error(name, params, message):
    with pytest.raises(ValueError, match=message):
        load_dataset(name, **params)


# --- needles -----------------------------------------------------------------------------------


def test_needles_sit_at_their_depths_in_order():
    item = load_dataset("needles", target_tokens=8_000, depths=[0.9, 0.1, 0.5])[0]
    by_depth = sorted(item.questions, key=lambda q: q.meta["depth"])
    offsets = [item.history.index(q.evidence) for q in by_depth]
    assert offsets == sorted(offsets)
    for q in item.questions:
        assert abs(item.history.index(q.evidence) / len(item.history) - q.meta["depth"]) < 0.03
        assert item.history.count(q.answers[0]) == 1  # the value exists only in its needle
        assert q.question.endswith("?") and q.answers[0] not in q.question


def test_needles_haystack_is_stdlib_docstring_prose():
    item = load_dataset("needles", target_tokens=4_000)[0]
    text = item.history
    for q in item.questions:
        text = text.replace(" " + q.evidence, "").replace(q.evidence + " ", "")
    corpus = set(stdlib_corpus.docstring_paragraphs())
    paragraphs = text.split("\n\n")
    assert all(p in corpus for p in paragraphs)
    # ...and the prose is really in the source: the opening words of a paragraph appear in a
    # docstring of some stdlib file, read here with ast independently of the extractor.
    words = paragraphs[1].split()[:3]
    pattern = re.compile(r"\s+".join(map(re.escape, words)))
    found = False
    for source in stdlib_corpus.stdlib_source_files():
        text = source.path.read_text(encoding="utf-8", errors="replace")
        if not pattern.search(text):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        if any(
            pattern.search(ast.get_docstring(n) or "")
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            found = True
            break
    assert found


def test_stdlib_files_skip_private_and_test_modules():
    files = stdlib_corpus.stdlib_source_files()
    assert len(files) > 100
    for f in files:
        parts = f.rel.split("/")
        assert not parts[0].startswith(("_", "test"))
        assert all(p not in ("tests", "idle_test") for p in parts)
        assert not parts[-1].startswith(("_", "test")) or parts[-1] == "__init__.py"
        assert f.path.is_file() and f.rel.endswith(".py")


def test_200k_token_needles_item_is_fast_and_full():
    stdlib_corpus.docstring_paragraphs()  # corpus warm, as after the first item of a run
    started = time.perf_counter()
    item = load_dataset("needles", target_tokens=200_000)[0]
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0
    assert 0.98 * 800_000 <= len(item.history) <= 800_000
    assert len(item.questions) == 3


def test_docstring_disk_cache_round_trips(corpus_cache):
    extracted = stdlib_corpus.docstring_paragraphs()  # this session's cache dir is a temp dir
    cache_files = list(corpus_cache.glob("stdlib-docstrings-py*.json"))
    assert len(cache_files) == 1
    assert platform.python_version() in cache_files[0].name
    stdlib_corpus.docstring_paragraphs.cache_clear()
    started = time.perf_counter()
    assert stdlib_corpus.docstring_paragraphs() == extracted  # read back from disk
    assert time.perf_counter() - started < 1.0


def test_damaged_or_stale_disk_cache_is_not_trusted(tmp_path):
    damaged = tmp_path / "damaged.json"
    damaged.write_text("{not json")
    assert stdlib_corpus._load_cached(damaged) is None
    stale = tmp_path / "stale.json"
    version = stdlib_corpus.EXTRACTOR_VERSION + 1
    stale.write_text(json.dumps({"extractor_version": version, "paragraphs": ["x"]}))
    assert stdlib_corpus._load_cached(stale) is None


# --- tiny --------------------------------------------------------------------------------------


def test_tiny_does_not_depend_on_the_interpreter(monkeypatch):
    def boom():
        raise AssertionError("tiny must not read the stdlib corpus")

    monkeypatch.setattr(stdlib_corpus, "docstring_paragraphs", boom)
    items = load_dataset("tiny")
    assert items == load_tiny()
    assert len(items) == 2 and all(len(it.questions) == 2 for it in items)
    for item in items:
        text = item.history
        for q in item.questions:
            text = text.replace(" " + q.evidence, "").replace(q.evidence + " ", "")
        assert all(p in TINY_PARAGRAPHS for p in text.split("\n\n"))


# --- tool output -------------------------------------------------------------------------------

_QUESTION_FORMS = {
    "definition_line": re.compile(r"On which line of (\S+) is (class|function) (\w+) defined\?"),
    "line_content": re.compile(r"What does line (\d+) of (\S+) contain\?"),
    "file_of_definition": re.compile(r"Which file under (\S+)/ defines (class|function) (\w+)\?"),
    "find_directory": re.compile(r"In which directory does `find (\S+)` list the file (\S+)\?"),
    "indentation": re.compile(r"How many spaces of indentation does line (\d+) of (\S+) have\?"),
}


def _source_lines(rel: str) -> list[str]:
    return (stdlib_corpus.stdlib_root() / rel).read_text(encoding="utf-8").splitlines()


def _definitions(rel: str, name: str) -> list[int]:
    """Lines defining `name` in the file, found with ast (independent of the generator's regex)."""
    tree = ast.parse((stdlib_corpus.stdlib_root() / rel).read_text(encoding="utf-8"))
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    ]


@pytest.fixture(scope="module")
def tool_items():
    return load_dataset(
        "tool_output", target_tokens=12_000, n_items=3, questions_per_item=20, kinds=list(ALL_KINDS)
    )


def test_tool_output_answers_match_the_real_files(tool_items):
    root = stdlib_corpus.stdlib_root()
    seen_kinds = set()
    for item in tool_items:
        for q in item.questions:
            kind = q.meta["kind"]
            seen_kinds.add(kind)
            m = _QUESTION_FORMS[kind].fullmatch(q.question)
            assert m, q.question
            answer = q.answers[0]
            if kind == "definition_line":
                rel, _, name = m.groups()
                assert _definitions(rel, name) == [int(answer)]
                assert re.match(rf"( *{answer}\t|{re.escape(rel)}:{answer}:)", q.evidence)
            elif kind == "line_content":
                number, rel = int(m.group(1)), m.group(2)
                assert _source_lines(rel)[number - 1].strip() == answer
                assert q.evidence == f"{number:>6}\t{_source_lines(rel)[number - 1]}"
            elif kind == "file_of_definition":
                directory, _, name = m.groups()
                assert answer.startswith(directory + "/") and _definitions(answer, name)
                assert q.evidence.startswith(f"{answer}:")
            elif kind == "find_directory":
                directory, filename = m.groups()
                assert answer.startswith(directory) and (root / answer / filename).is_file()
                assert q.evidence == f"{answer}/{filename}"
            else:
                number, rel = int(m.group(1)), m.group(2)
                line = _source_lines(rel)[number - 1]
                assert len(line) - len(line.lstrip(" ")) == int(answer)
                assert q.meta["extractive"] is False
    assert seen_kinds >= {"definition_line", "line_content", "file_of_definition"}


def test_tool_output_blocks_reproduce_the_files(tool_items):
    """Every `cat -n` block holds the file's real lines, numbered as `cat -n` numbers them."""
    checked = 0
    for item in tool_items:
        for block in item.history.split("\n\n$ "):
            header, *lines = block.removeprefix("$ ").split("\n")
            m = re.fullmatch(r"cat -n (\S+) \| sed -n '(\d+),(\d+)p'", header)
            if m:
                rel, first, last = m.group(1), int(m.group(2)), int(m.group(3))
                source = _source_lines(rel)
                assert lines == [f"{n:6d}\t{source[n - 1]}" for n in range(first, last + 1)]
                checked += 1
                continue
            m = re.fullmatch(r"grep -rn '([^']+)' (\S+)/( \| head -n \d+)?", header)
            if m:
                for line in lines:
                    rel, number, text = line.split(":", 2)
                    assert rel.startswith(m.group(2) + "/")
                    assert _source_lines(rel)[int(number) - 1] == text
                    assert re.search(m.group(1), text)
                checked += 1
                continue
            m = re.fullmatch(r"find (\S+) -name '\*\.py'( \| head -n \d+)?", header)
            assert m, header
            for line in lines:
                assert line.startswith(m.group(1))
                assert (stdlib_corpus.stdlib_root() / line).is_file()
    assert checked >= 3


def test_tool_output_default_kinds_leave_out_indentation():
    assert "indentation" not in DEFAULT_KINDS
    items = load_dataset("tool_output", target_tokens=3_000)
    assert {q.meta["kind"] for it in items for q in it.questions} <= set(DEFAULT_KINDS)
    only = load_dataset("tool_output", target_tokens=3_000, kinds=["indentation"])
    assert {q.meta["kind"] for it in only for q in it.questions} == {"indentation"}


# --- squad -------------------------------------------------------------------------------------


def _squad_questions(items):
    return {q.question_id: q for it in items for q in it.questions}


def test_squad_fixture_questions_and_evidence(squad_cache):
    items = load_squad(data_file=SQUAD_FIXTURE, target_tokens=1_000, cache_dir=squad_cache)
    assert len(items) == 1  # four short paragraphs fit one 4,000-character history
    item = items[0]
    assert item.history.count("\n\n") == 3 and item.meta["split"] == "validation"
    questions = _squad_questions(items)
    assert len(questions) == 12
    assert questions["lh-1"].answers == ("1871", "in 1871")  # duplicates dropped, order kept
    expected_evidence = {
        # "Dr." is an abbreviation, not a sentence end
        "lh-2": "Dr. Elsa Marr, the engineer who designed its lens, later wrote a short memoir "
        "about the project.",
        # "A." is an initial
        "sv-2": "A survey led by A. Okoye in 2019 counted 41 species of beetle on the marsh.",
        # answer_start picks the second "pendulum", in the second sentence
        "ck-2": "Clockmakers once fixed this with a mercury jar on the pendulum, and the jar rose "
        "as the rod expanded.",
        # a wrong answer_start falls back to the first occurrence of the text
        "ck-3": "A mechanical clock loses time when its pendulum grows longer in summer heat.",
        "sv-3": "The team returned in 2022 and found the count unchanged.",  # after a "!"
    }
    for qid, evidence in expected_evidence.items():
        assert questions[qid].evidence == evidence
    assert questions["ck-2"].answer_span() == (54, 62)


def test_squad_packs_to_target_and_caps(squad_cache):
    one_each = load_squad(data_file=SQUAD_FIXTURE, target_tokens=100, cache_dir=squad_cache)
    assert len(one_each) == 4 and all("\n\n" not in it.history for it in one_each)
    capped = load_squad(
        data_file=SQUAD_FIXTURE, target_tokens=100, n_items=2, max_questions_per_item=2,
        cache_dir=squad_cache,
    )
    assert len(capped) == 2 and all(len(it.questions) == 2 for it in capped)
    for it, full in zip(capped, one_each):  # same packing; sampled questions keep their order
        assert it.history == full.history
        ids = [q.question_id for q in full.questions]
        picked = [ids.index(q.question_id) for q in it.questions]
        assert picked == sorted(picked)


def _rows():
    return [json.loads(line) for line in SQUAD_FIXTURE.read_text().splitlines()]


def test_squad_official_json_and_parquet_give_the_same_items(tmp_path, squad_cache):
    rows = _rows()
    articles: dict[str, dict] = {}
    for row in rows:
        article = articles.setdefault(row["title"], {"title": row["title"], "paragraphs": []})
        if not article["paragraphs"] or article["paragraphs"][-1]["context"] != row["context"]:
            article["paragraphs"].append({"context": row["context"], "qas": []})
        article["paragraphs"][-1]["qas"].append({
            "id": row["id"],
            "question": row["question"],
            "answers": [
                {"text": t, "answer_start": s}
                for t, s in zip(row["answers"]["text"], row["answers"]["answer_start"])
            ],
        })
    official = tmp_path / "dev-v1.1.json"
    official.write_text(json.dumps({"version": "1.1", "data": list(articles.values())}))

    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "validation.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)

    def load(path):
        return [
            {k: v for k, v in it.to_dict().items() if k != "meta"}
            for it in load_squad(data_file=path, target_tokens=150, cache_dir=squad_cache)
        ]

    reference = load(SQUAD_FIXTURE)
    assert load(official) == reference
    assert load(parquet) == reference


def test_squad_rejects_rows_without_answers(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"context": "A b c.", "question": "What?"}]))
    with pytest.raises(ValueError, match="has no 'answers' field"):
        load_squad(data_file=bad)
    odd = tmp_path / "dev.csv"
    odd.write_text("x")
    with pytest.raises(ValueError, match=r"\.json, \.jsonl or \.parquet"):
        load_squad(data_file=odd)


@pytest.mark.parametrize("variable", ["HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"])
def test_squad_hub_fails_fast_when_offline(variable, monkeypatch):
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv(variable, "1")
    started = time.perf_counter()
    with pytest.raises(SquadUnavailable, match="data_file="):
        load_dataset("squad")
    assert time.perf_counter() - started < 1.0


def test_squad_hub_fails_fast_when_unreachable(monkeypatch):
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: connection refused
    started = time.perf_counter()
    with pytest.raises(SquadUnavailable, match="not reachable.*data_file="):
        load_dataset("squad")
    assert time.perf_counter() - started < 5.0


def test_sentence_spans_cover_text_without_gaps_of_words():
    text = "It rained. Dr. Ruiz left at 5 p.m. on Friday! Then? Nothing."
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == [
        "It rained.",
        "Dr. Ruiz left at 5 p.m. on Friday!",
        "Then?",
        "Nothing.",
    ]


def _text_chars(message) -> int:
    return sum(len(b.get("text", "")) for b in message["content"] if b.get("type") == "text")


def test_talkative_agent_session_carries_conversation_the_pruner_cannot_shrink():
    from evals.items.datasets import load_dataset

    plain, talky = (load_dataset("agent_session", target_tokens=20_000, depths=(0.2, 0.5, 0.8),
                                 talk_share=share)[0] for share in (0.0, 0.6))

    def talk(item) -> float:
        said = sum(_text_chars(m) for m in item.messages if m["role"] in ("user", "assistant"))
        tool = sum(_text_chars(m) for m in item.messages if m["role"] == "toolResult")
        return said / (said + tool)

    # user turns and assistant explanations, not tool output, are at least 60 % of the text
    assert talk(talky) >= 0.6 > talk(plain)
    assert len(talky.questions) == 3
    for q in talky.questions:  # each fact is verbatim in exactly one message
        assert sum(q.evidence in json.dumps(m) for m in talky.messages) == 1
    with pytest.raises(ValueError, match="talk_share"):
        load_dataset("agent_session", target_tokens=20_000, talk_share=0.95)


def test_agent_sessions_of_several_lengths_cycle_over_the_items():
    # target_tokens as a list: item i is the session item i would be at length [i % 2] alone
    from evals.items.datasets import load_dataset

    mixed = load_dataset("agent_session", n_items=3, target_tokens=[20_000, 30_000],
                         depths=(0.5,))
    short = load_dataset("agent_session", n_items=3, target_tokens=20_000, depths=(0.5,))
    long = load_dataset("agent_session", n_items=3, target_tokens=30_000, depths=(0.5,))
    assert [m.item_id for m in mixed] == [short[0].item_id, long[1].item_id, short[2].item_id]
    chars = [sum(_text_chars(m) for m in item.messages) for item in mixed]
    assert chars[1] > 1.3 * chars[0] and chars[1] > 1.3 * chars[2]
    for bad, what in (([], "empty list"), ([20_000, 10], "target_tokens")):
        with pytest.raises(ValueError, match=what):
            load_dataset("agent_session", n_items=2, target_tokens=bad)
