"""Folds to ASCII the reference applies before drawing: status emoji and typographic punctuation.

Why a table: these code points have no useful Unicode compatibility decomposition, yet tool output
is full of them (check marks, smart quotes, arrows); the reference prints each as a fixed ASCII
stand-in, and so must we for the same frames (digest §d).
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# Fold tables (digest §d)
# ---------------------------------------------------------------------------------------------

#: Status-like pictographs that carry meaning in tool output, printed as a bracketed label.
EMOJI_FOLD: dict[str, str] = {
    **dict.fromkeys("\u2705\u2611\u2714", "[OK]"),
    **dict.fromkeys("\u274c\u274e\u2716", "[FAIL]"),
    "\u26a0": "[WARN]",
    "\U0001f6a8": "[ALERT]",
    "\u2139": "[INFO]",
    "\U0001f41b": "[BUG]",
    "\U0001f4a5": "[CRASH]",
    "\U0001f525": "[HOT]",
    "\U0001f512": "[LOCK]",
    "\U0001f513": "[UNLOCK]",
    **dict.fromkeys("\U0001f4c1\U0001f4c2", "[DIR]"),
    "\U0001f4c4": "[FILE]",
    "\U0001f4dd": "[NOTE]",
    "\U0001f9ea": "[TEST]",
    **dict.fromkeys("\u23f3\u231b", "[WAIT]"),
    "\U0001f680": "[RUN]",
}

#: Typographic punctuation without a useful compatibility decomposition, folded to ASCII.
#: (U+2714 is also listed in EMOJI_FOLD, which wins.)
CHAR_FOLD: dict[str, str] = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2035", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u2033\u2036", '"'),
    "\u2039": "<",
    "\u203a": ">",
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043", "-"),
    "\u2044": "/",
    "\u2024": ".",
    "\u2025": "..",
    **dict.fromkeys("\u2026\u22ef", "..."),
    **dict.fromkeys("\u2022\u2023\u2219\u25cf\u25a0\u25aa", "*"),
    "\u2190": "<-",
    "\u2191": "^",
    "\u2192": "->",
    "\u2193": "v",
    "\u2194": "<->",
    "\u21d0": "<=",
    "\u21d2": "=>",
    "\u21d4": "<=>",
    **dict.fromkeys("\u2713\u2714", "v"),
    **dict.fromkeys("\u2717\u2718", "x"),
}
