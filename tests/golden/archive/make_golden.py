"""Regenerate the reference outputs the archive tests compare against.

    python tests/golden/archive/make_golden.py [--upstream PATH/TO/upstream-frames]

Builds small synthetic conversations (seeded, so the inputs are stable), then runs the reference
``sc.compact`` over multi-round scenarios (previous preserveData chained from round to round),
``sc.historyBlocks`` under byte budgets and missing payloads, and ``sc.getPreservedArchive`` on
malformed input. Frames are small (96-200 px) so the fixture stays small. Output:
``reference.json.gz`` next to this script (inputs and outputs together).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_UPSTREAM = HERE.parents[3] / "shared" / "tools" / "upstream-frames"

WORDS = ["the", "archive", "keeps", "every", "frame", "of", "history", "so", "that", "a", "model", "can", "read", "it", "back", "later", "while", "the", "budget", "stays", "small", "and", "the", "session", "head", "is", "never", "lost", "because", "users", "ask", "about", "the", "first", "request", "again", "parse", "config", "render", "token", "budget", "provider", "image", "frame", "cache", "test", "build", "deploy", "function", "class", "module", "import", "return", "value", "error", "retry", "timeout", "latency", "window", "shape", "font"]
CJK = "你好世界中文字符测试안녕하세요こんにちは"


def sentence(rng: random.Random, n: int, cjk: bool = False) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    if cjk and rng.random() < 0.5:
        words.insert(rng.randrange(len(words)), "".join(rng.choice(CJK) for _ in range(rng.randint(2, 6))))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", "!", "?", "."])


def paragraph(rng: random.Random, sentences: int, cjk: bool = False) -> str:
    return " ".join(sentence(rng, rng.randint(4, 14), cjk) for _ in range(sentences))


def conversation(seed: int, turns: int, cjk: bool = False, thinking: bool = True) -> list[dict]:
    rng = random.Random(seed)
    msgs: list[dict] = []
    call = 0
    for t in range(turns):
        msgs.append({"role": "user", "content": paragraph(rng, rng.randint(1, 3), cjk)})
        blocks: list[dict] = []
        if thinking and rng.random() < 0.5:
            blocks.append({"type": "thinking", "thinking": paragraph(rng, 2)})
        blocks.append({"type": "text", "text": paragraph(rng, rng.randint(1, 4), cjk)})
        calls = []
        for _ in range(rng.randint(0, 2)):
            call += 1
            cid = f"call_{seed}_{call}"
            tool = rng.choice(["read", "bash", "edit", "grep"])
            args = ({"path": f"src/{rng.choice(WORDS)}.py"} if tool in ("read", "edit")
                    else {"command": f"{rng.choice(WORDS)} --{rng.choice(WORDS)}"})
            blocks.append({"type": "toolCall", "id": cid, "name": tool, "arguments": args})
            calls.append((cid, tool))
        msgs.append({"role": "assistant", "content": blocks})
        for cid, tool in calls:
            body = "\n".join(paragraph(rng, rng.randint(1, 3)) for _ in range(rng.randint(1, 5)))
            msgs.append({"role": "toolResult", "toolCallId": cid, "toolName": tool,
                         "content": [{"type": "text", "text": body}], "isError": rng.random() < 0.15,
                         **({"useless": True} if rng.random() < 0.1 else {})})
    return msgs


FILE_OPS = {"read": ["src/auth.ts", "src/util/a.ts", "docs/x.md"], "written": ["src/login.ts"],
            "edited": ["src/util/a.ts", "artifact://7"]}
MANY_FILES = {"read": [f"pkg/mod{i:02d}/file{i}.py" for i in range(25)], "written": ["README.md"], "edited": []}


def scenarios() -> list[dict]:
    s = []
    s.append({"name": "anthropic-11on16-fovea", "variant": "11on16-bw", "api": "anthropic-messages",
              "frameSize": 160, "options": {"maxFrames": 7},
              "rounds": [{"messages": conversation(1, 10), "fileOps": FILE_OPS},
                         {"messages": conversation(2, 6)},
                         {"messages": conversation(3, 8)}]})
    s.append({"name": "openai-8on22-thinking", "variant": "8on22-bw", "api": "openai-responses",
              "frameSize": 176, "options": {"maxFrames": 5},
              "rounds": [{"messages": conversation(4, 8)},
                         {"messages": conversation(5, 4), "options": {"includeThinking": False}},
                         {"messages": [], "options": {"maxFrames": 3}}]})
    s.append({"name": "doc-8on16", "variant": "doc-8on16-bw", "api": "anthropic-messages",
              "frameSize": 200, "options": {"maxFrames": 4},
              "rounds": [{"messages": conversation(6, 10)}, {"messages": conversation(7, 5)}]})
    s.append({"name": "google-summary-head", "variant": "8on16-bw", "api": "google-generative-ai",
              "frameSize": 128, "options": {"maxFrames": 3},
              "rounds": [{"messages": conversation(8, 5), "previousSummary": paragraph(random.Random(80), 6),
                          "previousPreserveData": {"openaiRemoteCompaction": {"x": 1}, "keepMe": [1, 2]}},
                         {"messages": conversation(9, 3), "previousSummary": "ignored: archive text exists"}]})
    s.append({"name": "text-only-files", "variant": "11on16-bw", "api": "anthropic-messages",
              "options": {}, "rounds": [{"messages": conversation(10, 1, thinking=False), "fileOps": FILE_OPS},
                                        {"messages": conversation(11, 1), "fileOps": MANY_FILES}]})
    s.append({"name": "cjk-wide-11on16", "variant": "11on16-bw", "api": "anthropic-messages",
              "frameSize": 192, "options": {"maxFrames": 6},
              "rounds": [{"messages": conversation(12, 8, cjk=True)}, {"messages": conversation(13, 6, cjk=True)}]})
    s.append({"name": "sent-dim-doc", "variant": "doc-8on16-sent-dim", "api": "google-vertex",
              "frameSize": 200, "options": {"maxFrames": 3, "dimToolResults": False},
              "rounds": [{"messages": conversation(14, 7)}]})
    s.append({"name": "repeat-8x8r", "variant": "8x8r-bw", "api": "anthropic-messages",
              "frameSize": 96, "options": {"maxFrames": 2},
              "rounds": [{"messages": conversation(15, 4)}, {"messages": conversation(16, 2)}]})
    s.append({"name": "empty", "variant": "11on16-bw", "api": "anthropic-messages", "options": {},
              "rounds": [{"messages": []}]})
    return s


MALFORMED = [
    None, {}, {"snapcompact": None}, {"snapcompact": "x"}, {"snapcompact": {}},
    {"snapcompact": {"frames": []}},
    {"snapcompact": {"frames": [{"data": "", "mimeType": "image/png", "cols": 1, "rows": 1, "chars": 1}]}},
    {"snapcompact": {"frames": [{"data": "AAAA", "mimeType": "image/png", "cols": "1", "rows": 1, "chars": 1}]}},
    {"snapcompact": {"frames": [{"data": "AAAA", "mimeType": "image/png", "cols": 1, "rows": 1, "chars": 1},
                                {"data": "BBBB", "cols": 1, "rows": 1, "chars": 1}], "totalChars": "9"}},
    {"snapcompact": {"frames": "nope", "text": "", "textTail": "tail only", "truncatedChars": 12}},
    {"snapcompact": {"text": "just text", "totalChars": 9, "truncatedChars": 0}, "other": 1},
]

FILE_CASES = [
    {"read": ["src/read-only.ts", "artifact://7", "conflict://1"], "written": ["local://ctx.md"],
     "edited": ["src/edited.ts"]},
    FILE_OPS,
    MANY_FILES,
    {"read": ["/abs/a/b/c/d.py", "/abs/a/b/e.py", "rel\\win\\path.txt", "x.py"], "written": ["dir/"],
     "edited": ["a/b/c.ts", "a/b/d/e.ts", "a/z.ts"]},
    {"read": [], "written": [], "edited": []},
]
UPSERT_SUMMARIES = ["", "Summary body.", "Body\n\n<files>\nold\n</files>\n",
                    "<read-files>\na\n</read-files>\nText\n<modified-files>\nb\n</modified-files>"]

JS = r"""
(async () => {
  const input = await Bun.file(process.env.GOLDEN_IN).json();
  const toOps = o => ({ read: new Set(o?.read ?? []), written: new Set(o?.written ?? []), edited: new Set(o?.edited ?? []) });
  const out = { scenarios: [], malformed: [], blocks: [] };
  for (const sc_ of input.scenarios) {
    const rounds = [];
    let prev = undefined;
    for (const r of sc_.rounds) {
      const model = { api: sc_.api, id: "" };
      const base = sc.resolveShape(model, sc_.variant);
      const options = { ...sc_.options, ...(r.options ?? {}), shape: base, model,
                        ...(sc_.frameSize ? { frameSize: sc_.frameSize } : {}) };
      const previousPreserveData = r.previousPreserveData ? { ...(prev ?? {}), ...r.previousPreserveData } : prev;
      const prep = { firstKeptEntryId: "kept-1", messagesToSummarize: r.messages, turnPrefixMessages: [],
                     tokensBefore: 123456, previousSummary: r.previousSummary, previousPreserveData,
                     fileOps: toOps(r.fileOps) };
      const res = await sc.compact(prep, options);
      const archive = sc.getPreservedArchive(res.preserveData);
      rounds.push({ result: res, historyBlocks: archive ? sc.historyBlocks(archive) : null });
      prev = res.preserveData;
    }
    out.scenarios.push({ name: sc_.name, rounds });
  }
  for (const m of input.malformed) out.malformed.push(sc.getPreservedArchive(m ?? undefined) ?? null);
  const arch = sc.getPreservedArchive(out.scenarios[0].rounds[0].result.preserveData);
  const sizes = arch.frames.map(f => f.data.length);
  const newest2 = sizes[sizes.length - 1] + sizes[sizes.length - 2];
  const drop = new Set([arch.frames[1].data, arch.frames[2].data]);
  const resolver = d => drop.has(d) ? undefined : { bytes: d.length, read: () => d };
  const cases = [
    { name: "budget-newest-two", opts: { maxFrameDataBytes: newest2 } },
    { name: "budget-zero", opts: { maxFrameDataBytes: 0 } },
    { name: "budget-skip-big", opts: { maxFrameDataBytes: Math.min(...sizes) * 2 } },
    { name: "resolver-drops-1-2", opts: { resolveFrameData: resolver } },
    { name: "resolver-and-budget", opts: { resolveFrameData: resolver, maxFrameDataBytes: newest2 } },
  ];
  for (const c of cases) out.blocks.push({ name: c.name, maxFrameDataBytes: c.opts.maxFrameDataBytes ?? null,
                                           dropFrames: c.opts.resolveFrameData ? [1, 2] : [],
                                           blocks: sc.historyBlocks(arch, c.opts) });
  const blobbed = { ...arch, frames: arch.frames.map((f, i) => i === 0 ? { ...f, data: "blob:sha256:abc" } : f) };
  out.blocks.push({ name: "unresolved-blob", archive: blobbed, blocks: sc.historyBlocks(blobbed) });
  out.fileLists = input.fileCases.map(c => sc.computeFileLists(toOps(c)));
  out.upserts = [];
  for (const c of input.fileCases) for (const summary of input.upsertSummaries) {
    const lists = sc.computeFileLists(toOps(c));
    out.upserts.push(sc.upsertFileOperations(summary, lists.readFiles, lists.modifiedFiles, new Set(c.read)));
  }
  return out;
})()
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", default=str(DEFAULT_UPSTREAM))
    args = ap.parse_args()
    inputs = {"scenarios": scenarios(), "malformed": MALFORMED, "fileCases": FILE_CASES,
              "upsertSummaries": UPSERT_SUMMARIES}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(inputs, fh)
    import os
    env = {**os.environ, "GOLDEN_IN": fh.name}
    proc = subprocess.run([args.upstream, "eval", JS], capture_output=True, text=True, env=env, check=True)
    outputs = json.loads(proc.stdout)
    os.unlink(fh.name)
    blob = json.dumps({"inputs": inputs, "outputs": outputs}, ensure_ascii=False, sort_keys=True).encode()
    (HERE / "reference.json.gz").write_bytes(gzip.compress(blob, mtime=0))
    print(f"wrote reference.json.gz: {len(blob):,} bytes raw")


if __name__ == "__main__":
    main()
