"""The records viewer writes what the run holds, paged, and nothing else.

Expectations come from the fixture run's own description (tests/view_fixture.py: which cells,
which questions, which answers, which frames and contexts were stored), from the stores' files
(bytes and hashes), and from an end-to-end offline run; never from the viewer's own output.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


from view_fixture import CELLS, QUESTIONS, TARGET, build_fixture_run  # noqa: E402

from evals.readers.answer import locate, reading_form  # noqa: E402
from evals.store.records import RECORDS_FILE, Record, upgrade_record  # noqa: E402
from evals.store.transcripts import Reading, TranscriptStore  # noqa: E402
from evals.view import build_site  # noqa: E402
from evals.view.cli import main as view_main  # noqa: E402
from snapcompact.pricing import count_text_tokens  # noqa: E402

PAGE = 2


def read_data(path: Path):
    """The payload of one ``SC.data(name, payload);`` file, and its name."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("SC.data(") and text.endswith(");\n"), path
    name, _, body = text[len("SC.data("):-3].partition(",")
    return json.loads(name), json.loads(body)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("view")
    run = build_fixture_run(root / "run")
    stats = build_site([root / "run"], root / "site", page_size=PAGE, log=lambda _: None)
    return run, root / "site", stats


def questions_of(out: Path) -> dict[str, dict]:
    return {p.stem: read_data(p)[1] for p in (out / "data" / "q").rglob("*.js")}


def test_every_data_file_names_itself(site):
    _, out, _ = site
    for path in (out / "data").rglob("*.js"):
        name, _ = read_data(path)
        assert (out / "data" / f"{name}.js") == path


def test_index_has_one_row_per_cell_with_its_counts(site):
    run, out, stats = site
    _, index = read_data(out / "data" / "index.js")
    got = {(c["strategy"], c["policy"], c["shape"]): c for c in index["cells"]}
    assert set(got) == set(run.cells)
    answers = {(s, p, shape): a for s, p, shape, _, _, a, _ in CELLS}
    gold = {qid: g for qid, _, g, _, _ in QUESTIONS}
    for key, cell in got.items():
        rounds = cell["rounds"]
        n = sum(r[0] for r in rounds.values())
        correct = sum(r[1] for r in rounds.values())
        assert n == len(run.cells[key])
        if key in answers:
            assert correct == sum(answers[key][q] in gold[q] for q in run.cells[key])
            # q1 in the kept tail, q2 and q3 lost to compactions 1 and 2
            assert set(rounds) == {"r0", "r1", "r2"}
        else:  # the old-format row: no evidence round recorded
            assert set(rounds) == {"rna"} and correct == 1
        assert cell["offline"] and "legibility floor" in cell["label"]
        assert cell["target_model"] == TARGET
    assert stats.questions == len(run.rows) == index["questions"]
    assert index["filters"]["strategy"] == sorted({k[0] for k in run.cells})
    assert index["filters"]["round"] == ["r0", "r1", "r2", "rna"]


def test_question_lists_are_paged_and_filtered(site):
    run, out, _ = site
    _, index = read_data(out / "data" / "index.js")
    qs = questions_of(out)
    for cell in index["cells"]:
        key = (cell["strategy"], cell["policy"], cell["shape"])
        n = len(run.cells[key])
        assert cell["lists"]["all-all"] == math.ceil(n / PAGE)
        for name, pages in cell["lists"].items():
            ids = []
            for number in range(1, pages + 1):
                _, page = read_data(out / "data" / "cells" / cell["id"] / name / f"p{number}.js")
                assert len(page["rows"]) <= PAGE and page["pages"] == pages
                ids += [r["id"] for r in page["rows"]]
            outcome, rnd = name.split("-")
            expected = []
            for qid, q in qs.items():
                if q["cell"] != cell["id"]:
                    continue
                rec = q["record"]
                r = rec.get("evidence_round")
                # correct / abstained / wrong apart; a wrong value (no error) on a stated probe
                # (the fixture's rows carry no kind: exact) is also a silent wrong
                got = ("correct" if rec["correct"] and rec["error"] is None else
                       "abstained" if rec["abstained"] and rec["error"] is None else "wrong")
                also = "silent" if got == "wrong" and rec["error"] is None else None
                if outcome != "all" and outcome not in (got, also):
                    continue
                if rnd != "all" and rnd != ("rna" if r is None else f"r{r}"):
                    continue
                expected.append(qid)
            assert sorted(ids) == sorted(expected) and len(set(ids)) == len(ids)


def test_frames_are_the_stored_frames_byte_for_byte(site):
    run, out, stats = site
    copied = {p.stem: p for p in (out / "frames").rglob("*.png")}
    assert set(copied) == run.frames and stats.missing_frames == 0
    for digest, path in copied.items():
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest
        assert data == (run.run_dir / "frames" / digest[:2] / f"{digest}.png").read_bytes()


def test_contexts_and_transcripts_pass_through_unchanged(site):
    run, out, _ = site
    contexts = {read_data(p)[0].split("/")[-1]: read_data(p)[1]
                for p in (out / "data" / "ctx").rglob("*.js")}
    assert contexts == run.contexts
    transcripts = {read_data(p)[0].split("/")[-1]: read_data(p)[1]
                   for p in (out / "data" / "tr").rglob("*.js")}
    assert set(transcripts) == run.transcripts
    for digest, payload in transcripts.items():
        stored = run.run_dir / "transcripts" / digest[:2] / f"{digest}.json"
        assert payload == json.loads(stored.read_bytes())


def test_question_pages_carry_the_record_and_its_context(site):
    run, out, _ = site
    qs = questions_of(out)
    # every page carries its row in the current schema (the legacy schema-2 row upgraded)
    assert sorted(json.dumps(q["record"], sort_keys=True) for q in qs.values()) == sorted(
        json.dumps(upgrade_record(r), sort_keys=True) for r in run.rows)
    assert any(r["schema_version"] == 2 for r in run.rows)
    for q in qs.values():
        rec = q["record"]
        if rec.get("context_hash"):
            assert q["context"] == {"hash": rec["context_hash"]}
            context = run.contexts[rec["context_hash"]]
            assert q["fields"]["strategy"] == rec["strategy"]
            assert q["fields"]["evidence_round"] == rec["evidence_round"]
            assert q["transcript"] == {"hash": rec["reading"]["transcript"]}
            assert q["reading"] == rec["reading"]
            assert q["billed_tokens"] == rec["predicted_prompt_tokens"]
        else:  # old format: frames and question rebuilt from the record
            context = q["context"]["inline"]
            parts = context["messages"][0]["content"]
            assert [p["frame_hash"] for p in parts[:-1]] == rec["frame_hashes"]
            assert [[p["seen_width"], p["seen_height"]] for p in parts[:-1]] == \
                rec["seen_px"]
            assert parts[-1] == {"type": "text", "text": rec["question"]}
            assert q["fields"]["strategy"] == "" and q["fields"]["evidence_round"] is None
            assert q["transcript"] is None
            assert q["billed_tokens"] == rec["predicted_prompt_tokens"]
        parts = [p for m in context["messages"] for p in m["content"]]
        assert len(q["block_tokens"]) == len(parts)
        for part, tokens in zip(parts, q["block_tokens"], strict=True):
            if part["type"] == "image":
                assert tokens["tokens"] == part["tokens"]
            else:
                assert tokens["tokens"] == count_text_tokens(part["text"], TARGET).tokens


def test_a_question_is_grouped_with_itself_in_every_cell(site):
    run, out, _ = site
    qs = questions_of(out)
    groups = {read_data(p)[0].split("/")[-1]: read_data(p)[1]
              for p in (out / "data" / "g").rglob("*.js")}
    asked = {qid: sum(qid in ids for ids in run.cells.values()) for qid, *_ in QUESTIONS}
    assert len(groups) == len(QUESTIONS)
    for q in qs.values():
        members = groups[q["group"]]["members"]
        assert len(members) == asked[q["record"]["question_id"]]
        assert q["id"] in {m["id"] for m in members}


def test_rebuild_replaces_the_site_and_foreign_folders_are_refused(site, tmp_path):
    run, _, _ = site
    out = tmp_path / "site"
    build_site([run.run_dir], out, log=lambda _: None)
    stale = [out / "data" / "q" / "zz" / "stale.js", out / "frames" / "zz" / "stale.png"]
    for path in stale:
        path.parent.mkdir(parents=True)
        path.write_text("x")
    build_site([run.run_dir], out, log=lambda _: None)
    assert not any(path.exists() for path in stale)
    assert {p.stem for p in (out / "frames").rglob("*.png")} == run.frames
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a viewer site"):
        build_site([run.run_dir], foreign, log=lambda _: None)
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_a_frame_that_does_not_match_its_hash_is_refused(site, tmp_path):
    run, _, _ = site
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run.run_dir, copy)
    victim = next((copy / "frames").rglob("*.png"))
    victim.write_bytes(victim.read_bytes() + b"tampered")
    with pytest.raises(ValueError, match="does not hash to its name"):
        build_site([copy], tmp_path / "site", log=lambda _: None)


def test_cli_writes_a_site_and_names_bad_input(site, tmp_path, capsys):
    run, _, _ = site
    assert view_main([str(run.run_dir), "--out", str(tmp_path / "v"), "--frames",
                      "hardlink"]) == 0
    assert "index.html" in capsys.readouterr().out
    assert (tmp_path / "v" / "index.html").is_file()
    assert view_main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such records file or directory" in err


def _synthetic_row(i: int, cells: int) -> dict:
    row = Record.from_fields(
        run_id="big", experiment="big", dataset="d", item_id=f"item{i // cells // 10}",
        question_id=f"q{(i // cells) % 10}", model="snapocr/ocr-qa", target_model=TARGET,
        arm="image", shape=["11on16-bw", "8on22-bw"][i % cells % 2], frame_size=1024,
        reader="image_qa", seed=0, package_version="x", git_sha="x", shape_table_sha256="x",
        pricing_table_sha256="x", renderer_version="x", frames=0, frame_px=(), frame_hashes=(),
        history_chars=100, text_tokens=10, text_token_method="x", predicted_image_tokens=0,
        predicted_prompt_tokens=10, predicted_cost_usd=None, answer="a" * 40,
        reported_prompt_tokens=None, reported_completion_tokens=None, reported_cost_usd=None,
        latency_s=None, cached=False, error=None, attempts=1, em=0.0, f1=0.0,
        correct=i % 3 == 0, abstained=False, question=f"question {i} " + "x" * 200,
        gold_answers=("a",)).to_json()
    row.update({"strategy": "snapcompact", "policy": ["pinned", "foveated"][i % cells // 2],
                "evidence_round": (i // cells) % 4, "context_hash": None})
    return row


def test_a_10000_question_sweep_is_many_small_files(tmp_path):
    cells, n = 4, 10_000
    run = tmp_path / "run"
    run.mkdir()
    with (run / RECORDS_FILE).open("w") as fh:
        for i in range(n):
            fh.write(json.dumps(_synthetic_row(i, cells)) + "\n")
    stats = build_site([run], tmp_path / "site", page_size=100, log=lambda _: None)
    assert stats.questions == n and stats.cells == cells
    per_cell = n // cells
    _, index = read_data(tmp_path / "site" / "data" / "index.js")
    for cell in index["cells"]:
        # 2,500 questions: 25 pages of 100; a quarter of them in each evidence round
        assert cell["lists"]["all-all"] == math.ceil(per_cell / 100) == 25
        assert [cell["lists"][f"all-r{r}"] for r in range(4)] == [7, 7, 7, 7]
    largest = max((p.stat().st_size, p) for p in (tmp_path / "site").rglob("*") if p.is_file())
    assert largest[0] < 64 * 1024, largest
    html = [p for p in (tmp_path / "site").glob("*.html")]
    assert len(html) == 4


def test_locate_returns_the_answer_span_in_the_reading():
    transcript = "noise   before. The deploy  key is KX7-2O481 and rotates.\nmore"
    found = locate(transcript, "The deploy key is KX7-20481 and rotates.", ["KX7-20481"])
    reading = reading_form(transcript)
    assert found.answer == "KX7-2O481"
    assert reading[found.answer_start:found.answer_end] == found.answer
    assert "KX7-2O481" in reading[found.start:found.end]


def test_transcript_store_is_content_addressed(tmp_path):
    store = TranscriptStore(tmp_path)
    one = Reading("ocr-qa", "a b c", "b", 100.0, (2, 3), (2, 3), "b")
    other = Reading("ocr-qa", "a b c", "c", 100.0, (4, 5), (4, 5), "c")
    first, second = store.put(one), store.put(other)
    # two questions about the same reading: one file, two sets of spans
    files = list(tmp_path.rglob("*.json"))
    assert first["transcript"] == second["transcript"] and len(files) == 1
    assert hashlib.sha256(files[0].read_bytes()).hexdigest() == first["transcript"]
    assert store.get(first["transcript"]) == {"reading": "a b c"}
    assert (first["answer_span"], second["answer_span"]) == ([2, 3], [4, 5])


def test_an_offline_run_stores_its_readings_and_views(tmp_path, compose_eval):
    """The smoke experiment on the OCR reader: every QA row names a stored reading whose
    answer is the row's answer; the viewer shows every QA row of the real run."""

    from evals.pipeline.run import run_config
    from evals.store.records import iter_records

    cfg = compose_eval([f"results_dir={tmp_path}", "progress=false",
                                     "experiment=smoke"])
    run_config(cfg, tmp_path / "run", base_dir=tmp_path)
    rows = list(iter_records(tmp_path / "run" / RECORDS_FILE))
    qa = [r for r in rows if r.reader != "transcribe"]
    assert qa and all(r.error is None for r in rows)
    for r in qa:
        part = r.reading
        digest = part["transcript"]
        path = tmp_path / "run" / "transcripts" / digest[:2] / f"{digest}.json"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        reading = json.loads(path.read_bytes())["reading"]
        assert part["answer"] == r.answer
        if part["answer_span"]:
            lo, hi = part["answer_span"]
            assert reading[lo:hi] == r.answer
        else:
            assert r.abstained
    assert all("reading" not in r.extra for r in rows if r.reader == "transcribe")
    stats = build_site([tmp_path / "run"], tmp_path / "site", log=lambda _: None)
    assert stats.questions == len(qa) and stats.missing_frames == 0
    assert stats.frames == len({h for r in qa for h in r.frame_hashes})
    assert stats.transcripts == len({r.reading["transcript"] for r in qa})
