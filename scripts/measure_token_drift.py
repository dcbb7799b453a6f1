"""How far each candidate text counter drifts from production's per-message counts.

    python scripts/measure_token_drift.py [--corpus tests/golden/tokens/corpus.json.gz]
                                          [--speed-chars 1000000]

Reads the recorded corpus (scripts/make_token_goldens.py: messages plus pi-agent-core
``Tokenizer.countMessage`` per message under each tokenizer family) and counts every message with
this project's :class:`~snapcompact.compaction.tokens.TokenEstimator` under each candidate text
counter. Prints, per family and candidate: mean / median / p95 relative error per message
(|candidate - reference| / reference, messages with reference 0 left out), the share of messages
counted exactly, and the total-count ratio (candidate / reference). Then the speed of each
candidate in characters per second on session-like text, cold (every fragment new) and warm
(the per-text cache hit), which is what a replay pays turn after turn.

Optional candidates are measured when their package is importable: ``anthropic-tokenizer`` (a
Claude-2 era BPE) and the Claude-2 ``tokenizer.json`` that litellm bundles, loaded with HF
``tokenizers``. Developer tool; the figures go in docs/token-counts.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from snapcompact.compaction.text_counters import counter_named  # noqa: E402
from snapcompact.compaction.tokens import TokenEstimator  # noqa: E402

Counter = Callable[[Sequence[str]], int]


def _optional_candidates() -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    try:
        import anthropic_tokenizer  # type: ignore[import-not-found]
        out["anthropic-tokenizer"] = lambda fs: sum(anthropic_tokenizer.count_tokens(f) for f in fs)
    except ImportError:
        pass
    try:
        import importlib.util

        from tokenizers import Tokenizer  # type: ignore[import-not-found]
        spec = importlib.util.find_spec("litellm")
        if spec and spec.submodule_search_locations:
            path = (Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" /
                    "tokenizers" / "anthropic_tokenizer.json")
            if path.is_file():
                tok = Tokenizer.from_file(str(path))
                out["claude2-json"] = lambda fs: sum(
                    len(tok.encode(f, add_special_tokens=False).ids) for f in fs)
    except ImportError:
        pass
    return out


def _metrics(cand: Sequence[int], ref: Sequence[int]) -> dict[str, float]:
    rel = sorted(abs(c - r) / r for c, r in zip(cand, ref) if r > 0)
    p95 = rel[min(len(rel) - 1, int(0.95 * len(rel)))]
    return {"mean": statistics.fmean(rel), "median": statistics.median(rel), "p95": p95,
            "exact": sum(c == r for c, r in zip(cand, ref)) / len(ref),
            "ratio": sum(cand) / sum(ref)}


def _speed(counter: Counter, texts: list[str]) -> tuple[float, float]:
    chars = sum(len(t) for t in texts)
    t0 = time.perf_counter()
    for t in texts:
        counter([t])
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for t in texts:
        counter([t])
    warm = time.perf_counter() - t0
    return chars / cold, chars / max(warm, 1e-9)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path,
                        default=ROOT / "tests" / "golden" / "tokens" / "corpus.json.gz")
    parser.add_argument("--speed-chars", type=int, default=1_000_000)
    parser.add_argument("--families", default="")
    args = parser.parse_args(argv)
    doc = json.loads(gzip.open(args.corpus).read())
    messages, categories, counts = doc["messages"], doc["categories"], doc["counts"]
    names = ["bytes4", "o200k", "cl100k", "ctok-v3", "ctok-v4.7", "ctok-v4.8"]
    candidates: dict[str, Counter] = {n: counter_named(n, cache=False) for n in names}
    candidates.update(_optional_candidates())
    per_candidate = {}
    for name, counter in candidates.items():
        est = TokenEstimator(count_text=counter)
        per_candidate[name] = [est.message(m) for m in messages]
    # ctok v4.8 with trailing ASCII whitespace dropped (the claude-v5 counter)
    est = TokenEstimator(count_text=counter_named("claude-v5", cache=False))
    per_candidate["ctok-v4.8-rstrip"] = [est.message(m) for m in messages]
    for base in ("bytes4", "o200k"):
        for scale in (1.11, 1.19, 1.47):
            per_candidate[f"{base}x{scale:g}"] = [round(c * scale)
                                                  for c in per_candidate[base]]
    families = [f for f in counts if f != "bytes4"] if not args.families else \
        args.families.split(",")
    print(f"corpus: {len(messages)} messages, categories "
          f"{', '.join(sorted(set(categories)))}")
    print("\n| family | candidate | mean | median | p95 | exact | total ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for family in ["bytes4"] + families:
        ref = counts[family]
        rows = sorted(((_metrics(c, ref), n) for n, c in per_candidate.items()),
                      key=lambda x: x[0]["mean"])
        for m, n in rows:
            print(f"| {family} | {n} | {m['mean']:.2%} | {m['median']:.2%} | {m['p95']:.2%} | "
                  f"{m['exact']:.1%} | {m['ratio']:.4f} |")
    print("\nper category (mean relative error; total ratio):")
    for family in families:
        ref = counts[family]
        best = min(per_candidate, key=lambda n: _metrics(per_candidate[n], ref)["mean"])
        for cand in dict.fromkeys(["bytes4", "o200k", best]):
            parts = []
            for cat in sorted(set(categories)):
                idx = [i for i, c in enumerate(categories) if c == cat]
                m = _metrics([per_candidate[cand][i] for i in idx], [ref[i] for i in idx])
                parts.append(f"{cat} {m['mean']:.1%}/{m['ratio']:.2f}")
            print(f"  {family} vs {cand}: " + "; ".join(parts))
    if args.speed_chars:
        texts: list[str] = []
        session = [m for m, c in zip(messages, categories) if c == "session"]
        est = TokenEstimator()
        pool = [f for m in session for f in est.fragments(m)[0] if f]
        k = 0
        while sum(len(t) for t in texts) < args.speed_chars:
            # a fresh string each pass, so the first pass over it is a cold count
            texts.append(pool[k % len(pool)] + f" #{k}")
            k += 1
        print(f"\nspeed on {sum(len(t) for t in texts):,} chars of session text "
              "(chars/s; cold, then warm with the per-text cache):")
        for name in ["bytes4", "o200k", "cl100k", "ctok-v3", "ctok-v4.7",
                     *_optional_candidates()]:
            counter = (counter_named(name, cache=True) if name in names else
                       _optional_candidates()[name])
            cold, warm = _speed(counter, texts)
            print(f"  {name:20s} cold {cold:>12,.0f}  warm {warm:>14,.0f}")


if __name__ == "__main__":
    main()
