"""Record the real coding agent's step-by-step compactions as goldens (developer tool, needs bun).

    python scripts/make_agent_goldens.py [--case NAME ...] [--from-run NAME=DIR ...]

For every case (a session, a window, the oracle's ``--steps K``, settings) this writes
``tests/golden/agent/<case>/``: ``session.json.xz`` (the session replayed, so CI needs neither
the generator's Python version nor bun) and ``golden.json``: per step what the oracle's
``summary.json`` says (compactions so far, the latest compaction's method and archive totals,
the request's frames with width x height and bytes, its text characters, omp's compaction
warnings), the source message the latest compaction keeps from, the PNG hashes of the last
request's frames, and the agent's token counts of every message (``claude-v3``, what omp
18.3.4 counts for claude-sonnet-4-5) keyed by the message's text fragments, so the test can
count as the agent does. The oracle is ``../shared/tools/upstream-agent`` (omp 18.3.4 under
bun) and ``upstream-compaction tokens``; each step costs a few seconds, the 1M-character case
a few minutes in all. ``--from-run`` reuses a finished ``upstream-agent run`` folder.

Sessions: ``example`` is the shared tool's own example; the others come from
``evals.items.datasets.agent_session.build_session`` (realistic turns over the Python standard
library; deterministic per interpreter, hence committed).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import lzma
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from snapcompact.compaction import TokenEstimator  # noqa: E402

SHARED = ROOT.parent / "shared" / "tools"
OUT = ROOT / "tests" / "golden" / "agent"
SMALL = {"compaction": {"keepRecentTokens": 8000, "reserveTokens": 4096}}
#: name -> how the session is made and how the oracle replays it.
CASES: dict[str, dict[str, Any]] = {
    "example": {"source": "shared-example", "window": 32000, "steps": 20,
                "question": "What does the last file do?", "settings": SMALL},
    "session60k": {"source": {"seed": 22, "index": 0, "target_tokens": 60_000},
                   "window": 32000, "steps": 3, "question": "Continue.", "settings": SMALL},
    "session1m": {"source": {"seed": 22, "index": 0, "target_tokens": 262_000},
                  "window": 200_000, "steps": 12, "question": "Continue.", "settings": {}},
}
#: Converted messages carry 2025-11-01T12:00:00Z + (index + 1) s; omp's own entries the wall clock.
_T0_MS = 1_761_998_400_000
_SOURCE_LIMIT_MS = _T0_MS + 10**9


def fragments_key(message: dict[str, Any]) -> str:
    """How the test finds a message's recorded count: the hash of its text fragments."""
    fragments, _ = TokenEstimator().fragments(message)
    return hashlib.sha1("\x1f".join(fragments).encode("utf-8")).hexdigest()[:16]


def make_session(case: dict[str, Any]) -> list[dict[str, Any]]:
    source = case["source"]
    if source == "shared-example":
        return json.loads((SHARED / "upstream-agent-examples" / "session.json").read_text())
    from evals.items.datasets.agent_session import build_session

    item = build_session(source["seed"], source["index"], source["target_tokens"], (0.5,))
    return [dict(m) for m in item.messages]


def run_oracle(session_path: Path, case: dict[str, Any], out: Path) -> None:
    cmd = [str(SHARED / "upstream-agent"), "run", str(session_path), "--window",
           str(case["window"]), "--steps", str(case["steps"]), "--question", case["question"],
           "--out", str(out), "--settings", json.dumps(case["settings"])]
    subprocess.run(cmd, check=True)


def count_tokens(messages: list[dict[str, Any]], tokenizer: str | None) -> list[int]:
    cmd = [str(SHARED / "upstream-compaction"), "tokens"]
    if tokenizer:
        cmd += ["--tokenizer", tokenizer]
    done = subprocess.run(cmd, input=json.dumps(messages), capture_output=True, text=True,
                          check=True)
    return [e["tokens"] for e in json.loads(done.stdout)["entries"]]


def converted(message: dict[str, Any], index: int) -> dict[str, Any]:
    from snapcompact.agent.stepwise import _as_converted

    return _as_converted(message, index)


def source_index(entry: dict[str, Any]) -> int | None:
    ts = (entry.get("message") or {}).get("timestamp")
    if isinstance(ts, int) and _T0_MS < ts < _SOURCE_LIMIT_MS:
        return (ts - _T0_MS) // 1000 - 1
    return None


def pixel_hash(png: bytes) -> str:
    """A frame's decoded pixels (PNG encoders differ in bytes, not in pixels)."""
    from snapcompact.render.png import decode_rgb

    return hashlib.sha256(decode_rgb(png).tobytes()).hexdigest()[:16]


def request_pixels(run: Path, n: int) -> list[str]:
    body = json.loads((run / "requests" / f"{n:03d}.json").read_text())
    out = []
    for message in body.get("messages", []):
        stack = list(message.get("content") if isinstance(message.get("content"), list) else [])
        for block in stack:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                stack.extend(block["content"])
            elif block.get("type") == "image":
                out.append(pixel_hash(base64.b64decode(block["source"]["data"])))
    return out


def golden_rows(run: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    summary = json.loads((run / "summary.json").read_text())
    entries = [json.loads(line) for line in (run / "session.jsonl").read_text().splitlines()
               if line.strip()]
    by_id = {e.get("id"): e for e in entries}
    comps = []
    for e in entries:
        if e.get("type") != "compaction":
            continue
        kept = by_id.get(e.get("firstKeptEntryId"))
        sc = (e.get("preserveData") or {}).get("snapcompact") or {}
        comps.append({"id": e["id"], "method": e.get("method"),
                      "first_kept_source_index": source_index(kept) if kept else None,
                      "tokens_before": e.get("tokensBefore"), "tokens_after": e.get("tokensAfter"),
                      "frames": len(sc.get("frames") or []),
                      "frame_sizes": [[f.get("cols"), f.get("rows")] for f in sc.get("frames") or []],
                      "total_chars": sc.get("totalChars"),
                      "truncated_chars": sc.get("truncatedChars"),
                      "text_head": len(sc.get("textHead") or ""),
                      "text_tail": len(sc.get("textTail") or ""),
                      "summary_chars": len(e.get("summary") or "")})
    comp_ids = [c["id"] for c in comps]
    rows = []
    for row in summary["rows"]:
        req = row.get("request") or {}
        arch = row.get("archive")
        latest = comps[comp_ids.index(arch["id"])] if arch and arch.get("id") in comp_ids else None
        rows.append({
            "step": row["step"], "turns": row["turns"], "compactions": row["compactions"],
            "new_compactions": row["newCompactions"], "requests": len(row["requests"]),
            "messages": req.get("messages"), "text_chars": req.get("textChars"),
            "system_chars": req.get("systemChars"), "request_bytes": req.get("bytes"),
            "frames": [[*(f["size"] or [0, 0]), f["bytes"]] for f in req.get("frames", [])],
            "frame_pixels_sha256": request_pixels(run, req["n"]) if req.get("frames") else [],
            "method": arch.get("method") if arch else None,
            "archive": None if not arch or arch.get("totalChars") is None else {
                "totalChars": arch["totalChars"], "truncatedChars": arch["truncatedChars"],
                "textHead": arch["textHead"], "textTail": arch["textTail"],
                "frames": arch["frames"]},
            "tokens_after": arch.get("tokensAfter") if arch else None,
            "first_kept_source_index": latest["first_kept_source_index"] if latest else None,
            "warnings": [{k: v for k, v in w.items() if k != "level"}
                         for w in row.get("warnings", [])
                         if "compact" in str(w.get("message", "")).lower()],
        })
    return rows, comps


def record(name: str, case: dict[str, Any], run: Path | None) -> None:
    folder = OUT / name
    folder.mkdir(parents=True, exist_ok=True)
    messages = make_session(case)
    session_xz = folder / "session.json.xz"
    session_xz.write_bytes(lzma.compress(json.dumps(messages).encode("utf-8"), preset=9))
    scratch = Path(tempfile.mkdtemp(prefix="agent-golden."))
    try:
        if run is None:
            (scratch / "session.json").write_text(json.dumps(messages))
            run = scratch / "run"
            run_oracle(scratch / "session.json", case, run)
        rows, comps = golden_rows(run)
        # what the agent counts: every converted message, the prompts and the canned reply
        conv = [converted(m, i) for i, m in enumerate(messages)]
        prompts = [{"role": "user", "content": [{"type": "text", "text": p}]}
                   for p in {r["prompt"] for r in json.loads(
                       (run / "summary.json").read_text())["rows"]}]
        reply = [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
        system = json.loads((run / "requests" / "001.json").read_text())["system"]
        system_text = system if isinstance(system, str) else "".join(
            b.get("text", "") for b in system)
        everything = conv + prompts + reply + [{"role": "user", "content": system_text}]
        v3 = count_tokens(everything, "claude-v3")
        b4 = count_tokens(conv, None)
        table = {fragments_key(m): n for m, n in zip(everything[:-1], v3[:-1])}
        pngs = sorted((run / "frames").glob("*.png"))
        golden = {
            "case": name, "window": case["window"], "steps": case["steps"],
            "question": case["question"], "settings": case["settings"],
            "source": case["source"], "python": sys.version.split()[0],
            "messages": len(messages),
            "session_sha256": hashlib.sha256(json.dumps(messages).encode()).hexdigest(),
            "system_chars": len(system_text), "system_tokens_claude_v3": v3[-1],
            "source_tokens": {"claude_v3": sum(v3[:len(conv)]), "bytes4": sum(b4)},
            "rows": rows, "compactions": comps,
            "last_request_frames_sha256": [hashlib.sha256(p.read_bytes()).hexdigest()
                                           for p in pngs],
            "tokens_claude_v3": table,
        }
        (folder / "golden.json").write_text(json.dumps(golden, indent=1) + "\n")
        print(f"{name}: {len(rows)} steps, {len(comps)} compactions -> {folder}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--from-run", action="append", default=[], metavar="NAME=DIR")
    args = ap.parse_args()
    if not (SHARED / "upstream-agent").exists():
        print(f"no oracle at {SHARED}; nothing recorded", file=sys.stderr)
        return 1
    runs = dict(item.split("=", 1) for item in args.from_run)
    for name in args.case or sorted(CASES):
        record(name, CASES[name], Path(runs[name]) if name in runs else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
