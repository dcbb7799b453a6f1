"""PNG bytes no larger than the reference's, for the same pixels (issue 45, item 5).

Why: the coding agent's 3 MB payload guard, the request sizes and a provider's 413 read a frame's
bytes, not its pixels; a port that draws the same pixels into bigger files sends less history
per request than production.  The expectations are the reference's own files: byte counts and
pixel digests of its first 1568 px frame of every shape (``golden/render/png_bytes``, recorded
by ``make_reference.py`` with ``upstream-frames``) and the committed golden PNGs of the
``prose-full`` case (every shape at its own frame size, 5x8 at 2576 px).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json

import pytest
from locations import GOLDEN
from PIL import Image

from snapcompact.core import SHAPE_NAMES, get_shape
from snapcompact.render import render_many

REFERENCE_DIR = GOLDEN / "render" / "png_bytes"
REFERENCE = json.loads((REFERENCE_DIR / "reference.json").read_text())
PROSE_FULL = GOLDEN / "render" / "frames" / "prose-full"


def _pixel_sha256(png: bytes) -> str:
    with Image.open(io.BytesIO(png)) as image:
        rgb = image.convert("RGB")
    digest = hashlib.sha256(f"{rgb.size[0]}x{rgb.size[1]}:".encode("ascii"))
    digest.update(rgb.tobytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def text() -> str:
    spec = importlib.util.spec_from_file_location("make_reference",
                                                  REFERENCE_DIR / "make_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made = module.make_text()
    # the text the reference drew, character for character
    assert hashlib.sha256(made.encode("utf-8")).hexdigest() == REFERENCE["text_sha256"]
    return made


def test_every_shape_has_a_reference() -> None:
    assert sorted(REFERENCE["frames"]) == sorted(SHAPE_NAMES)


@pytest.mark.parametrize("variant", SHAPE_NAMES)
def test_a_full_frame_is_no_larger_than_the_reference(text: str, variant: str) -> None:
    expected = REFERENCE["frames"][variant]
    frame = render_many(text, get_shape(variant, REFERENCE["size"]), max_frames=1)[0]
    assert _pixel_sha256(frame.png) == expected["rgb_sha256"]  # the same picture ...
    assert len(frame.png) <= expected["bytes"]  # ... in no more bytes


@pytest.mark.parametrize("variant", SHAPE_NAMES)
def test_the_golden_full_frame_is_no_larger_than_the_reference(variant: str) -> None:
    folder = PROSE_FULL / variant
    size = json.loads((folder / "meta.json").read_text())["shape"]["frameSize"]
    text = (GOLDEN / "render" / "cases" / "prose-full.txt").read_text(encoding="utf-8")
    ours = render_many(text, get_shape(variant, size))
    theirs = sorted(folder.glob("frame*.png"))
    assert len(ours) == len(theirs)
    for frame, path in zip(ours, theirs, strict=True):
        reference = path.read_bytes()
        assert _pixel_sha256(frame.png) == _pixel_sha256(reference)
        assert len(frame.png) <= len(reference)
