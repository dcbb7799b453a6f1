"""The identity of a frame for the response cache: its decoded pixels, not its PNG bytes.

Why: the same frame can be encoded into different bytes. The renderer deflates with zlib-ng or ISA-L
at a chosen effort, Pillow >= 11.1 wheels deflate with zlib-ng, a system zlib may differ again, and
an indexed, grey or RGB PNG of one picture are different files. A key over the bytes would turn an
upgrade of any of them into a cache miss for every frame, and a rerun would pay again for answers
about pictures the model already saw. The model sees pixels, so the key holds pixels: the frame is
decoded, converted to 8-bit RGB (palette and grey frames become the RGB they display), and hashed
with its size. A change to what is drawn still changes the key.

``PIXEL_DIGEST`` names this recipe; it is part of every key (``evals.send.response_cache``), so a
future recipe can never collide with this one.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections import OrderedDict

from PIL import Image

__all__ = ["PIXEL_DIGEST", "pixel_digest"]

#: Recipe name: what the digest covers (8-bit RGB pixels, row-major, after "WxH:").
PIXEL_DIGEST = "rgb8-sha256-v1"

_MEMO_SIZE = 512
_memo: OrderedDict[str, str] = OrderedDict()  # SHA-256 of the PNG bytes -> pixel digest
_memo_lock = threading.Lock()


def _decode_digest(png: bytes) -> str:
    try:
        with Image.open(io.BytesIO(png)) as image:
            if image.format != "PNG":
                raise ValueError(f"frame is {image.format}, expected PNG")
            rgb = image.convert("RGB")
    except (OSError, SyntaxError) as exc:  # Pillow's errors for truncated or foreign data
        raise ValueError(f"frame is not a decodable PNG: {exc}") from None
    width, height = rgb.size
    digest = hashlib.sha256(f"{width}x{height}:".encode("ascii"))
    digest.update(rgb.tobytes())
    return digest.hexdigest()


def pixel_digest(png: bytes) -> str:
    """SHA-256 hex of the frame's size and 8-bit RGB pixels (equal for every encoding of them).

    Decoding costs a few milliseconds per frame; frames recur across the contexts of a sweep
    (a replay carries them forward), so results are remembered by the hash of the bytes.
    """
    if not isinstance(png, (bytes, bytearray, memoryview)):
        raise TypeError(f"frame must be PNG bytes, got {type(png).__name__}")
    data = bytes(png)
    byte_key = hashlib.sha256(data).hexdigest()
    with _memo_lock:
        known = _memo.get(byte_key)
        if known is not None:
            _memo.move_to_end(byte_key)
            return known
    digest = _decode_digest(data)
    with _memo_lock:
        _memo[byte_key] = digest
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return digest
