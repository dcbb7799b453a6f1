"""The persisted archive: frames and text under ``preserveData["snapcompact"]``, read and checked.

Why separate: the stored shape is the contract with the reference (``{frames[], totalChars,
truncatedChars, text?, textHead?, textTail?}``, plus ``sourceChars`` on pinned frames); reading it
back must reject damage with a clear message whatever produced it, and both the compactor and
the context builder read it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from snapcompact.core import on_disk_key

PRESERVE_KEY = "snapcompact"
Policy = Literal["pinned", "foveated"]
POLICIES: tuple[str, ...] = ("pinned", "foveated")
#: Provider-native compaction payloads a snapcompact pass supersedes.
PROVIDER_COMPACTION_KEYS = ("openaiRemoteCompaction", "anthropicCompaction")
BLOB_PREFIX = "blob:sha256:"
#: The persisted key of a frame's ink (``ArchiveFrame.ink``): the reference's word, kept on disk
#: so archives stay readable by (and from) the reference; the word lives in the old-spellings table.
INK_KEY = on_disk_key("archive_ink")


# ---------------------------------------------------------------------------------------------
# Persisted model


def _int(raw: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{where}: {key} must be a number, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{where}: {key} must be a whole number, got {value!r}")
        value = int(value)
    return value


def _opt_str(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class ArchiveFrame:
    """One persisted frame: base64 PNG (or a ``blob:sha256:`` reference) plus its reading grid.

    ``ink`` is the frame's ink (``bw``, ``sent``); the persisted key is :data:`INK_KEY`, the
    reference's name for it, so archives stay readable by (and from) the reference.
    """

    data: str
    mime_type: str
    cols: int
    rows: int
    chars: int
    font: str | None = None
    ink: str | None = None
    line_repeat: int | None = None
    columns: int | None = None
    stopword_dim: bool | None = None
    detail: str | None = None
    source_chars: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Persisted camelCase JSON; optional reading-grid keys only when known."""
        out: dict[str, Any] = {"data": self.data, "mimeType": self.mime_type, "cols": self.cols,
                               "rows": self.rows, "chars": self.chars}
        for key, value in (("font", self.font), (INK_KEY, self.ink),
                           ("lineRepeat", self.line_repeat), ("columns", self.columns),
                           ("stopwordDim", self.stopword_dim), ("detail", self.detail),
                           ("sourceChars", self.source_chars)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str = "frame") -> ArchiveFrame:
        """Parse one stored frame, raising ``ValueError`` naming ``where`` on a bad field."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"{where} must be an object, got {type(raw).__name__}")
        data = raw.get("data")
        if not isinstance(data, str) or not data:
            raise ValueError(f"{where}: data must be a non-empty string")
        mime = raw.get("mimeType")
        if not isinstance(mime, str):
            raise ValueError(f"{where}: mimeType must be a string, got {mime!r}")
        dim = raw.get("stopwordDim")
        if dim is not None and not isinstance(dim, bool):
            raise ValueError(f"{where}: stopwordDim must be a boolean, got {dim!r}")
        opt_ints = {k: (_int(raw, k, where) if raw.get(k) is not None else None)
                    for k in ("lineRepeat", "columns", "sourceChars")}
        if opt_ints["sourceChars"] is not None and opt_ints["sourceChars"] < 0:
            raise ValueError(f"{where}: sourceChars must be non-negative")
        return cls(data, mime, _int(raw, "cols", where), _int(raw, "rows", where),
                   _int(raw, "chars", where), _opt_str(raw, "font", where),
                   _opt_str(raw, INK_KEY, where), opt_ints["lineRepeat"], opt_ints["columns"],
                   dim, _opt_str(raw, "detail", where), opt_ints["sourceChars"])


@dataclass(frozen=True)
class Archive:
    """The persisted archive: frames oldest to newest, counters, and the text they came from.

    ``text`` is the kept normalized source (the frames' text, then the tail); ``text_head`` and
    ``text_tail`` are the verbatim regions before and after the imaged middle.
    """

    frames: tuple[ArchiveFrame, ...] = ()
    total_chars: int = 0
    truncated_chars: int = 0
    text: str | None = None
    text_head: str | None = None
    text_tail: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "frames", tuple(self.frames))
        for name in ("text", "text_head", "text_tail"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"archive {name} must be a string, got {type(value).__name__}")
            if value == "":
                object.__setattr__(self, name, None)

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to carry over: no frames and no source text."""
        return (not self.frames and self.text is None and self.text_head is None
                and self.text_tail is None)

    def to_json(self) -> dict[str, Any]:
        """Persisted camelCase JSON; text keys only when present."""
        out: dict[str, Any] = {"frames": [f.to_json() for f in self.frames],
                               "totalChars": self.total_chars,
                               "truncatedChars": self.truncated_chars}
        for key, value in (("text", self.text), ("textHead", self.text_head),
                           ("textTail", self.text_tail)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Archive:
        """Strict parse: every frame must be valid, and an archive must hold frames or text."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"archive must be an object, got {type(raw).__name__}")
        frames_raw = raw.get("frames", [])
        if not isinstance(frames_raw, list):
            raise ValueError("archive frames must be a list")
        frames = tuple(ArchiveFrame.from_json(f, f"frame {i}") for i, f in enumerate(frames_raw))
        texts = {k: _opt_str(raw, k, "archive") for k in ("text", "textHead", "textTail")}
        archive = cls(frames, _int(raw, "totalChars", "archive", 0),
                      _int(raw, "truncatedChars", "archive", 0),
                      texts["text"], texts["textHead"], texts["textTail"])
        if archive.is_empty:
            raise ValueError("archive holds neither frames nor text")
        return archive


def get_preserved_archive(preserve_data: Mapping[str, Any] | None) -> Archive | None:
    """The archive under ``preserve_data["snapcompact"]``, or None (reference semantics).

    Lenient like the reference: frames missing a field are skipped, non-string or empty texts
    ignored, counters that are not numbers read as 0; an archive left with neither frames nor
    text is rejected (None). Use :meth:`Archive.from_json` for a strict parse.
    """
    if not isinstance(preserve_data, Mapping):
        return None
    raw = preserve_data.get(PRESERVE_KEY)
    if not isinstance(raw, Mapping):
        return None
    frames: list[ArchiveFrame] = []
    if isinstance(raw.get("frames"), list):
        for i, item in enumerate(raw["frames"]):
            try:
                frames.append(ArchiveFrame.from_json(item, f"frame {i}"))
            except ValueError:
                continue

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    def counter(key: str) -> int:
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            return 0
        return int(value) if float(value).is_integer() else value  # type: ignore[return-value]

    archive = Archive(tuple(frames), counter("totalChars"), counter("truncatedChars"),
                      text("text"), text("textHead"), text("textTail"))
    return None if archive.is_empty else archive


def strip_preserved_archive(preserve_data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``preserve_data`` without the archive key; None when nothing else remains."""
    if preserve_data is None:
        return None
    if not isinstance(preserve_data, Mapping):
        raise ValueError(f"preserve data must be a mapping, got {type(preserve_data).__name__}")
    if PRESERVE_KEY not in preserve_data:
        return dict(preserve_data)
    rest = {k: v for k, v in preserve_data.items() if k != PRESERVE_KEY}
    return rest or None


