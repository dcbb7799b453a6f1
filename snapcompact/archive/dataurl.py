"""Collapse inline base64 data URLs into short metadata placeholders.

Why: a character cap that slices through a base64 payload leaves an image reference that
can never decode. Some providers reject such text as invalid image input, and because the
broken text lives on in the archive every later request fails the same way. The payload is
worthless to a model as text anyway, so the whole URL (and a Markdown image wrapper around
it) becomes ``[data URL omitted: <mime>, <N> base64 chars]``.

The matching follows the reference byte for byte, including its JavaScript regex
semantics: ``\\s`` is the ECMAScript white-space set (not Python's), ``\\w`` and
case-insensitivity are ASCII-only, and the elision marker left by a head+tail cut (either
``[…Nch elided…]`` or its normalized ``[...Nch elided...]`` form) may sit inside a payload.

Two contexts:

* ``"source"``: intact text. A short, non-canonical payload such as
  ``data:image/png;base64,abc`` is a prose mention and stays.
* ``"archive"``: text that earlier, structure-blind slicing may have cut anywhere, so
  every recognised data-URL prefix is elided.
"""

from __future__ import annotations

import re
from typing import Literal

from snapcompact.core import JS_WHITESPACE, JS_WS, js_number_to_string

DataUrlContext = Literal["source", "archive"]


#: One elision marker, with Unicode ellipses (as the serializer writes it) or ASCII dots
#: (as it reads after normalization).
_ELIDED_MARKER = r"\[(?:\u2026|\.{3})[0-9]+ch elided(?:\u2026|\.{3})\]"
#: Unquoted RFC 2045 token (media-type parameter name or value).
_MEDIA_TYPE_TOKEN = r"[A-Za-z0-9_!#$%&'*+.^|~-]+"

_DATA_URL_ATOM = re.compile(
    r"data:([A-Za-z][A-Za-z0-9_.+-]*/[A-Za-z0-9_.+-]+"
    rf"(?:;{_MEDIA_TYPE_TOKEN}={_MEDIA_TYPE_TOKEN})*);base64,"
    rf"([A-Za-z0-9+/=]*(?:{JS_WS}*{_ELIDED_MARKER}{JS_WS}*[A-Za-z0-9+/=]*)?)"
    rf"({JS_WS}*\))?",
    re.IGNORECASE | re.ASCII,
)
# Case-sensitive on purpose: the reference's standalone marker regex has no `i` flag, so a
# payload holding "[…5CH ELIDED…]" matches the atom but does not count as a marker.
_ELIDED_MARKER_RE = re.compile(rf"{JS_WS}*{_ELIDED_MARKER}{JS_WS}*")
_FIRST_DIGITS = re.compile(r"[0-9]+")
_BASE64_HINT = re.compile(r";base64,", re.IGNORECASE | re.ASCII)
_CANONICAL_BASE64 = re.compile(
    r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)"
)

#: A non-canonical payload at least this long is a damaged fragment of a real data URL,
#: not a prose mention.
DAMAGED_PAYLOAD_MIN_CHARS = 40


def _markdown_opener_start(text: str, data_index: int, cursor: int) -> int | None:
    """Start of a ``![label](`` (or ``[label](``) opener right before ``data_index``.

    The opener must lie in ``[cursor, data_index)``; whitespace may separate ``](`` from
    the URL. The label may contain ``[`` but not ``]`` or a newline; the earliest ``[``
    wins, and a ``!`` before it is included.
    """
    i = data_index
    while i > cursor and text[i - 1] in JS_WHITESPACE:
        i -= 1
    if i - 2 < cursor or text[i - 1] != "(" or text[i - 2] != "]":
        return None
    opener = -1
    j = i - 3
    while j >= cursor:
        c = text[j]
        if c == "]" or c == "\n":
            break
        if c == "[":
            opener = j
        j -= 1
    if opener < 0:
        return None
    return opener - 1 if opener > cursor and text[opener - 1] == "!" else opener


def _payload_chars(payload: str) -> str:
    """Base64 length to report, as JavaScript would print it."""
    marker = _ELIDED_MARKER_RE.search(payload)
    if marker is None:
        return str(len(payload))
    digits = _FIRST_DIGITS.search(marker.group(0))
    elided = float(digits.group(0)) if digits else 0.0
    total = float(len(payload) - len(marker.group(0))) + elided
    # Local import: serialize imports this module.
    return js_number_to_string(total)


def elide_data_urls(text: str, context: DataUrlContext = "source") -> str:
    """Replace every inline base64 data URL in ``text`` with a placeholder.

    ``context`` is ``"source"`` (intact text: short non-canonical payloads are prose and
    stay) or ``"archive"`` (possibly sliced text: every recognised prefix is elided).
    """
    if context not in ("source", "archive"):
        raise ValueError(f"data-URL context must be 'source' or 'archive', not {context!r}")
    if not isinstance(text, str):
        raise ValueError(f"elide_data_urls needs a str, got {type(text).__name__}")
    if _BASE64_HINT.search(text) is None:
        return text
    out: list[str] = []
    cursor = 0
    for match in _DATA_URL_ATOM.finditer(text):
        url_start, url_end = match.span()
        mime = match.group(1)
        payload = match.group(2)
        closer = match.group(3)
        is_atom = (
            context == "archive"
            or _ELIDED_MARKER_RE.search(payload) is not None
            or _CANONICAL_BASE64.fullmatch(payload) is not None
            or len(payload) >= DAMAGED_PAYLOAD_MIN_CHARS
        )
        if not is_atom:
            # Step over the prose mention so a later wrapper cannot reach back over it.
            out.append(text[cursor:url_end])
            cursor = url_end
            continue
        placeholder = f"[data URL omitted: {mime}, {_payload_chars(payload)} base64 chars]"
        opener_start = _markdown_opener_start(text, url_start, cursor)
        out.append(text[cursor : url_start if opener_start is None else opener_start])
        if opener_start is not None and closer is not None:
            out.append(placeholder)
        else:
            # Only one half of a Markdown wrapper matched: keep that half verbatim.
            if opener_start is not None:
                out.append(text[opener_start:url_start])
            out.append(placeholder)
            out.append(closer or "")
        cursor = url_end
    out.append(text[cursor:])
    return "".join(out)
