"""The twins' own reading of each provider's image rules: decode the image, count its tokens.

Why a second implementation: ``snapcompact.billing.bill_image`` predicts what a frame costs; a
twin must report what the provider would bill, and if both came from one piece of code the drift
column would compare the code with itself. This module is written from the provider pages
directly (sources on every rule below) and never uses the library's image rules (only its text
counter, ``billed_text_tokens``, for text parts). Where the two
readings differ, the difference shows up as drift in a run against the twins and is listed in
``docs/running-real-models.md``.

The image is really decoded (Pillow), so a truncated or mislabelled payload is refused the way a
provider refuses it, and the dimensions used are those of the decoded image, not of any header
the client claims.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
from dataclasses import dataclass

from snapcompact.billing import billed_text_tokens

__all__ = [
    "DecodedImage",
    "ImageError",
    "anthropic_image_tokens",
    "decode_base64_image",
    "gemini_image_tokens",
    "openai_image_tokens",
    "parse_data_url",
    "text_tokens",
]

#: Pillow format name -> media type, for the four formats every provider here accepts.
_MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
_DATA_URL = re.compile(r"^data:(?P<media>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)$", re.DOTALL)


class ImageError(ValueError):
    """An image block a provider would refuse (bad base64, undecodable, wrong media type)."""


@dataclass(frozen=True)
class DecodedImage:
    """What a provider learns from one image payload."""

    media_type: str  # the type of the decoded bytes, not the one the client declared
    width: int
    height: int
    raw_bytes: int  # decoded size
    base64_chars: int  # size of the payload as sent


def parse_data_url(url: str) -> tuple[str, str]:
    """(declared media type, base64 payload) of a ``data:`` URL."""
    match = _DATA_URL.match(url or "")
    if match is None:
        raise ImageError("image_url is not a base64 data URL (data:<type>;base64,<data>)")
    return match.group("media"), match.group("data")


def decode_base64_image(data: str) -> DecodedImage:
    """Decode a base64 image payload completely (every pixel), or raise ``ImageError``."""
    from PIL import Image, UnidentifiedImageError

    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f"image data is not valid base64: {exc}") from None
    if not raw:
        raise ImageError("image data is empty")
    try:
        with Image.open(io.BytesIO(raw)) as image:
            image.load()  # decodes the pixel data: a truncated stream fails here
            kind = _MEDIA_TYPES.get(image.format or "")
            width, height = image.size
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"could not process image: {exc}") from None
    if kind is None:
        raise ImageError("image format is not one of png, jpeg, gif, webp")
    return DecodedImage(kind, width, height, len(raw), len(data))


# --------------------------------------------------------------------------------------------
# Anthropic: platform.claude.com/docs/en/build-with-claude/vision (checked 2026-12-01)
#   "Each patch is a 28x28 pixel block of the image ... An image therefore costs
#    ceil(width/28) x ceil(height/28) visual tokens." An image larger than the model's native
#   resolution "is first resized to the largest possible size that preserves the aspect ratio";
#   all images are then padded on the bottom and right edges to a multiple of 28 px.
#   Native resolution: the per-model table did not load. The twin reads the limit the same page
#   stated before the patch rule ("long edge more than 1568 pixels, or more than ~1,600 tokens
#   ... scaled down"), i.e. 1568 px and 1,600 visual tokens, for every model except the
#   high-resolution tier (Opus 4.7 and later: 2576 px long edge, 4784 visual tokens, as quoted by
#   claudecodecamp.com and jackin.tailrocks.com).

_ANTHROPIC_PATCH = 28
_ANTHROPIC_HIGH_RES = re.compile(
    r"claude-(opus|sonnet|haiku)-(4-([7-9]|[1-9]\d)(?!\d)|[5-9](?!\d))|fable|mythos", re.IGNORECASE)


def _anthropic_native(model: str) -> tuple[int, int]:
    """(longest edge in px, most visual tokens) a Claude model looks at without resizing."""
    return (2576, 4784) if _ANTHROPIC_HIGH_RES.search(model) else (1568, 1600)


def _patch_grid(width: int, height: int, patch: int) -> int:
    return math.ceil(width / patch) * math.ceil(height / patch)


def anthropic_image_tokens(model: str, width: int, height: int) -> tuple[int, tuple[int, int]]:
    """(visual tokens, size the model sees) for one image sent to a Claude model."""
    long_max, token_max = _anthropic_native(model)
    patch = _ANTHROPIC_PATCH
    if max(width, height) <= long_max and _patch_grid(width, height, patch) <= token_max:
        return _patch_grid(width, height, patch), (width, height)
    # "the largest possible size that preserves the aspect ratio": walk the long edge down from
    # the native limit until the image fits; the short edge is the exact ratio, rounded down
    long_edge = min(long_max, max(width, height))
    while True:
        scale = long_edge / max(width, height)
        seen = (max(1, math.floor(width * scale)), max(1, math.floor(height * scale)))
        if _patch_grid(*seen, patch) <= token_max or long_edge == 1:
            return _patch_grid(*seen, patch), seen
        long_edge -= 1


# --------------------------------------------------------------------------------------------
# OpenAI: platform.openai.com/docs/guides/images-vision#calculating-costs (checked 2026-12-01)
#   Tile models, detail high/auto: "scaled to fit within a 2048 x 2048 square, maintaining their
#   aspect ratio. Then, they are scaled such that the shortest side of the image is 768px long.
#   Finally, we count how many 512px squares the image consists of. Each of those squares costs
#   [tile] tokens. Another [base] tokens are always added." detail low: [base] tokens.
#   Worked examples: 1024x1024 high -> 765; 2048x4096 high -> 1105 (GPT-4o numbers).
#   The twin reads "scaled such that the shortest side is 768px" as a downscale only (every
#   worked example shrinks; an image is never enlarged), see docs/running-real-models.md.
#   detail "original" exists only for the newer patch-billed models; tile models reject it.

_OPENAI_TILE_MODELS: tuple[tuple[re.Pattern[str], int, int], ...] = (
    (re.compile(r"gpt-4o-mini", re.IGNORECASE), 2833, 5667),
    (re.compile(r"gpt-5(-chat)?(?![.\d-])", re.IGNORECASE), 70, 140),
    (re.compile(r"gpt-4o|gpt-4\.1(?!-)|gpt-4\.5|gpt-4-turbo|chatgpt-4o", re.IGNORECASE), 85, 170),
    (re.compile(r"(^|/)o[13](?!\d)", re.IGNORECASE), 75, 150),
)
OPENAI_DETAILS = ("low", "high", "auto")


def openai_tile_prices(model: str) -> tuple[int, int] | None:
    """(base tokens, tokens per 512 px tile) of a tile-billed OpenAI model, or None."""
    for pattern, base, tile in _OPENAI_TILE_MODELS:
        if pattern.search(model):
            return base, tile
    return None


def openai_image_tokens(model: str, width: int, height: int, detail: str
                        ) -> tuple[int, tuple[int, int]]:
    """(image tokens, size the model sees) for one image sent to a tile-billed OpenAI model."""
    prices = openai_tile_prices(model)
    if prices is None:
        raise ImageError(f"the twin knows no image rule for model {model!r}")
    if detail not in OPENAI_DETAILS:
        raise ImageError(f"Invalid value for 'detail': {detail!r} is not supported with this model."
                         f" Supported values are: {', '.join(repr(d) for d in OPENAI_DETAILS)}.")
    base, per_tile = prices
    if detail == "low":
        return base, (min(width, 512), min(height, 512))
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        s = 2048 / max(w, h)
        w, h = w * s, h * s
    if min(w, h) > 768:
        s = 768 / min(w, h)
        w, h = w * s, h * s
    seen = (max(1, int(w)), max(1, int(h)))
    return base + per_tile * _patch_grid(*seen, 512), seen


# --------------------------------------------------------------------------------------------
# Gemini: ai.google.dev/gemini-api/docs/tokens and .../media-resolution (checked 2026-12-01)
#   Gemini 2.x: "images with both dimensions <= 384 pixels are counted as 258 tokens. Images
#   larger in one or both dimensions are cropped and scaled as needed into tiles of 768x768
#   pixels, each counted as 258 tokens." How many tiles is not published: the twin covers the
#   image with 768 px tiles. media_resolution LOW on 2.x: 64 tokens per image.
#   Gemini 3: a fixed budget per image by media_resolution (LOW 280, MEDIUM 560, HIGH 1120,
#   ULTRA_HIGH 2240, the last per part only); unspecified = HIGH for images.

_GEMINI_3 = re.compile(r"gemini-([3-9]|\d{2})", re.IGNORECASE)
GEMINI_3_LEVELS = {"MEDIA_RESOLUTION_LOW": 280, "MEDIA_RESOLUTION_MEDIUM": 560,
                   "MEDIA_RESOLUTION_HIGH": 1120, "MEDIA_RESOLUTION_ULTRA_HIGH": 2240}


def gemini_image_tokens(model: str, width: int, height: int, resolution: str | None
                        ) -> tuple[int, tuple[int, int]]:
    """(image tokens, size the model sees) for one inline image sent to a Gemini model."""
    level = resolution or "MEDIA_RESOLUTION_UNSPECIFIED"
    if _GEMINI_3.search(model):
        if level == "MEDIA_RESOLUTION_UNSPECIFIED":
            level = "MEDIA_RESOLUTION_HIGH"
        if level not in GEMINI_3_LEVELS:
            raise ImageError(f"Invalid media resolution {level!r}")
        return GEMINI_3_LEVELS[level], (width, height)
    if level == "MEDIA_RESOLUTION_LOW":
        return 64, (width, height)
    if width <= 384 and height <= 384:
        return 258, (width, height)
    return 258 * _patch_grid(width, height, 768), (width, height)


# --------------------------------------------------------------------------------------------
# text


def text_tokens(text: str, model: str = "gpt-4o") -> int:
    """Tokens of a text part as ``model``'s provider counts them: the model line's tokenizer
    (Claude's through ctok, OpenAI's exact encoding; see
    :func:`snapcompact.billing.billed_text_tokens`), bytes/4 for a line without one."""
    return billed_text_tokens(text, model)[0] if text else 0
