"""The one character-per-token estimate used wherever no tokenizer counts.

Why one constant: the archive's token projections, the compaction's summary and pruning notices,
the text-only baseline's fallback count and the generated sessions all assume the same ratio;
kept in one place, a change to it moves every estimate together (and is one visible diff).
Exact counts come from a tokenizer (:mod:`snapcompact.pricing.text_tokens`) or from the agent's
own byte estimate (:mod:`snapcompact.compaction.tokens`), never from this.
"""

from __future__ import annotations

import math

#: Characters per text token: the common rough ratio for English prose and code.
CHARS_PER_TOKEN = 4


def estimate_text_tokens(chars: int) -> int:
    """Estimated tokens of ``chars`` characters of text: ``ceil(chars / CHARS_PER_TOKEN)``."""
    return math.ceil(chars / CHARS_PER_TOKEN)
