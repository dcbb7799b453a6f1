"""The 6x6u stretch against the reference renderer's own frames (tests/golden/stretch/).

Each golden case is a natural-cell canvas (the reference's 8x8u render of a text, cropped to the
used width) and the reference's 6x6u frame of the same text: squeezing the first must give the
second pixel for pixel.  Regenerate with ``tests/golden/stretch/make_golden.py``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from locations import GOLDEN
from PIL import Image

from snapcompact.render import stretch

GOLDEN = GOLDEN / "stretch"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())


def _rgb(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _check_against_reference(entry: dict, frame: np.ndarray) -> None:
    assert frame.shape == (entry["height"], entry["width"], 3)
    if entry["expected"]:
        expected = _rgb(GOLDEN / entry["expected"])
        diff = np.nonzero((frame != expected).any(axis=2))
        assert len(diff[0]) == 0, f"{len(diff[0])} pixels differ, first at {diff[0][0], diff[1][0]}"
    digest = hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()
    assert digest == entry["sha256"]


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: f"{e['case']}-f{e['frame']}")
def test_stretch_frame_matches_reference(entry: dict) -> None:
    canvas = _rgb(GOLDEN / entry["natural"])
    assert canvas.shape[1] == entry["cols"] * 8
    frame = stretch.stretch_frame(canvas, entry["size"], (8, 8), (6, 6))
    _check_against_reference(entry, frame)


GREY = [e for e in MANIFEST if "-bw-" in e["case"]]


@pytest.mark.parametrize("entry", GREY, ids=lambda e: f"{e['case']}-f{e['frame']}")
def test_grey_canvas_stretches_to_the_reference_on_one_channel(entry: dict) -> None:
    # The renderer squeezes black-and-grey pages on one channel: the same pixels.
    canvas = _rgb(GOLDEN / entry["natural"])
    assert (canvas == canvas[:, :, :1]).all()
    frame = stretch.stretch_frame(np.ascontiguousarray(canvas[:, :, :1]), entry["size"],
                                  (8, 8), (6, 6))
    assert frame.shape[2] == 1
    _check_against_reference(entry, np.repeat(frame, 3, axis=2))


SMALL = [e for e in MANIFEST if e["width"] * e["height"] <= 120_000]


@pytest.mark.parametrize("entry", SMALL, ids=lambda e: f"{e['case']}-f{e['frame']}")
def test_exact_emulation_matches_reference(entry: dict) -> None:
    """The slow full FMA-chain emulation alone reproduces the reference too."""
    canvas = _rgb(GOLDEN / entry["natural"])
    frame = stretch.stretch_frame(canvas, entry["size"], (8, 8), (6, 6), method="exact")
    _check_against_reference(entry, frame)


def test_goldens_cover_both_inks_and_odd_sizes() -> None:
    inks = {e["ink"] for e in MANIFEST}
    sizes = {e["size"] for e in MANIFEST}
    assert inks == {"bw", "sent"}
    assert {64, 320, 1568, 1932} <= sizes and any(s % 6 for s in sizes)


def test_margin_right_of_the_squeezed_grid_stays_white() -> None:
    entry = next(e for e in MANIFEST if e["size"] % 6)
    frame = stretch.stretch_frame(_rgb(GOLDEN / entry["natural"]), entry["size"], (8, 8), (6, 6))
    assert (frame[:, entry["cols"] * 6 :] == 255).all()


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(1, 40),
    st.integers(2, 8),
    st.integers(0, 2**32 - 1),
)
def test_fast_path_equals_exact_emulation(h, w, out_h, out_w, colours, seed) -> None:
    """Up-, down- and same-size resamples of palette images: the fix-up never misses a pixel."""
    rng = np.random.default_rng(seed)
    palette = rng.integers(0, 256, size=(colours, 3), dtype=np.uint8)
    palette[0] = 255
    image = palette[rng.integers(0, colours, size=(h, w))]
    fast = stretch.lanczos3_resize(image, out_w, out_h)
    exact = stretch.lanczos3_resize(image, out_w, out_h, method="exact")
    np.testing.assert_array_equal(fast, exact)


@pytest.mark.parametrize("n_in,n_out", [(2088, 1566), (8, 6), (424, 318), (5, 9)])
def test_weights_are_normalized_and_local(n_in: int, n_out: int) -> None:
    weights = stretch.axis_weights(n_in, n_out)
    sums = weights.dense().astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(sums, 1.0, atol=1e-5)
    filt = max(n_in / n_out, 1.0)
    assert weights.counts.max() <= int(np.ceil(6 * filt)) + 2  # support 3 * filt each side
    assert (np.diff(weights.starts) >= 0).all()


def test_lanczos3_kernel_shape() -> None:
    x = np.array([0.0, 1e-7, 0.5, 1.0, 2.5, 3.0, -3.5], np.float32)
    k = stretch.lanczos3(x)
    assert k.dtype == np.float32
    assert k[0] == 1.0 and k[1] == 1.0 and k[5] == 0.0 and k[6] == 0.0
    assert abs(k[3]) < 1e-6  # zero crossing at integers
    expected_half = np.sinc(0.5) * np.sinc(0.5 / 3)
    assert abs(float(k[2]) - expected_half) < 1e-6


@pytest.mark.parametrize(
    "call",
    [
        lambda: stretch.lanczos3_resize(np.zeros((4, 4, 3), np.float32), 3, 3),
        lambda: stretch.lanczos3_resize(np.zeros((4, 4), np.uint8), 3, 3),
        lambda: stretch.lanczos3_resize(np.zeros((0, 4, 3), np.uint8), 3, 3),
        lambda: stretch.lanczos3_resize(np.zeros((4, 4, 3), np.uint8), 0, 3),
        lambda: stretch.lanczos3_resize(np.zeros((4, 4, 3), np.uint8), 2.5, 3),
        lambda: stretch.lanczos3_resize(np.zeros((4, 4, 3), np.uint8), 3, 3, method="pil"),
        lambda: stretch.stretch_frame(np.zeros((8, 12, 3), np.uint8), 64, (8, 8), (6, 6)),
        lambda: stretch.stretch_frame(np.zeros((8, 8, 3), np.uint8), 0, (8, 8), (6, 6)),
        lambda: stretch.axis_weights(0, 3),
    ],
)
def test_bad_input_raises_value_error(call) -> None:
    with pytest.raises(ValueError):
        call()
