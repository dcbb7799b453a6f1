"""The command line: same verbs and outputs as the reference tool, clear errors with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from locations import GOLDEN
from PIL import Image

from snapcompact.render import decode_rgb, render_many

GOLDEN = GOLDEN / "render"


def run_cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snapcompact", *args], input=stdin,
                          capture_output=True, timeout=120)


def test_render_writes_frames_and_meta(tmp_path) -> None:
    text = (GOLDEN / "cases" / "prose.txt").read_bytes()
    proc = run_cli("render", "--shape", "8on22-bw", "--size", "320", "--out", str(tmp_path), stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["frames"] == len(list(tmp_path.glob("frame*.png")))
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["geometry"] == {"cols": 40, "rows": 14, "capacity": 560}
    golden = sorted((GOLDEN / "frames" / "prose" / "8on22-bw").glob("frame*.png"))
    ours = sorted(tmp_path.glob("frame*.png"))
    assert len(ours) == len(golden)
    for a, b in zip(ours, golden):
        assert np.array_equal(decode_rgb(a.read_bytes()), np.asarray(Image.open(b).convert("RGB")))
    assert [f["chars"] for f in meta["per_frame"]] == [
        f.chars for f in render_many(text.decode(), "8on22-bw", 320)
    ]


def test_render_fast_png_effort_writes_the_same_pixels_in_other_bytes(tmp_path) -> None:
    text = (GOLDEN / "cases" / "prose-full.txt").read_bytes()
    out = {}
    for effort in ("production", "fast"):
        proc = run_cli("render", "--shape", "11on16-bw", "--png-effort", effort,
                       "--out", str(tmp_path / effort), stdin=text)
        assert proc.returncode == 0, proc.stderr
        assert json.loads((tmp_path / effort / "meta.json").read_text())["png_effort"] == effort
        out[effort] = (tmp_path / effort / "frame000.png").read_bytes()
    assert np.array_equal(decode_rgb(out["fast"]), decode_rgb(out["production"]))
    reference = (GOLDEN / "frames" / "prose-full" / "11on16-bw" / "frame000.png").read_bytes()
    assert len(out["production"]) <= len(reference) < len(out["fast"])


def test_normalize_prints_one_json_string() -> None:
    proc = run_cli("normalize", "--shape", "11on16-bw", stdin="a \t b\n\nc → d ✅".encode())
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == "a b\u2588c -> d [OK]"


def test_invalid_utf8_becomes_replacement_characters() -> None:
    proc = run_cli("normalize", "--shape", "8x13-bw", stdin=b"ok \xff\xfe end")
    assert json.loads(proc.stdout) == "ok \ufffd\ufffd end"


@pytest.mark.parametrize(
    "args, message",
    [
        (("render", "--shape", "nope", "--out", "x"), "unknown shape 'nope'"),
        (("render", "--shape", "11on16-bw", "--size", "0", "--out", "x"), "frame size"),
        (("render", "--shape", "11on16-bw", "--size", "20000", "--out", "x"), "frame size"),
        (("geometry", "--shape", "8x8q"), "unknown shape"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, message, tmp_path) -> None:
    args = tuple(str(tmp_path / a) if a == "x" else a for a in args)
    proc = run_cli(*args, stdin=b"hello")
    assert proc.returncode == 2
    assert message in proc.stderr.decode()
    assert "Traceback" not in proc.stderr.decode()


def test_printed_json_escapes_a_lone_surrogate_as_json_stringify_does_and_keeps_order() -> None:
    """JSON.stringify writes a lone surrogate as ``\\udXXX`` and astral characters as they are;
    a summary without one goes out as its UTF-8 bytes, after what was printed before it."""
    code = ("import sys\nfrom snapcompact.cli.commands import _print\n"
            "print('before')\n_print({'a': 'x\\ud800y'})\n_print({'b': '東京😀'})\n"
            "sys.stdout.write('after\\n')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                         env={**os.environ, "PYTHONIOENCODING": "utf-8"}).stdout
    assert out == ('before\n{\n "a": "x\\ud800y"\n}\n{\n "b": "東京😀"\n}\nafter\n').encode()


def test_resolve_and_bill_say_their_fallback_on_stderr():
    # an id no rule of the shape table or the billing table matches: both commands still answer
    # (the reference falls back the same way) but say so where a human reads it
    import subprocess
    import sys

    for verb in (["resolve", "--model", "acme-vision-1"],
                 ["bill", "--model", "acme-vision-1", "--width", "1568", "--height", "700"]):
        out = subprocess.run([sys.executable, "-m", "snapcompact", *verb], capture_output=True,
                             text=True, check=False)
        assert out.returncode == 0
        assert out.stderr.startswith("note: fallback:"), verb
        assert "acme-vision-1" in out.stderr
    known = subprocess.run([sys.executable, "-m", "snapcompact", "resolve", "--model",
                            "claude-sonnet-4-5"], capture_output=True, text=True, check=False)
    assert known.returncode == 0 and known.stderr == ""
