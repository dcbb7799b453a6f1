"""Record the agent core's per-message token counts on a varied corpus (developer tool, needs bun).

    python scripts/make_token_goldens.py [--upstream PATH] [--out tests/golden/tokens]

Why: production (coding agent 18.3.4, pi-agent-core ``Tokenizer.countMessage``) counts text with
the model's native tokenizer family (``claude-v3`` for claude-sonnet-4-5, ...), bytes/4 for a
model without one. The tests compare this project's counters with those numbers, so they are
recorded here once from ``../shared/tools/upstream-compaction tokens [--tokenizer F]`` and CI
needs no bun.

The corpus is built from what every machine has (the Python standard library) plus generated
text, one category per kind of text an agent session carries: prose (docstrings), source code,
JSON tool output, numbers, CJK (the stdlib's cjkencodings samples), emoji, whitespace-heavy logs,
message structure (images, thinking, tool calls, compaction summaries with frames, empty text),
and whole generated agent sessions (``evals.items.datasets.agent_session`` and the compaction parity
corpus). The input messages are committed with the counts, so the goldens never depend on the
interpreter that regenerates them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

DEFAULT_UPSTREAM = ROOT.parent / "shared" / "tools" / "upstream-compaction"
#: ``None`` = the tool's default (no tokenizer family: bytes/4 per fragment).
FAMILIES = (None, "claude-v3", "claude-v47", "claude-v5", "claude-v5-sonnet", "qwen3",
            "deepseek-v3", "kimi-k2", "glm5")
SEED = 22


def _lengths(rng: random.Random, count: int, low: int = 20, high: int = 5000) -> list[int]:
    """Log-uniform lengths, so short and long messages are both well represented."""
    import math
    return [int(math.exp(rng.uniform(math.log(low), math.log(high)))) for _ in range(count)]


def _chunks(rng: random.Random, text: str, count: int) -> list[str]:
    out = []
    for size in _lengths(rng, count):
        start = rng.randrange(max(1, len(text) - size))
        out.append(text[start:start + size])
    return out


def _prose(rng: random.Random, count: int) -> list[str]:
    from evals.items.datasets.stdlib_corpus import docstring_paragraphs
    paragraphs = docstring_paragraphs()
    out = []
    for size in _lengths(rng, count):
        start = rng.randrange(len(paragraphs))
        parts: list[str] = []
        while sum(len(p) + 2 for p in parts) < size:
            parts.append(paragraphs[(start + len(parts)) % len(paragraphs)])
        out.append("\n\n".join(parts))
    return out


def _code(rng: random.Random, count: int) -> list[str]:
    from evals.items.datasets.stdlib_corpus import read_source, stdlib_source_files
    files = stdlib_source_files()
    out = []
    for size in _lengths(rng, count):
        text = ""
        while len(text) < size:
            text = read_source(files[rng.randrange(len(files))]) or ""
        start = rng.randrange(max(1, len(text) - size))
        out.append(text[start:start + size])
    return out


def _json(rng: random.Random, count: int) -> list[str]:
    words = ["alpha", "beta", "status", "result", "path", "size", "mtime", "owner", "ok", "error"]
    out = []
    for size in _lengths(rng, count):
        rows: list[dict[str, Any]] = []
        while len(json.dumps(rows)) < size:
            rows.append({
                "id": rng.randrange(10**9), "name": "/".join(rng.choice(words) for _ in range(3)),
                "size": rng.randrange(10**7), "ratio": round(rng.random(), rng.randint(1, 6)),
                "ok": rng.random() < 0.8, "tags": [rng.choice(words) for _ in range(rng.randint(0, 3))],
                "note": None if rng.random() < 0.5 else " ".join(rng.choice(words) for _ in range(4))})
        style = rng.choice(("compact", "indent2", "indent4", "spaced"))
        out.append(json.dumps(rows, separators=(",", ":")) if style == "compact" else
                   json.dumps(rows, indent=2 if style == "indent2" else 4) if style != "spaced" else
                   json.dumps({"results": rows, "total": len(rows)}))
    return out


def _numbers(rng: random.Random, count: int) -> list[str]:
    out = []
    for size in _lengths(rng, count):
        kind = rng.choice(("csv", "hex", "floats", "ids"))
        lines: list[str] = []
        while sum(len(x) + 1 for x in lines) < size:
            if kind == "csv":
                lines.append(",".join(str(rng.randrange(-10**6, 10**6)) for _ in range(8)))
            elif kind == "hex":
                addr = rng.randrange(2**32)
                lines.append(f"{addr:08x}: " + " ".join(f"{rng.randrange(256):02x}" for _ in range(16)))
            elif kind == "floats":
                lines.append(" ".join(f"{rng.gauss(0, 1000):.{rng.randint(0, 8)}f}" for _ in range(6)))
            else:
                lines.append(f"{rng.randrange(10**15):015d} {rng.randrange(10**9)} "
                             f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                             f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z")
        out.append("\n".join(lines))
    return out


def _cjk(rng: random.Random, count: int) -> list[str]:
    import test  # the stdlib's test package holds the cjkencodings samples
    folder = Path(test.__file__).parent / "cjkencodings"
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*-utf8.txt")))
    return _chunks(rng, text, count)


def _emoji(rng: random.Random, count: int) -> list[str]:
    emoji = [chr(c) for c in (*range(0x1F600, 0x1F650), *range(0x1F300, 0x1F340), 0x2764, 0x2705)]
    joiners = ["\u200d", "\ufe0f", "\U0001F3FD", ""]
    words = ["ship", "it", "done", "great", "build", "failed", "tests", "pass", "deploy", "ok"]
    out = []
    for size in _lengths(rng, count, high=2000):
        parts: list[str] = []
        while sum(len(p) for p in parts) < size:
            parts.append(rng.choice(emoji) + rng.choice(joiners) if rng.random() < 0.4
                         else rng.choice(words))
            parts.append(rng.choice((" ", " ", "", "\n")))
        out.append("".join(parts))
    return out


def _logs(rng: random.Random, count: int) -> list[str]:
    levels = ["INFO", "DEBUG", "WARN", "ERROR"]
    out = []
    for size in _lengths(rng, count):
        lines: list[str] = []
        while sum(len(x) + 1 for x in lines) < size:
            kind = rng.random()
            if kind < 0.5:
                lines.append(f"2025-03-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:"
                             f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randrange(1000):03d}"
                             f"  {rng.choice(levels):<5}  [{rng.choice(['main', 'worker-1', 'db'])}]"
                             f"{' ' * rng.randint(1, 12)}request {rng.randrange(10**6)} took "
                             f"{rng.randrange(5000):>6} ms{' ' * rng.randint(0, 3)}")
            elif kind < 0.7:
                depth = rng.randint(1, 6)
                lines.append("\t" * (depth // 3) + "    " * depth + f'File "/srv/app/mod{depth}.py", line '
                             f"{rng.randrange(900)}, in handler_{rng.randrange(40)}")
            elif kind < 0.85:
                lines.append("")
            else:
                lines.append(f"{rng.choice(['PASSED', 'FAILED', 'SKIPPED']):<10}"
                             f"{' ' * rng.randint(2, 30)}tests/test_{rng.randrange(99)}.py::case[{rng.randrange(9)}]")
        out.append("\n".join(lines) + ("\n" * rng.randint(0, 3)))
    return out


def _structure(rng: random.Random) -> list[dict[str, Any]]:
    """Messages that exercise countMessage's per-role rules rather than the tokenizer."""
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    return [
        {"role": "user", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": ""}, image]},
        {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, image, image]},
        {"role": "developer", "content": "Be terse. Answer in one line."},
        {"role": "custom", "customType": "note", "content": "custom note with text", "display": True},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False,
         "content": [{"type": "text", "text": "line one\nline two"}, image]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me think about the file layout first.",
             "thinkingSignature": "EqQBCkYIBxgCKkB" + "x" * 80},
            {"type": "text", "text": "I'll read it."},
            {"type": "toolCall", "id": "c2", "name": "read",
             "arguments": {"path": "src/app/main.py", "offset": 10, "limit": 40.0}}]},
        {"role": "assistant", "content": [
            {"type": "redactedThinking", "data": "ZXhhbXBsZSByZWRhY3RlZCBkYXRh"},
            {"type": "toolCall", "id": "c3", "name": "bash", "arguments": {"command": "ls -la ~/src | head"}}]},
        {"role": "bashExecution", "command": "git status --short", "output": " M src/app.py\n?? notes.md\n",
         "exitCode": 0, "cancelled": False, "truncated": False},
        {"role": "branchSummary", "summary": "The user explored the parser module.", "fromId": "x"},
        {"role": "compactionSummary", "summary": "## Goal\nPort the parser.", "tokensBefore": 1000,
         "blocks": [{"type": "text", "text": "Earlier: the user asked about main.py."}, image, image]},
        {"role": "compactionSummary", "summary": "## Goal\nPort the parser.", "tokensBefore": 1000,
         "images": [image, image, image]},
        {"role": "hookMessage", "content": [{"type": "text", "text": "hook said hi"}]},
    ]


def _sessions() -> list[dict[str, Any]]:
    from compaction_corpus import session_entries

    from evals.items.datasets.agent_session import build_session
    out: list[dict[str, Any]] = []
    for seed, tokens in ((0, 12_000), (1, 8_000)):
        out.extend(build_session(seed, 0, tokens, (0.5,)).messages)
    for seed in (2, 19):
        out.extend(e["message"] for e in session_entries(seed) if e.get("type") == "message")
    return out


def build_corpus() -> tuple[list[dict[str, Any]], list[str]]:
    """(messages, category of each message), the same on every run of one interpreter."""
    rng = random.Random(SEED)
    messages: list[dict[str, Any]] = []
    categories: list[str] = []
    for name, make in (("prose", _prose), ("code", _code), ("json", _json), ("numbers", _numbers),
                       ("cjk", _cjk), ("emoji", _emoji), ("logs", _logs)):
        for i, text in enumerate(make(rng, 30)):
            role = ("user", "toolResult", "assistant")[i % 3]
            if role == "user":
                messages.append({"role": "user", "content": text})
            elif role == "toolResult":
                messages.append({"role": "toolResult", "toolCallId": f"t{i}", "toolName": "bash",
                                 "isError": False, "content": [{"type": "text", "text": text}]})
            else:
                messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
            categories.append(name)
    for m in _structure(rng):
        messages.append(m)
        categories.append("structure")
    for m in _sessions():
        messages.append(m)
        categories.append("session")
    return messages, categories


def upstream_counts(upstream: Path, messages: list[dict[str, Any]], family: str | None) -> list[int]:
    env = {k: v for k, v in os.environ.items() if k not in ("NODE_ENV", "PI_TOKENIZER_ACCURATE")}
    args = [str(upstream), "tokens"] + (["--tokenizer", family] if family else [])
    proc = subprocess.run(args, input=json.dumps(messages), capture_output=True, text=True,
                          env=env, check=True)
    entries = json.loads(proc.stdout)["entries"]
    if len(entries) != len(messages):
        raise SystemExit(f"upstream returned {len(entries)} counts for {len(messages)} messages")
    return [int(e["tokens"]) for e in entries]


CATALOG_ORACLE = (
    'import("@oh-my-pi/pi-catalog").then(m => { const d = input(); const out = {};'
    ' for (const p in d) for (const id in d[p]) out[id] = m.resolveModelTokenizer(id) ?? null;'
    ' return out; })')


def catalog_families(upstream: Path) -> dict[str, str | None]:
    """pi-catalog ``resolveModelTokenizer(id)`` (no provider) for every id of its models.json."""
    home = Path(os.environ.get("UPSTREAM_COMPACTION_HOME", Path.home() / ".cache" / "upstream-compaction"))
    models = home / "node_modules" / "@oh-my-pi" / "pi-catalog" / "src" / "models.json"
    if not models.is_file():
        upstream_counts(upstream, [{"role": "user", "content": "install"}], None)  # installs it
    proc = subprocess.run([str(upstream), "eval", CATALOG_ORACLE], input=models.read_text(),
                          capture_output=True, text=True, check=True)
    return dict(sorted(json.loads(proc.stdout).items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", type=Path, default=DEFAULT_UPSTREAM)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "golden" / "tokens")
    args = parser.parse_args(argv)
    if not args.upstream.exists():
        raise SystemExit(f"upstream tool not found: {args.upstream} (needs ../shared)")
    messages, categories = build_corpus()
    counts = {family or "bytes4": upstream_counts(args.upstream, messages, family)
              for family in FAMILIES}
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"source": "upstream-compaction tokens [--tokenizer F] (pi-agent-core 18.2.11 "
                     "Tokenizer.countMessage, pi-natives 18.2.3)",
           "categories": categories, "messages": messages, "counts": counts}
    path = args.out / "corpus.json.gz"
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        fh.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    catalog = catalog_families(args.upstream)
    path_catalog = args.out / "catalog_tokenizers.json.gz"
    with gzip.GzipFile(path_catalog, "wb", mtime=0) as fh:
        fh.write(json.dumps({"source": "pi-catalog 18.2.11 resolveModelTokenizer(id) over "
                                       "src/models.json (no provider)", "families": catalog},
                            separators=(",", ":")).encode("utf-8"))
    print(f"wrote {path_catalog}: {len(catalog)} model ids")
    chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in messages)
    print(f"wrote {path}: {len(messages)} messages, ~{chars:,} chars, families "
          f"{', '.join(counts)}; totals " +
          ", ".join(f"{k}={sum(v):,}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
