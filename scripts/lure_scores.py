"""The measurement behind ``evals.readers.answer.MIN_EVIDENCE_SCORE``: how well a told reader's
evidence matches a sibling line of its template versus its own sentence, garbled.

For every stated probe (exact, gist) of generated sessions (seeds 0-5, 60k tokens, the three
probe kinds), with the probe's own sentence removed from the history, the locator's best match
elsewhere is a sibling line; those whose value is not the gold answer are what the threshold
must reject. With the sentence kept but 5 %, 10 % or 15 % of its letters and digits replaced at
random (seed 0), the score is what it must accept. Prints the highest sibling score and the
lowest garbled scores. Run: ``.venv/bin/python scripts/lure_scores.py`` (about a minute).
"""

from __future__ import annotations

import random

from evals.items.datasets.agent_session import load_agent_session
from evals.readers.answer import ABSTENTION, locate

_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"


def _garbled(text: str, share: float, rng: random.Random) -> str:
    return "".join(rng.choice(_CHARS) if c.isalnum() and rng.random() < share else c
                   for c in text)


def main() -> None:
    rng = random.Random(0)
    siblings: list[float] = []
    garbled: dict[float, list[float]] = {0.05: [], 0.10: [], 0.15: []}
    for seed in range(6):
        item = load_agent_session(seed=seed, n_items=1, target_tokens=60_000,
                                  probes=["exact", "gist", "never-stated"])[0]
        text = "\n".join(str(m.get("content")) for m in item.messages)
        for q in item.questions:
            if q.meta.get("probe") not in ("exact", "gist"):
                continue
            found = locate(text.replace(q.evidence, ""), q.evidence, q.answers, min_score=0)
            if found.answer != ABSTENTION and found.answer not in q.answers:
                siblings.append(found.score)
            for share, scores in garbled.items():
                kept = text.replace(q.evidence, _garbled(q.evidence, share, rng))
                scores.append(locate(kept, q.evidence, q.answers, min_score=0).score)
    print(f"sibling lines with another value: {len(siblings)}, highest score "
          f"{max(siblings):.1f}")
    for share, scores in garbled.items():
        print(f"own sentence, {share:.0%} of characters garbled: {len(scores)}, lowest score "
              f"{min(scores):.1f}")


if __name__ == "__main__":
    main()
