"""The console report of a run: the plan before sending and the per-arm summary after.

Why separate from the run loop: the same lines go to the console and Hydra's job log
(:data:`evals.support.console.console`), and tests read them; formatting stays out of the loop.
"""


from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evals.pipeline.plan import QA_READER, Plan, Planned
from evals.pipeline.rows import OCR_NOTE
from evals.send.dollar_budget import DryRunSummary, format_dry_run
from evals.send.prompt_cache import cache_plan
from evals.spec.run_spec import RunSpec
from evals.store.records import Record
from snapcompact.pricing import ShapeTable, shape_rules

# --------------------------------------------------------------------------------------------
# summaries


#: The console prints no interval, so it asks for the fewest resamples the tables accept (they
#: feed only F1's interval; every figure printed here is a plain mean or count).
CONSOLE_RESAMPLES = 100
#: The tables' summary columns the console prints (and ``summary.json`` keeps), by their names
#: in ``summary.csv``.
SUMMARY_COLUMNS = (
    "production", "reader_id", "models", "target_model", "line", "strategy", "policy", "shape",
    "frame_size", "shape_requested", "context_window", "research", "n_questions", "n_rows",
    "n_skipped", "n_errors", "recall", "recall_discarded", "n_discarded", "f1",
    "compactions_mean", "frames_max", "predicted_prompt_tokens", "tokens_skipped_context",
    "predicted_cost_usd", "compaction_tokens_per_question", "billed_tokens", "billed_cost_usd",
    "shape_asked_drawn", "shape_note", "compression_vs_text", "compression_baseline")


def _plain(value: Any) -> Any:
    """A JSON-ready cell: numpy scalars as Python numbers, NaN as None."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def summarize(records: Iterable[Record], table: ShapeTable | None = None) -> list[dict[str, Any]]:
    """Per arm, the tables' own summary rows (:func:`evals.analysis.aggregate.summarize` over
    :func:`evals.analysis.aggregate.records_frame`), cut to :data:`SUMMARY_COLUMNS` plus the arm
    label the tables print: the same rows picked (one per measurement), the same groups, the same
    figures, so the console and ``summary.csv`` cannot disagree.

    ``table`` places target models on model lines (the library's table by default). A run
    without question rows (nothing recorded yet) has no summary.
    """
    # local (cost): aggregate brings pandas, +0.45-0.57 s that nothing else on a run's path loads
    from evals.analysis.aggregate import QA_READERS, arm_labels, records_frame
    from evals.analysis.summary import summarize as summarize_frame

    asked = [r for r in records if r.reader in QA_READERS]
    if not asked:
        return []
    frame = records_frame(asked, table if table is not None else shape_rules())
    summary = summarize_frame(frame, n_boot=CONSOLE_RESAMPLES)
    labels = arm_labels(summary)
    return [{"arm": label, **{name: _plain(row[name]) for name in SUMMARY_COLUMNS}}
            for label, row in zip(labels, summary.to_dict("records"))]


def format_summary(rows: Sequence[Mapping[str, Any]], offline_reader: bool) -> str:
    """The per-arm lines printed at the end of a run (``rows`` from :func:`summarize`)."""
    lines = []
    if offline_reader:
        lines.append(f"[{OCR_NOTE}]")
    header = (f"{'arm':<38} {'verdict':<9} {'n':>4} {'skip':>4} {'err':>3} {'recall':>6} "
              f"{'disc.':>6} {'rounds':>6} {'frames':>6} {'tok/q':>8} {'comp/q':>8} "
              f"{'billed/q':>8} {'$/q':>8}")
    lines += [header, "-" * len(header)]
    order = {"valid": 0, "bound": 1, "stand-in": 2, "not sent": 3}
    for r in sorted(rows, key=lambda r: (order.get(r["production"], 4), r["arm"])):
        disc = f"{r['recall_discarded']:.2f}" if r["recall_discarded"] is not None else "-"
        recall = f"{r['recall']:>6.2f}" if r["recall"] is not None else f"{'-':>6}"
        if r.get("shape_note") and r["recall"] is not None:  # not a measurement of its shape
            recall = f"{r['recall']:>5.2f}*"
        rounds = f"{r['compactions_mean']:.1f}" if r["compactions_mean"] is not None else "-"
        frames = f"{r['frames_max']:.0f}" if r["frames_max"] is not None else "-"
        # an arm whose every question was skipped shows the bill of the context it would send
        tokens = (r["predicted_prompt_tokens"] if r["predicted_prompt_tokens"] is not None
                  else r.get("tokens_skipped_context"))
        tokens = f"{tokens:,.0f}" if tokens is not None else "-"
        usd = f"{r['predicted_cost_usd']:.4f}" if r["predicted_cost_usd"] is not None else "-"
        share, billed = r.get("compaction_tokens_per_question"), r.get("billed_tokens")
        share = f"{share:,.0f}" if share is not None else "-"
        billed = f"{billed:,.0f}" if billed is not None else "-"
        if r.get("billed_cost_usd") is not None:
            usd = f"{r['billed_cost_usd']:.4f}"
        lines.append(
            f"{r['arm']:<38} {r['production']:<9} {r['n_questions']:>4} {r['n_skipped']:>4} "
            f"{r['n_errors']:>3} {recall} {disc:>6} {rounds:>6} {frames:>6} {tokens:>8} "
            f"{share:>8} {billed:>8} {usd:>8}")
    lines.append("as in summary.csv: n = questions scored (seeds averaged, errored requests "
                 "apart in err); disc. = recall on questions whose evidence a compaction "
                 "discarded (evidence_round >= 1); rounds = compactions per context (mean); "
                 "frames = the most over the arm's contexts; tok/q = predicted prompt tokens "
                 "per question (an arm with every question skipped: the tokens of the context "
                 "it would send); comp/q = the question's share of its session's compaction "
                 "calls (summary / handoff requests, input + output, paid once per session); "
                 "billed/q = tok/q + comp/q; $/q = dollars per question, the compaction share "
                 "at the price of the model that pays it (the session's unless a real "
                 "summarizer is set) included; verdict: valid = production would send "
                 "this context (ranked), bound = full / truncate, stand-in = production's path "
                 "with the offline stand-in's summary where its LLM's would be (never ranked), "
                 "not sent = production would not (never ranked)")
    for r in rows:
        if r.get("shape_note"):
            lines.append(f"* {r['arm']}: {r['shape_note']}")
    return "\n".join(lines)


def _cache_lines(planned: Sequence[Planned], target_usd: float, spec: RunSpec) -> list[str]:
    """The target's dollars without and with the provider's prompt cache
    (evals.send.prompt_cache)."""
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
    unknown = any(p.predicted_cost_usd is None for p in plan.planned)
    price_model = spec.model.price_model
    # the offline reader's own requests are free whatever the target costs; a real model's
    # spend is unknown with the target's price
    head, _, rest = format_dry_run(
        summary, spec.budget_usd,
        unpriced=price_model if unknown and not spec.model.offline_reader else None,
    ).partition("\n")
    if not spec.dry_run:
        head = "plan (predicted before anything is sent)"
    lines = [head + "\n" + rest,
             f"  rows already recorded {plan.skipped_done:>11,}   (skipped: resume)",
             (f"  target model         {spec.model.target_model}"
              f" via {spec.model.api or spec.model.provider}: {target_tokens:,} prompt tokens, "
              + (f"dollars unknown: {price_model} has no price (allow_unpriced=true)"
                 if unknown else f"${target_usd:,.4f} if sent to it (input + output bound)"))]
    if not unknown:
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
            if unknown:
                lines.append(f"            {label:<37} {len(ps):>8} {frames:>9.1f} "
                             f"{tokens:>9.0f} {'unknown':>11} {'unknown':>11}")
                continue
            usd = sum(p.predicted_cost_usd or 0.0 for p in ps)
            cached = sum(p.predicted_cost_cached_usd or 0.0 for p in ps)
            lines.append(f"            {label:<37} {len(ps):>8} {frames:>9.1f} "
                         f"{tokens:>9.0f} {usd:>11.4f} {cached:>11.4f}")
    return "\n".join(lines)
