"""context-full entries carry the short summary a summarizer that is asked for one returns.
"""

from __future__ import annotations

import warnings

from compaction_synth import FakeLLM
from pipeline_rows import CLAUDE
from pipeline_rows import fill_turns as _fill
from pipeline_rows import small_settings as _settings

from snapcompact.compaction import (
    CompactionPipeline,
    Session,
)


class _ShortAware(FakeLLM):
    """FakeLLM whose short-summary reply is fixed (two lines), or raises when ``fail`` is set."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail

    def __call__(self, system_prompt: str, prompt: str, *, max_tokens: int) -> str:
        reply = super().__call__(system_prompt, prompt, max_tokens=max_tokens)
        if self.calls[-1]["kind"] != "short":
            return reply
        if self.fail:
            raise RuntimeError("boom")
        return "I fixed the parser\n  and the cache "


def test_short_summary_on_context_full_entries():
    llm = _ShortAware()
    p = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=llm)
    _fill(p, 9, 12)
    outcome = p.compact()
    short = [c for c in llm.calls if c["kind"] == "short"]
    assert len(short) == 1
    call = short[0]
    # The agent's output cap: min(512, floor(20 % of the reserve)) = min(512, 800).
    assert call["max_tokens"] == 512
    # The new summary as context, the short-summary instruction last.
    assert "<previous-summary>\n## Goal\nsummary #1" in call["prompt"]
    assert call["prompt"].rstrip().endswith("no punctuation at the end.")
    # The conversation is the kept part: the last turn is in it, the first is not.
    assert "turn 11: go on" in call["prompt"] and "turn 0: go on" not in call["prompt"]
    assert outcome.entry.short_summary == "I fixed the parser and the cache"
    # A failing short summary costs only the line.
    failing = CompactionPipeline(Session(), CLAUDE, settings=_settings(), complete=_ShortAware(fail=True))
    _fill(failing, 9, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = failing.compact()
    assert out.entry is not None and out.entry.short_summary is None
    assert "short summary failed: boom" in out.warnings
