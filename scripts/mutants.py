"""Hand mutants of the analysis path: each one-line mutation must fail the tests named for it.

Why: a test suite that passes on a wrong formula guards nothing. Issue 43 found 13 of 26 hand
mutants of the newest analysis code surviving the suite (every test gave both arms the same
losses, sessions of equal size, one compaction call, one counter...). This keeps the 26 as data
(the issue's survivors first, then other plausible slips: flipped comparisons, off-by-one, the
wrong field) and re-runs them: each is written into its file, the named tests run, the file is
restored. A mutant is killed when at least one named test fails.

    python scripts/mutants.py [--only N ...] [--list]

Prints one line per mutant (killed by which tests, or SURVIVED) and the score; exits 1 when a
mutant survives or no longer applies (its line moved: update the list). Edits files in place
while it runs (restored even on Ctrl-C): run it on a clean checkout, not beside other work.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    """One mutation: ``old`` (found exactly once in ``path``) replaced by ``new``."""

    path: str
    old: str
    new: str
    what: str
    tests: tuple[str, ...]


RC = "evals/analysis/research_compare.py"
GATE = "evals/analysis/apply_gate.py"
BOOT = "evals/analysis/session_bootstrap.py"
CALLS = "snapcompact/billing/compaction_calls.py"
CTX = "evals/replay/contexts.py"
STEP = "snapcompact/agent/stepwise.py"
FORMATS = "snapcompact/compaction/session_formats.py"
FIN = "evals/pipeline/finished.py"
PLAN = "evals/pipeline/plan.py"

T_RC = "tests/harness/analysis/test_research_compare.py"
T_GATE = "tests/harness/analysis/test_apply_gate.py"
T_BOOT = "tests/harness/analysis/test_session_bootstrap.py"
T_CALLS = "tests/billing/test_compaction_calls.py"
T_BILL = "tests/harness/replay/test_compaction_bill.py"
T_STEP = "tests/agent/test_stepwise_pre_prompt.py"
T_FORMATS = "tests/compaction/test_session_formats.py"
T_FIN = "tests/harness/pipeline/test_finished.py"
T_SAME = "tests/harness/pipeline/test_same_context.py"

MUTANTS: tuple[Mutant, ...] = (
    # -- the survivors issue 43 names (line numbers at 0858762) ---------------------------------
    Mutant(RC, "lost = [k for k in shared if (base[k].evidence_round or 0) >= 1]",
           "lost = [k for k in shared if (asked[k].evidence_round or 0) >= 1]",
           "research_compare.py:206 facts production lost picked by the research arm's losses",
           (T_RC,)),
    Mutant(GATE, "if decision.sessions < min_sessions:", "if w.n_questions < min_sessions:",
           "apply_gate.py:89 the 20-session bar checked against the question count", (T_GATE,)),
    Mutant(GATE, "if c.shape == change.old_shape and c.frame_size == size), None)",
           "if c.shape == change.old_shape), None)",
           "apply_gate.py:61 the current entry matched at any frame size", (T_GATE,)),
    Mutant(BOOT, "return sums[draws].sum(axis=1) / counts[draws].sum(axis=1)",
           "return (sums / counts)[draws].mean(axis=1)",
           "session_bootstrap.py:120 a resample as the unweighted mean of its session means",
           (T_BOOT,)),
    Mutant(CALLS, "outputs += tokens", "outputs = tokens",
           "compaction_calls.py:88 only the last reply's output billed", (T_CALLS, T_BILL)),
    Mutant(CTX, "target = summarizer if summarizer is not None else spec.model",
           "target = spec.model",
           "contexts.py:347 compaction calls counted with the target's counter", (T_BILL,)),
    Mutant(STEP, "maint.before_prompt([prompt_message])", "maint.before_prompt([])",
           "stepwise.py:259 the step's pre-prompt check without the pending prompt", (T_STEP,)),
    Mutant(FORMATS, "if not isinstance(version, int) or version >= 3:",
           "if not isinstance(version, int) or version >= 2:",
           "session_formats.py:174 v2 files skip the v2 -> v3 migration", (T_FORMATS,)),
    Mutant(FIN, "return marker if _file_sha256(records)[0] == marker.records_sha256 else None",
           "return marker if _file_sha256(records)[1] == marker.rows else None",
           "finished.py:76 the marker compares row counts, not the records' hash", (T_FIN,)),
    Mutant(FIN, 'for k, v in dataclasses.asdict(versions).items() if k != "git_sha"}',
           "for k, v in dataclasses.asdict(versions).items()}",
           "finished.py:41 the commit kept in the provenance (a commit-only change replans)",
           (T_FIN,)),
    Mutant(PLAN, "if context.shape_asked_drawn is False:", "if not context.shape_asked_drawn:",
           "plan.py:260 'is False' -> 'not': text arms warned 'no frame drawn'", (T_SAME,)),
    Mutant(BOOT, "return n_sessions >= MIN_SESSIONS_FOR_CLAIM and interval_excludes_zero",
           "return n_sessions > MIN_SESSIONS_FOR_CLAIM and interval_excludes_zero",
           "research_compare.py:429 the claim rule off by one (now one rule: claim_supported)",
           (T_BOOT, T_RC)),
    # -- other plausible one-line slips in the same code ----------------------------------------
    Mutant(CALLS, "inputs += bill.text_tokens", "inputs = bill.text_tokens",
           "compaction_calls: only the last request's input billed", (T_CALLS, T_BILL)),
    Mutant(BOOT, "mean = float(sums.sum() / counts.sum())", "mean = float(own.mean())",
           "session_bootstrap: point estimate as the mean of session means", (T_BOOT,)),
    Mutant(BOOT, "wins=int((own > 0).sum())", "wins=int((own >= 0).sum())",
           "session_bootstrap: a tied session counted as a win", (T_BOOT, T_RC)),
    Mutant(BOOT, "if len(sums) < 2:", "if len(sums) < 1:",
           "session_bootstrap: an interval from one session", (T_BOOT, T_RC)),
    Mutant(BOOT, "diffs = [float(y) - float(x) for x, y in zip(a, b, strict=True)]",
           "diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]",
           "session_bootstrap: the pair's difference reversed (a - b)", (T_BOOT, T_RC)),
    Mutant(GATE, "if w.n_questions < min_questions:", "if w.n_questions <= min_questions:",
           "apply_gate: the 30-question bar off by one", (T_GATE,)),
    Mutant(GATE, "elif not current.significantly_below:", "elif current.significantly_below:",
           "apply_gate: a beaten current entry kept, an unbeaten one replaced", (T_GATE,)),
    Mutant(GATE, "if w.recall == 0:", "if w.recall < 0:",
           "apply_gate: a zero-recall winner written",
           ("tests/harness/analysis/test_table.py",)),
    Mutant(RC, "d_all = _paired(asked, base, shared, lambda r: r.correct, n_boot, seed)",
           "d_all = _paired(asked, base, lost, lambda r: r.correct, n_boot, seed)",
           "research_compare: recall on every question computed over the lost facts only",
           (T_RC,)),
    Mutant(RC, "d_tok = _paired(asked, base, shared, lambda r: r.billed_tokens, n_boot, seed)",
           "d_tok = _paired(asked, base, shared, lambda r: r.predicted_prompt_tokens, n_boot, "
           "seed)",
           "research_compare: token difference without the compaction share (wrong field)",
           (T_RC, T_BILL)),
    Mutant(FIN, "if (marker.run_id, marker.provenance) != (run_id, _provenance(versions)):",
           "if marker.run_id != run_id:",
           "finished: other code still 'finished' (provenance not compared)", (T_FIN,)),
    Mutant(CTX, "shape_asked_drawn=(wanted in names) if (hashes and wanted) else None,",
           "shape_asked_drawn=(wanted in names) if wanted else None,",
           "contexts: an arm with no frames said to have drawn none in its shape",
           (T_SAME,)),
    Mutant(STEP, "new_compactions=len(entries) - compactions_before,",
           "new_compactions=len(entries),",
           "stepwise: a step's new compactions counted from the session's start", (T_STEP,)),
    Mutant(FORMATS, 'and message.get("role") == "hookMessage":',
           'and message.get("role") == "custom":',
           "session_formats: the v2 -> v3 role rename looks for the new name", (T_FORMATS,)),
)

FAILED = re.compile(r"^FAILED (\S+?)(?: - .*)?$", re.M)


def run_one(m: Mutant) -> tuple[str, list[str]]:
    """``("killed", failing tests)``, ``("survived", [])`` or ``("stale", [why])``."""
    path = ROOT / m.path
    original = path.read_text(encoding="utf-8")
    if original.count(m.old) != 1:
        return "stale", [f"{m.old!r} occurs {original.count(m.old)} times in {m.path}"]
    try:
        path.write_text(original.replace(m.old, m.new), encoding="utf-8")
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-o", "addopts=", *m.tests], cwd=ROOT, capture_output=True,
                              text=True, check=False)
    finally:
        path.write_text(original, encoding="utf-8")
    failed = FAILED.findall(proc.stdout)
    if proc.returncode == 0:
        return "survived", []
    return "killed", failed or [f"pytest exited {proc.returncode}: {proc.stdout[-300:]}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", type=int, nargs="*", help="mutant numbers (1-based)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args(argv)
    chosen = [(i, m) for i, m in enumerate(MUTANTS, 1) if not args.only or i in args.only]
    if args.list:
        for i, m in chosen:
            print(f"{i:2d}. {m.what}: {m.path}: {m.old!r} -> {m.new!r}")
        return 0
    killed = 0
    bad = []
    for i, m in chosen:
        fate, tests = run_one(m)
        killed += fate == "killed"
        if fate != "killed":
            bad.append(i)
        shown = ", ".join(t.split("::")[-1] if "::" in t else t for t in tests)
        print(f"{i:2d}. {fate.upper() if fate != 'killed' else 'killed'}: {m.what}"
              + (f" -- by {shown}" if shown else ""), flush=True)
    print(f"mutants: {killed} of {len(chosen)} killed"
          + (f"; not killed: {', '.join(map(str, bad))}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
