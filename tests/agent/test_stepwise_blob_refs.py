"""The stepwise request census does not crash on an image still stored as a blob reference."""

from __future__ import annotations

import base64

from snapcompact.agent.stepwise import request_text_chars

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_blob_reference_images_are_skipped_and_real_images_collected():
    wire = [{"role": "user", "content": [
        {"type": "text", "text": "abc"},
        {"type": "image", "data": "blob:sha256:" + "0f" * 32, "mimeType": "image/png"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
    ]}]
    chars, frames = request_text_chars(wire)
    assert chars == 3
    assert frames == [PNG]
