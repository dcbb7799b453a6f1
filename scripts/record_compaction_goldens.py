"""Record the agent core's answers on the seeded parity corpus as goldens (developer tool, needs bun).

    python scripts/record_compaction_goldens.py [--upstream PATH] [--out tests/golden/compaction]

Every session of ``tests/compaction_corpus.py`` goes through the real pi-agent-core 18.2.11
functions in one ``upstream-compaction eval`` call (bun): per-entry token counts, ``findCutPoint``
at three keep budgets, ``prepareCompaction`` (partitions, file lists, the ``<files>`` block) at the
same budgets, ``pruneToolOutputs`` under three configurations, and
``serializeConversationForSummary(defaultConvertToLlm(...))``; plus ``resolveThresholdTokens`` on
the threshold cases. The answers are written as JSON keyed by seed, so CI compares without bun.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from compaction_corpus import CORPUS_SEEDS, THRESHOLD_CASES, session_entries

DEFAULT_UPSTREAM = ROOT.parent / "shared" / "tools" / "upstream-compaction"
KEEPS = (2000, 8000, 20000)

#: The prune configurations checked (the agent's names; ``supersede`` adds readToolSupersedeKey).
PRUNE_CONFIGS = {
    "protect10k": {"protectTokens": 10_000, "minimumSavings": 5_000},
    "default-supersede": {"supersede": True},
    "warm-supersede": {"protectTokens": 4_000, "minimumSavings": 1_000, "supersede": True,
                       "cacheWarmSuffixTokens": 8_000},
}

ORACLE = r"""
(() => {
  const data = input();
  const idsOf = (es) => { const m = new Map(); for (const e of es) if (e.type === "message") m.set(e.message, e.id); return m; };
  const boundaryOf = (es) => { for (let i = es.length - 1; i >= 0; i--) if (es[i].type === "compaction") return es[i].firstKeptEntryId; return undefined; };
  const sessions = data.sessions.map((es0) => {
    const T0 = new tok.Tokenizer();
    const es = structuredClone(es0);
    const tokens = es.map(e => e.type === "message" ? T0.countMessage(e.message) : null);
    const cut = {}, prepare = {}, prune = {};
    for (const k of data.keeps) {
      const r = core.findCutPoint(es, T0, 0, es.length, k);
      cut[k] = { firstKeptEntryIndex: r.firstKeptEntryIndex, turnStartIndex: r.turnStartIndex, isSplitTurn: r.isSplitTurn };
      const p = core.prepareCompaction(es, { ...core.DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: k }, undefined, T0);
      if (!p) { prepare[k] = null; continue; }
      const idOf = idsOf(es);
      const ids = (ms) => ms.map(m => idOf.get(m) ?? null);
      const { readFiles, modifiedFiles } = core.computeFileLists(p.fileOps);
      prepare[k] = { firstKeptEntryId: p.firstKeptEntryId, isSplitTurn: p.isSplitTurn,
        summarize: ids(p.messagesToSummarize), prefix: ids(p.turnPrefixMessages), recent: ids(p.recentMessages),
        readFiles, modifiedFiles, readSet: [...p.fileOps.read].sort(),
        filesBlock: core.upsertFileOperations("", readFiles, modifiedFiles, p.fileOps.read) };
    }
    for (const [name, c] of Object.entries(data.prune)) {
      const copy = structuredClone(es0);
      const cfg = { ...pruning.DEFAULT_PRUNE_CONFIG, keepBoundaryId: boundaryOf(copy) };
      if (c.protectTokens !== undefined) cfg.protectTokens = c.protectTokens;
      if (c.minimumSavings !== undefined) cfg.minimumSavings = c.minimumSavings;
      if (c.cacheWarmSuffixTokens !== undefined) cfg.cacheWarmSuffixTokens = c.cacheWarmSuffixTokens;
      if (c.supersede) cfg.supersedeKey = pruning.readToolSupersedeKey;
      const before = copy.map(e => e.type === "message" ? e.message.prunedAt : undefined);
      const r = pruning.pruneToolOutputs(copy, new tok.Tokenizer(), cfg);
      prune[name] = { prunedCount: r.prunedCount, tokensSaved: r.tokensSaved,
        pruned: copy.flatMap((e, i) => e.type === "message" && e.message.prunedAt !== undefined && before[i] === undefined
          ? [[e.id, e.message.content[0].text]] : []) };
    }
    const msgs = structuredClone(es0).filter(e => e.type === "message").map(e => e.message);
    const serialized = core.serializeConversationForSummary(core.defaultConvertToLlm(msgs));
    return { tokens, cut, prepare, prune, serialized };
  });
  const thresholds = data.thresholds.map(c => {
    const s = { ...core.DEFAULT_COMPACTION_SETTINGS };
    if (c.reserve !== undefined) s.reserveTokens = c.reserve;
    if (c.percent !== undefined) s.thresholdPercent = c.percent;
    if (c.tokens !== undefined) s.thresholdTokens = c.tokens;
    return { ...c, thresholdTokens: core.resolveThresholdTokens(c.window, s) };
  });
  return { sessions, thresholds };
})()
"""


def text_digest(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes (a lone surrogate, from a cut inside a pair, kept as is)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, default=DEFAULT_UPSTREAM)
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "compaction")
    ap.add_argument("--chunk", type=int, default=60, help="sessions per bun call")
    args = ap.parse_args()
    if not args.upstream.exists():
        sys.exit(f"reference tool not found at {args.upstream}")
    args.out.mkdir(parents=True, exist_ok=True)
    sessions: dict[str, object] = {}
    thresholds: list[object] = []
    for start in range(0, len(CORPUS_SEEDS), args.chunk):
        seeds = CORPUS_SEEDS[start:start + args.chunk]
        payload = {"sessions": [session_entries(s) for s in seeds], "keeps": list(KEEPS), "prune": PRUNE_CONFIGS,
                   "thresholds": list(THRESHOLD_CASES) if start == 0 else []}
        env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
        done = subprocess.run([str(args.upstream), "eval", ORACLE], input=json.dumps(payload), text=True,
                              capture_output=True, check=False, env=env)
        if done.returncode != 0:
            sys.exit(f"upstream-compaction eval failed: {done.stderr.strip()[-2000:]}")
        answer = json.loads(done.stdout)
        for seed, result in zip(seeds, answer["sessions"], strict=True):
            text = result.pop("serialized")
            result["serialized"] = {"sha256": text_digest(text), "chars": len(text)}
            sessions[str(seed)] = result
        thresholds += answer["thresholds"]
        print(f"recorded sessions {seeds[0]}..{seeds[-1]}", file=sys.stderr)
    meta = {"reference": "@oh-my-pi/pi-agent-core 18.2.11 (upstream-compaction eval)", "keeps": list(KEEPS),
            "prune_configs": PRUNE_CONFIGS}
    (args.out / "parity.json").write_text(json.dumps({"meta": meta, "sessions": sessions},
                                                      separators=(",", ":")) + "\n")
    (args.out / "thresholds.json").write_text(json.dumps({"meta": meta, "cases": thresholds}, indent=1) + "\n")
    print(f"wrote {len(sessions)} sessions and {len(thresholds)} threshold cases to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
