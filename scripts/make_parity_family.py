"""Record the real coding agent's per-step decisions on the step parity family (issue 37 item 2).

    python scripts/make_parity_family.py [--case NAME ...] [--missing] [--runs DIR] [--list]

The family is sessions the earlier goldens (``tests/golden/agent/``) never saw: every real file
of ``../shared/real-sessions`` (pi v1, pi v3, GJC, Claude Code; read there, never copied into
the project) at 16k/32k/200k with the agent's defaults and keep 8k / reserve 4k (issue 45),
each under the model its turns recorded when that is Anthropic's, and sessions of the project's generator (``evals.items.datasets.agent_session.build_session``)
with other seeds, sizes, windows and keepRecentTokens/reserveTokens. For every case the
oracle (``../shared/tools/upstream-agent run SESSION --steps K``: omp 18.3.4 under bun) replays
the session, and ``tests/golden/agent_family/<case>.json`` keeps only the agent's per-step
summary: compactions so far, new ones, the latest compaction's method, its tokensBefore, the
request's frames (width x height), the latest archive's total/truncated characters and frame
count, and the agent's compaction warnings; plus the size of omp's system prompt and its
``claude-v3`` token count (``upstream-compaction tokens``), the one non-message part of the
context the port needs a stand-in for. A real file is identified by its name and sha256;
a generated one by its generator arguments, the interpreter and the sha256 of its messages
(the generator reads the interpreter's standard library, so another Python may draw another
session: the test then skips). Cases run one after another (the oracle is CPU-heavy; about 40
minutes for the whole family on a loaded 2-core machine). ``--runs DIR`` keeps the oracle's
runs (a complete one is reused, and its ``system.txt`` is the prompt the agent sent).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared"
ORACLE = SHARED / "tools" / "upstream-agent"
REAL = SHARED / "real-sessions"
OUT = ROOT / "tests" / "golden" / "agent_family"


def _settings(keep: int | None = None, reserve: int | None = None) -> dict[str, Any]:
    compaction = {k: v for k, v in (("keepRecentTokens", keep), ("reserveTokens", reserve))
                  if v is not None}
    return {"compaction": compaction} if compaction else {}


def _real(name: str, window: int, steps: int, model: str | None = None,
          **kw: int) -> dict[str, Any]:
    case: dict[str, Any] = {"source": {"real": name}, "window": window, "steps": steps,
                            "question": "Continue.", "settings": _settings(**kw)}
    if model is not None:
        case["model"] = model
    return case


def _generated(seed: int, chars: int, window: int, steps: int, **kw: int) -> dict[str, Any]:
    return {"source": {"seed": seed, "index": 0, "target_tokens": chars // 4},
            "window": window, "steps": steps, "question": "Continue.",
            "settings": _settings(**kw)}


KIMCHI = "kimchi-dev__session.jsonl"
GJC03 = "agent-complex-task__03-raddit-dashboard-pr__session.jsonl"
GJC04 = "agent-complex-task__04-awesome-agent-ide__session.jsonl"
PIV1A = "pi-mono__before-compaction.jsonl"
PIV1B = "pi-mono__compact.jsonl"
CLAUDE = "posthog-impact-dashboard__claude-session.jsonl"
#: Issue 45 item 6: every real file at 16k, 32k and 200k, with the agent's defaults and with
#: keep 8,000 / reserve 4,096: (name prefix, file, --steps K, the model its assistant turns
#: recorded: pi-mono's claude-opus-4-5 with signed thinking, Claude Code's claude-opus-4-7;
#: kimchi's and GJC's models are not Anthropic's, so claude-sonnet-4-5 as before). K avoids a
#: step whose prompt starts with "-": the oracle hands it to omp as an argument, which omp
#: reads as a flag (pi-mono__compact.jsonl at K=7: "unknown flag: - should we remove ...").
REAL_MATRIX = (("piv1a", PIV1A, 5, "claude-opus-4-5"), ("piv1b", PIV1B, 8, "claude-opus-4-5"),
               ("claude", CLAUDE, 8, "claude-opus-4-7"), ("kimchi", KIMCHI, 1, None),
               ("gjc03", GJC03, 2, None), ("gjc04", GJC04, 1, None))
#: name -> session, window, the oracle's --steps, --question and --settings. The current
#: goldens use seed 22 at 60k/262k tokens, windows 32k/200k, keep 8000/reserve 4096 or the
#: defaults (20000/16384); none of the generated cases below repeats a seed, size or setting.
CASES: dict[str, dict[str, Any]] = {
    "kimchi-32k": _real(KIMCHI, 32_000, 1),
    "kimchi-64k-keep10k": _real(KIMCHI, 64_000, 1, keep=10_000, reserve=6_000),
    "kimchi-200k": _real(KIMCHI, 200_000, 1),
    "gjc04-32k": _real(GJC04, 32_000, 1),
    "gjc04-200k": _real(GJC04, 200_000, 1),
    "gjc03-32k": _real(GJC03, 32_000, 2),
    "gjc03-200k": _real(GJC03, 200_000, 2),
    "gen101-100k-32k": _generated(101, 100_000, 32_000, 2, keep=6_000, reserve=2_048),
    "gen102-300k-64k": _generated(102, 300_000, 64_000, 4, keep=12_000, reserve=8_192),
    "gen105-200k-64k": _generated(105, 200_000, 64_000, 3, keep=4_000),
    "gen107-450k-32k": _generated(107, 450_000, 32_000, 6, keep=8_000, reserve=8_000),
    "gen103-600k-128k": _generated(103, 600_000, 128_000, 8, keep=30_000, reserve=20_000),
    "gen106-900k-128k": _generated(106, 900_000, 128_000, 10, keep=16_000, reserve=12_000),
    "gen104-1500k-200k": _generated(104, 1_250_000, 200_000, 16, keep=40_000, reserve=24_000),
}
#: The signed-thinking file at --steps 6: the port counting the base64 thinkingSignature in its
#: pre-prompt trigger compacts at step 6, the agent does not (issue 45 item 1).
CASES["piv1a-200k-k6"] = _real(PIV1A, 200_000, 6, "claude-opus-4-5")
for _prefix, _file, _k, _model in REAL_MATRIX:
    for _window in (16_000, 32_000, 200_000):
        CASES.setdefault(f"{_prefix}-{_window // 1000}k", _real(_file, _window, _k, _model))
        CASES[f"{_prefix}-{_window // 1000}k-keep8k"] = _real(
            _file, _window, _k, _model, keep=8_000, reserve=4_096)


def generated_messages(source: dict[str, Any]) -> list[dict[str, Any]]:
    """The generator's session for ``source`` (seed, index, target tokens), as plain dicts."""
    from evals.items.datasets.agent_session import build_session

    item = build_session(source["seed"], source["index"], source["target_tokens"], (0.5,))
    return [dict(m) for m in item.messages]


def messages_sha256(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages).encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def summary_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-step part of the oracle's ``summary.json`` this family keeps."""
    rows = []
    for row in summary["rows"]:
        req = row.get("request") or {}
        arch = row.get("archive") or {}
        has_archive = arch.get("totalChars") is not None
        rows.append({
            "step": row["step"], "turns": row["turns"], "compactions": row["compactions"],
            "new_compactions": row["newCompactions"], "method": arch.get("method"),
            "tokens_before": arch.get("tokensBefore") if row["newCompactions"] else None,
            "frames": [list(f["size"] or [0, 0]) for f in req.get("frames", [])],
            "archive": {"totalChars": arch["totalChars"],
                        "truncatedChars": arch["truncatedChars"],
                        "frames": arch.get("frames")} if has_archive else None,
            "warnings": [w["message"] for w in row.get("warnings", [])
                         if "compact" in str(w.get("message", "")).lower()],
        })
    return rows


def system_text(run: Path, summary: dict[str, Any]) -> str:
    """omp's system prompt as the first step's prompt request sent it (not ``001.json``: when
    the first step compacts with an LLM summary, that request is the summarization's)."""
    n = summary["rows"][0]["request"]["n"]
    system = json.loads((run / "requests" / f"{n:03d}.json").read_text())["system"]
    return system if isinstance(system, str) else "".join(b.get("text", "") for b in system)


def claude_v3_tokens(text: str) -> int:
    """What omp 18.3.4 counts for ``text`` (claude-sonnet-4-5's tokenizer family)."""
    done = subprocess.run([str(SHARED / "tools" / "upstream-compaction"), "tokens",
                           "--tokenizer", "claude-v3"],
                          input=json.dumps([{"role": "user", "content": text}]),
                          capture_output=True, text=True, check=True)
    return int(json.loads(done.stdout)["total"])


def claude_code_messages(path: Path) -> list[dict[str, Any]]:
    """A Claude Code file's messages as the agent's importer reads them (the active branch:
    from its compact summary on), for the oracle, which reads a JSON list of agent messages."""
    from snapcompact.compaction import MessageEntry
    from snapcompact.compaction.session_formats import read_session_file

    branch = read_session_file(path).session.get_branch()
    return [dict(e.message) for e in branch if isinstance(e, MessageEntry)]


def record(name: str, case: dict[str, Any], runs: Path | None) -> None:
    """Run the oracle on ``case`` (into ``runs/<name>`` when given, kept and reused when its
    summary is complete) and write the case's golden."""
    source = case["source"]
    scratch = Path(tempfile.mkdtemp(prefix="parity-family."))
    try:
        if "real" in source:
            session_path = REAL / source["real"]
            identity: dict[str, Any] = {"file": source["real"],
                                        "file_sha256": file_sha256(session_path)}
            if source["real"].endswith("claude-session.jsonl"):
                session_path = scratch / "session.json"
                session_path.write_text(json.dumps(claude_code_messages(REAL / source["real"])))
        else:
            messages = generated_messages(source)
            session_path = scratch / "session.json"
            session_path.write_text(json.dumps(messages))
            identity = {"python": sys.version.split()[0], "messages": len(messages),
                        "chars": len(json.dumps(messages)),
                        "session_sha256": messages_sha256(messages)}
        run = (runs / name) if runs else scratch / "run"
        if not _complete(run):
            cmd = [str(ORACLE), "run", str(session_path), "--window", str(case["window"]),
                   "--steps", str(case["steps"]), "--question", case["question"],
                   "--out", str(run), "--settings", json.dumps(case["settings"]),
                   "--model", case.get("model", "claude-sonnet-4-5")]
            subprocess.run(cmd, check=True)
        summary = json.loads((run / "summary.json").read_text())
        system = system_text(run, summary)
        (run / "system.txt").write_text(system, encoding="utf-8")
        golden = {"case": name, **case, **identity, "system_chars": len(system),
                  "system_sha256": hashlib.sha256(system.encode("utf-8")).hexdigest(),
                  "system_tokens_claude_v3": claude_v3_tokens(system),
                  "rows": summary_rows(summary)}
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"{name}.json").write_text(json.dumps(golden, indent=1) + "\n")
        last = golden["rows"][-1]
        print(f"{name}: {len(golden['rows'])} steps, {last['compactions']} compactions",
              flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _complete(run: Path) -> bool:
    """A kept oracle run whose every step finished (its summary's last row asked the question)."""
    try:
        summary = json.loads((run / "summary.json").read_text())
    except (OSError, ValueError):
        return False
    rows = summary.get("rows") or []
    return bool(rows) and rows[-1].get("rc") == 0 and rows[-1]["step"] == rows[-1]["of"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    ap.add_argument("--missing", action="store_true", help="only cases with no golden yet")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    ap.add_argument("--runs", type=Path, help="keep the oracle's runs here (reused when complete)")
    args = ap.parse_args()
    names = args.case or list(CASES)
    if args.missing:
        names = [n for n in names if not (OUT / f"{n}.json").exists()]
    if args.list:
        for n in names:
            print(n, json.dumps(CASES[n]))
        return 0
    if not ORACLE.exists():
        print(f"no oracle at {ORACLE}; nothing recorded", file=sys.stderr)
        return 1
    failed = []
    for name in names:
        try:
            record(name, CASES[name], args.runs)
        except subprocess.CalledProcessError as exc:
            print(f"{name}: the oracle failed ({exc}); no golden written", file=sys.stderr)
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
