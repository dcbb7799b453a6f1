"""``snapcompact-eval-table``: records of many runs -> tables, plots, the model -> shape table.

Why one command: the decision (which shape each model line gets) and the evidence behind it
(tables, intervals, figures, the diff against the library's current table) should come out of
the same invocation, so what is committed under ``results/`` always agrees with itself.

    snapcompact-eval-table results/runs --out results            # tables, plots, report, diff
    snapcompact-eval-table results/runs --out results --dry-run  # ... and the rows to change
    snapcompact-eval-table results/runs --out results --apply    # ... and write the rows the
                                                                 # evidence supports (apply_gate)

Records are found by walking the given files and directories (``evals.store.records.load_records``);
nothing is read from their names.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from evals.analysis.aggregate import (
    GROUP_COLUMNS,
    PRODUCTION_BOUND,
    PRODUCTION_NOT_SENT,
    PRODUCTION_STAND_IN,
    PRODUCTION_UNCHECKED,
    PRODUCTION_VALID,
    Decision,
    arm_label,
    arm_labels,
    choose_winners,
    reader_label,
    recall_by_depth,
    recall_by_round,
    records_frame,
    rule_text,
    same_context_groups,
    summarize,
)
from evals.analysis.apply_gate import format_verdicts, judge_changes
from evals.analysis.docs_blocks import check_docs, write_docs
from evals.analysis.write_model_shapes import (
    TableProposal,
    apply_table,
    library_table_path,
    propose_table,
)
from evals.replay.passes import load_passes, pass_lines, passes_frame
from evals.store.records import load_records
from snapcompact.billing import NEXT_TURNS, TURN_TOKENS
from snapcompact.pricing import parse_shape_rules

#: Record fields that change from run to run of the same code on the same data: the checkout's
#: commit, when and how fast a row was written, and whether its answer came from the response
#: cache (a fresh clone sends what a warm checkout reads back: same answer, other ``cached``).
PER_RUN_COLUMNS = ("git_sha", "created_at", "latency_s", "cached", "attempts")
#: The committed records table's row order: a measurement's identity, not the order the
#: concurrent requests happened to finish in.
RECORD_ORDER = ("experiment", "dataset", "seed", "item_id", "target_model", "strategy", "policy",
                "shape_requested", "context_window", "research", "shape", "frame_size",
                "reader", "model", "question_id")


def _code_hashes(df: pd.DataFrame) -> str:
    """The code that wrote the records: its content hash (``code_sha256``), not the commit."""
    hashes = sorted({str(h) for h in df.get("code_sha256", pd.Series(dtype=str)).dropna()
                     if str(h)})
    return "sha256 " + ", ".join(h[:16] for h in hashes) if hashes else "hash not recorded"


def table_provenance(df: pd.DataFrame) -> str:
    """Who wrote a regenerated model -> shape table, from what: the newest record's date and the
    code that wrote the records (dates and hashes of the records, so a rerun reproduces it)."""
    dates = pd.to_datetime(df["created_at"], utc=True, errors="coerce").dropna() \
        if "created_at" in df else pd.Series(dtype="datetime64[ns, UTC]")
    newest = dates.max().strftime("%Y-%m-%d") if len(dates) else "date not recorded"
    return f"snapcompact-eval-table, records up to {newest}, code {_code_hashes(df)}"


def _write_table(frame: pd.DataFrame, out: Path, stem: str) -> None:
    frame.to_parquet(out / f"{stem}.parquet", index=False)
    frame.to_csv(out / f"{stem}.csv", index=False, float_format="%.6g")


def _fmt(value: float, spec: str = ".3f") -> str:
    return "n/a" if pd.isna(value) else format(value, spec)


#: What the report's ``compression`` column is (``aggregate._add_compression`` computes it).
COMPRESSION_NOTE = ("Compression: `full`'s tokens / the arm's on the same questions; where "
                    "`full` was skipped (over the model's window), against the uncompacted "
                    "history's bill.")


def compression_cell(row) -> str:
    """The report's compression of one summary row: ``5.92x``, or ``5.92x (vs uncompacted)``
    when ``full`` was skipped and the ratio is taken against the uncompacted history's bill."""
    base = "" if row.compression_baseline == "full" else " (vs uncompacted)"
    return f"{_fmt(row.compression_vs_text, '.2f')}x{base}"


def arm_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The report's per-arm numbers as one frame for a notebook: one row per arm, indexed by
    target model, context window and production verdict (so arms of different windows or
    verdicts are never averaged together), with recall, recall per 1k tokens, billed tokens
    and the report's compression (:func:`compression_cell`)."""
    frame = summary.assign(arm=arm_labels(summary)).copy()
    if "production" not in frame:
        frame["production"] = PRODUCTION_UNCHECKED
    frame["window"] = [f"{int(w):,}" if pd.notna(w) else "n/a"
                       for w in frame.get("context_window", pd.Series([None] * len(frame)))]
    frame["compression"] = [compression_cell(r) if r.n_questions else "skipped"
                            for r in frame.itertuples()]
    columns = {"n_questions": "questions", "recall": "recall",
               "recall_per_1k_tokens": "recall per 1k tokens",
               "predicted_prompt_tokens": "billed tokens per question",
               "compression": "compression"}
    out = (frame.sort_values(["target_model", "context_window", "production",
                              "predicted_prompt_tokens"])
           .set_index(["target_model", "window", "production", "arm"])[list(columns)]
           .rename(columns=columns))
    out.index = out.index.set_names(["target model", "window", "verdict", "arm"])
    return out


_SECTIONS = (
    (PRODUCTION_VALID, "Production-valid arms (ranked)",
     "Contexts the coding agent's maintenance produced and production would send (they fit the "
     "window). Only these take part in the winner rule."),
    (PRODUCTION_BOUND, "Bounds (never ranked)",
     "`full`: the whole history as text, the upper bound (skipped, with its reason, when it "
     "exceeds the model's input window); `truncate`: production's cut points with the discarded "
     "part dropped, the lower bound."),
    (PRODUCTION_NOT_SENT, "Not sent by production (shown apart, never ranked)",
     "Contexts production would not send as measured: the pinned research policy, a pass where "
     "production would have run an LLM method this offline run cannot, or a context over the "
     "window. `production_note` in records.csv says which."),
    (PRODUCTION_STAND_IN, "Production's path, summary by the offline stand-in (never ranked)",
     "Contexts where the coding agent's maintenance handed over to an LLM method (handoff or "
     "soft summary) and the offline summarizer stand-in wrote that summary: the path is "
     "production's, the summary text is not (it names no fact of the session), so recall on "
     "what the summary would carry is a floor."),
    (PRODUCTION_UNCHECKED, "Rows without a production verdict (recorded before it existed)", ""),
)


def _methods(rows: pd.DataFrame, column: str) -> str:
    """The counters named in ``column`` of ``rows`` (a table header names what counted)."""
    if column not in rows:
        return "counter not recorded"
    names = sorted({m for cell in rows[column].dropna() for m in str(cell).split("; ")
                    if m and m != "nan"})
    return ", ".join(names) or ("no call" if column == "compaction_token_method"
                                else "counter not recorded")


def _compaction_cell(row: object) -> str:
    """``share/q (calls x, tokens per context)``: the question's share of its session's
    compaction calls, and the session's bill it is the share of ("*": an estimate)."""
    share = getattr(row, "compaction_tokens_per_question", float("nan"))
    calls = getattr(row, "compaction_calls_per_context", float("nan"))
    if pd.isna(share):
        return "not recorded"
    if pd.isna(calls) or not calls:
        return _fmt(share, ",.0f")
    mark = "*" if getattr(row, "compaction_bill_notes", "") else ""
    count = f"{calls:.0f}" if float(calls).is_integer() else f"{calls:.1f}"
    return (f"{_fmt(share, ',.0f')}{mark} ({count} calls, "
            f"{_fmt(getattr(row, 'compaction_billed_tokens_per_context'), ',.0f')})")


def _compaction_notes(rows: pd.DataFrame) -> list[str]:
    """The estimate notes of the compaction figures marked "*", and their price."""
    if "compaction_bill_notes" not in rows:
        return []
    out = []
    for row in rows.itertuples():
        if row.compaction_bill_notes:
            out.append(f"\\* {row.arm_label}: {row.compaction_bill_notes}; priced at "
                       f"{row.compaction_price_model or 'the target'}: "
                       f"${_fmt(row.compaction_cost_usd_per_question, '.4f')}/q of "
                       f"${_fmt(row.billed_cost_usd, '.4f')}/q billed.")
    return out + [""] if out else []


def _summary_lines(summary: pd.DataFrame) -> list[str]:
    out = []
    summary = summary.assign(arm_label=arm_labels(summary))
    for (reader, target), part in summary.groupby(["reader_id", "target_model"], sort=True):
        out += [f"### {target} (answers by {reader_label(reader)})", ""]
        for status, title, text in _SECTIONS:
            rows = part[part["production"] == status]
            if rows.empty:
                continue
            out += [f"#### {title}", ""] + ([text, ""] if text else [])
            out += [(f"| arm | questions | recall [95 % CI] | recall, evidence discarded (n) | "
                     f"compactions | question tokens/q: text + image (text: "
                     f"{_methods(rows, 'text_token_method')}) | compaction calls: tokens/q "
                     f"(per context; {_methods(rows, 'compaction_token_method')}) | "
                     "billed tokens/q | compression | recall per 1k billed tok | frontier |"),
                    "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: |"]
            for row in rows.sort_values("billed_tokens").itertuples():
                skipped = f" ({row.n_skipped} skipped)" if row.n_skipped else ""
                if not row.n_questions and row.n_skipped:
                    out.append(f"| {row.arm_label}{skipped} | 0 | skipped: "
                               f"{_fmt(row.tokens_skipped_context, ',.0f')} tokens, over the "
                               "model's input window | | | | | | | | |")
                    continue
                out.append(
                    f"| {row.arm_label}{skipped} | {row.n_questions} | {_fmt(row.recall)} "
                    f"[{_fmt(row.recall_lo)}, {_fmt(row.recall_hi)}] | "
                    f"{_fmt(row.recall_discarded)} ({row.n_discarded}) | "
                    f"{_fmt(row.compactions_mean, '.1f')} | "
                    f"{_fmt(row.text_tokens, ',.0f')} + "
                    f"{_fmt(row.predicted_image_tokens, ',.0f')} = "
                    f"{_fmt(row.predicted_prompt_tokens, ',.0f')} | "
                    f"{_compaction_cell(row)} | {_fmt(row.billed_tokens, ',.0f')} | "
                    f"{compression_cell(row)} | "
                    f"{_fmt(row.recall_per_1k_tokens)} | {'yes' if row.on_frontier else ''} |")
            out.append("")
            out += _compaction_notes(rows)
        for idx in same_context_groups(part):
            names = [str(x) for x in part.loc[idx, "arm_label"]]
            out += [f"**Same context**: {' = '.join(names)} sent byte-identical contexts "
                    f"(same sent hash on every item): one measurement, not {len(names)}; "
                    f"{', '.join(names[1:])}: same context as {names[0]}.", ""]
        undrawn = part[part.get("shape_asked_drawn", pd.Series(dtype=object)) == False]  # noqa: E712
        for row in undrawn.itertuples():
            out += [f"**{row.arm_label}**: no frame drawn in the shape it asks for (drawn: "
                    f"{row.frames_by_shape_per_context}); it does not measure that shape.", ""]
        out += ["#### What production did, per arm (means per context; one context per session)",
                "",
                ("| arm | verdict | contexts | methods (passes) | frame cap | frames by shape | "
                 "text edges (chars) | truncated (chars) | agent's count (tokens) | fits |"),
                "| --- | --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
        for row in part.sort_values(["production", "predicted_prompt_tokens"]).itertuples():
            out.append(
                f"| {row.arm_label} | {row.production} | {row.n_contexts} | "
                f"{row.methods_per_context} | {_fmt(row.frame_cap_max, '.0f')} | "
                f"{row.frames_by_shape_per_context} | {_fmt(row.text_edge_chars, ',.0f')} | "
                f"{_fmt(row.truncated_chars, ',.0f')} | "
                f"{_fmt(row.context_tokens_estimate, ',.0f')} | "
                f"{_fmt(row.fits_window_share, '.0%')} |")
        notes = part[part["production_notes"].astype(bool)]
        if len(notes):
            out += ["", "Verdicts:"]
            out += [f"- {r.arm_label}: {r.production_notes}" for r in notes.itertuples()]
        out += ["", ("Billed tokens/q: the question's prompt tokens plus its share of its "
                     "session's compaction calls (the summary / handoff requests' input and "
                     "output, made once per session: the session's bill over the questions "
                     "asked after that context; snapcompact and truncate make none), the "
                     "compaction tokens counted by the summarizer's counter and priced at its "
                     "price model. Recall per 1k billed tok and the frontier read them. "
                     f"{COMPRESSION_NOTE} Methods: accepted method -> passes per context "
                     "(`none`: a pass where every method failed). Text edges: archive "
                     "characters sent as text beside the frames; truncated: archive characters "
                     "neither framed nor kept (dropped by the foveated plan or the pinned "
                     "eviction)."), ""]
    return out


def _next_turn_lines(summary: pd.DataFrame) -> list[str]:
    """What production pays for the turns after the last compaction
    (evals.replay.conversation_bill)."""
    if "next_turns_usd_cached" not in summary or summary["stable_prefix_tokens"].isna().all():
        return ["No row carries a stable-prefix figure (records before prompt caching).", ""]
    out = [(f"Input dollars of the next {NEXT_TURNS} turns after the context (each adding "
            f"{TURN_TOKENS:,} tokens), billed as the target's prompt cache bills them "
            "(pricing.toml [[prompt_cache]]; the breakpoint moves to the end of every turn). "
            "`stable prefix`: tokens at the head of the context unchanged since the previous "
            "compaction, which the first turn still reads from the cache; `rewritten`: the same "
            "turns if the compaction had rewritten the whole prefix (an LLM summary)."), ""]
    for target, part in summary.groupby("target_model", sort=True):
        out += [f"### {target}", "",
                "| arm | context tokens | stable prefix | uncached $ | cached $ | rewritten $ |",
                "| --- | ---: | ---: | ---: | ---: | ---: |"]
        part = part.drop_duplicates(["strategy", "policy", "shape", "frame_size",
                                     "shape_requested", "context_window"])
        for row in part.sort_values("next_turns_usd_cached").itertuples():
            label = arm_label(row.strategy, row.policy, row.shape, row.frame_size,
                              row.shape_requested, row.context_window)
            out.append(f"| {label} | {_fmt(row.predicted_prompt_tokens, ',.0f')} | "
                       f"{_fmt(row.stable_prefix_tokens, ',.0f')} | "
                       f"{_fmt(row.next_turns_usd_uncached, '.4f')} | "
                       f"{_fmt(row.next_turns_usd_cached, '.4f')} | "
                       f"{_fmt(row.next_turns_usd_rewritten, '.4f')} |")
        out.append("")
    return out


def _decision_lines(decisions: Sequence[Decision]) -> list[str]:
    out = []
    for d in decisions:
        w = d.winner
        out += [f"### {d.line}: {w.label}  (answers by {reader_label(d.reader_id)})", "",
                f"- target models: {', '.join(d.target_models)}",
                (f"- winner {w.label}: recall {w.recall:.3f} [{w.recall_lo:.3f}, "
                 f"{w.recall_hi:.3f}], {w.billed_tokens:,.0f} billed tokens/question "
                 f"({w.predicted_prompt_tokens:,.0f} of them the question's request), "
                 f"{w.recall_per_1k_tokens:.3f} recall per 1k billed tokens, "
                 f"{w.n_questions} questions"),
                f"- measured on: {w.measured_on or 'the frames of the rows'}"]
        for c in d.candidates:
            if c.label == w.label:
                continue
            verdict = ("significantly below the best" if c.significantly_below
                       else "not significantly below the best")
            if c.label == d.best_recall.label:
                verdict = "the best recall"
            elif c.shared_questions == 0:
                verdict = "not compared (no shared questions)"
            out.append(
                f"  - {c.label}: recall {c.recall:.3f} [{c.recall_lo:.3f}, {c.recall_hi:.3f}], "
                f"{c.billed_tokens:,.0f} billed tok/q, {c.recall_per_1k_tokens:.3f}/1k; "
                f"best minus this [{_fmt(c.diff_lo)}, {_fmt(c.diff_hi)}] on "
                f"{c.shared_questions} questions: {verdict}"
                + (f"; measured on {c.measured_on}" if c.measured_on else ""))
        out += [f"- note: {n}" for n in d.notes]
        out += [f"- THIN EVIDENCE: {f}" for f in d.flags]
        out.append("")
    return out


def _round_lines(df: pd.DataFrame) -> list[str]:
    table = recall_by_round(df)
    if table.empty:
        return ["(no rows)", ""]
    buckets = table[["round_lo", "evidence_rounds"]].drop_duplicates().sort_values("round_lo")
    rounds = list(buckets["evidence_rounds"])
    out = []
    for (reader, target), part in table.groupby(["reader_id", "target_model"], sort=True):
        out += [f"### {target} (answers by {reader_label(reader)})", "",
                "| arm | " + " | ".join(f"rounds {r}" for r in rounds) + " |",
                "| --- |" + " ---: |" * len(rounds)]
        for (label, status), rows in part.groupby(["arm_label", "production"], sort=True):
            label = f"{label} ({status})"
            cells = []
            for r in rounds:
                hit = rows[rows["evidence_rounds"] == r]
                cells.append(f"{hit['recall'].iloc[0]:.2f} ({int(hit['n'].iloc[0])})"
                             if len(hit) else "")
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
    out.append("Round 0: the evidence is still in the kept tail; round k: the k-th compaction "
               "discarded it (rounds in doubling buckets). Cells: recall (questions).")
    out.append("")
    return out


def _depth_lines(df: pd.DataFrame) -> list[str]:
    table = recall_by_depth(df)
    if table.empty:
        return ["(no question carries a depth)", ""]
    buckets = table[["depth_lo", "depths"]].drop_duplicates().sort_values("depth_lo")
    depths = list(buckets["depths"])
    out = []
    for (reader, target), part in table.groupby(["reader_id", "target_model"], sort=True):
        out += [f"### {target} (answers by {reader_label(reader)})", "",
                "| arm | " + " | ".join(f"depth {d}" for d in depths) + " |",
                "| --- |" + " ---: |" * len(depths)]
        for (label, status), rows in part.groupby(["arm_label", "production"], sort=True):
            cells = []
            for d in depths:
                hit = rows[rows["depths"] == d]
                if not len(hit) or not int(hit["n_discarded"].iloc[0]):
                    cells.append("")
                    continue
                cells.append(f"{hit['recall_discarded'].iloc[0]:.2f} "
                             f"({int(hit['n_discarded'].iloc[0])})")
            out.append(f"| {label} ({status}) | " + " | ".join(cells) + " |")
        out.append("")
    out.append("Recall on questions whose evidence a compaction discarded, by the fact's depth in "
               "the session (0 = oldest). Cells: recall (questions); empty: no discarded "
               "question there.")
    out.append("")
    return out


def _decision_preamble(df: pd.DataFrame, decisions: Sequence[Decision]) -> list[str]:
    snap = df[df["strategy"] == "snapcompact"]
    if snap.empty:
        return []
    valid = snap[snap["production"] == PRODUCTION_VALID]
    out = []
    if valid.empty:
        out += ["No snapcompact context in these records is one production would send: no "
                "winner is chosen and the shape table is left as it is.", ""]
    elif not decisions:
        out += ["No decision could be made from the production-valid rows.", ""]
    return out


def build_report(df: pd.DataFrame, summary: pd.DataFrame, decisions: Sequence[Decision],
                 proposal: TableProposal, rule: str, applied: Path | None,
                 passes: pd.DataFrame | None = None, verdicts: str = "") -> str:
    readers = sorted(df["reader_id"].unique())
    lines = [
        "# Compaction evaluation: recall per billed token", "",
        (f"Records: {len(df)} measurements from {df['run_id'].nunique()} run(s) "
         f"({df.attrs.get('duplicates_dropped', 0)} duplicate rows dropped), "
         f"code {_code_hashes(df)}."),
        "Answers by: " + "; ".join(reader_label(r) for r in readers) + ".", "",
        "## Rule", "", rule, "",
        "## Per arm", "", *_summary_lines(summary),
        "## Production's next turns with the prompt cache", "", *_next_turn_lines(summary),
        "## Recall by evidence round", "", *_round_lines(df),
        "## Recall on discarded evidence by depth", "", *_depth_lines(df),
        "## Maintenance passes, round by round", "",
        ("Every pass of the coding agent's maintenance that found the context over its "
         "threshold, per arm and session: the check that ran, the agent's token count before "
         "and after, the method accepted, and each method tried with its verdict (the first "
         "failed passes are listed, the rest counted)."), "",
        *(pass_lines(passes, df.assign(arm_label=arm_labels(df))) if passes is not None
          else ["(passes not loaded)", ""]),
        "## Winners per model line", "", *_decision_preamble(df, decisions),
        *_decision_lines(decisions),
        "## Model -> shape table", "",
    ]
    if verdicts:
        lines += ["```", verdicts, "```", ""]
    lines += [f"- not written: {s}" for s in proposal.skipped]
    lines += [f"- warning: {w}" for w in proposal.warnings]
    diff = proposal.diff()
    lines += ["", "```diff", diff.rstrip("\n") or "(no change)", "```", ""]
    lines.append(f"Applied to {applied} (the rows marked write above)." if applied else
                 "Not applied (--apply writes the rows the gate accepts, --apply --force every "
                 "row, --dry-run shows this diff only).")
    return "\n".join(lines) + "\n"


#: Exit status of ``--apply`` when a proposed row was refused and kept (see apply_gate).
EXIT_REFUSED = 3


def run(paths: Sequence[str], out: str | Path = "results", apply: bool = False,
        n_boot: int = 2000, seed: int = 0, alpha: float = 0.05, min_questions: int = 30,
        reader: str | None = None, table_path: str | Path | None = None,
        plots: bool = True, force: bool = False, verdicts_out: list | None = None) -> str:
    """Everything the command does; returns the report text.

    ``apply`` writes the rows :mod:`evals.analysis.apply_gate` accepts (``force``: every
    proposed row); the verdicts are appended to ``verdicts_out`` when given.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is a file, not a folder")
    table_path = Path(table_path) if table_path else library_table_path()
    current = table_path.read_text()
    # rows in measurement order, not in the order concurrent requests finished: every table
    # (and every float sum behind it) is then the same for a warm rerun and a fresh clone
    df = records_frame(load_records(paths), parse_shape_rules(current))
    order = [c for c in RECORD_ORDER if c in df]
    if order:
        df = df.sort_values(order, kind="mergesort", na_position="first", ignore_index=True)
    summary = summarize(df, n_boot=n_boot, seed=seed, alpha=alpha)
    decisions = choose_winners(df, n_boot=n_boot, seed=seed, alpha=alpha,
                               min_questions=min_questions)
    provenance = table_provenance(df)
    proposal = propose_table(current, decisions, reader=reader, provenance=provenance)
    out.mkdir(parents=True, exist_ok=True)
    # what differs between two runs of the same code on the same data (the checkout's commit,
    # when a row was written, how long it took) is left out of the committed table, so a
    # rerun from a fresh clone reproduces it byte for byte; run folders keep every field
    _write_table(df.drop(columns=[c for c in PER_RUN_COLUMNS if c in df]), out, "records")
    _write_table(summary, out, "summary")
    _write_table(recall_by_round(df), out, "recall_by_round")
    _write_table(recall_by_depth(df), out, "recall_by_depth")
    labelled = df.assign(arm_label=arm_labels(df))
    passes = passes_frame(labelled, load_passes(paths, df["context_hash"]))
    if len(passes):  # in a stable order: the run's contexts finish in no fixed order
        passes = passes.sort_values(
            [c for c in ("context_window", "arm_label", "item_id", "pass_index") if c in passes],
            kind="stable", ignore_index=True)
    passes.to_csv(out / "passes.csv", index=False)
    decision_frame = pd.DataFrame([d.to_row() for d in decisions])
    decision_frame.to_csv(out / "decisions.csv", index=False, float_format="%.6g")
    (out / "model_shapes.toml").write_text(proposal.text)
    (out / "model_shapes.diff").write_text(proposal.diff())
    if plots:
        # local (cost): matplotlib and the plots, +0.92 s, load only when plots are drawn
        import matplotlib

        matplotlib.use("Agg")  # headless PNGs, whatever the environment's default
        from evals.analysis.plot import write_plots

        write_plots(summary, df, out / "plots")
    verdicts = judge_changes(proposal, decisions, min_questions=min_questions)
    if verdicts_out is not None:
        verdicts_out.extend(verdicts)
    applied = None
    if apply:
        refused = {(v.change.line, v.change.reader_id): "; ".join(v.refused)
                   for v in verdicts if not v.accepted}
        writable = proposal if force else propose_table(
            current, [d for d in decisions if (d.line, d.reader_id) not in refused],
            reader=reader, provenance=provenance,
            kept=[(d, refused[(d.line, d.reader_id)]) for d in decisions
                  if (d.line, d.reader_id) in refused])
        if writable.text != current:  # changed rows, or kept ones now saying why
            applied = apply_table(writable, table_path)
    report = build_report(df, summary, decisions, proposal,
                          rule_text(n_boot, seed, alpha, min_questions), applied, passes,
                          format_verdicts(verdicts, force=force))
    (out / "report.md").write_text(report)
    return report


def _docs(root: Path, *, check: bool, write: bool) -> int:
    """``--write-docs`` then (or only) ``--check``: see :mod:`evals.analysis.docs_blocks`."""
    try:
        if write:
            changed = write_docs(root)
            print(f"snapcompact-eval-table: generated blocks rewritten: "
                  f"{', '.join(changed) or 'none changed'}")
        problems = check_docs(root) if check else []
    except (OSError, ValueError) as exc:
        print(f"snapcompact-eval-table: error: {exc}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"snapcompact-eval-table: check: {line}", file=sys.stderr)
    if check and not problems:
        print("snapcompact-eval-table: check: every generated block matches its source and "
              "no figure is typed outside one")
    return 1 if problems else 0


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block); ``-h`` still prints the usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(
        prog="snapcompact-eval-table",
        description="Aggregate eval records into recall-per-token tables, plots and the "
                    "model -> shape table.")
    parser.add_argument("results", nargs="*", help="records files or directories (searched "
                        "recursively for records.jsonl)")
    parser.add_argument("--write-docs", action="store_true",
                        help="rewrite the generated blocks of README.md from the committed "
                             "tables under results/ (evals.analysis.docs_blocks)")
    parser.add_argument("--check", action="store_true",
                        help="fail (exit 1) when a generated block of README.md is stale or "
                             "quotes a table that is not committed")
    parser.add_argument("--root", default=".", help="the checkout holding README.md and "
                        "results/ (for --write-docs / --check; default: the current folder)")
    parser.add_argument("--out", default="results", help="output directory (default: results)")
    parser.add_argument("--apply", action="store_true",
                        help="write the rows of the regenerated model -> shape table that the "
                             "evidence supports into the library (refused rows keep the "
                             f"current entry; exit status {EXIT_REFUSED} when any was refused)")
    parser.add_argument("--force", action="store_true",
                        help="with --apply: write every proposed row, refused or not")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the rows that would change and the diff; write nothing "
                             "into the library")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="two-sided level: intervals are (1 - alpha)")
    parser.add_argument("--min-questions", type=int, default=30,
                        help="fewer questions behind a winner is called thin evidence")
    parser.add_argument("--reader", default=None,
                        help="write the table from this reader's decisions only (e.g. snapocr)")
    parser.add_argument("--table", default=None,
                        help="model -> shape table to compare with and apply to "
                             "(default: the library's snapcompact/pricing/model_shapes.toml)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    args = parser.parse_args(argv)
    if args.check or args.write_docs:
        return _docs(Path(args.root), check=args.check, write=args.write_docs)
    if not args.results:
        parser.error("give records files or directories (or --check / --write-docs)")
    if args.force and not args.apply:
        parser.error("--force only goes with --apply")
    if args.dry_run and args.apply:
        parser.error("--dry-run writes nothing: drop --apply (or --dry-run)")
    verdicts: list = []
    try:
        report = run(args.results, out=args.out, apply=args.apply, n_boot=args.bootstrap,
                     seed=args.seed, alpha=args.alpha, min_questions=args.min_questions,
                     reader=args.reader, table_path=args.table, plots=not args.no_plots,
                     force=args.force, verdicts_out=verdicts)
    except (ValueError, OSError, KeyError) as exc:
        if isinstance(exc, OSError) and exc.strerror:
            message = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
        else:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        print(f"snapcompact-eval-table: error: {message}", file=sys.stderr)
        return 2
    sys.stdout.write(report)
    if args.apply or args.dry_run:
        # the decision, where it is read even when the report goes to a file
        sys.stderr.write(format_verdicts(verdicts, force=args.force) + "\n")
        if args.dry_run:
            diff = (Path(args.out) / "model_shapes.diff").read_text()
            sys.stderr.write((diff or "(no change)\n"))
    if args.apply and not args.force and any(not v.accepted for v in verdicts):
        return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["GROUP_COLUMNS", "build_report", "main", "run"]
