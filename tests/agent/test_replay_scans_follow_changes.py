"""The scans a replay keeps across passes answer what a scan of the whole history answers.

The agent's maintenance keeps its renderability probe counts (:class:`snapcompact.agent.probe.
ProbeScan`) and shake's per-position regions (on the branch index) from pass to pass, and
re-reads only what changed. Each test here runs a session through the maintenance with a check
at every pass against the old whole-history computation (``scan_renderability`` and
``cjk_heavy`` of the probe text; ``collect_shake_regions`` walking a plain list), and the
piece counts against the whole-text scan of pieces joined by line breaks.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import pytest

from snapcompact.agent import agent_settings, replay_agent_session
from snapcompact.agent.snapcompact_path import RenderabilityProbe
from snapcompact.compaction import DEFAULT_SETTINGS, ModelInfo
from snapcompact.compaction import shake as shake_module
from snapcompact.text import cjk_heavy, piece_scan_counts, scan_renderability

FONTS = ("5x8", "silver")

#: Text that moves the counts: prose, CJK (wide, silver-only), emoji (dropped or folded),
#: symbols the bitmap font lacks (fallbacks), whitespace runs with format characters, a literal
#: newline glyph, and a fenced block big enough for shake.
SNIPPETS = [
    "plain prose with words and numbers 12345",
    "中文文本和日本語のテキスト、한국어 텍스트도 있습니다",
    "emoji 😀🎉 and folds “quotes” — dashes … ellipsis",
    "math ∀x∈ℝ: ∑ᵢ xᵢ² ≥ 0 ⊕ ⊗ ∮",
    "tabs\tand\u200bzero\u200dwidth  \u00a0 runs\n\n\nof lines",
    "█ literal glyph █ at the ends █",
    "```python\n" + "\n".join(f"x{i} = {i} * {i}  # line {i} of the listing" for i in range(60))
    + "\n```",
    "",
    "   ",
]


def _session(n_turns: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    call = 0
    for turn in range(n_turns):
        out.append({"role": "user", "content": f"turn {turn}: {rng.choice(SNIPPETS)}"})
        for _ in range(rng.randint(1, 3)):
            call += 1
            # A repeated id now and then: the last result with an id is the one printed.
            call_id = f"c{call - 1}" if call > 1 and rng.random() < 0.05 else f"c{call}"
            tool = rng.choice(["read", "read", "bash", "grep"])
            args = {"path": f"src/m{rng.randint(0, 5)}.py"} if tool == "read" else {
                "command": rng.choice(SNIPPETS)[:30]}
            out.append({"role": "assistant", "stopReason": "toolUse", "content": [
                {"type": "text", "text": rng.choice(SNIPPETS)},
                {"type": "toolCall", "id": call_id, "name": tool, "arguments": args}]})
            body = " ".join(rng.choice(SNIPPETS) for _ in range(rng.randint(1, 12)))
            result: dict[str, Any] = {"role": "toolResult", "toolCallId": call_id,
                                      "toolName": tool, "isError": False,
                                      "content": [{"type": "text", "text": body}]}
            if tool == "grep" and rng.random() < 0.4:
                result["useless"] = True
            out.append(result)
        out.append({"role": "assistant", "stopReason": "stop",
                    "content": [{"type": "text", "text": rng.choice(SNIPPETS) or "done"}]})
    return out


@pytest.mark.parametrize(("window", "turns"), [(32_000, 80), (64_000, 130)])
def test_probe_counts_and_shake_regions_match_whole_history_scans(
        monkeypatch: pytest.MonkeyPatch, window: int, turns: int) -> None:
    checked = {"probe": 0, "shake": 0}
    kept_counts = RenderabilityProbe.counts

    def probe_counts(self: RenderabilityProbe, view: Any, prep: Any) -> Any:
        counts = kept_counts(self, view, prep)
        assert counts is not None  # the session is the branch as it is: the kept path answers
        text = self.text(view, prep)
        for font in counts.fonts:
            assert counts.renderability(font) == scan_renderability(text, font)
        assert counts.cjk_heavy() == cjk_heavy(text)
        checked["probe"] += 1
        return counts

    collect = shake_module.collect_shake_regions

    def shake_regions(path: Any, config: Any = shake_module.DEFAULT_SHAKE_CONFIG, *,
                      estimator: Any = shake_module.DEFAULT_ESTIMATOR) -> Any:
        regions = collect(path, config, estimator=estimator)
        assert regions == collect(list(path), config, estimator=estimator)  # a walk
        checked["shake"] += 1
        return regions

    monkeypatch.setattr(RenderabilityProbe, "counts", probe_counts)
    monkeypatch.setattr("snapcompact.compaction.pipeline_shake.collect_shake_regions",
                        shake_regions)
    model = ModelInfo("claude-sonnet-4-5", window, provider="anthropic",
                      api="anthropic-messages")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replay = replay_agent_session(_session(turns, seed=window),
                                      model, agent_settings("snapcompact", DEFAULT_SETTINGS),
                                      strategy="snapcompact")
    assert checked["probe"] >= 10 and checked["shake"] >= 10
    if window == 64_000:
        assert replay.methods_used().get("snapcompact", 0) >= 2  # a head from an archive


def test_piece_counts_add_up_to_the_joined_text() -> None:
    rng = random.Random(3)
    pool = [*SNIPPETS, "\n", "x", " lead", "trail ", "\u200b", "█", "█ █ x", "x █ █"]
    for _ in range(300):
        pieces = [rng.choice(pool) + rng.choice(pool) for _ in range(rng.randint(1, 5))]
        parts = [piece_scan_counts(p, FONTS, first=i == 0, last=i == len(pieces) - 1)
                 for i, p in enumerate(pieces)]
        text = "\n".join(pieces)
        if any(p is None for p in parts):
            continue  # a piece the edge trim eats: the caller scans the whole text
        total = parts[0]
        for part in parts[1:]:
            total = total + part  # type: ignore[operator]
        for font in FONTS:
            assert total.renderability(font) == scan_renderability(text, font), pieces
        assert total.cjk_heavy() == cjk_heavy(text), pieces


def test_pieces_that_cannot_be_counted_apart_say_so() -> None:
    assert piece_scan_counts("colour \x1b[31mred\x1b[0m", FONTS) is None  # ANSI: whole string
    assert piece_scan_counts("half a pair \ud83d", FONTS) is None  # surrogates pair across
    assert piece_scan_counts(" █ ", FONTS, first=True) is None  # the trim would go on
    assert piece_scan_counts(" █ ", FONTS) is not None  # inside the text it is counted
