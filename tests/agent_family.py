"""The step parity family (issue 37 item 2): the agent's recorded steps against the port's.

Goldens: ``tests/golden/agent_family/<case>.json``, written by
``scripts/make_parity_family.py`` from ``upstream-agent run SESSION --steps K`` (omp 18.3.4).
Each holds only the agent's per-step summary. The session is rebuilt here: a real file is read
from ``../shared/real-sessions`` (checked by its sha256), a generated one is drawn again from
the project's generator (checked by the sha256 of its messages). Unlike
``tests/agent_parity.py`` nothing the agent counted is reused: the port replays the oracle's
protocol (:func:`snapcompact.agent.stepwise.replay_like_upstream_steps`) with the
maintenance's DEFAULT token counter (``estimator=None``: claude-sonnet-4-5's tokenizer family
through ctok), as a user's session would be maintained.

No stand-in either for omp's system prompt, part of the context both sides count: the replay
counts the agent's own text for the case's model, kept in the package
(:func:`snapcompact.agent.agent_system_prompt`); goldens recorded since issue 45 carry the
sha256 of the prompt the agent sent, and the test checks the package's text against it. The
case's model is the one its assistant turns recorded (``model``; claude-sonnet-4-5 when absent).
A Claude Code file is read as the agent's importer reads it (its active branch), the list of
messages the oracle was given.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agent_parity import settings_of

from snapcompact.agent.stepwise import StepReport, replay_like_upstream_steps
from snapcompact.compaction import MessageEntry, ModelInfo, claude_stand_in
from snapcompact.compaction.session_formats import read_session_file

FAMILY = Path(__file__).parent / "golden" / "agent_family"
REAL_SESSIONS = Path(__file__).resolve().parents[1].parent / "shared" / "real-sessions"
#: The model of a case recorded before goldens named theirs.
DEFAULT_MODEL = "claude-sonnet-4-5"
#: Replay on a stand-in Claude counter when ctok is missing (``--allow-estimate`` of
#: scripts/parity_family_table.py); otherwise such a case is refused as :class:`Unavailable`.
ALLOW_ESTIMATE = False


class Unavailable(Exception):
    """The case's session cannot be rebuilt here (the reason says why)."""


def case_names() -> list[str]:
    return sorted(p.stem for p in FAMILY.glob("*.json"))


@cache
def load_golden(name: str) -> dict[str, Any]:
    return json.loads((FAMILY / f"{name}.json").read_text(encoding="utf-8"))


def oracle_messages(path: Path) -> list[dict[str, Any]]:
    """The messages ``upstream-agent --steps`` replays from a session JSONL: lines split on
    ``\\n`` only (U+2028 may sit inside strings), a line that does not parse is left out (the
    oracle skips it with a warning), and only ``type: "message"`` entries, in file order."""
    out = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("type") == "message":
            out.append(entry["message"])
    return out


def session_of(golden: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's messages, or :class:`Unavailable` naming why they cannot be rebuilt."""
    source = golden["source"]
    if "real" in source:
        path = REAL_SESSIONS / source["real"]
        if not path.is_file():
            raise Unavailable(f"{path} is absent (real sessions are read, never committed)")
        if hashlib.sha256(path.read_bytes()).hexdigest() != golden["file_sha256"]:
            raise Unavailable(f"{path} differs from the recorded file (sha256)")
        if path.name.endswith("claude-session.jsonl"):
            branch = read_session_file(path).session.get_branch()
            return [dict(e.message) for e in branch if isinstance(e, MessageEntry)]
        return oracle_messages(path)
    from evals.items.datasets.agent_session import build_session

    item = build_session(source["seed"], source["index"], source["target_tokens"], (0.5,))
    messages = [dict(m) for m in item.messages]
    digest = hashlib.sha256(json.dumps(messages).encode("utf-8")).hexdigest()
    if digest != golden["session_sha256"]:
        raise Unavailable(f"the generator draws another session on this interpreter "
                          f"(recorded on Python {golden['python']})")
    return messages


def model_of(golden: dict[str, Any]) -> ModelInfo:
    """The case's model at its window, as the oracle configures it (Anthropic's wire, thinking
    left out of archives)."""
    return ModelInfo(id=golden.get("model", DEFAULT_MODEL), context_window=golden["window"],
                     provider="anthropic", api="anthropic-messages", include_thinking=False)


@cache
def replay(name: str) -> tuple[StepReport, ...]:
    """The port's steps on case ``name``: the maintenance's default token counter, the agent's
    own system prompt for the case's model (the replay's default)."""
    golden = load_golden(name)
    messages = session_of(golden)
    model = model_of(golden)
    stand_in = claude_stand_in(model.id)
    if stand_in is not None and not ALLOW_ESTIMATE:
        raise Unavailable(f"a parity check refuses a stand-in counter: {stand_in}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        done = replay_like_upstream_steps(
            messages, model, settings_of(golden), steps=golden["steps"],
            question=golden["question"], estimator=None, allow_stand_in=ALLOW_ESTIMATE)
    return done.steps


def step_key(compactions: int, method: str | None, frames: int) -> tuple[int, str | None, int]:
    return (compactions, method, frames)


@dataclass(frozen=True)
class CaseResult:
    """One case compared: steps identical, where they first differ, the last archives."""

    name: str
    window: int
    settings: str
    steps: int
    same: int
    first_diff: int | None
    agent_final: tuple[int, str | None, int]
    port_final: tuple[int, str | None, int]
    archive_step: int  # the step of the last archive the agent's requests carried
    total_delta: float | None  # (port - agent) / agent of that archive's totalChars
    truncated_delta: float | None  # same for truncatedChars (0 when both are 0)
    archives: str  # "both", "none", "agent only", "port only"


def _delta(ours: int, theirs: int) -> float:
    if theirs == 0:
        return 0.0 if ours == 0 else float("inf")
    return (ours - theirs) / theirs


def settings_label(golden: dict[str, Any]) -> str:
    c = golden["settings"].get("compaction", {})
    if not c:
        return "default"
    return f"keep {c.get('keepRecentTokens', 20000)}, reserve {c.get('reserveTokens', 16384)}"


def compare(name: str) -> CaseResult:
    golden = load_golden(name)
    ours = replay(name)
    rows = golden["rows"]
    if len(ours) != len(rows):
        raise AssertionError(f"{name}: the step plans differ ({len(ours)} vs {len(rows)})")
    same = 0
    first_diff = None
    for mine, theirs in zip(ours, rows):
        a = step_key(theirs["compactions"], theirs["method"], len(theirs["frames"]))
        p = step_key(mine.compactions, mine.method, len(mine.frames))
        if a == p:
            same += 1
        elif first_diff is None:
            first_diff = mine.step
    # The last snapcompact archive the agent's requests carried (a later soft compaction drops
    # it), against the port's at the same step.
    at = next((i for i in range(len(rows) - 1, -1, -1) if rows[i]["archive"]), len(rows) - 1)
    last_agent, last_port = rows[at]["archive"], ours[at].archive
    total = truncated = None
    if last_agent and last_port:
        kind = "both"
        total = _delta(last_port["totalChars"], last_agent["totalChars"])
        truncated = _delta(last_port["truncatedChars"], last_agent["truncatedChars"])
    else:
        kind = {(False, False): "none", (True, False): "agent only",
                (False, True): "port only"}[(bool(last_agent), bool(last_port))]
    return CaseResult(
        name=name, window=golden["window"], settings=settings_label(golden), steps=len(rows),
        same=same, first_diff=first_diff,
        agent_final=step_key(rows[-1]["compactions"], rows[-1]["method"],
                             len(rows[-1]["frames"])),
        port_final=step_key(ours[-1].compactions, ours[-1].method, len(ours[-1].frames)),
        archive_step=at + 1, total_delta=total, truncated_delta=truncated, archives=kind)


def step_lines(name: str) -> list[str]:
    """Per step, side by side: the agent's and the port's (compactions, method, frames)."""
    golden = load_golden(name)
    out = []
    for mine, theirs in zip(replay(name), golden["rows"]):
        a = step_key(theirs["compactions"], theirs["method"], len(theirs["frames"]))
        p = step_key(mine.compactions, mine.method, len(mine.frames))
        arch_a = theirs["archive"] and (theirs["archive"]["totalChars"],
                                        theirs["archive"]["truncatedChars"])
        arch_p = mine.archive and (mine.archive["totalChars"], mine.archive["truncatedChars"])
        before = [r.tokens_before for r in mine.rounds if r.entry_id is not None]
        out.append(f"  step {mine.step:>2} {'=' if a == p else 'X'} agent {a} "
                   f"tokensBefore {theirs['tokens_before']} archive {arch_a} | port {p} "
                   f"tokensBefore {before} archive {arch_p}")
    return out
