"""Hostile-input corpus: every CLI verb and every harness config key, fed what a careless or
hostile user would feed it. Each case must end in a correct result or in one clear line naming
the problem (exit status 2), never a traceback.

CLI cases run ``snapcompact.cli.commands.main`` in-process with stdin replaced; harness cases compose
the Hydra config with the override and validate it (``RunSpec.from_config``), and the cases
that Hydra itself acts on (folder names, group choices, override syntax) go through the
``snapcompact-eval`` entry point as a dry run. The corpus size is asserted (>= 100).
"""

from __future__ import annotations

import io
import json
import os
import sys

import pytest
from locations import REPO

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


from hydra_compose import compose_eval

from snapcompact.cli import commands as cli

PROSE = b"The quick brown fox jumps over the lazy dog. " * 20

# (name, argv, stdin, expectation): "ok" (exit 0, JSON on stdout) or a fragment the one-line
# error must contain.
CLI_CASES: list[tuple[str, list[str], bytes, str]] = [
    # render
    ("render plain", ["render", "--shape", "5x8-bw", "--size", "160"], PROSE, "ok"),
    ("render empty stdin", ["render", "--shape", "5x8-bw"], b"", "ok"),
    ("render whitespace only", ["render", "--shape", "5x8-bw"], b" \n\t \r\n", "ok"),
    ("render invalid utf-8", ["render", "--shape", "5x8-bw", "--size", "160"],
     b"\xff\xfe\xc3(\xa0\xa1", "ok"),
    ("render NUL bytes", ["render", "--shape", "5x8-bw", "--size", "160"], b"a\x00b\x00" * 50,
     "ok"),
    ("render control chars", ["render", "--shape", "8x8u-bw", "--size", "128"],
     bytes(range(32)) * 4, "ok"),
    ("render ANSI escapes", ["render", "--shape", "5x8-bw", "--size", "160"],
     b"\x1b[31mred\x1b[0m \x1b[2Jclear\x1b]0;title\x07", "ok"),
    ("render lone surrogate bytes", ["render", "--shape", "5x8-bw", "--size", "160"],
     b"\xed\xa0\x80 surrogate", "ok"),
    ("render emoji and CJK", ["render", "--shape", "silver16-bw", "--size", "256"],
     "日本語 😀 ﷽ e\u0301".encode(), "ok"),
    ("render one long line", ["render", "--shape", "5x8-bw", "--size", "320"], b"x" * 20000,
     "ok"),
    ("render size 0", ["render", "--shape", "5x8-bw", "--size", "0"], PROSE,
     "frame size must be between"),
    ("render size -5", ["render", "--shape", "5x8-bw", "--size", "-5"], PROSE,
     "frame size must be between"),
    ("render size 1", ["render", "--shape", "5x8-bw", "--size", "1"], PROSE, "too small"),
    ("render size 4", ["render", "--shape", "11on16-bw", "--size", "4"], PROSE, "too small"),
    ("render size huge", ["render", "--shape", "5x8-bw", "--size", "999999"], PROSE,
     "frame size must be between"),
    ("render size text", ["render", "--shape", "5x8-bw", "--size", "abc"], PROSE,
     "invalid int value"),
    ("render size float", ["render", "--shape", "5x8-bw", "--size", "1e3"], PROSE,
     "invalid int value"),
    ("render size empty", ["render", "--shape", "5x8-bw", "--size", ""], PROSE,
     "invalid int value"),
    ("render unknown shape", ["render", "--shape", "nope"], PROSE, "unknown shape"),
    ("render shape path", ["render", "--shape", "../../etc/passwd"], PROSE, "unknown shape"),
    ("render shape empty", ["render", "--shape", ""], PROSE, "unknown shape"),
    ("render no shape", ["render"], PROSE, "required"),
    ("render out empty", ["render", "--shape", "5x8-bw", "--out", ""], PROSE,
     "--out is empty"),
    ("render out blank", ["render", "--shape", "5x8-bw", "--out", "   "], PROSE,
     "--out is empty"),
    ("render out is a file", ["render", "--shape", "5x8-bw", "--out", "{file}"], PROSE,
     "is a file"),
    ("render out below a file", ["render", "--shape", "5x8-bw", "--out", "{file}/sub"], PROSE,
     "Not a directory"),
    ("render out NUL", ["render", "--shape", "5x8-bw", "--out", "a\x00b"], PROSE,
     "null byte"),
    ("render too many frames", ["render", "--shape", "5x8-bw", "--size", "16"], PROSE * 20,
     "more than the cap of 1,000"),
    ("render frames past a low cap", ["render", "--shape", "5x8-bw", "--size", "64",
                                      "--max-frames", "2"], PROSE, "more than the cap of 2"),
    ("render max-frames 0", ["render", "--shape", "5x8-bw", "--max-frames", "0"], PROSE,
     "--max-frames must be >= 1"),
    ("render max-frames negative", ["render", "--shape", "5x8-bw", "--max-frames", "-3"],
     PROSE, "--max-frames must be >= 1"),
    ("render unknown flag", ["render", "--shape", "5x8-bw", "--colour", "red"], PROSE,
     "unrecognized arguments"),
    # normalize
    ("normalize plain", ["normalize", "--shape", "5x8-bw"], PROSE, "ok"),
    ("normalize invalid utf-8", ["normalize", "--shape", "8x8u-bw"], b"\x80\x81abc\xff", "ok"),
    ("normalize NUL", ["normalize", "--shape", "5x8-bw"], b"\x00" * 100, "ok"),
    ("normalize tabs and CR", ["normalize", "--shape", "5x8-bw"], b"a\tb\r\nc\rd", "ok"),
    ("normalize unknown shape", ["normalize", "--shape", "5x8"], PROSE, "unknown shape"),
    ("normalize no shape", ["normalize"], PROSE, "required"),
    ("normalize big input", ["normalize", "--shape", "5x8-bw"], b"word " * 200000, "ok"),
    # geometry
    ("geometry plain", ["geometry", "--shape", "5x8-bw", "--size", "160"], b"", "ok"),
    ("geometry native", ["geometry", "--shape", "11on16-bw"], b"", "ok"),
    ("geometry size 0", ["geometry", "--shape", "5x8-bw", "--size", "0"], b"",
     "frame size must be between"),
    ("geometry size 3", ["geometry", "--shape", "5x8-bw", "--size", "3"], b"", "too small"),
    ("geometry size negative", ["geometry", "--shape", "5x8-bw", "--size", "-1"], b"",
     "frame size must be between"),
    ("geometry size huge", ["geometry", "--shape", "5x8-bw", "--size", "10000000"], b"",
     "frame size must be between"),
    ("geometry unknown shape", ["geometry", "--shape", "zzz"], b"", "unknown shape"),
    ("geometry size text", ["geometry", "--shape", "5x8-bw", "--size", "big"], b"",
     "invalid int value"),
    # resolve
    ("resolve claude", ["resolve", "--model", "claude-sonnet-4-5"], b"", "ok"),
    ("resolve unknown model", ["resolve", "--model", "no-such-model-xyz"], b"", "ok"),
    ("resolve empty model", ["resolve", "--model", ""], b"", "not a model id"),
    ("resolve blank model", ["resolve", "--model", "   "], b"", "not a model id"),
    ("resolve padded model", ["resolve", "--model", " gpt-4o "], b"", "not a model id"),
    ("resolve unknown shape", ["resolve", "--model", "gpt-4o", "--shape", "nope"], b"",
     "unknown shape"),
    ("resolve size too small", ["resolve", "--model", "gpt-4o", "--shape", "11on16-bw",
                                "--size", "5"], b"", "too small"),
    ("resolve size 0", ["resolve", "--model", "gpt-4o", "--shape", "5x8-bw", "--size", "0"],
     b"", "frame size"),
    ("resolve size negative", ["resolve", "--model", "gpt-4o", "--size", "-100"], b"",
     "frame size"),
    ("resolve unknown api", ["resolve", "--model", "gpt-4o", "--api", "carrier-pigeon"], b"",
     "ok"),  # the reference resolves by model rule when the api is not one it knows
    ("resolve weird provider", ["resolve", "--model", "gpt-4o", "--provider", "\x00\x01"], b"",
     "ok"),
    ("resolve no model", ["resolve"], b"", "required"),
    # bill
    ("bill plain", ["bill", "--model", "gpt-4o", "--width", "512", "--height", "512"], b"",
     "ok"),
    ("bill width 0", ["bill", "--model", "gpt-4o", "--width", "0", "--height", "5"], b"",
     "at least 1 px"),
    ("bill height negative", ["bill", "--model", "gpt-4o", "--width", "5", "--height", "-5"],
     b"", "at least 1 px"),
    ("bill absurd width", ["bill", "--model", "gpt-4o", "--width", "100000000", "--height",
                           "5"], b"", "absurd"),
    ("bill width text", ["bill", "--model", "gpt-4o", "--width", "wide", "--height", "5"], b"",
     "invalid int value"),
    ("bill bad detail", ["bill", "--model", "gpt-4o", "--width", "5", "--height", "5",
                         "--detail", "ultra"], b"", "invalid choice"),
    ("bill empty model", ["bill", "--model", "", "--width", "5", "--height", "5"], b"",
     "not a model id"),
    ("bill unknown model", ["bill", "--model", "no-such-model", "--width", "64", "--height",
                            "64"], b"", "ok"),
    ("bill missing height", ["bill", "--model", "gpt-4o", "--width", "5"], b"", "required"),
    # serialize
    ("serialize plain", ["serialize"], json.dumps([{"role": "user", "content": "hi"}]).encode(),
     "ok"),
    ("serialize empty list", ["serialize"], b"[]", "ok"),
    ("serialize empty stdin", ["serialize"], b"", "not valid JSON"),
    ("serialize bad json", ["serialize"], b"[{", "not valid JSON"),
    ("serialize invalid utf-8", ["serialize"], b"\xff\xfe[]", "not valid JSON"),
    ("serialize object not list", ["serialize"], b'{"role": "user"}', "list"),
    ("serialize list of numbers", ["serialize"], b"[1, 2, 3]", "JSON object"),
    ("serialize nested 1000 lists", ["serialize"], b"[" * 1000 + b"]" * 1000, "JSON object"),
    ("serialize nested 100000 lists", ["serialize"], b"[" * 100000 + b"]" * 100000,
     "nested too deeply"),
    ("serialize unknown role", ["serialize"], b'[{"role": "wizard", "content": "x"}]', "role"),
    ("serialize content number", ["serialize"], b'[{"role": "user", "content": 5}]',
     "content"),
    ("serialize NUL in content", ["serialize"],
     json.dumps([{"role": "user", "content": "a\u0000b"}]).encode(), "ok"),
    ("serialize huge number", ["serialize"],
     (b'[{"role": "assistant", "content": [{"type": "toolCall", "id": "1", "name": "f", '
      b'"arguments": {"n": 1e400}}]}]'), "ok"),
    ("serialize NaN literal", ["serialize"],
     (b'[{"role": "assistant", "content": [{"type": "toolCall", "id": "1", "name": "f", '
      b'"arguments": {"n": NaN}}]}]'), "ok"),
    ("serialize args nested 400 deep", ["serialize"], b"{deep400}", "ok"),
    ("serialize args nested 3000 deep", ["serialize"], b"{deep3000}", "ok"),
    ("serialize bad options", ["serialize", "--options", "{nope"], b"[]", "--options"),
    ("serialize options list", ["serialize", "--options", "[1]"], b"[]", "options"),
    ("serialize options wrong type", ["serialize", "--options",
                                      '{"toolResultMaxChars": "lots"}'], b"[]", "must be"),
    ("serialize options negative", ["serialize", "--options",
                                    '{"tool_result_max_chars": -1}'], b"[]", "non-negative"),
    ("serialize huge content", ["serialize"],
     json.dumps([{"role": "user", "content": "y" * 2_000_000}]).encode(), "ok"),
    # no verb, unknown verb
    ("no verb", [], b"", "required"),
    ("unknown verb", ["explode"], b"", "invalid choice"),
]


def _deep_call(depth: int) -> str:
    args = '{"k":' * depth + '{"leaf":1}' + "}" * depth  # json.dumps would recurse
    return ('[{"role": "assistant", "content": [{"type": "toolCall", "id": "1", "name": "f", '
            f'"arguments": {args}}}]}}]')


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


@pytest.mark.parametrize("name,argv,stdin,expect", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_hostile_input(name, argv, stdin, expect, tmp_path, monkeypatch, capsys):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    argv = [a.replace("{file}", str(afile)) for a in argv]
    if argv[:1] == ["render"] and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    if stdin.startswith(b"{deep"):
        stdin = _deep_call(int(stdin[5:-1])).encode()
    monkeypatch.setattr(sys, "stdin", _Stdin(stdin))
    monkeypatch.setattr(sys, "setrecursionlimit", sys.setrecursionlimit)
    try:
        code = cli.main(argv)
    except SystemExit as stop:  # argparse
        code = stop.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if expect == "ok":
        assert code == 0, err
        # an unmeasured model id is answered with the family default and said on stderr
        assert all(line.startswith("note: fallback:") for line in err.splitlines()), err
        assert ("no-such-model" in " ".join(argv)) == bool(err), err
        json.loads(out)
    else:
        assert code == 2, (out, err)
        assert err.count("\n") == 1 and err.endswith("\n"), err
        assert err.startswith("snapcompact"), err
        assert expect in err, err


def test_render_into_a_used_folder_replaces_its_frames(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    for size in ("96", "480"):  # many frames, then one
        monkeypatch.setattr(sys, "stdin", _Stdin(PROSE))
        assert cli.main(["render", "--shape", "5x8-bw", "--size", size, "--out", str(out)]) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["frames"] == 1
    assert sorted(p.name for p in out.iterdir()) == ["frame000.png", "meta.json", "notes.txt"]
    capsys.readouterr()


def test_stdout_full_is_one_line(tmp_path):
    import subprocess

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "snapcompact", "geometry", "--shape",
                               "5x8-bw"], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr == "snapcompact geometry: error: No space left on device\n"


def test_debug_flag_shows_the_traceback(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", _Stdin(b""))
    with pytest.raises(ValueError, match="frame size"):
        cli.main(["--debug", "geometry", "--shape", "5x8-bw", "--size", "0"])


# -- the harness ----------------------------------------------------------------------------------

CONFIG_DIR = REPO / "configs"

# (override(s), expectation): "ok" or a fragment of the ValueError.
CONFIG_CASES: list[tuple[list[str], str]] = [
    (["max_items=0"], "max_items must be an integer >= 1"),
    (["max_items=-4"], "max_items must be an integer >= 1"),
    (["max_items=abc"], "max_items must be an integer"),
    (["max_items=1.5"], "max_items must be an integer"),
    (["max_items=true"], "max_items must be an integer"),
    (["max_items=3"], "ok"),
    (["max_questions_per_item=0"], "max_questions_per_item must be an integer >= 1"),
    (["frame_size=0"], "frame size must be between"),
    (["frame_size=-1"], "frame size must be between"),
    (["frame_size=abc"], "frame size must be an integer"),
    (["frame_size=99999999"], "frame size must be between"),
    (["frame_size=512"], "ok"),
    (["budget_usd=-1"], "budget_usd must be >= 0"),
    (["budget_usd=nan"], "budget_usd must be a finite number"),
    (["budget_usd=inf"], "budget_usd must be a finite number"),
    (["budget_usd=lots"], "budget_usd must be a finite number"),
    (["budget_usd=null"], "ok"),
    (["dry_run=maybe"], "dry_run must be true or false"),
    (["dry_run=1"], "dry_run must be true or false"),
    (["progress=yes"], "progress must be true or false"),
    (["timeout_s=0"], "timeout_s must be > 0"),
    (["timeout_s=-3"], "timeout_s must be > 0"),
    (["timeout_s=forever"], "timeout_s must be a finite number"),
    (["max_attempts=0"], "max_attempts must be an integer >= 1"),
    (["max_frames=0"], "max_frames must be an integer >= 1"),
    (["max_frames=many"], "max_frames must be an integer"),
    (["+serialize=yaml"], "unknown key(s) ['serialize']"),
    (["strategies=[full]", "shapes=[]"], "ok"),
    (["shapes=[]"], "snapcompact needs at least one shape"),
    (["shapes=[nope]"], "unknown shape"),
    (["shapes=[auto,auto]"], "shapes lists a shape twice"),
    (["shapes=[text]"], "the whole history as text is the strategy 'full'"),
    (["shapes=42"], "shapes"),
    (["experiment_name=''"], "experiment_name must be a non-empty string"),
    (["experiment_name=../../x"], "plain folder name"),
    (["experiment_name=/abs"], "plain folder name"),
    (["experiment_name=a b"], "plain folder name"),
    (["results_dir=''"], "results_dir must be a non-empty string"),
    (["results_dir={file}"], "is a file, not a folder"),
    (["cache_dir=''"], "cache_dir must be a non-empty string"),
    (["cache_dir={file}/below"], "is a file, not a folder"),
    (["ocr_cache_dir={file}"], "is a file, not a folder"),
    (["+unknown_key=1"], "unknown key"),
    (["model.name=''"], "model.name must be a non-empty string"),
    (["model.litellm_id=''"], "model.litellm_id must be a non-empty string"),
    (["model.litellm_id='   '"], "model.litellm_id must be a non-empty string"),
    (["model.target_model=''"], "model.target_model must be a non-empty string"),
    (["model.price_model=null"], "model.price_model must be a non-empty string"),
    (["model.concurrency=0"], "model.concurrency must be an integer >= 1"),
    (["model.concurrency=many"], "model.concurrency must be an integer"),
    (["model.rate_limit_rps=0"], "model.rate_limit_rps must be > 0"),
    (["model.rate_limit_rps=-2"], "model.rate_limit_rps must be > 0"),
    (["model.offline_reader=sometimes"], "model.offline_reader must be true or false"),
    (["+model.image_detail=ultra"], "model.image_detail must be one of"),
    (["+model.reasoning_headroom_tokens=-1"], "model.reasoning_headroom_tokens must be"),
    (["model.required_env=[1]"], "model.required_env[0] must be a non-empty string"),
    (["+model.reader_ids.wizard=x"], "model.reader_ids has unknown key"),
    (["+model.params.api_key=sk-" + "x" * 20], "looks like a credential"),
    (["+model.params.aws_secret_access_key=abc"], "looks like a credential"),
    (["+model.params.max_tokens=5"], "must not set 'max_tokens'"),
    (["+model.params.messages=[]"], "must not set 'messages'"),
    (["+model.unknown=1"], "model config has unknown key"),
    (["model.params=5"], "model.params must be a mapping"),
    (["dataset.name=nope"], "dataset"),
    (["+dataset.params.bogus=1"], "unknown params"),
    (["+dataset.extra=1"], "dataset config has unknown key"),
    (["reader.readers=[]"], "reader.readers is empty"),
    (["reader.readers=[wizard]"], "unknown reader"),
    (["reader.answer_max_tokens=0"], "reader.answer_max_tokens must be an integer >= 1"),
    (["reader.answer_max_tokens=-1"], "reader.answer_max_tokens must be"),
    (["+reader.extra=1"], "reader config has unknown key"),
    (["shape=5x8-bw", "shape.name=nope"], "unknown shape"),
    (["shape=5x8-bw", "+shape.variant=nope"], "unknown shape"),  # the old key, still read
    (["shape=5x8-bw", "shape.frame_size=0"], "frame size must be between"),
    (["shape=5x8-bw", "+shape.extra=1"], "shape config has unknown key"),
    (["seed=-1"], "seed must be an integer >= 0"),
    (["seed=abc"], "seed must be an integer >= 0"),
    (["seed=7"], "ok"),
    (["model.api=''"], "model.api must be a non-empty string"),
    (["model.provider=''"], "model.provider must be a non-empty string"),
    (["+model.notes=anything"], "ok"),
]


@pytest.mark.parametrize("overrides,expect", CONFIG_CASES,
                         ids=[" ".join(c[0]) for c in CONFIG_CASES])
def test_config_hostile_values(overrides, expect, tmp_path):
    from evals.spec.run_spec import RunSpec

    afile = tmp_path / "afile"
    afile.write_text("x")
    overrides = [o.replace("{file}", str(afile)) for o in overrides]
    cfg = compose_eval(["model=mock", f"results_dir={tmp_path}", *overrides])
    if expect == "ok":
        RunSpec.from_config(cfg, base_dir=tmp_path)
    else:
        with pytest.raises(ValueError, match=_escape(expect)):
            RunSpec.from_config(cfg, base_dir=tmp_path)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


# Cases Hydra itself acts on: through the console entry point (dry run: nothing is sent).
ENTRY_CASES: list[tuple[list[str], str]] = [
    (["results_dir="], "results_dir is empty"),
    (["results_dir={file}"], "is a file, not a folder"),
    (["experiment_name=../../escape"], "plain folder name"),
    (["shape=../../x"], "Could not find 'shape/../../x'"),
    (["shape=5x8-bw", "shape.variant=nope"], "unknown shape"),  # old key: renamed, then checked
    (["model=../model/mock"], "is not a config name"),
    (["model=no-such-model"], "Could not find 'model/no-such-model'"),
    (["dataset="], "dataset"),
    (["max_items=[unclosed"], "unclosed"),
    (["=value"], "=value"),
    (["model.params.extra_headers={a:1}"], "Could not override 'model.params.extra_headers'"),
    (["cache_dir=/proc/no-such/dir"], "response cache folder"),
    (["dataset.params.n_items=-1"], "n_items must be at least 1"),
    (["+model.params.api_key=sk-" + "y" * 24], "looks like a credential"),
]


@pytest.mark.parametrize("overrides,expect", ENTRY_CASES,
                         ids=[" ".join(c[0]) for c in ENTRY_CASES])
def test_entry_point_hostile_overrides(overrides, expect, tmp_path, monkeypatch, capsys):
    from evals.pipeline.run import main

    afile = tmp_path / "afile"
    afile.write_text("x")
    overrides = [o.replace("{file}", str(afile)) for o in overrides]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["snapcompact-eval", "model=mock", "experiment=smoke",
                                      "progress=false", *overrides])
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("snapcompact-eval: error: "), err
    assert expect in lines[0], err
    assert "y" * 24 not in err


def test_the_corpus_has_at_least_100_cases():
    assert len(CLI_CASES) + len(CONFIG_CASES) + len(ENTRY_CASES) + len(TABLE_CASES) >= 100


# -- the table tool ---------------------------------------------------------------------------------

TABLE_CASES: list[tuple[list[str], str]] = [
    (["{missing}"], "no such records file or directory"),
    (["{records}", "--out", "{file}"], "is a file, not a folder"),
    (["{bad_line}"], "records.jsonl:2: a record is a JSON object"),
    (["{wrong_type}"], "records.jsonl:1: record field 'frames' has the wrong type"),
    (["{records}", "--bootstrap", "many"], "invalid int value"),
    (["{records}", "--alpha", "x"], "invalid float value"),
]


@pytest.mark.parametrize("argv,expect", TABLE_CASES, ids=[" ".join(c[0]) for c in TABLE_CASES])
def test_table_tool_hostile_input(argv, expect, tmp_path, capsys):
    from record_rows import make_record

    from evals.analysis.table import main as table_main
    from evals.store.records import append_records

    afile = tmp_path / "afile"
    afile.write_text("x")
    good = tmp_path / "good" / "records.jsonl"
    append_records(good, [make_record()])
    bad = tmp_path / "bad" / "records.jsonl"
    append_records(bad, [make_record()])
    with open(bad, "a") as fh:
        fh.write("[1, 2]\n")
    append_records(bad, [make_record(question_id="q2")])
    wrong = tmp_path / "wrong" / "records.jsonl"
    wrong.parent.mkdir()
    wrong.write_text(json.dumps({**make_record().to_json(), "frames": "3"}) + "\n")
    places = {"{missing}": str(tmp_path / "nope"), "{records}": str(good.parent),
              "{file}": str(afile), "{bad_line}": str(bad.parent), "{wrong_type}": str(wrong)}
    argv = [places.get(a, a) for a in argv]
    try:
        code = table_main(argv)
    except SystemExit as stop:  # argparse
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert expect in err, err
    assert err.count("\n") == 1 and err.startswith("snapcompact-eval-table: error: "), err
