"""Text -> printable text: normalization exactly as the reference, renderability, stopword
dimming, word wrap. Depends on :mod:`snapcompact.core` only.

Modules: ``printable`` (normalization), ``code_point_rules`` (what it does with one code point)
and ``code_points`` (the shipped table made from those rules), ``unicode17`` (Unicode 17 as
JavaScriptCore sees it), ``folds`` (ASCII folds), ``ansi`` (``Bun.stripANSI``), ``coverage``
(which code points each font draws), ``dimming`` (stopword dimming), ``word_wrap`` (the
two-column shapes' wrap).

The names below are the public API; everything else is internal and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcompact.core import lazy_exports

if TYPE_CHECKING:
    from snapcompact.text.ansi import strip_ansi
    from snapcompact.text.coverage import supported
    from snapcompact.text.dimming import STOPWORDS, dim_stopwords
    from snapcompact.text.folds import CHAR_FOLD, EMOJI_FOLD
    from snapcompact.text.printable import (
        SAFE_FALLBACK_RATIO,
        Renderability,
        ScanCounts,
        cjk_heavy,
        normalize,
        piece_scan_counts,
        scan_counts,
        scan_renderability,
    )
    from snapcompact.text.word_wrap import wrap

#: Public name -> the module that defines it (imported on first use, so importing one stage
#: does not load the others).
_WHERE: dict[str, str] = {
    "CHAR_FOLD": "folds",
    "cjk_heavy": "printable",
    "dim_stopwords": "dimming",
    "EMOJI_FOLD": "folds",
    "normalize": "printable",
    "Renderability": "printable",
    "SAFE_FALLBACK_RATIO": "printable",
    "scan_renderability": "printable",
    "ScanCounts": "printable",
    "piece_scan_counts": "printable",
    "scan_counts": "printable",
    "STOPWORDS": "dimming",
    "strip_ansi": "ansi",
    "supported": "coverage",
    "wrap": "word_wrap",
}

__all__ = [
    "CHAR_FOLD",
    "EMOJI_FOLD",
    "Renderability",
    "SAFE_FALLBACK_RATIO",
    "STOPWORDS",
    "ScanCounts",
    "cjk_heavy",
    "dim_stopwords",
    "normalize",
    "piece_scan_counts",
    "scan_counts",
    "scan_renderability",
    "strip_ansi",
    "supported",
    "wrap",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, __all__)
