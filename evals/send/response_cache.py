"""Content-addressed cache of model answers, so that no question is ever billed twice.

A sweep can be interrupted (Ctrl-C, a dead laptop, a budget stop) and rerun: every answer that
came back before the interruption is found here and costs nothing the second time. The cache key
is a SHA-256 over a canonical JSON of everything that can change the answer and nothing else:

* the model id (with its provider prefix: ``openrouter/anthropic/...`` and ``anthropic/...`` are
  different endpoints and may answer differently);
* the request params that shape the answer (temperature, max_tokens, ...) with the transport and
  credential params removed (api keys, api_base, headers, timeouts, retry counts, metadata): a
  key rotation or a new port for the local server must not invalidate the cache, and a secret must
  never be hashed into a name that ends up in a file listing;
* the prompt: every message's role and text parts, in order;
* for each image part, the digest of the frame's decoded pixels (``frame_hashes``, computed once
  by the caller with :func:`evals.store.pixel_keys.pixel_digest`; the recipe's name is part of the
  key) and its ``detail``, in place of the base64 data URL: hashing megabytes of base64 per request
  would dominate the cached path, and the pixels are what the model sees. Never the PNG bytes:
  another deflate level, zlib-ng in a Pillow wheel or another system zlib give other bytes for
  the same pixels, and must not turn every cached answer into a paid request;
* the renderer version, so a change to the renderer invalidates every answer about its frames.

Old caches. Schema 1 keyed frames on their PNG bytes. Its entries are never read under schema 2
(every key differs, and an entry's own ``schema`` field is checked): a rerun over such a folder
misses cleanly and pays once more. ``ResponseCache`` says so with a warning naming the folder
when it opens a folder of entries without the current ``SCHEMA`` marker; the first entry stored
under the current schema writes the marker, so the warning stops once the folder is in use.

Storage is one JSON file per entry under ``root/ab/cdef....json``. Writes go to a temporary file
in the same directory, are fsynced, then ``os.replace``d over the final name: readers see either
nothing or a complete entry, and concurrent writers (threads, or Hydra's joblib processes) of the
same key simply race to install identical content. Entries are type-checked on read: an entry
with a wrong field type (a hand edit, another tool) is a miss, never a value in a record.

Keys hold content, never locations: the offline reader's side channel names its OCR cache
folder, which is dropped from the key (``LOCATION_READER_INPUTS``), so a results folder that is
moved or copied keeps every hit.

Claims. Processes that share one cache (a Hydra sweep whose jobs ask some identical questions,
two runs started by hand) must not both pay for the same answer. ``claim(key)`` takes an
exclusive ``flock`` on ``ab/<key>.claim`` without blocking; the holder sends the request and
stores the answer, the others wait for the claim and then find the answer here. The kernel
drops a dead process's locks, so a ``kill -9`` never leaves a stale claim behind.

Only successful answers are stored; errors are retried by the next run. The stored value holds
the answer, usage, cost, model, latency and creation time, never the request (which may be
megabytes of images) and never a credential.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evals.store.pixel_keys import PIXEL_DIGEST

__all__ = [
    "CACHE_SCHEMA_VERSION",
    "LOCATION_READER_INPUTS",
    "NON_ANSWER_PARAMS",
    "SCHEMA_MARKER",
    "CacheClaim",
    "CachedResponse",
    "ResponseCache",
    "answer_params",
    "request_key",
]

#: Bumped when the key material or the stored layout changes; part of every key.
#: 1: frames keyed on PNG bytes. 2: frames keyed on decoded pixels (``evals.store.pixel_keys``).
CACHE_SCHEMA_VERSION = 2

#: File in the cache root naming the schema its entries were written with.
SCHEMA_MARKER = "SCHEMA"

log = logging.getLogger(__name__)

#: Request params that never change what the model answers: transport, credentials, bookkeeping.
NON_ANSWER_PARAMS = frozenset(
    {
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "organization",
        "headers",
        "extra_headers",
        "timeout",
        "request_timeout",
        "stream_timeout",
        "max_retries",
        "num_retries",
        "metadata",
        "litellm_metadata",
        "prompt_cache_key",  # routes to a provider's prompt cache: changes the bill only
        "client",
        "user",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_region_name",
        "aws_profile_name",
        "vertex_credentials",
        "vertex_project",
        "vertex_location",
        "azure_ad_token",
    }
)

# Any other param whose name looks like a credential is dropped too (a new provider's
# ``foo_api_key`` must not leak into a key just because nobody listed it above).
_CREDENTIAL_NAME = re.compile(r"(key|token|secret|password|credential|authorization|auth)$", re.I)

_HEX64 = re.compile(r"^[0-9a-f]{64}$")

#: Side-channel fields that say where the reader keeps things, not what it answers from.
LOCATION_READER_INPUTS = frozenset({"ocr_cache_dir"})


def answer_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of ``params`` that can change the answer (credentials and transport removed)."""
    return {
        name: value
        for name, value in params.items()
        if name not in NON_ANSWER_PARAMS and not _CREDENTIAL_NAME.search(name)
    }


def _canonical(value: Any, where: str) -> Any:
    """JSON-ready form in which equal requests are equal text (1.0 and 1 hash alike)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: non-finite number {value!r} cannot be part of a cache key")
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): _canonical(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, BaseException):
        # litellm's mock_response may be an exception instance (tests of the retry path).
        return {"exception": type(value).__name__, "message": str(value)}
    raise ValueError(f"{where}: {type(value).__name__} is not JSON data, cannot be part of a cache "
                     "key")


def _prompt_material(messages: Sequence[Mapping[str, Any]], frame_hashes: Sequence[str]) -> list:
    """Messages with each image data URL replaced by the hash of the frame it carries."""
    frames = iter(frame_hashes)
    used = 0
    out: list = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"messages[{i}] is {type(message).__name__}, expected a mapping")
        content = message.get("content")
        if isinstance(content, str) or content is None:
            parts: Any = content
        elif isinstance(content, Sequence):
            parts = []
            for j, part in enumerate(content):
                if not isinstance(part, Mapping) or "type" not in part:
                    raise ValueError(f"messages[{i}].content[{j}] is not a typed content part")
                if part["type"] == "image_url":
                    try:
                        frame = next(frames)
                    except StopIteration:
                        raise ValueError(
                            f"messages[{i}].content[{j}] is an image but frame_hashes has only "
                            f"{used} entries: pass one SHA-256 per image part, in order"
                        ) from None
                    used += 1
                    image_url = part.get("image_url")
                    detail = image_url.get("detail") if isinstance(image_url, Mapping) else None
                    parts.append({"type": "image", "frame_sha256": frame, "detail": detail})
                else:
                    parts.append({k: v for k, v in part.items() if k != "cache_control"})
        else:
            raise ValueError(f"messages[{i}].content is {type(content).__name__}, expected str or "
                             "list")
        # a prompt-cache breakpoint changes the bill, never the answer: not part of the key
        rest = {k: v for k, v in message.items() if k not in ("content", "cache_control")}
        if isinstance(rest.get("tool_calls"), list):
            rest["tool_calls"] = [{k: v for k, v in c.items() if k != "cache_control"}
                                  if isinstance(c, Mapping) else c for c in rest["tool_calls"]]
        out.append({**rest, "content": parts})
    if used != len(frame_hashes):
        raise ValueError(
            f"frame_hashes has {len(frame_hashes)} entries but the messages carry {used} image "
            "parts: pass one SHA-256 per image part, in order"
        )
    return out


def request_key(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    frame_hashes: Sequence[str],
    renderer_version: str,
    reader_inputs: Mapping[str, Any] | None = None,
) -> str:
    """SHA-256 hex key of everything that can change the answer to this request.

    ``reader_inputs`` is the side channel of the embedded offline reader (evidence, gold
    answers, seen sizes): its reply depends on them, so they are part of its key.  Requests
    to real providers carry none, so their keys ignore metadata entirely.
    """
    if not isinstance(model, str) or not model:
        raise ValueError("model must be a non-empty string such as 'anthropic/claude-sonnet-4-5'")
    if not isinstance(renderer_version, str) or not renderer_version:
        raise ValueError("renderer_version must be a non-empty string")
    for i, frame in enumerate(frame_hashes):
        if not isinstance(frame, str) or not _HEX64.match(frame):
            raise ValueError(f"frame_hashes[{i}] = {frame!r} is not a lowercase SHA-256 hex digest")
    material = {
        "schema": CACHE_SCHEMA_VERSION,
        "model": model,
        "params": _canonical(answer_params(params), "params"),
        "messages": _canonical(_prompt_material(messages, frame_hashes), "messages"),
        "renderer_version": renderer_version,
        "frame_digest": PIXEL_DIGEST,
    }
    if reader_inputs:
        content = {k: v for k, v in reader_inputs.items() if k not in LOCATION_READER_INPUTS}
        material["reader_inputs"] = _canonical(content, "reader_inputs")
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """One stored answer: what the provider said and what it cost, never what we sent."""

    answer: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    model: str
    latency_s: float
    created_unix: float
    cache_read_tokens: int | None = None  # prompt tokens read from the provider's prompt cache
    cache_write_tokens: int | None = None  # prompt tokens written to it (Anthropic bills them)
    reasoning_tokens: int | None = None  # of completion_tokens, reasoning (None: not reported)

    def to_json(self) -> dict[str, Any]:
        return {"schema": CACHE_SCHEMA_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CachedResponse:
        """Checked entry: a wrong schema or field type raises ``ValueError`` (a cache miss)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"cache entry is {type(data).__name__}, expected an object")
        if data.get("schema") != CACHE_SCHEMA_VERSION:
            raise ValueError(f"cache entry schema {data.get('schema')!r} != {CACHE_SCHEMA_VERSION}")

        def count(name: str) -> int | None:
            value = data.get(name)
            if value is None or (isinstance(value, int) and not isinstance(value, bool)
                                 and value >= 0):
                return value
            raise ValueError(f"cache entry {name} = {value!r:.40} is not a token count")

        def number(name: str, *, optional: bool) -> float | None:
            value = data.get(name)
            if value is None and optional:
                return None
            if (isinstance(value, (int, float)) and not isinstance(value, bool)
                    and math.isfinite(value) and value >= 0):
                return float(value)
            raise ValueError(f"cache entry {name} = {value!r:.40} is not a number >= 0")

        for name in ("answer", "model"):
            if not isinstance(data.get(name), str):
                raise ValueError(f"cache entry {name} is not a string")
        return cls(
            answer=data["answer"],
            prompt_tokens=count("prompt_tokens"),
            completion_tokens=count("completion_tokens"),
            cost_usd=number("cost_usd", optional=True),
            model=data["model"],
            latency_s=number("latency_s", optional=False),  # type: ignore[arg-type]
            created_unix=number("created_unix", optional=False),  # type: ignore[arg-type]
            cache_read_tokens=count("cache_read_tokens"),
            cache_write_tokens=count("cache_write_tokens"),
            reasoning_tokens=count("reasoning_tokens"),
        )


class CacheClaim:
    """An exclusive, non-blocking claim on one key across processes (see the module docstring).

    ``try_acquire()`` is True once this object holds the claim; ``release()`` drops it and
    removes the claim file. A claim file can be unlinked by its holder while another process
    opens it, so an acquired lock only counts if the path still names the locked file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        try:
            same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the previous holder removed the file after we opened it
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing drops the lock


class ResponseCache:
    """Directory of ``ab/cdef....json`` entries; safe for concurrent threads and processes."""

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root)
        self.fsync = fsync
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"response cache folder {self.root} cannot be created: "
                             f"{exc.strerror or exc}") from None
        if not self.root.is_dir():
            raise ValueError(f"response cache folder {self.root} is not a directory")
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise ValueError(f"response cache folder {self.root} is not writable")
        self._marked = self._check_schema()

    def _check_schema(self) -> bool:
        """Whether the ``SCHEMA`` marker names this schema; warn when older entries are here."""
        try:
            written = (self.root / SCHEMA_MARKER).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            written = None
        if written == str(CACHE_SCHEMA_VERSION):
            return True
        if written is None and next(iter(self.keys()), None) is not None:
            log.warning("response cache %s holds entries of an older key schema (frames keyed "
                        "on PNG bytes): they are not reused, and their requests are sent again",
                        self.root)
        elif written is not None:
            log.warning("response cache %s was written with key schema %s, this code uses %d: "
                        "its entries are not reused", self.root, written, CACHE_SCHEMA_VERSION)
        return False

    def _write_marker(self) -> None:
        """Name the schema of the entries stored here (after the first one is installed)."""
        tmp = self.root / f".{SCHEMA_MARKER}.{os.getpid()}.tmp"
        try:
            tmp.write_text(f"{CACHE_SCHEMA_VERSION}\n", encoding="ascii")
            os.replace(tmp, self.root / SCHEMA_MARKER)
            self._marked = True
        except OSError:  # the entry is stored; only the old-schema warning may repeat
            pass

    def path_for(self, key: str) -> Path:
        if not _HEX64.match(key):
            raise ValueError(f"cache key {key!r} is not a lowercase SHA-256 hex digest")
        return self.root / key[:2] / f"{key[2:]}.json"

    def get(self, key: str) -> CachedResponse | None:
        """The stored answer for ``key``, or None (missing or unreadable entries are misses)."""
        path = self.path_for(key)
        try:
            with open(path, "rb") as handle:
                data = json.loads(handle.read())
            return CachedResponse.from_json(data)
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError):
            # Written atomically, so this is an entry from another schema or a hand edit:
            # treat it as a miss and let the next put() replace it.
            return None

    def claim(self, key: str) -> CacheClaim:
        """A claim object for ``key`` (not yet acquired; see ``CacheClaim``)."""
        return CacheClaim(self.path_for(key).with_suffix(".claim"))

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, key: str, response: CachedResponse) -> None:
        """Store ``response`` under ``key`` atomically (temp file + fsync + os.replace)."""
        if not isinstance(response, CachedResponse):
            raise ValueError(f"put() takes a CachedResponse, got {type(response).__name__}")
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(response.to_json(), sort_keys=True, ensure_ascii=False).encode("utf-8")
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        if not self._marked:
            self._write_marker()

    def keys(self) -> Iterable[str]:
        """Every stored key (temporary files of writers in progress are skipped)."""
        for shard in sorted(self.root.iterdir()):
            if not (shard.is_dir() and len(shard.name) == 2):
                continue
            for entry in sorted(shard.glob("*.json")):
                if not entry.name.startswith("."):
                    yield shard.name + entry.stem

    def __len__(self) -> int:
        return sum(1 for _ in self.keys())
