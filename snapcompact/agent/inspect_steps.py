"""``python -m snapcompact compact SESSION --steps K``: the oracle's step protocol from the CLI.

Why a second mode: ``compact`` replays a session as a live agent meets it (a check before every
prompt, between tool turns, after every turn: :mod:`.replay`). The real coding agent can only be
run on a recorded session one resume at a time (``upstream-agent run FILE --steps K``: resume
with the next K-th user message as the prompt, one pre-prompt check per resume, the canned
reply ``"ok"``), so its compactions happen at other places than the live replay's. This mode
runs that same protocol through :func:`.stepwise.replay_like_upstream_steps` so a user can put
the port's decisions next to the agent's on their own session, step by step.

Settings are built as the oracle builds its ``config.yml``: ``{"compaction": {"enabled": true,
"strategy": STRATEGY}}`` (a legacy strategy the agent migrates to its method list), with the
``--settings`` file merged over it. The system prompt counted is the agent's own for the model
(:mod:`.system_prompt`: the text omp 18.3.4 sends with ``--no-tools``), or ``--system-prompt
FILE``.

Output folder: ``session.jsonl`` (the grown session with its compaction entries) and
``frames/NNN.png`` (the frames of the last step's request, as the oracle's ``frames/``); the
printed JSON has one row per step with the
figures ``upstream-agent``'s ``summary.json`` reports, and :func:`step_line` words a row the
way its per-step line does. Message counts differ by design: the port counts agent messages,
the agent's Anthropic request merges each run of tool results into one user message.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from snapcompact.agent.inspect import (
    CompactRequest,
    load_with_warnings,
    model_for_request,
    prepare_out,
)
from snapcompact.agent.stepwise import StepReport, replay_like_upstream_steps
from snapcompact.agent.system_prompt import system_prompt_for
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    claude_stand_in,
    load_settings,
    merge_settings,
)
from snapcompact.core import collector_paused

__all__ = ["ORACLE_STRATEGIES", "StepsRequest", "compact_session_steps", "step_line"]

#: Legacy ``compaction.strategy`` values the agent itself reads (and migrates to a method list);
#: ``truncate`` and ``full`` are this project's replay arms, not agent settings.
ORACLE_STRATEGIES: tuple[str, ...] = ("snapcompact", "context-full", "handoff", "shake")


@dataclass(frozen=True)
class StepsRequest:
    """``compact --steps K``: the resume interval and the final question."""

    steps: int
    question: str = "Continue."
    #: Run on a stand-in Claude counter (ctok missing) instead of refusing; every row then
    #: says its counts are an estimate.
    allow_estimate: bool = False


def _settings(req: CompactRequest) -> Any:
    """The oracle's ``config.yml`` for this strategy with the user's settings file over it."""
    base = merge_settings(DEFAULT_SETTINGS, {"compaction": {"enabled": True,
                                                            "strategy": req.strategy}})
    settings = load_settings(req.settings, base=base)
    overrides = {k: v for k, v in (("shape", req.shape), ("policy", req.policy),
                                   ("frame_size", req.frame_size)) if v is not None}
    return merge_settings(settings, {"snapcompact": overrides}) if overrides else settings


def _row(report: StepReport, of: int, system_chars: int, tokens_after: int | None,
         stand_in: str | None) -> dict[str, Any]:
    archive = dict(report.archive) if report.archive else None
    return {
        "counts_estimated_by": stand_in,
        "step": report.step, "of": of, "turns": report.turns, "prompt": report.prompt[:200],
        "compactions": report.compactions, "new_compactions": report.new_compactions,
        "method": report.method,
        "request": {"messages": report.messages, "text_chars": report.text_chars,
                    "system_chars": system_chars,
                    "frames": [list(f) for f in report.frames]},
        "archive": archive, "tokens_after": tokens_after,
        "first_kept_source_index": report.first_kept_source_index,
        "rounds": [r.to_json() for r in report.rounds],
        "warnings": list(report.warnings),
    }


def step_line(row: Mapping[str, Any]) -> str:
    """One row in the layout of ``upstream-agent``'s per-step line (same fields, same order),
    so the two runs can be read side by side; rejected methods follow on indented lines."""
    req = row["request"]
    text = (f"step {row['step']}/{row['of']} turns {row['turns']} | compactions "
            f"{row['compactions']} (+{row['new_compactions']}) | request {req['messages']} msgs, "
            f"text {req['text_chars']:,} ch (+system {req['system_chars']:,}), "
            f"frames {len(req['frames'])}")
    if req["frames"]:
        text += " [" + ", ".join(f"{w}x{h} {size:,} B" for w, h, size in req["frames"]) + "]"
    archive = row["archive"]
    if archive is not None:
        text += (f" | archive ({row['method']}) total {archive['totalChars']:,} truncated "
                 f"{archive['truncatedChars']:,} head/tail {archive['textHead']:,}/"
                 f"{archive['textTail']:,} frames {archive['frames']} "
                 f"tokensAfter {row['tokens_after']}")
    elif row["method"] is not None:
        text += (f" | last compaction: {row['method']} (no snapcompact archive), "
                 f"tokensAfter {row['tokens_after']}")
    if row.get("counts_estimated_by"):
        text += f" | ESTIMATE: counted by a stand-in ({row['counts_estimated_by']})"
    for r in row["rounds"]:
        for a in r["attempts"]:
            if a["status"] == "rejected" and a.get("reason"):
                text += f"\n    port: {a['method']} rejected: {a['reason']}"
    return text


def compact_session_steps(req: CompactRequest, steps: StepsRequest, *,
                          on_row: Callable[[dict[str, Any]], None] | None = None,
                          keep_alive: list[Any] | None = None) -> dict[str, Any]:
    """Grow ``req.session`` step by step as the oracle does; returns the summary (one row per
    step, ``on_row`` told of each as it finishes)."""
    if steps.steps < 1:
        raise ValueError(f"--steps must be >= 1, got {steps.steps}")
    if req.strategy not in ORACLE_STRATEGIES:
        raise ValueError(f"--steps runs the agent's own settings: strategy must be one of "
                         f"{', '.join(ORACLE_STRATEGIES)}, got {req.strategy!r}")
    with collector_paused():
        return _steps(req, steps, on_row, keep_alive)


def _steps(req: CompactRequest, steps: StepsRequest,
           on_row: Callable[[dict[str, Any]], None] | None,
           keep_alive: list[Any] | None) -> dict[str, Any]:
    messages, load_warnings = load_with_warnings(req.session)
    if not any(m.get("role") == "user" for m in messages):
        raise ValueError(f"{req.session}: no user message to plan steps from")
    model, api, provider = model_for_request(req)
    settings = _settings(req)
    folder = prepare_out(req.out)
    rows: list[dict[str, Any]] = []
    system, system_source = system_prompt_for(req.system_prompt, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run = replay_like_upstream_steps(messages, model, settings, steps=steps.steps,
                                         question=steps.question, system_prompt=system,
                                         allow_stand_in=steps.allow_estimate)
    if keep_alive is not None:
        keep_alive.extend((messages, run))
    maint = run.maintenance
    stand_in = (maint.view.text_token_method
                if claude_stand_in(model.id, settings.compaction.text_tokenizer) else None)
    after: int | None = None
    for report in run.steps:
        committed = [r for r in report.rounds if r.entry_id is not None]
        if committed:
            after = committed[-1].tokens_after
        row = _row(report, len(run.steps), len(system), after, stand_in)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    last = run.steps[-1]
    for i, png in enumerate(last.pngs):
        (folder / "frames" / f"{i:03d}.png").write_bytes(png)
    session = maint.session
    session.path = folder / "session.jsonl"
    session.rewrite()
    methods: dict[str, int] = {}
    for r in maint.rounds:
        if r.entry_id is not None and r.method:
            methods[r.method] = methods.get(r.method, 0) + 1
    return {
        "protocol": "steps", "steps": steps.steps, "question": steps.question,
        "model": req.model, "api": api, "provider": provider,
        "context_window": req.context_window, "strategy": req.strategy,
        "method_order": list(settings.compaction.method_order or ()),
        "agent_token_method": maint.view.text_token_method,
        "counts_estimated_by": stand_in,
        "system_prompt": {"source": system_source, "chars": len(system),
                          "tokens": maint.view.non_message_tokens},
        "threshold_tokens": maint.view.threshold(),
        "window_budget_tokens": maint.view.window_budget(),
        "compactions": last.compactions, "methods": methods,
        "frames": len(last.frames), "messages_replayed": len(messages),
        "rows": rows, "warnings_total": len(maint.notices) + len(load_warnings),
        "warnings": list(dict.fromkeys([*maint.notices, *load_warnings]))[:10],
        "load_warnings": load_warnings, "out": str(folder),
    }
