"""Text tokens of the text-only baseline: exact where the tokenizer ships, labelled otherwise.

Why it matters: a frame saves money only against what the same text would cost as text. For
OpenAI models the tokenizer is public (tiktoken's o200k_base / cl100k_base), so the count is
exact. Anthropic, Google, Moonshot and Zhipu do not ship their current tokenizers, so those
counts are estimates, and every answer says which method produced it.

Offline: tiktoken normally downloads its BPE files. litellm's wheel bundles the o200k and cl100k
files under tiktoken's cache names, so when ``TIKTOKEN_CACHE_DIR`` is unset we point tiktoken at
that folder (found without importing litellm) and only call it when the file is really there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from snapcompact.core import estimate_text_tokens

_BPE_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
#: Model id patterns -> the tiktoken encoding that is the model's real tokenizer.
_EXACT: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"gpt-4o|gpt-4\.[15]|gpt-5|gpt-[6-9]|(^|/)o[1-9]|codex|chatgpt", re.I),
     "o200k_base"),
    (re.compile(r"gpt-4(?![o.])|gpt-3\.5|text-embedding-3", re.I), "cl100k_base"),
)


@dataclass(frozen=True)
class TextTokens:
    """A token count and how it was obtained (``exact`` only for the model's own tokenizer)."""

    tokens: int
    method: str
    exact: bool
    encoding: str | None = None


def _bundled_cache_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


def _cache_dir() -> Path | None:
    env = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    return Path(env) if env else _bundled_cache_dir()


@lru_cache(maxsize=4)
def _encoding(name: str):
    """The tiktoken encoding ``name`` if it loads offline, else None (never touches the network)."""
    folder = _cache_dir()
    if folder is None:
        return None
    key = hashlib.sha1(_BPE_URL.format(name=name).encode()).hexdigest()
    if not (folder / key).is_file():
        return None
    try:
        import tiktoken
    except ImportError:
        return None
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding(name)
    except Exception:  # a corrupt cache file must not break billing; fall back to the estimate
        return None
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def tiktoken_encoding(name: str):  # -> tiktoken.Encoding | None (tiktoken stays optional)
    """The tiktoken encoding ``name`` (``o200k_base``, ``cl100k_base``) loaded offline, or None
    when tiktoken or its BPE file is missing; one instance per name."""
    if not isinstance(name, str):
        raise ValueError(f"encoding name must be a string, got {name!r}")
    return _encoding(name)


def exact_encoding(model: str) -> str | None:
    """Name of the tiktoken encoding that is ``model``'s own tokenizer, or None."""
    for pattern, name in _EXACT:
        if pattern.search(model):
            return name
    return None


def count_text_tokens(text: str, model: str | None = None) -> TextTokens:
    """Tokens of ``text`` for ``model``: exact for OpenAI models, a labelled estimate elsewhere.

    Estimates use o200k_base as a proxy tokenizer when it is available offline
    (``estimate:o200k-proxy``), else ``ceil(chars / 4)`` (``estimate:chars/4``).
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if model is not None and not isinstance(model, str):
        raise ValueError(f"model must be a string, got {model!r}")
    if not text:
        return TextTokens(0, "empty", True)
    name = exact_encoding(model) if model else None
    if name is not None:
        enc = _encoding(name)
        if enc is not None:
            return TextTokens(len(enc.encode(text, disallowed_special=())),
                              f"exact:tiktoken:{name}", True, name)
    proxy = _encoding("o200k_base")
    if proxy is not None:
        out = TextTokens(len(proxy.encode(text, disallowed_special=())), "estimate:o200k-proxy",
                         False, "o200k_base")
    else:
        out = TextTokens(estimate_text_tokens(len(text)), "estimate:chars/4", False)
    if name is not None:
        _fell_back(name, str(model), out.method)
    return out


_log = logging.getLogger(__name__)


@lru_cache(maxsize=None)
def _fell_back(encoding: str, model: str, method: str) -> None:
    """Say once per model and counter that a model's own tokenizer was not available offline
    and which counter stood in: an OpenAI model's text is then billed by an estimate (for
    gpt-5.5, chars/4 counts ~17 % fewer tokens than o200k_base on an agent session)."""
    _log.warning("%s: its tokenizer %s is not available offline (tiktoken's BPE file, bundled "
                 "with litellm in the [evals] extra), so text is counted by %s instead, not "
                 "exactly; install snapcompact[evals] or set TIKTOKEN_CACHE_DIR to a folder "
                 "holding %s.tiktoken under tiktoken's cache name", model, encoding, method,
                 encoding)
