"""One redaction pass for everything the harness writes or prints: text, configs, folder names.

Why one module: a key can travel through the environment, a model param (``api_key``), a nested
param (``extra_headers: {Authorization: Bearer ...}``), a URL (``https://user:pw@host/?key=``)
or a provider's error body, and it must be caught the same way wherever it is about to be
written: ``run_config.yaml``, ``run_spec.json``, Hydra's ``.hydra/*.yaml`` and
``multirun.yaml``, the run and sweep folder names, error messages in records, log lines.

Two complementary rules, both applied by ``redact`` (text) and ``redact_data`` (nested data):

* **names** -- a value stored under a secret-bearing name (``api_key``, ``*_TOKEN``,
  ``Authorization``, ``AWS_SECRET_ACCESS_KEY``, ``password``...) is replaced whole, whatever
  it looks like; in text, ``name=value`` and ``name: value`` pairs are caught the same way;
  the values of secret-named environment variables are removed verbatim wherever they appear;
* **value patterns** -- well-known key shapes (``sk-...``, ``AIza...``, ``AKIA...``,
  ``ghp_...``, ``hf_...``), bearer/basic credentials, passwords in URLs
  (``scheme://user:password@host``) and key-like URL query parameters are replaced wherever
  they appear, under any name or none.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "RedactingFormatter", "is_secret_name", "redact", "redact_data",
           "secret_values"]

REDACTED = "[REDACTED]"

# Words that make a name secret-bearing, matched as whole parts of the name (split on _ - . and
# camelCase), or as the suffix of a glued word (``apikey``, ``xapikey``, ``authtoken``).
# The word must end the name (``text_token_method`` holds no token), except for the words in
# ``_SECRET_ANYWHERE`` (``password_hash``, ``client_secret_value``).
_SECRET_WORDS = ("key", "apikey", "token", "secret", "password", "passwd", "passphrase",
                 "credential", "credentials", "authorization", "auth", "cookie", "signature",
                 "sig")
_SECRET_ANYWHERE = ("secret", "password", "passwd", "credential", "credentials", "apikey")
# Names containing a secret word that hold no secret.
_NOT_SECRET_NAMES = frozenset({"max_tokens", "max_completion_tokens", "tokens", "token_count",
                               "keys", "key_id", "prompt_tokens", "completion_tokens",
                               "reasoning_headroom_tokens", "answer_max_tokens",
                               "transcribe_max_tokens", "total_tokens", "cache_key",
                               "ssh_auth_sock", "monkey"})
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def is_secret_name(name: object) -> bool:
    """Whether a value stored under ``name`` must never be written (``OPENAI_API_KEY`` yes,
    ``max_tokens`` no)."""
    if not isinstance(name, str):
        return False
    lowered = name.lower().strip()
    if lowered in _NOT_SECRET_NAMES or lowered.endswith("_tokens"):
        return False
    parts = [p.lower() for p in _NAME_PART.findall(name)]
    if not parts:
        return False
    if parts[-1] in _SECRET_WORDS or any(p in _SECRET_ANYWHERE for p in parts):
        return True
    if "api" in parts and "key" in parts:  # api_key_2, API_KEY_PRIMARY
        return True
    glued = re.sub(r"[^a-z0-9]", "", lowered)
    return glued.endswith(("apikey", "token", "secret", "password", "secretkey", "accesskey"))


_SECRET_SHAPES = [
    re.compile(r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{6,}"),  # OpenAI, Anthropic (sk-ant-), OpenRouter
    re.compile(r"AIza[0-9A-Za-z_\-]{20,}"),  # Google API keys
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),  # GitHub tokens
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),  # Hugging Face tokens
    re.compile(r"\bxai-[A-Za-z0-9]{20,}\b"),  # xAI
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),  # JWTs
]
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+|%20|\+)[A-Za-z0-9._~+/=\-]{6,}")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@\"'{}]*:)[^@\s/\"'{}]+@")
_URL_QUERY = re.compile(r"(?P<lead>[?&;])(?P<name>[A-Za-z0-9_.\-]+)=(?P<value>[^&#\s\"'<>]+)")
# name=value / name: value / "name": "value" pairs; the name is checked by is_secret_name.
_PAIR = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>["']?\s*(?:=|:)\s*["']?)"""
    r"""(?P<value>(?:(?:bearer|basic|token)\s+)?[^\s"',;}&\]\)]+)""",
    re.IGNORECASE,
)
_ENV_MIN_LEN = 8
_PAIR_MIN_LEN = 6  # "token: none" or "key: name" in prose is not a secret


def _environment_secrets() -> list[str]:
    return [value for name, value in os.environ.items()
            if is_secret_name(name) and len(value) >= _ENV_MIN_LEN]


def _redact_pair(match: re.Match[str]) -> str:
    name = match.group("name").rsplit(".", 1)[-1]
    value = match.group("value")
    if not is_secret_name(name) or "[REDACTED" in value or len(value) < _PAIR_MIN_LEN:
        return match.group(0)
    return match.group("name") + match.group("sep") + REDACTED


def redact(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret replaced by ``[REDACTED]``.

    Exact values of secret-named environment variables and of ``extra_secrets`` go first,
    then key shapes, bearer credentials, URL passwords and secret-named ``name=value`` pairs.
    """
    if not isinstance(text, str):
        text = str(text)
    secrets = sorted({s for s in (*_environment_secrets(), *extra_secrets)
                      if isinstance(s, str) and len(s) >= _ENV_MIN_LEN}, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    for pattern in _SECRET_SHAPES:
        text = pattern.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _URL_QUERY.sub(lambda m: (m.group(0) if not is_secret_name(m.group("name"))
                                      else f"{m.group('lead')}{m.group('name')}={REDACTED}"),
                          text)
    text = _PAIR.sub(_redact_pair, text)
    return text


def redact_data(value: Any, extra_secrets: Iterable[str] = ()) -> Any:
    """A copy of nested data (mappings, lists, scalars) with secrets replaced.

    Values under a secret-bearing key are replaced whole (a mapping under ``headers`` is
    walked, a value under ``Authorization`` is not looked at); strings are passed through
    ``redact``. Walked with an explicit stack, so depth is no limit.
    """
    extra = tuple(extra_secrets)
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, Mapping):
            copy: dict[Any, Any] = {}
            parent[slot] = copy
            for k, v in item.items():
                name = redact(k, extra) if isinstance(k, str) else k
                if is_secret_name(k) and v is not None and v != "":
                    copy[name] = REDACTED
                else:
                    copy[name] = None
                    stack.append((v, copy, name))
        elif isinstance(item, (list, tuple)):
            seq: list[Any] = [None] * len(item)
            parent[slot] = seq
            stack.extend((v, seq, i) for i, v in enumerate(item))
        elif isinstance(item, str):
            parent[slot] = redact(item, extra)
        else:
            parent[slot] = item
    return root[0]


def secret_values(value: Any) -> list[str]:
    """Every string stored under a secret-bearing name anywhere in nested data, plus every
    bearer credential, so that an error message echoing one can be cleaned verbatim."""
    found: list[str] = []
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, secret = stack.pop()
        if isinstance(item, Mapping):
            stack.extend((v, secret or is_secret_name(k)) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, secret) for v in item)
        elif isinstance(item, str):
            if secret:
                found.append(item)
                found.extend(m.group(0).split(None, 1)[-1] for m in _BEARER.finditer(item))
            found.extend(m.group(0).split("@")[0].rsplit(":", 1)[-1]
                         for m in _URL_USERINFO.finditer(item))
    return [s for s in found if len(s) >= _ENV_MIN_LEN]


class RedactingFormatter(logging.Formatter):
    """A logging formatter that passes every formatted line through ``redact``.

    Installed on Hydra's own and the job's log handlers (``configs/hydra/default.yaml``):
    Hydra logs each sweep job's overrides, which may carry a header or a URL with a key.
    ``format`` is the keyword ``logging.config.dictConfig`` passes to a ``()`` factory.
    """

    def __init__(self, format: str | None = None, datefmt: str | None = None,
                 style: str = "%", **_: Any) -> None:
        super().__init__(fmt=format, datefmt=datefmt, style=style)  # type: ignore[arg-type]

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
