"""Billed context tokens over where a session ends: research arms replayed at several lengths.

Why a module of its own: the questions are asked where a session ends, and what the context
holds there depends on how far the session got since its last compaction: a sawtooth between
what a compaction leaves (frames, text edges, the kept tail) and the threshold that triggers the
next one. Two settings compared on sessions of one length compare one point of each sawtooth,
and which one looks cheaper is mostly luck of phase. Measured (2026-12-02, dry runs, 12 sessions
at 240k-390k tokens): ``research=full_archive`` (the recommendation of the time) looked 3 %
dearer than production on held-out seeds 1-4, all at 300k tokens; averaged over lengths it is
44 % dearer (116,536 vs 80,923).

This screen replays each arm (``dry_run``: nothing is asked, nothing read, no key needed; a few
seconds a session) over a range of session lengths and reports, per arm, the mean context
tokens the questions would be billed on, the frames sent, the verdicts (contexts production
would not send, LLM summaries the offline stand-in wrote), and the paired difference against
the first arm, session by session, with a bootstrap interval. It answers the token half of the
research objective cheaply; recall still needs the full runs (``research_compare``).

    python -m evals.pipeline.token_phase --arm production=research=production \\
        --arm recommended=research=recommended [--lengths 240000,...] [--out DIR] \\
        [-- OVERRIDE...]

``--arm NAME=OVERRIDES`` (comma-free Hydra overrides separated by spaces) may repeat; the
overrides after ``--`` apply to every arm (default: the held-out comparison's snapcompact arm,
``strategies=[snapcompact] policies=[foveated] shapes=[auto] seed=1000``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: Session lengths (dataset tokens) of the default screen: one production sawtooth period and
#: more around the agent-session-long dataset's 300k.
DEFAULT_LENGTHS = (240_000, 270_000, 300_000, 330_000, 360_000, 390_000)
DEFAULT_OVERRIDES = ("strategies=[snapcompact]", "policies=[foveated]", "shapes=[auto]",
                     "seed=1000")
CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


@dataclass(frozen=True)
class PhaseRow:
    """One session replayed under one arm: what its questions would be billed on."""

    arm: str
    target_tokens: int
    item_id: str
    arm_slot: int  # the arm's place among its config's arms (how arms of two configs pair)
    arm_label: str
    compactions: int
    frames: int
    context_tokens: int  # the context's bill (snapcompact.billing.bill_request), question left out
    production_valid: bool | None
    summary_stand_in: bool
    fits_window: bool
    truncated_chars: int  # archive characters neither framed nor kept as text


def _arm(text: str) -> tuple[str, list[str]]:
    name, sep, rest = text.partition("=")
    overrides = shlex.split(rest)
    if not sep or not name.strip() or not overrides or not all(
            "=" in o or o.startswith("~") for o in overrides):
        raise ValueError(f"--arm {text!r}: expected NAME=OVERRIDES, Hydra overrides after the "
                         "name (e.g. production=research=production)")
    return name.strip(), overrides


def replay_rows(name: str, overrides: Sequence[str], lengths: Sequence[int],
                common: Sequence[str]) -> list[PhaseRow]:
    """Dry-run replays of one arm at every length (contexts built, nothing asked)."""
    from hydra import compose, initialize_config_dir

    from evals.pipeline.plan import build_plan
    from evals.pipeline.run_loop import make_summarizer
    from evals.spec.run_spec import RunSpec

    rows: list[PhaseRow] = []
    with tempfile.TemporaryDirectory(prefix="token-phase-") as scratch:
        for length in lengths:
            args = [*common, f"dataset.params.target_tokens={length}", *overrides,
                    "dry_run=true", "progress=false", f"results_dir={scratch}"]
            with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
                cfg = compose("eval", overrides=args)
            spec = RunSpec.from_config(cfg, base_dir=scratch)
            plan = build_plan(spec, Path(scratch) / "run", log=lambda _line: None,
                              summarizer=make_summarizer(spec))
            slots: dict[str, int] = {}
            for item, context in plan.contexts:
                slot = slots[item.item_id] = slots.get(item.item_id, -1) + 1
                rows.append(PhaseRow(
                    arm=name, target_tokens=length, item_id=item.item_id, arm_slot=slot,
                    arm_label=context.arm.label, compactions=context.compactions,
                    frames=len(context.frame_hashes),
                    context_tokens=(context.text_tokens_without_question
                                    + context.predicted_image_tokens),
                    production_valid=context.production_valid,
                    summary_stand_in=context.summary_stand_in,
                    fits_window=context.fits_window, truncated_chars=context.truncated_chars))
    return rows


def summarize_phase(rows: pd.DataFrame, *, seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Per arm: sessions, mean/min/max context tokens, frames, verdict counts, and the paired
    mean difference against the first arm (same length, item and arm slot: two configs' first
    arms pair even when they draw different shapes) with a 95 %
    percentile bootstrap interval over sessions."""
    order = list(dict.fromkeys(rows["arm"]))
    key = ["target_tokens", "item_id", "arm_slot"]
    base = rows[rows["arm"] == order[0]].set_index(key)["context_tokens"]
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    for name in order:
        part = rows[rows["arm"] == name]
        tokens = part["context_tokens"].to_numpy(dtype=float)
        row = {"arm": name, "sessions": len(part), "lengths": part["target_tokens"].nunique(),
               "tokens_mean": round(float(tokens.mean())), "tokens_min": int(tokens.min()),
               "tokens_max": int(tokens.max()), "frames_mean": round(part["frames"].mean(), 1),
               "not_valid": int((part["production_valid"] == False).sum()),  # noqa: E712
               "stand_in": int(part["summary_stand_in"].sum()),
               "over_window": int((~part["fits_window"]).sum()),
               "diff_mean": None, "diff_lo": None, "diff_hi": None}
        if name != order[0]:
            paired = part.set_index(key)["context_tokens"]
            diff = (paired - base).dropna().to_numpy(dtype=float)
            if len(diff):
                boots = rng.choice(diff, size=(n_boot, len(diff)), replace=True).mean(axis=1)
                row.update(diff_mean=round(float(diff.mean())),
                           diff_lo=round(float(np.percentile(boots, 2.5))),
                           diff_hi=round(float(np.percentile(boots, 97.5))))
        out.append(row)
    frame = pd.DataFrame(out)
    for column in ("diff_mean", "diff_lo", "diff_hi"):  # None for the baseline, not NaN
        frame[column] = pd.Series([r[column] for r in out], dtype=object)
    return frame


def _markdown(summary: pd.DataFrame, baseline: str) -> str:
    head = ("| arm | sessions | lengths | tokens mean | min | max | frames | not valid | "
            f"stand-in | over window | vs {baseline} [95 % CI] |")
    lines = [head, "| --- |" + " ---: |" * 9 + " --- |"]
    for r in summary.itertuples():
        diff = ("" if r.diff_mean is None or pd.isna(r.diff_mean) else
                f"{r.diff_mean:+,.0f} [{r.diff_lo:+,.0f}, {r.diff_hi:+,.0f}]")
        lines.append(f"| {r.arm} | {r.sessions} | {r.lengths} | {r.tokens_mean:,} | "
                     f"{r.tokens_min:,} | {r.tokens_max:,} | {r.frames_mean} | {r.not_valid} | "
                     f"{r.stand_in} | {r.over_window} | {diff} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    common = list(DEFAULT_OVERRIDES)
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
        common = [*common, *extra]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arm", action="append", required=True, metavar="NAME=OVERRIDES",
                    help="an arm: a name and the Hydra overrides that make it (repeatable; "
                         "the first is the baseline)")
    ap.add_argument("--lengths", default=",".join(str(n) for n in DEFAULT_LENGTHS),
                    help="session lengths in dataset tokens (dataset.params.target_tokens)")
    ap.add_argument("--out", help="folder for token_phase.csv (every session) and "
                                  "token_phase.md (the summary)")
    args = ap.parse_args(argv)
    try:
        arms = [_arm(text) for text in args.arm]
        lengths = [int(n.replace("_", "")) for n in args.lengths.split(",") if n.strip()]
    except ValueError as exc:
        ap.error(str(exc))
    if len({name for name, _ in arms}) != len(arms):
        ap.error("--arm names must differ")
    rows = [row for name, overrides in arms
            for row in replay_rows(name, overrides, lengths, common)]
    frame = pd.DataFrame([asdict(r) for r in rows])
    summary = summarize_phase(frame)
    text = (_markdown(summary, arms[0][0]) + "\n\nDry-run replays (nothing asked): context "
            "tokens the questions would be billed on, question left out; overrides for every "
            f"arm: {' '.join(common)}; lengths {', '.join(f'{n:,}' for n in lengths)}.")
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out / "token_phase.csv", index=False)
        (out / "token_phase.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
