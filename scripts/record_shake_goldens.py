"""Record the agent core's shake answers on the shake corpus as goldens (developer tool, needs bun).

    python scripts/record_shake_goldens.py [--upstream PATH] [--out tests/golden/compaction/shake.json.gz]

Every session of ``tests/shake_corpus.py`` goes through the real pi-agent-core 18.2.11
``collectShakeRegions`` (one ``upstream-compaction eval`` call per chunk, bun) under the
configurations in SHAKE_CONFIGS, and under the aggressive one through ``applyShakeRegions`` with the
coding agent's artifact placeholders: the regions (kind, entry, block, UTF-16 offsets, tokens,
label, a digest of the original text), the rewritten contents (a digest of their JSON) and the
tokens freed. CI compares against the JSON without bun.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from shake_corpus import SHAKE_SEEDS, shake_session

DEFAULT_UPSTREAM = ROOT.parent / "shared" / "tools" / "upstream-compaction"

#: Configurations checked: the three presets at the latest compaction boundary (as the coding agent
#: calls them), the default without a boundary, and a low fence minimum (more block regions).
SHAKE_CONFIGS = {
    "default": {"preset": "default", "boundary": True},
    "aggressive": {"preset": "aggressive", "boundary": True},
    "rescue": {"preset": "rescue", "boundary": True},
    "default-no-boundary": {"preset": "default", "boundary": False},
    "fence-100": {"preset": "aggressive", "boundary": True, "fenceMinTokens": 100, "protectTokens": 8000},
}
#: The artifact id the applied placeholders name.
ARTIFACT_ID = "A1"

ORACLE = r"""
(() => {
  const data = input();
  const T = new tok.Tokenizer();
  const sha = (s) => new Bun.CryptoHasher("sha256").update(s).digest("hex");
  const presets = { default: shake.DEFAULT_SHAKE_CONFIG, aggressive: shake.AGGRESSIVE_SHAKE_CONFIG,
                    rescue: shake.RESCUE_SHAKE_CONFIG };
  const boundaryOf = (es) => { for (let i = es.length - 1; i >= 0; i--) if (es[i].type === "compaction") return es[i].firstKeptEntryId; return undefined; };
  const show = (r) => ({ kind: r.kind, entryId: r.entry.id, tokens: r.tokens, label: r.label,
    textSha: sha(r.originalText), chars: r.originalText.length,
    ...(r.kind === "block" ? { blockIndex: r.blockIndex, start: r.start, end: r.end } : {}) });
  return data.sessions.map((es0) => {
    const out = {};
    for (const [name, c] of Object.entries(data.configs)) {
      const es = structuredClone(es0);
      const cfg = { ...presets[c.preset] };
      if (c.boundary) cfg.keepBoundaryId = boundaryOf(es);
      if (c.fenceMinTokens !== undefined) cfg.fenceMinTokens = c.fenceMinTokens;
      if (c.protectTokens !== undefined) cfg.protectTokens = c.protectTokens;
      const regions = shake.collectShakeRegions(es, T, cfg);
      const result = { regions: regions.map(show) };
      if (name === data.apply) {
        const items = regions.map((region, i) => ({ region,
          replacement: `[shaken ~${region.tokens} tokens \u2014 recover: artifact://${data.artifact} (region ${i + 1})]` }));
        const before = es.map(e => JSON.stringify(e.type === "message" ? e.message.content : e.content));
        let freed = 0;
        for (const { region, replacement } of items) freed += region.tokens - T.countTokens(replacement);
        shake.applyShakeRegions(items);
        result.tokensFreed = freed;
        result.changed = es.flatMap((e, i) => {
          const now = JSON.stringify(e.type === "message" ? e.message.content : e.content);
          return now === before[i] ? [] : [[e.id, sha(now), e.type === "message" && e.message.prunedAt !== undefined]];
        });
      }
      out[name] = result;
    }
    return out;
  });
})()
"""


def compact_regions(result: dict) -> dict:
    """Regions as short rows: tool result ``[entryId, tokens, label, chars]``; block
    ``[entryId, tokens, label, chars, textSha[:16], blockIndex, start, end]`` (offsets in UTF-16)."""
    rows = []
    for r in result["regions"]:
        row = [r["entryId"], r["tokens"], r["label"], r["chars"]]
        if r["kind"] == "block":
            row += [r["textSha"][:16], r["blockIndex"], r["start"], r["end"]]
        rows.append(row)
    out = {**result, "regions": rows}
    if "changed" in result:
        out["changed"] = [[entry_id, digest[:16], pruned] for entry_id, digest, pruned in result["changed"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, default=DEFAULT_UPSTREAM)
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "compaction" / "shake.json.gz")
    ap.add_argument("--chunk", type=int, default=60, help="sessions per bun call")
    args = ap.parse_args()
    if not args.upstream.exists():
        sys.exit(f"reference tool not found at {args.upstream}")
    sessions: dict[str, object] = {}
    for start in range(0, len(SHAKE_SEEDS), args.chunk):
        seeds = SHAKE_SEEDS[start:start + args.chunk]
        payload = {"sessions": [shake_session(s) for s in seeds], "configs": SHAKE_CONFIGS, "apply": "aggressive",
                   "artifact": ARTIFACT_ID}
        env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
        done = subprocess.run([str(args.upstream), "eval", ORACLE], input=json.dumps(payload), text=True,
                              capture_output=True, check=False, env=env)
        if done.returncode != 0:
            sys.exit(f"upstream-compaction eval failed: {done.stderr.strip()[-2000:]}")
        for seed, result in zip(seeds, json.loads(done.stdout), strict=True):
            sessions[str(seed)] = {name: compact_regions(r) for name, r in result.items()}
        print(f"recorded sessions {seeds[0]}..{seeds[-1]}", file=sys.stderr)
    meta = {"reference": "@oh-my-pi/pi-agent-core 18.2.11 (upstream-compaction eval)", "configs": SHAKE_CONFIGS,
            "apply": "aggressive", "artifact": ARTIFACT_ID}
    text = json.dumps({"meta": meta, "sessions": sessions}, separators=(",", ":")) + "\n"
    args.out.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"wrote {len(sessions)} sessions to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
