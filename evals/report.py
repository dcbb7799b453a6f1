"""The console report of a run: the plan before sending and the per-arm summary after.

Why separate from the run loop: the same lines go to the console and Hydra's job log
(:data:`evals.reporter.console`), and tests read them; formatting stays out of the loop.
"""


from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evals.budget import DryRunSummary, format_dry_run
from evals.planning import QA_READER, Plan, Planned
from evals.records import (
    Record,
)
from evals.rows import OCR_NOTE
from evals.spec import RunSpec

# --------------------------------------------------------------------------------------------
# summaries


def summarize(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Per arm (strategy, policy, shape, frame size): questions, recall, context tokens.

    When a key was recorded more than once (an error row and its later success), the last
    row wins. Skipped questions are counted apart and never scored.
    """
    latest: dict[tuple, Record] = {}
    for r in records:
        latest[r.key()] = r
    from evals.aggregate import arm_label, production_status

    groups: dict[tuple, list[Record]] = defaultdict(list)
    for r in latest.values():
        # a snapcompact arm is what it asked for, whatever shapes its sessions drew (as in
        # evals.aggregate: one row per arm)
        per_arm = r.strategy == "snapcompact" and bool(r.shape_requested)
        groups[(r.strategy, r.policy, "" if per_arm else r.shape, 0 if per_arm else r.frame_size,
                r.shape_requested, r.context_window or 0,
                production_status(r.strategy, r.production_valid, r.summary_stand_in),
                r.model, r.target_model)].append(r)
    rows = []
    for (strategy, policy, shape, size, requested, window, production, model,
         target), rs in sorted(groups.items()):
        if not shape:
            drawn = sorted({n for r in rs for n in r.shape.split("+") if n and n != "text"})
            shape, size = "+".join(drawn) or "text", max(r.frame_size for r in rs)
        asked = [r for r in rs if r.skipped is None]
        ok = [r for r in asked if r.error is None]
        n = len(ok) or 1
        discarded = [r for r in ok if (r.evidence_round or 0) >= 1]
        rows.append({
            "arm": arm_label(strategy, policy, shape, size, requested, window or None),
            "production": production, "context_window": window or None,
            "shape_requested": requested,
            "strategy": strategy, "policy": policy, "shape": shape, "frame_size": size,
            "model": model, "target_model": target, "n": len(asked),
            "skipped": len(rs) - len(asked), "errors": len(asked) - len(ok),
            "recall": sum(r.correct for r in ok) / n,
            "recall_discarded": (sum(r.correct for r in discarded) / len(discarded)
                                 if discarded else None),
            "n_discarded": len(discarded),
            "f1": sum(r.f1 for r in ok) / n,
            "compactions": max((r.compactions for r in rs), default=0),
            "frames": max((r.frames for r in rs), default=0),
            "context_tokens": (sum(r.predicted_prompt_tokens for r in rs) / len(rs)) if rs else 0,
            "predicted_usd": sum(r.predicted_cost_usd or 0.0 for r in asked),
        })
    return rows


def format_summary(rows: Sequence[Mapping[str, Any]], offline_reader: bool) -> str:
    lines = []
    if offline_reader:
        lines.append(f"[{OCR_NOTE}]")
    header = (f"{'arm':<38} {'verdict':<9} {'n':>4} {'skip':>4} {'err':>3} {'recall':>6} "
              f"{'disc.':>6} {'rounds':>6} {'frames':>6} {'ctx tok':>8} {'pred $':>8}")
    lines += [header, "-" * len(header)]
    order = {"valid": 0, "bound": 1, "stand-in": 2, "not sent": 3}
    for r in sorted(rows, key=lambda r: (order.get(r["production"], 3), r["arm"])):
        arm = r.get("arm") or r["strategy"]
        disc = f"{r['recall_discarded']:.2f}" if r["recall_discarded"] is not None else "-"
        recall = f"{r['recall']:>6.2f}" if r["n"] - r["errors"] > 0 else f"{'-':>6}"
        lines.append(
            f"{arm:<38} {r.get('production', ''):<9} {r['n']:>4} {r['skipped']:>4} "
            f"{r['errors']:>3} {recall} {disc:>6} {r['compactions']:>6} {r['frames']:>6} "
            f"{r['context_tokens']:>8,.0f} {r['predicted_usd']:>8.4f}")
    lines.append("disc. = recall on questions whose evidence a compaction discarded "
                 "(evidence_round >= 1); verdict: valid = production would send this context "
                 "(ranked), bound = full / truncate, stand-in = production's path with the "
                 "offline stand-in's summary where its LLM's would be (never ranked), not sent = "
                 "production would not (never ranked); rounds, frames: the most over the arm's "
                 "contexts")
    return "\n".join(lines)


def _cache_lines(planned: Sequence[Planned], target_usd: float, spec: RunSpec) -> list[str]:
    """The target's dollars without and with the provider's prompt cache (evals.prompt_cache)."""
    from evals.prompt_cache import cache_plan

    plan = cache_plan(spec.model, spec.model.model_for(QA_READER), spec.prompt_cache)
    if not spec.prompt_cache:
        return ["  prompt cache         off (prompt_cache=false): every request billed uncached"]
    if plan.rule is None:
        return [f"  prompt cache         none modelled for {spec.model.target_model} via "
                f"{spec.model.litellm_id.split('/')[0]}: predicted uncached"]
    uses = [p.cache_use for p in planned if p.cache_use is not None]
    written = sum(u.written for u in uses)
    read = sum(u.read for u in uses)
    cached_usd = sum(p.predicted_cost_cached_usd or 0.0 for p in planned)
    rule = plan.rule
    saved = f"{100 * (1 - cached_usd / target_usd):.0f}% less" if target_usd else "-"
    how = ("breakpoint at the end of each context" if plan.mark else
           "prompt_cache_key per context" if plan.keyed else
           "implicit" if plan.sent else "not sent: the target's bill")
    return [
        f"  prompt cache         {rule.id} ({rule.mode}, {how}; min {rule.min_tokens:,} tokens, "
        f"write x{rule.write_multiplier:g}, read x{rule.read_multiplier:g}; "
        f"pricing.toml, checked {rule.checked})",
        f"  target $ uncached    ${target_usd:>11,.4f}",
        f"  target $ cached      ${cached_usd:>11,.4f}   ({saved}; {written:,} tokens written, "
        f"{read:,} read; first question of a context writes, later ones read)",
    ]


def format_plan(plan: Plan, summary: DryRunSummary, spec: RunSpec) -> str:
    """The dry-run report: the client's numbers plus the target model's tokens and dollars."""
    target_tokens = sum(p.predicted_prompt_tokens for p in plan.planned)
    target_usd = sum(p.predicted_cost_usd or 0.0 for p in plan.planned)
    per_arm: dict[str, list[Planned]] = defaultdict(list)
    for p in plan.planned:
        per_arm[p.context.arm.label].append(p)
    head, _, rest = format_dry_run(summary, spec.budget_usd).partition("\n")
    if not spec.dry_run:
        head = "plan (predicted before anything is sent)"
    lines = [head + "\n" + rest,
             f"  rows already recorded {plan.skipped_done:>11,}   (skipped: resume)",
             (f"  target model         {spec.model.target_model}"
              f" via {spec.model.api or spec.model.provider}: {target_tokens:,} prompt tokens, "
              f"${target_usd:,.4f} if sent to it (input + output bound)")]
    lines.extend(_cache_lines(plan.planned, target_usd, spec))
    if spec.model.offline_reader:
        lines.append(f"  reader               {spec.model.name}: requests cost nothing "
                     f"({OCR_NOTE})")
    if per_arm:
        lines.append("  per arm:  arm                                   requests  frames/q  "
                     "tokens/q    target $    cached $")
        for label, ps in sorted(per_arm.items()):
            frames = sum(len(p.context.frame_hashes) for p in ps) / len(ps)
            tokens = sum(p.predicted_prompt_tokens for p in ps) / len(ps)
            usd = sum(p.predicted_cost_usd or 0.0 for p in ps)
            cached = sum(p.predicted_cost_cached_usd or 0.0 for p in ps)
            lines.append(f"            {label:<37} {len(ps):>8} {frames:>9.1f} "
                         f"{tokens:>9.0f} {usd:>11.4f} {cached:>11.4f}")
    return "\n".join(lines)
