"""Research knobs of ``snapcompact.*`` (issue 24): defaults are production, each other value
changes the decision it names.

Expected figures are worked out by hand from the rules and the provider docs, never read from
the code under test:

* claude-sonnet-4-5 (Anthropic's standard rule: 28 px patches, 1568 px / 1568 patches at
  most) sees a 1568 px square frame at 1092 px: ceil(1092/28)^2 = 39^2 = **1,521** tokens; a
  1568 x 196 strip is not resized: ceil(1568/28) * ceil(196/28) = 56 * 7 = **392**.
* The cap reserve is ceil(2 * edge * 1.15 / 4) + 2,000 (session-maintenance.ts:3557-3612): an
  edge of 1,000 tokens = 4,000 characters gives ceil(2,300) + 2,000 = **4,300**.
* The hard cap is min(80 frames, 3,000,000 / 170,000 = 17, Anthropic's 90 images): **17**;
  without the 170 KB estimate: **80**.
* 11on16-bw at 1568 px: 142 columns x 98 rows = 13,916 characters a frame.
"""

from __future__ import annotations

import base64
import io
import warnings
from functools import cache

import pytest
from agent_parity import load_case, model_of, recorded_counter, settings_of, system_prompt
from PIL import Image

from snapcompact.agent import (
    cap_reserve_tokens,
    frame_tokens_for,
    frames_within_payload,
    hard_frame_cap,
    production_estimator,
    snapcompact_max_frames,
)
from snapcompact.agent.stepwise import StepwiseReplay, replay_like_upstream_steps
from snapcompact.archive import PRESERVE_KEY, Archive, ArchiveFrame, get_preserved_archive
from snapcompact.archive.plan import dense_companion, plan_foveated
from snapcompact.billing import billed_frame_charge
from snapcompact.compaction import (
    DEFAULT_SETTINGS,
    CompactionEntry,
    ModelInfo,
    TokenEstimator,
    merge_settings,
)
from snapcompact.core import get_shape

SONNET = ModelInfo(id="claude-sonnet-4-5", context_window=200_000, provider="anthropic",
                   api="anthropic-messages")
#: Each knob and production's value for it.
DEFAULTS = {"frameCharge": "production", "frameCapBytes": "estimate", "textEdgeTokens": None,
            "middleShape": "production", "frameSize": None}


# --------------------------------------------------------------------------------------------
# settings: defaults, and bad values name the key


def test_defaults_are_production() -> None:
    sc = DEFAULT_SETTINGS.snapcompact
    assert (sc.frame_charge, sc.frame_cap_bytes, sc.text_edge_tokens, sc.middle_shape,
            sc.frame_size) == tuple(DEFAULTS.values())


@pytest.mark.parametrize(("key", "value"), [
    ("frameCharge", "free"), ("frameCapBytes", "exact"), ("textEdgeTokens", -1),
    ("textEdgeTokens", 1.5), ("middleShape", "9x9-bw"), ("middleShape", 3),
    ("shape", "px-8x13-11x16-bw-nostretch-extra"), ("shape", {"font": "8x13"}),
    ("shape", {"font": "8x13", "cellWidth": 2, "cellHeight": 16}),
    ("shape", {"font": "8x13", "cellWidth": 11, "cellHeight": 16, "frameSize": 1568}),
])
def test_a_bad_value_names_its_key(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"snapcompact.{key}"):
        merge_settings(DEFAULT_SETTINGS, {"snapcompact": {key: value}})


def test_a_shape_given_by_parameters_becomes_its_parametric_name() -> None:
    settings = merge_settings(DEFAULT_SETTINGS, {"snapcompact": {
        "shape": {"font": "8x13", "cellWidth": 11, "cellHeight": 16, "stretch": False},
        "middleShape": {"font": "8x8", "cellWidth": 6, "cellHeight": 6}}})
    assert settings.snapcompact.shape == "px-8x13-11x16-bw-nostretch"
    assert settings.snapcompact.middle_shape == "px-8x8-6x6-bw"


# --------------------------------------------------------------------------------------------
# the rules, knob by knob


def _png(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("L", (width, height), 255).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_billed_charge_is_the_providers_bill_at_the_seen_size() -> None:
    assert frame_tokens_for("production", SONNET, 1568) == 5024
    assert frame_tokens_for("billed", SONNET, 1568) == 1521


def test_billed_charge_counts_each_frame_at_its_own_size() -> None:
    frames = tuple(ArchiveFrame(data=_png(w, h), mime_type="image/png", cols=1, rows=1, chars=1)
                   for w, h in ((1568, 1568), (1568, 196)))
    message = {"role": "compactionSummary", "summary": "",
               "preserveData": {PRESERVE_KEY: Archive(frames, 2, 0).to_json()}}
    production = TokenEstimator(count_text=lambda fragments: 0)
    billed = TokenEstimator(count_text=lambda fragments: 0,
                            frame_charge=billed_frame_charge(SONNET))
    assert production.message(message) == 2 * 5024
    assert billed.message(message) == 1521 + 392


def test_cap_counts_frames_at_the_chosen_charge() -> None:
    # window 100k: reserve max(15,000, 16,384) = 16,384; 83,616 - 20,000 tail - 10,002 = 53,614
    shape = get_shape("11on16-bw")
    kwargs = {"context_window": 100_000, "reserve_tokens": 16_384, "base_tokens": 20_000,
              "shape": shape, "provider": "anthropic"}
    assert snapcompact_max_frames(**kwargs).max_frames == 10  # 53,614 // 5,024
    assert snapcompact_max_frames(**kwargs, frame_tokens=1521).max_frames == 17  # 35, cap 17
    assert snapcompact_max_frames(**kwargs, frame_tokens=1521,
                                  data_budget=False).max_frames == 35


def test_frame_count_cap_from_actual_bytes() -> None:
    assert hard_frame_cap("anthropic") == 17
    assert hard_frame_cap("anthropic", data_budget=False) == 80
    # 17 frames of 4,000,000 B: 235,294 B each; 3,000,000 holds 12 of them
    assert frames_within_payload(17, 4_000_000, 3_000_000) == 12
    assert frames_within_payload(17, 3_000_001, 3_000_000) == 16  # at least one fewer
    assert frames_within_payload(17, 2_000_000, 3_000_000) == 17  # fits: unchanged


def test_text_edges_in_tokens() -> None:
    shape = get_shape("11on16-bw")
    assert cap_reserve_tokens(shape) == 10_002  # production: one capacity (13,916) an edge
    assert cap_reserve_tokens(shape, edge_chars=4_000) == 4_300
    text = "".join(chr(ord("a") + i % 26) for i in range(100_000))
    layout = plan_foveated(text, shape, dense_companion(shape), 80, edge_chars=4_000)
    assert (layout.text_head, layout.text_tail) == (text[:4_000], text[-4_000:])
    production = plan_foveated(text, shape, dense_companion(shape), 80)
    assert len(production.text_head) == len(production.text_tail) == 13_916


@pytest.mark.parametrize(("middle", "expected"), [
    ("production", "8on16-bw"), ("same", "11on16-bw"), ("6x6u-bw", "6x6u-bw"),
    ("px-8x8-7x7-bw", "px-8x8-7x7-bw")])
def test_middle_shape(middle: str, expected: str) -> None:
    high = get_shape("11on16-bw")
    low = dense_companion(high, middle)
    assert (low.name, low.frame_size) == (expected, 1568)
    # 2 edges + 20 pages of 11on16-bw into 5 frames: 2 high frames at each end, 1 in the middle
    text = "x" * (13_916 * 22)
    layout = plan_foveated(text, high, low, 5)
    assert [f.shape.name for f in layout.frames] == ["11on16-bw"] * 2 + [expected] + [
        "11on16-bw"] * 2


# --------------------------------------------------------------------------------------------
# through the agent's maintenance, on the recorded 1M-character session at the 200k window


@cache
def replayed(case: str, knobs: tuple[tuple[str, object], ...] = (),
             recorded: bool = False) -> StepwiseReplay:
    """The case with these knobs; ``recorded``: text counted as the agent counted it (the
    parity protocol, tests/agent_parity.py), else by the maintenance's own counter, which the
    ``frameCharge`` knob reaches."""
    golden = load_case(case)
    settings = merge_settings(settings_of(golden), {"snapcompact": dict(knobs)})
    estimator = (production_estimator(count_text=recorded_counter(golden)) if recorded
                 else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return replay_like_upstream_steps(
            golden["session"], model_of(golden), settings, steps=golden["steps"],
            question=golden["question"], system_prompt=system_prompt(golden),
            estimator=estimator)


def _snapcompact_attempts(replay: StepwiseReplay) -> list:
    return [a for s in replay.steps for r in s.rounds for a in r.attempts
            if a.method == "snapcompact"]


@pytest.mark.parametrize("knob", sorted(DEFAULTS))
@pytest.mark.parametrize("case", ["example", "session1m"])
def test_each_knob_at_its_default_keeps_the_agents_steps(case: str, knob: str) -> None:
    golden = load_case(case)
    ours = replayed(case, ((knob, DEFAULTS[knob]),), recorded=True).steps
    assert [(s.step, s.compactions, s.method, s.first_kept_source_index,
             [list(f[:2]) for f in s.frames]) for s in ours] == [
        (r["step"], r["compactions"], r["method"], r["first_kept_source_index"],
         [f[:2] for f in r["frames"]]) for r in golden["rows"]]


def test_billed_charge_keeps_the_archive_the_agent_rejects() -> None:
    golden = load_case("session1m")
    # The agent rejects its second snapcompact: projection P >= baseline B, P counting each of
    # its n frames at 5,024. Each frame bills at most 1,521, so the billed projection is at most
    # P - n * (5,024 - 1,521), under B: the billed charge accepts that archive.
    warning = next(w for r in golden["rows"] for w in r["warnings"]
                   if w["message"] == "Snapcompact projection would not reduce context")
    frames = max(len(r["frames"]) for r in golden["rows"])
    assert warning["projected"] - frames * (5024 - 1521) < warning["reductionBaseline"]
    production = _snapcompact_attempts(replayed("session1m"))
    billed = _snapcompact_attempts(replayed("session1m", (("frameCharge", "billed"),)))
    assert [a.status for a in production] == ["accepted", "rejected"]
    assert [a.status for a in billed] == ["accepted", "accepted"]
    assert {a.frame_cap.frame_tokens for a in billed} == {1521}
    assert all(a.frame_cap.max_frames == min(a.frame_cap.frame_budget // 1521, 17)
               for a in billed)
    methods = {s.method for s in replayed("session1m", (("frameCharge", "billed"),)).steps}
    assert "soft" not in methods


def test_actual_bytes_lift_the_17_frame_cap() -> None:
    knobs = (("frameCapBytes", "actual"), ("frameCharge", "billed"))
    attempts = _snapcompact_attempts(replayed("session1m", knobs))
    first = attempts[0].frame_cap
    assert first.max_frames == min(first.frame_budget // 1521, 80) > 17
    assert max(a.frames for a in attempts) > 17
    assert all(a.payload_bytes <= 3_000_000 for a in attempts)


def test_text_edge_tokens_size_the_archive_edges() -> None:
    replay = replayed("session1m", (("textEdgeTokens", 1000),))
    first = _snapcompact_attempts(replay)[0]
    assert first.frame_cap.cap_reserve == 4_300
    entry = next(e for e in replay.maintenance.session.entries
                 if isinstance(e, CompactionEntry))
    archive = get_preserved_archive(entry.preserve_data)
    assert archive is not None and len(archive.text_head or "") == 4_000


def test_middle_shape_same_draws_every_frame_in_the_asked_shape() -> None:
    production = _snapcompact_attempts(replayed("session1m"))
    same = _snapcompact_attempts(replayed("session1m", (("middleShape", "same"),)))
    assert "8on16-bw" in production[-1].frames_by_shape
    assert set(same[-1].frames_by_shape) == {"11on16-bw"}
