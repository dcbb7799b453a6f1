"""PNG writer: every frame kind decodes (with Pillow, an independent decoder) to its pixels."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from snapcompact.render import PALETTE, encode_indexed, encode_rgb
from snapcompact.render.png import encode_grey


def _decode(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"))


@pytest.mark.parametrize("colours", range(1, 11))
@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 13, 64, 101])
def test_indexed_frames_decode_to_their_palette_colours(colours: int, width: int) -> None:
    rng = np.random.default_rng(colours * 1000 + width)
    used = np.sort(rng.choice(len(PALETTE), size=colours, replace=False))
    canvas = used[rng.integers(0, colours, size=(7, width))].astype(np.uint8)
    png = encode_indexed(canvas)
    assert np.array_equal(_decode(png), PALETTE[canvas])
    with Image.open(io.BytesIO(png)) as image:
        assert len(image.getpalette()) // 3 == len(np.unique(canvas))


@pytest.mark.parametrize("colours", [3, 4])
@pytest.mark.parametrize("width", [5, 8, 13])
def test_two_bit_frames_packed_in_many_bands_decode_to_their_colours(
    monkeypatch, colours: int, width: int
) -> None:
    # Depth 2 packs the rows in bands; with bands of a row or two, every band edge is crossed.
    from snapcompact.render import png as png_module

    monkeypatch.setattr(png_module, "_PACK_BAND_BYTES", 2 * width)
    rng = np.random.default_rng(colours * 100 + width)
    used = np.sort(rng.choice(len(PALETTE), size=colours, replace=False))
    canvas = used[rng.integers(0, colours, size=(9, width))].astype(np.uint8)
    png = encode_indexed(canvas)
    assert np.array_equal(_decode(png), PALETTE[canvas])
    assert png[24] == 2  # IHDR bit depth


@pytest.mark.parametrize("grey", [True, False])
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (64, 33)])
def test_rgb_and_grey_frames_decode_to_their_pixels(grey: bool, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(shape[0] * 100 + shape[1] + grey)
    if grey:
        rgb = np.repeat(rng.integers(0, 256, size=(*shape, 1), dtype=np.uint8), 3, axis=2)
    else:
        rgb = rng.integers(0, 256, size=(*shape, 3), dtype=np.uint8)
    png = encode_rgb(rgb)
    assert np.array_equal(_decode(png), rgb)
    with Image.open(io.BytesIO(png)) as image:
        assert image.mode == ("L" if grey else "RGB")


def test_grey_frames_are_the_rgb_encoders_grey_frames() -> None:
    grey = np.random.default_rng(5).integers(0, 256, size=(9, 13)).astype(np.uint8)
    png = encode_grey(grey)
    assert png == encode_rgb(np.repeat(grey[:, :, None], 3, axis=2))
    assert np.array_equal(_decode(png), np.repeat(grey[:, :, None], 3, axis=2))


@pytest.mark.parametrize("effort", ["production", "fast"])
def test_every_effort_encodes_the_same_pixels(effort: str) -> None:
    rng = np.random.default_rng(11)
    canvas = np.array([0, 7, 8, 1], dtype=np.uint8)[rng.integers(0, 4, size=(40, 57))]
    assert np.array_equal(_decode(encode_indexed(canvas, effort=effort)), PALETTE[canvas])
    rgb = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    assert np.array_equal(_decode(encode_rgb(rgb, effort)), rgb)
    grey = rng.integers(0, 256, size=(6, 5), dtype=np.uint8)
    assert np.array_equal(_decode(encode_grey(grey, effort))[:, :, 0], grey)


def test_production_is_the_default_and_an_unknown_effort_is_refused() -> None:
    canvas = np.tile(np.array([0, 7], dtype=np.uint8), (64, 64))  # repetitive: levels differ
    assert encode_indexed(canvas) == encode_indexed(canvas, effort="production")
    with pytest.raises(ValueError, match="PNG effort must be one of production, fast"):
        encode_indexed(canvas, effort="best")  # type: ignore[arg-type]
