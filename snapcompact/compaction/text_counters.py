"""Text-token counters as production counts them, one per model line, chosen by a setting.

Why: every compaction number (threshold, cut point, keep budget, frame cap, projection) is a sum
of per-message token counts, and the coding agent (pi-agent-core ``Tokenizer.countMessage``)
counts text with the model's *native tokenizer family* from its catalog, not bytes/4. A Claude
Sonnet 4.5 session of 81,067 bytes/4 tokens is 114,528 ``claude-v3`` tokens to production, so a
bytes/4 port compacts later and keeps more tail than production does.

Production's rule (pi-agent-core 18.2.11 ``tokenizer.ts``, the same in coding agent 18.3.4's
bundle, cli.js@14612469): a model whose catalog entry has a ``tokenizer`` family is counted with
that family's exact native counter; a model without one gets ``ceil(UTF-8 bytes / 4)`` per text
fragment (o200k_base instead when ``PI_TOKENIZER_ACCURATE=1``). The family comes from pi-catalog's
``resolveModelTokenizer`` (``model-tokenizer.ts``; bundled as ``G7r`` at cli.js@12944890):
Opus >= 5 ``claude-v5``, Opus >= 4.7 ``claude-v47``, Sonnet/Fable/Mythos >= 5
``claude-v5-sonnet``, every other Claude ``claude-v3``; Qwen >= 3.5 ``qwen3``; DeepSeek
``deepseek-v3``; Kimi ``kimi-k2``; GLM >= 5 ``glm5``; GPT, Gemini and the rest: none.

Counters here, all per fragment and summed (as the native ``countTokens`` of an array is):

- ``bytes4``: production's count for a model without a family (exact);
- ``o200k`` / ``cl100k``: tiktoken, loaded offline (production's count under
  ``PI_TOKENIZER_ACCURATE=1``, and the GPT lines' own tokenizers);
- ``claude-v3`` / ``claude-v47`` / ``claude-v5`` / ``claude-v5-sonnet``: the ``ctok`` package
  (the offline Claude token-count reconstruction that pi-natives' Claude encodings are built
  from), content tokens only (its single-message frame subtracted, as pi-natives leaves it out);
- ``qwen3`` / ``deepseek-v3`` / ``kimi-k2`` / ``glm5``: no Python tokenizer ships offline, so
  o200k (x1.11 for qwen3), the closest measured (an estimate; drift in docs/token-counts.md).

Each counter caches per text (the same messages are counted turn after turn in a replay).
The method string a record carries says how the count relates to production's:
``exact:<counter>`` when it is production's own count for that model line, else
``estimate:<production's family>~<counter>``. ``compaction.textTokenizer = "auto-fast"`` counts
a family as o200k x its fitted scale (ctok is pure Python, ~60k chars/s on new text).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache

from snapcompact.compaction.ctok_pieces import piecewise_ctok_counter
from snapcompact.compaction.settings import TEXT_TOKENIZERS
from snapcompact.compaction.tokens import DEFAULT_ESTIMATOR, TokenEstimator, byte_estimate, utf8_len
from snapcompact.pricing import tiktoken_encoding

__all__ = [
    "CLAUDE_FALLBACK_SCALES",
    "CLAUDE_FAMILIES",
    "CTOK_FIX",
    "ESTIMATE_SCALES",
    "TEXT_TOKENIZERS",
    "TOKENIZER_FAMILIES",
    "TextCounter",
    "claude_stand_in",
    "counter_named",
    "estimator_for",
    "text_counter_for",
    "tokenizer_family",
]

#: A text counter: all text fragments of one message -> their token count.
TextCounter = Callable[[Sequence[str]], int]

#: pi-catalog's ``ModelTokenizer`` values (types.ts), in its order.
TOKENIZER_FAMILIES: tuple[str, ...] = ("claude-v3", "claude-v47", "claude-v5", "claude-v5-sonnet",
                                       "qwen3", "deepseek-v3", "kimi-k2", "glm5")
#: Claude families -> the ``ctok`` version whose content count matches them (measured on the
#: recorded corpus: docs/token-counts.md). ``claude-v5`` (Opus 5+) is the v4.8 count of the text
#: with its trailing ASCII whitespace dropped (ctok notes Opus 5 does not charge it).
CLAUDE_FAMILIES: dict[str, str] = {"claude-v3": "3.0", "claude-v47": "4.7", "claude-v5": "4.8",
                                   "claude-v5-sonnet": "4.8"}
#: Claude families whose counter matched production on every recorded message (``exact:``);
#: ``claude-v3`` differs on 2 of 437 (emoji sequences, 1-2 tokens), so it is labelled an estimate.
_EXACT_ON_CORPUS = frozenset({"claude-v47", "claude-v5", "claude-v5-sonnet"})
#: Families with no offline Python tokenizer: (base counter, scale), the closest on the recorded
#: corpus (docs/token-counts.md). Scales were fitted on its agent sessions.
ESTIMATE_SCALES: dict[str, tuple[str, float]] = {
    "qwen3": ("o200k", 1.11),
    "deepseek-v3": ("o200k", 1.0),
    "kimi-k2": ("o200k", 1.0),
    "glm5": ("o200k", 1.0),
}
#: ``auto-fast`` for a Claude family, and ``auto`` when the ctok package is missing (fitted
#: like the above).
CLAUDE_FALLBACK_SCALES: dict[str, tuple[str, float]] = {
    "claude-v3": ("o200k", 1.19), "claude-v47": ("o200k", 1.47), "claude-v5": ("o200k", 1.47),
    "claude-v5-sonnet": ("o200k", 1.47)}
_CACHE_SIZE = 1 << 16


#: The real fix when the Claude counter is missing (what scripts/setup.sh runs): every ctok
#: release declares Python >= 3.12, so pip leaves it out on 3.11 although it runs there (its
#: one dependency, regex, comes with tiktoken).
CTOK_FIX = "pip install --no-deps --ignore-requires-python ctok==1.3.0"
_CTOK_MISSING = ("the Claude token counter needs the ctok package, which is not installed (pip "
                 "skips it on Python 3.11 because every ctok release declares Python >= 3.12; "
                 f"it runs on 3.11: {CTOK_FIX})")


_warned_stand_in = [False]


def _warn_stand_in(family: str, base: str, scale: float) -> None:
    """Say once per process, on stderr, that Claude text is counted by a stand-in (a user
    reads it there whatever logging or warning filters a caller set)."""
    if _warned_stand_in[0]:
        return
    _warned_stand_in[0] = True
    sys.stderr.write(
        f"snapcompact: warning: {_CTOK_MISSING}. Until then Claude text ({family}) is counted "
        f"as {base} x{scale:g}, an ESTIMATE (about 2 % high on generated sessions): thresholds "
        "and compactions may differ from the agent's; every count that rests on it is labelled "
        f"estimate:{family}~{base}x{scale:g}.\n")
    sys.stderr.flush()


def _tiktoken_count(name: str) -> Callable[[str], int]:
    enc = tiktoken_encoding(name)
    if enc is None:
        raise RuntimeError(f"the {name} tokenizer is not available offline (needs tiktoken and "
                           "its BPE file: set TIKTOKEN_CACHE_DIR or install litellm, which "
                           "bundles it)")
    return lambda text: len(enc.encode(text, disallowed_special=()))


def ctok_available() -> bool:
    """Whether the ``ctok`` package (the Claude counters) imports."""
    try:
        import ctok  # noqa: F401
    except ImportError:
        return False
    return True


def claude_stand_in(model_id: str | None, setting: str = "auto") -> str | None:
    """Why the counter :func:`text_counter_for` picks for ``model_id`` would be a stand-in for
    the agent's Claude counter (ctok is missing), naming the fix; None when it is not."""
    family = tokenizer_family(model_id) if model_id else None
    if setting != "auto" or family not in CLAUDE_FALLBACK_SCALES or ctok_available():
        return None
    base, scale = CLAUDE_FALLBACK_SCALES[family]
    return (f"{model_id}'s text would be counted by a stand-in ({base} x{scale:g} for "
            f"{family}), not the agent's counter: {_CTOK_MISSING}")


def _ctok_count(version: str, strip_trailing_ascii_space: bool = False) -> Callable[[str], int]:
    try:
        import ctok  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(_CTOK_MISSING) from exc

    # ctok.token_count(text, version) less the single-message frame, summed over pieces that
    # tile on their own and memoized (exact: see ctok_pieces).
    content = piecewise_ctok_counter(version)
    if strip_trailing_ascii_space:
        return lambda text: content(text.rstrip(" \t\n\r"))
    return content


def _scaled(base: Callable[[str], int], scale: float) -> Callable[[str], int]:
    return lambda text: int(base(text) * scale + 0.5)


def _scale_of(name: str) -> tuple[str, float] | None:
    """(base, scale) when ``name`` is counted as a scaled base counter, else None."""
    if name.endswith("~fast"):
        family = name.removesuffix("~fast")
        return ESTIMATE_SCALES.get(family) or CLAUDE_FALLBACK_SCALES[family]
    if name in ESTIMATE_SCALES:
        return ESTIMATE_SCALES[name]
    if name in CLAUDE_FALLBACK_SCALES and not ctok_available():
        return CLAUDE_FALLBACK_SCALES[name]
    return None


def _fragment_counter(name: str) -> Callable[[str], int]:
    if name == "bytes4":
        return lambda text: (utf8_len(text) + 3) >> 2
    if name in ("o200k", "cl100k"):
        return _tiktoken_count(f"{name}_base")
    if name.startswith("ctok-v"):
        return _ctok_count(name.removeprefix("ctok-v"))
    scaled = _scale_of(name)
    if scaled is not None:
        base, scale = scaled
        try:
            counter = _fragment_counter(base)
        except RuntimeError as exc:
            if name in CLAUDE_FALLBACK_SCALES:  # ctok missing and its stand-in unavailable too
                raise RuntimeError(_CTOK_MISSING + f"; its stand-in ({base} x{scale}) is not "
                                   f"available either: {exc}") from exc
            raise
        if name in CLAUDE_FALLBACK_SCALES:
            _warn_stand_in(name, base, scale)
        return counter if scale == 1.0 else _scaled(counter, scale)
    if name in CLAUDE_FAMILIES:
        return _ctok_count(CLAUDE_FAMILIES[name], strip_trailing_ascii_space=name == "claude-v5")
    raise ValueError(f"unknown text counter {name!r} (known: bytes4, o200k, cl100k, "
                     f"{', '.join(TOKENIZER_FAMILIES)}, <family>~fast, ctok-v<version>)")


@lru_cache(maxsize=None)
def _cached_counter(name: str) -> TextCounter:
    per_text = lru_cache(maxsize=_CACHE_SIZE)(_fragment_counter(name))

    def count(fragments: Sequence[str]) -> int:
        return sum(per_text(f) for f in fragments)

    count.__name__ = f"count_{name.replace('-', '_').replace('.', '_')}"
    return count


def counter_named(name: str, *, cache: bool = True) -> TextCounter:
    """The text counter ``name`` (``bytes4``, ``o200k``, ``cl100k``, a tokenizer family, or
    ``ctok-v<version>``): fragments -> summed tokens. ``cache`` shares one per-text LRU cache
    (65,536 texts) per counter across every caller."""
    if not isinstance(name, str):
        raise ValueError(f"text counter name must be a string, got {name!r}")
    if name == "bytes4":
        return byte_estimate
    if cache:
        return _cached_counter(name)
    per_text = _fragment_counter(name)
    return lambda fragments: sum(per_text(f) for f in fragments)


# --- model line -> tokenizer family (pi-catalog resolveModelTokenizer, provider-agnostic) -------

_CLAUDE = re.compile(r"(?:^|[/.~])claude(?![a-z])")
_CLAUDE_AFTER = re.compile(
    r"claude-(opus|sonnet|haiku|fable|mythos)(?:-(\d+)(?:[.-](\d{1,2})(?!\d))?)?")
_CLAUDE_BEFORE = re.compile(r"claude-(\d+)(?:[.-](\d))?-(opus|sonnet|haiku|fable|mythos)")
_DEEPSEEK = re.compile(r"(?:^|[/.])deepseek(?!.*distill-qwen)")
_KIMI = re.compile(r"(?:^|/)(?:moonshot(?:ai)?/)?kimi")
_QWEN = re.compile(r"(?:^|/|distill-)qwen-?(\d)(?!\d)(?:[.-](\d)(?![\d.]|b))?")
_GLM = re.compile(r"(?:^|/|^zai-)glm-(\d)(?:[.-](\d))?(?![\dv])")


def _rev(major: str | None, minor: str | None) -> tuple[int, int] | None:
    return None if major is None else (int(major), int(minor or 0))


def tokenizer_family(model_id: str) -> str | None:
    """Production's tokenizer family for a model id (any provider prefix), or None (bytes/4).

    Mirrors pi-catalog's ``resolveModelTokenizer(id)`` without a provider; checked against its
    answers for every id in the catalog (tests/golden/tokens/catalog_tokenizers.json.gz)."""
    if not isinstance(model_id, str) or not model_id:
        raise ValueError(f"model id must be a non-empty string, got {model_id!r}")
    bare = model_id.lower()
    if _CLAUDE.search(bare):
        family, rev = None, None
        if m := _CLAUDE_AFTER.search(bare):
            family, rev = m.group(1), _rev(m.group(2), m.group(3))
        elif m := _CLAUDE_BEFORE.search(bare):
            family, rev = m.group(3), _rev(m.group(1), m.group(2))
        if family == "opus" and rev is not None:
            return "claude-v5" if rev >= (5, 0) else "claude-v47" if rev >= (4, 7) else "claude-v3"
        if family in ("sonnet", "fable", "mythos") and rev is not None and rev >= (5, 0):
            return "claude-v5-sonnet"
        return "claude-v3"
    if _DEEPSEEK.search(bare):
        return "deepseek-v3"
    if _KIMI.search(bare):
        return "kimi-k2"
    if m := _QWEN.search(bare):
        rev = _rev(m.group(1), m.group(2))
        return "qwen3" if rev is not None and rev >= (3, 5) else None
    if m := _GLM.search(bare):
        rev = _rev(m.group(1), m.group(2))
        return "glm5" if rev is not None and rev >= (5, 0) else None
    return None


def text_counter_for(model_id: str | None, setting: str = "auto") -> tuple[TextCounter, str]:
    """(counter, text_token_method) for a model line under ``compaction.textTokenizer``.

    ``auto`` picks production's counter: the model's tokenizer family (ctok for Claude, o200k or
    a calibrated o200k scale for the families with no offline tokenizer), bytes/4 for a model
    without one (and when ``model_id`` is None). ``auto-fast`` counts a family's text as o200k
    times its fitted scale instead (an estimate; ctok is pure Python, ~60k chars/s cold). Any
    other value forces that counter.

    The method says how the count relates to production's for this model line:
    ``exact:<counter>`` when it is production's count (bytes/4 for a family-less model; o200k
    too, production's ``PI_TOKENIZER_ACCURATE=1`` mode; a Claude family whose counter matched
    every recorded message), else ``estimate:<production's counting>~<counter>``, with
    ``x<scale>`` for a scaled counter (e.g. ``estimate:qwen3~o200kx1.11``,
    ``estimate:claude-v3~ctok-v3``, ``estimate:claude-v3~bytes4``).
    """
    if setting not in TEXT_TOKENIZERS:
        raise ValueError(f"compaction.textTokenizer must be one of {', '.join(TEXT_TOKENIZERS)}, "
                         f"got {setting!r}")
    family = tokenizer_family(model_id) if model_id is not None else None
    target = family or "bytes4"
    if setting == "auto-fast":
        name = f"{family}~fast" if family is not None else "bytes4"
    else:
        name = target if setting == "auto" else setting
    return counter_named(name), _method_label(name, target)


def _method_label(name: str, target: str) -> str:
    scaled = _scale_of(name)
    if scaled is not None:
        base, scale = scaled
        return f"estimate:{target}~{base}" + ("" if scale == 1.0 else f"x{scale:g}")
    if name in CLAUDE_FAMILIES:
        if name == target and name in _EXACT_ON_CORPUS:
            return f"exact:{name}"
        return f"estimate:{target}~ctok-v{CLAUDE_FAMILIES[name].removesuffix('.0')}"
    if name == target or (target == "bytes4" and name == "o200k"):
        return f"exact:{name}"
    return f"estimate:{target}~{name}"


def estimator_for(model_id: str | None, setting: str = "auto",
                  base: TokenEstimator | None = None) -> tuple[TokenEstimator, str]:
    """``base`` (default: the bytes/4 estimator) counting text as :func:`text_counter_for`
    says, and the ``text_token_method`` to record with its numbers."""
    counter, method = text_counter_for(model_id, setting)
    return replace(base or DEFAULT_ESTIMATOR, count_text=counter), method
