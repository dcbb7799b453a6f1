"""Billed context tokens over session lengths (evals.pipeline.token_phase).

Expected figures are worked out by hand from the rows each test builds; the end-to-end case
checks the screen against the harness's own dry run of the same config (its log line).
"""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import pytest

from evals.pipeline.token_phase import PhaseRow, main, replay_rows, summarize_phase


def _row(arm: str, length: int, item: str, tokens: int, *, frames: int = 17,
         valid: bool | None = True, stand_in: bool = False, fits: bool = True,
         label: str = "snapcompact/foveated/auto") -> dict:
    return asdict(PhaseRow(arm=arm, target_tokens=length, item_id=item, arm_slot=0,
                           arm_label=label, compactions=3, frames=frames,
                           context_tokens=tokens, production_valid=valid,
                           summary_stand_in=stand_in, fits_window=fits, truncated_chars=0))


def test_paired_difference_is_session_by_session_against_the_first_arm():
    # production's sawtooth: 50k and 150k at the two lengths; the research arm 90k at both.
    # Means 100k and 90k; paired differences +40k and -60k, mean -10k; every bootstrap
    # resample of two sessions has a mean among -60k, -10k, +40k.
    rows = pd.DataFrame([
        _row("production", 240_000, "a", 50_000),
        _row("production", 390_000, "a", 150_000, frames=0, valid=True, stand_in=True),
        _row("research", 390_000, "a", 90_000, frames=30),
        # another shape drawn: still the same session's first arm
        _row("research", 240_000, "a", 90_000, frames=30, label="snapcompact/foveated/8on16-bw"),
    ])
    base, other = summarize_phase(rows, n_boot=500).to_dict("records")
    assert (base["arm"], base["tokens_mean"], base["stand_in"]) == ("production", 100_000, 1)
    assert base["frames_mean"] == 8.5 and base["diff_mean"] is None
    assert (other["tokens_mean"], other["frames_mean"], other["diff_mean"]) == (90_000, 30.0,
                                                                                -10_000)
    assert other["diff_lo"] == -60_000 and other["diff_hi"] == 40_000
    assert other["sessions"] == 2 and other["lengths"] == 2


def test_contexts_production_would_not_send_are_counted():
    rows = pd.DataFrame([
        _row("production", 300_000, "a", 60_000),
        _row("x", 300_000, "a", 210_000, valid=False, fits=False),
    ])
    _, other = summarize_phase(rows).to_dict("records")
    assert (other["not_valid"], other["over_window"]) == (1, 1)


@pytest.mark.parametrize("arm", ["research=production", "=research=production", "production"])
def test_an_arm_needs_a_name_and_overrides(arm, capsys):
    with pytest.raises(SystemExit):
        main(["--arm", arm])
    assert "NAME=OVERRIDES" in capsys.readouterr().err


def test_the_screen_replays_what_the_harness_dry_run_builds(tmp_path):
    # A short session at a 32k window: the screen's row equals the context the harness's own
    # plan builds for the same overrides (compactions, frames, tokens), under two arms.
    common = ["strategies=[snapcompact]", "policies=[foveated]", "shapes=[auto]", "seed=3",
              "dataset.params.n_items=1", "context_window=32000"]
    rows = replay_rows("production", ["research=production"], [40_000], common)
    assert len(rows) == 1
    row = rows[0]
    assert row.arm == "production" and row.target_tokens == 40_000
    assert row.compactions >= 1 and row.fits_window
    from hydra import compose, initialize_config_dir

    from evals.pipeline.plan import build_plan
    from evals.pipeline.run_loop import make_summarizer
    from evals.pipeline.token_phase import CONFIG_DIR
    from evals.spec.run_spec import RunSpec

    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("eval", overrides=[*common, "dataset.params.target_tokens=40000",
                                         "research=production", "dry_run=true",
                                         f"results_dir={tmp_path}"])
    spec = RunSpec.from_config(cfg, base_dir=tmp_path)
    lines: list[str] = []
    build_plan(spec, tmp_path / "run", log=lines.append, summarizer=make_summarizer(spec))
    assert (f"{row.compactions} compactions, {row.frames} frames, "
            f"{row.context_tokens:,} context tokens") in "\n".join(lines)
