"""A step's pre-prompt check counts the prompt it is about to send (snapcompact.agent.stepwise).

Why: the oracle's resume runs the agent's pre-prompt check with the pending prompt (the
context plus the prompt over the threshold compacts before the request goes out). The parity
goldens never put a step between "the context alone fits" and "the context with the prompt
does not", so a check that left the prompt out still matched them. Figures worked by hand with
the bytes/4 counter: a message of n characters is ceil(n / 4) tokens.
"""

from __future__ import annotations

import warnings

from snapcompact.agent import agent_settings
from snapcompact.agent.stepwise import replay_like_upstream_steps
from snapcompact.compaction import DEFAULT_SETTINGS, ModelInfo, merge_settings

MODEL = ModelInfo(id="claude-sonnet-4-5", context_window=32_000, provider="anthropic",
                  api="anthropic-messages", include_thinking=False)
#: 32,000 - max(15 % of 32,000, 4,096) (the agent's resolveThresholdTokens).
THRESHOLD = 27_200


def _text(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def test_the_pending_prompt_tips_the_pre_prompt_check():
    # Ten turns of 3,999 + 3,997 characters: 1,000 + 1,000 tokens each, 20,000 in all (below
    # 27,200). The eleventh user message, the step's prompt, is 40,000 characters: 10,000
    # tokens. With it the check sees 30,000 > 27,200 and compacts before the request; without
    # it the request would go out whole (~120,000 characters) and a post-turn check compact.
    messages = []
    for i in range(10):
        messages += [_text("user", f"question {i} " + "q" * 3988),
                     _text("assistant", f"answer {i} " + "a" * 3988)]
    messages += [_text("user", "p" * 40_000), _text("assistant", "fine")]
    settings = agent_settings("snapcompact", merge_settings(DEFAULT_SETTINGS, {"compaction": {
        "keepRecentTokens": 2000, "reserveTokens": 4096, "textTokenizer": "bytes4"}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        replay = replay_like_upstream_steps(messages, MODEL, settings, steps=10,
                                            system_prompt=None)  # the sums above: no prompt
    first = replay.steps[0]
    assert (first.turns, len(first.prompt)) == (11, 40_000)
    (check,) = first.rounds
    assert (check.check, check.trigger_tokens, check.threshold_tokens) == (
        "pre_prompt", 30_000, THRESHOLD)
    assert (first.compactions, first.new_compactions) == (1, 1)
    assert first.text_chars < 60_000  # the prompt went out after the compaction
    # the last step appends the reply "fine" and asks "Continue.": far below, no new compaction
    last = replay.steps[1]
    assert (last.prompt, last.rounds, last.compactions, last.new_compactions) == (
        "Continue.", (), 1, 0)
