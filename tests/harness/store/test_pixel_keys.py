"""The response cache knows a frame by its pixels: another PNG encoding of them is a cache hit.

Expectations come from outside the code under test: Pillow decodes every encoding and says
whether the pixels are equal; the rerun's request count comes from the loopback server, which
counts the HTTP requests litellm really made.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging

import numpy as np
import pytest
from hydra_compose import compose_eval
from PIL import Image

from evals.pipeline.run import run_config
from evals.send.response_cache import (
    CACHE_SCHEMA_VERSION,
    SCHEMA_MARKER,
    CachedResponse,
    ResponseCache,
)
from evals.store.pixel_keys import pixel_digest
from evals.store.records import iter_records

DUMMY_KEY = "sk-test-dummy-0123456789abcdefXYZ"


def _frame_rgb() -> np.ndarray:
    """A small two-colour frame with text-like strokes (deterministic)."""
    rng = np.random.default_rng(7)
    ink = rng.random((48, 80)) < 0.2
    rgb = np.full((48, 80, 3), 255, dtype=np.uint8)
    rgb[ink] = 0
    return rgb


def _pillow_png(image: Image.Image, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", **options)
    return out.getvalue()


def _encodings(rgb: np.ndarray) -> dict[str, bytes]:
    """The same pixels as PNG files from different encoders, levels and colour types."""
    from snapcompact.render import png as snap_png
    image = Image.fromarray(rgb, "RGB")
    out = {f"pillow rgb level {level}": _pillow_png(image, compress_level=level)
           for level in (0, 1, 6, 9)}
    out["pillow palette"] = _pillow_png(image.quantize(colors=2))
    out["pillow grey"] = _pillow_png(image.convert("L"))
    out["snapcompact rgb"] = snap_png.encode_rgb(rgb)
    indexed = np.where(rgb[:, :, 0] == 0, snap_png.BLACK, snap_png.WHITE).astype(np.uint8)
    out["snapcompact indexed"] = snap_png.encode_indexed(indexed)
    return out


def _decoded(png: bytes) -> bytes:
    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB").tobytes()


def test_every_encoding_of_the_same_pixels_has_one_digest():
    rgb = _frame_rgb()
    encodings = _encodings(rgb)
    assert len({hashlib.sha256(png).digest() for png in encodings.values()}) == len(encodings)
    assert {_decoded(png) for png in encodings.values()} == {rgb.tobytes()}  # Pillow agrees
    assert len({pixel_digest(png) for png in encodings.values()}) == 1


def test_a_changed_pixel_or_size_changes_the_digest():
    rgb = _frame_rgb()
    base = pixel_digest(_pillow_png(Image.fromarray(rgb)))
    one_pixel = rgb.copy()
    one_pixel[10, 10] = 255 - one_pixel[10, 10]
    assert pixel_digest(_pillow_png(Image.fromarray(one_pixel))) != base
    # the same bytes of pixels in another shape (48x80 vs 80x48) is another picture
    reshaped = rgb.reshape(80, 48, 3)
    assert pixel_digest(_pillow_png(Image.fromarray(reshaped))) != base


@pytest.mark.parametrize("data, message", [(b"not a png", "not a decodable PNG"),
                                           (b"\x89PNG\r\n\x1a\n", "not a decodable PNG")])
def test_bad_frames_are_refused_in_one_line(data, message):
    with pytest.raises(ValueError, match=message):
        pixel_digest(data)


def test_a_jpeg_is_refused():
    out = io.BytesIO()
    Image.fromarray(_frame_rgb()).save(out, format="JPEG")
    with pytest.raises(ValueError, match="frame is JPEG, expected PNG"):
        pixel_digest(out.getvalue())


@pytest.mark.parametrize("level", [1, 6])
def test_rerun_after_reencoding_the_frames_sends_zero_requests(tmp_path, monkeypatch, level):
    """Frames deflated at another zlib-ng level (the production effort's encoder: the renderer
    reads the level at every call) are other files with the same pixels: the rerun finds every
    answer in the response cache and the server sees no request."""
    from evals.twins.fake_server import FakeChatServer
    from snapcompact.render import png as snap_png
    assert level != snap_png.PRODUCTION_LEVEL
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    overrides = [f"results_dir={tmp_path}", "progress=false", "experiment=smoke",
                 "max_questions_per_item=2", "model=fake", "strategies=[snapcompact]"]
    with FakeChatServer() as server:
        monkeypatch.setenv("SNAPCOMPACT_FAKE_API_BASE", server.api_base)
        first = run_config(compose_eval(overrides), tmp_path / "first", base_dir=tmp_path)
        sent_first = server.requests
        monkeypatch.setattr(snap_png, "PRODUCTION_LEVEL", level)
        again = run_config(compose_eval(overrides), tmp_path / "again", base_dir=tmp_path)
        sent_again = server.requests - sent_first
    rows_first = list(iter_records(tmp_path / "first" / "records.jsonl"))
    rows_again = list(iter_records(tmp_path / "again" / "records.jsonl"))
    assert sent_first == first.requests_sent == len(rows_first) > 0
    png_first = {h for r in rows_first for h in r.frame_hashes}
    png_again = {h for r in rows_again for h in r.frame_hashes}
    assert png_first and png_again and not png_first & png_again  # other bytes, every frame
    frames = tmp_path / "first" / "frames"
    pixels_first = {_decoded((frames / h[:2] / f"{h}.png").read_bytes()) for h in png_first}
    frames = tmp_path / "again" / "frames"
    pixels_again = {_decoded((frames / h[:2] / f"{h}.png").read_bytes()) for h in png_again}
    assert pixels_first == pixels_again  # ... of the same pixels
    assert sent_again == again.requests_sent == 0
    assert again.cache_hits == len(rows_again) == len(rows_first)
    assert sorted(r.answer for r in rows_again) == sorted(r.answer for r in rows_first)


def _entry() -> CachedResponse:
    return CachedResponse(answer="42", prompt_tokens=10, completion_tokens=2, cost_usd=0.001,
                          model="m", latency_s=0.5, created_unix=1.0)


def test_an_old_schema_cache_is_a_clear_miss_said_once(tmp_path, caplog):
    old_key = hashlib.sha256(b"a schema-1 key").hexdigest()
    path = tmp_path / old_key[:2] / f"{old_key[2:]}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**_entry().to_json(), "schema": 1}))
    with caplog.at_level(logging.WARNING, logger="evals.send.response_cache"):
        cache = ResponseCache(tmp_path)
    assert cache.get(old_key) is None  # never read as an answer
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and str(tmp_path) in warned[0] and "not reused" in warned[0]
    # the first answer stored under the current schema marks the folder: no more warnings
    new_key = hashlib.sha256(b"a schema-2 key").hexdigest()
    cache.put(new_key, _entry())
    assert (tmp_path / SCHEMA_MARKER).read_text().strip() == str(CACHE_SCHEMA_VERSION)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="evals.send.response_cache"):
        again = ResponseCache(tmp_path)
    assert caplog.records == []
    assert again.get(new_key) == _entry() and again.get(old_key) is None


def test_a_new_cache_is_marked_without_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="evals.send.response_cache"):
        cache = ResponseCache(tmp_path / "fresh")
        key = hashlib.sha256(b"k").hexdigest()
        cache.put(key, _entry())
        assert cache.get(key) == _entry()
        ResponseCache(tmp_path / "fresh")
    assert caplog.records == []
    assert list(cache.keys()) == [key]


def test_the_offline_readers_transcript_cache_keys_on_pixels_too():
    from evals.readers.ocr import DEFAULT_SETTINGS, cache_key

    rgb = _frame_rgb()
    keys = {cache_key(png, (40, 24), DEFAULT_SETTINGS) for png in _encodings(rgb).values()}
    assert len(keys) == 1
    changed = rgb.copy()
    changed[0, 0] = 255 - changed[0, 0]
    assert cache_key(_pillow_png(Image.fromarray(changed)), (40, 24), DEFAULT_SETTINGS) not in keys
    assert cache_key(_pillow_png(Image.fromarray(rgb)), (80, 48), DEFAULT_SETTINGS) not in keys
