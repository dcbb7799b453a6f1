"""Shared builders of the compaction pipeline's behaviour tests (the rows of the original
compaction issue, now split into files named for what they test): a 40k-window Claude model,
small compaction settings and a session filled with synthetic tool turns."""

from __future__ import annotations

from compaction_synth import Turns

from snapcompact.compaction import DEFAULT_SETTINGS, CompactionPipeline, ModelInfo, merge_settings

CLAUDE = ModelInfo("claude-sonnet-4-5", 40_000, provider="anthropic", api="anthropic-messages")


def small_settings(strategy: str = "context-full", **snap):
    return merge_settings(DEFAULT_SETTINGS, {
        "compaction": {"strategy": strategy, "reserveTokens": 4000, "keepRecentTokens": 3000},
        "snapcompact": {"frameSize": 384, **snap}})


def fill_turns(p: CompactionPipeline, seed: int, turns: int) -> None:
    t = Turns(seed, result_words=(200, 600))
    for turn in range(turns):
        p.session.append_message({"role": "user", "content": f"turn {turn}: go on"})
        calls = [t.call()]
        p.session.append_message(t.assistant(calls))
        for call in calls:
            p.session.append_message(t.result(call))
        p.session.append_message(t.assistant([]))
