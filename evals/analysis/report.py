"""The markdown report ``snapcompact-eval-table`` writes (``results/report.md``), and the
per-arm frame a notebook reads.

Why a module: the report is the one place a reader sees every table side by side (per arm by
production verdict, the next turns' bill, recall by round and depth, the maintenance passes,
the winners and the shape-table diff); how each table is laid out in markdown is a concern of
its own, apart from the command that computes and writes the tables (:mod:`evals.analysis.table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from evals.analysis.aggregate import (
    PRODUCTION_BOUND,
    PRODUCTION_NOT_SENT,
    PRODUCTION_STAND_IN,
    PRODUCTION_UNCHECKED,
    PRODUCTION_VALID,
    arm_label,
    arm_labels,
    reader_label,
)
from evals.analysis.recall_breakdown import recall_by_depth, recall_by_round
from evals.analysis.summary import same_context_groups
from evals.analysis.winner import Decision
from evals.analysis.write_model_shapes import TableProposal
from evals.replay.passes import pass_lines
from snapcompact.billing import NEXT_TURNS, TURN_TOKENS


def code_hashes(df: pd.DataFrame) -> str:
    """The code that wrote the records: its content hash (``code_sha256``), not the commit."""
    hashes = sorted({str(h) for h in df.get("code_sha256", pd.Series(dtype=str)).dropna()
                     if str(h)})
    return "sha256 " + ", ".join(h[:16] for h in hashes) if hashes else "hash not recorded"


def _fmt(value: float, spec: str = ".3f") -> str:
    return "n/a" if pd.isna(value) else format(value, spec)


#: What the report's ``compression`` column is (``summary._add_compression`` computes it).
COMPRESSION_NOTE = ("Compression: the same session's whole history as text (`full`'s request) "
                    "/ the arm's tokens, on the same questions; where `full` was skipped (over "
                    "the model's window) or not run (a sweep), the history's bill computed from "
                    "the session; never another compacted arm.")


def compression_cell(row) -> str:
    """The report's compression of one summary row: ``5.92x`` against ``full``,
    ``5.92x (vs uncompacted)`` when ``full`` was skipped or not run and the ratio is taken
    against the history's bill, ``– (why)`` without a baseline."""
    baseline = str(getattr(row, "compression_baseline", "") or "")
    if pd.isna(row.compression_vs_text):
        why = baseline.removeprefix("none: ").removeprefix("none")
        return f"– ({why or 'no full history to compare'})"
    base = "" if baseline == "full" else " (vs uncompacted)"
    return f"{row.compression_vs_text:.2f}x{base}"


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


def _shape_note(row: object) -> str:
    """The summary's ``shape_note`` (an arm that drew no frame in the shape it asked for), or
    the old wording from ``shape_asked_drawn`` alone for a summary written before it."""
    note = getattr(row, "shape_note", "")
    if isinstance(note, str) and note:
        return note
    if getattr(row, "shape_asked_drawn", None) is False:
        return (f"no frame drawn in the shape it asks for (drawn: "
                f"{getattr(row, 'frames_by_shape_per_context', '-')}); it does not measure "
                "that shape")
    return ""


def _session_bill_lines(rows: pd.DataFrame) -> list[str]:
    """What a session of each arm costs from its first compaction on, beside the cost the
    table ranks on (billed tokens per question); nothing for rows that predate it."""
    if "session_cost_usd" not in rows:
        return []
    out = []
    for row in rows.sort_values("billed_tokens").itertuples():
        if pd.isna(row.session_cost_usd):
            continue
        interval = ("" if pd.isna(row.session_cost_usd_lo) else
                    f" [{_fmt(row.session_cost_usd_lo, ',.2f')}, "
                    f"{_fmt(row.session_cost_usd_hi, ',.2f')}]")
        out.append(f"- {row.arm_label}: ${_fmt(row.session_cost_usd, ',.2f')}{interval} per "
                   f"session, {_fmt(row.session_billed_tokens, ',.0f')} tokens")
    if not out:
        return []
    return ["Ranked on billed tokens/q (the order above, the frontier). What a session costs "
            "from its first compaction on, beside it (every turn request with the prompt cache "
            "as the provider applies it, the replies, the compaction calls; mean over sessions, "
            "95 % session-bootstrap interval):", "", *out, ""]


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
                unmeasured = (" (not a measurement of "
                              f"{getattr(row, 'shape_asked_names', 'the shape it asks for')})"
                              if _shape_note(row) else "")
                out.append(
                    f"| {row.arm_label}{skipped} | {row.n_questions} | {_fmt(row.recall)} "
                    f"[{_fmt(row.recall_lo)}, {_fmt(row.recall_hi)}]{unmeasured} | "
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
            out += _session_bill_lines(rows)
        for idx in same_context_groups(part):
            names = [str(x) for x in part.loc[idx, "arm_label"]]
            out += [f"**Same context**: {' = '.join(names)} sent byte-identical contexts "
                    f"(same sent hash on every item): one measurement, not {len(names)}; "
                    f"{', '.join(names[1:])}: same context as {names[0]}.", ""]
        undrawn = part[part.get("shape_asked_drawn", pd.Series(dtype=object)) == False]  # noqa: E712
        for row in undrawn.itertuples():
            out += [f"**{row.arm_label}**: {_shape_note(row)}.", ""]
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
    (snapcompact.billing.next_turns)."""
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


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is under it: a committed report names
    no machine's folders."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def build_report(df: pd.DataFrame, summary: pd.DataFrame, decisions: Sequence[Decision],
                 proposal: TableProposal, rule: str, applied: Path | None,
                 passes: pd.DataFrame | None = None, verdicts: str = "",
                 sources: Sequence[str] = ()) -> str:
    """The report; ``sources``: one line per path read (what it held), ``verdicts``: the
    gate's, ``proposal``: the table the command writes (``--apply``'s, gated)."""
    readers = sorted(df["reader_id"].unique())
    lines = [
        "# Compaction evaluation: recall per billed token", "",
        (f"Records: {len(df)} measurements from {df['run_id'].nunique()} run(s) "
         f"({df.attrs.get('duplicates_dropped', 0)} duplicate rows dropped), "
         f"code {code_hashes(df)}."),
        "Answers by: " + "; ".join(reader_label(r) for r in readers) + ".", "",
        *(["Runs read, by experiment and window:", *sources, ""]
          if sources else []),
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
    lines += ["", "The diff of the table `--apply` writes (rows the gate refused keep their entry "
              "and say why; a row whose evidence rests on more sessions is left as it is):", "",
              "```diff", diff.rstrip("\n") or "(no change)", "```", ""]
    lines.append(f"Applied to {_shown(applied)} (the rows marked write above)." if applied else
                 "Not applied (--apply writes the rows the gate accepts, --apply --force every "
                 "row, --dry-run shows this diff only).")
    return "\n".join(lines) + "\n"
