"""Every maintenance pass behind each measured context, read back for the report.

Why: a row's ``methods_used`` says *that* an arm mixed snapcompact rounds with failed passes,
not *when* or *why*. The contexts a run stores (``contexts/<hh>/<hash>.json``, by
:mod:`evals.replay.contexts`) carry the agent's passes (:class:`snapcompact.agent.MaintenanceRound`
as JSON): the check that ran, the tokens before and after, each method tried with its verdict,
the frame cap and the frames drawn by shape. This module finds those files next to the records
it was given and lays them out per arm and item, round by round. Contexts stored before the
passes were kept have none; the report says so rather than guessing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from evals.store.records import find_record_files

__all__ = ["load_passes", "pass_lines", "passes_frame"]


def load_passes(paths: Iterable[str | Path], hashes: Iterable[str]
                ) -> dict[str, list[Mapping[str, Any]] | None]:
    """context hash -> its passes (None: the stored context has no ``passes``; missing hashes
    are left out). Contexts are looked up in the ``contexts/`` folder beside each records
    file under ``paths``."""
    roots = [f.parent / "contexts" for f in find_record_files(paths)]
    out: dict[str, list[Mapping[str, Any]] | None] = {}
    for digest in sorted({h for h in hashes if isinstance(h, str) and h}):
        for root in roots:
            path = root / digest[:2] / f"{digest}.json"
            if path.is_file():
                data = json.loads(path.read_text())
                passes = data.get("passes") if isinstance(data, Mapping) else None
                out[digest] = list(passes) if isinstance(passes, list) else None
                break
    return out


def _attempt_text(attempt: Mapping[str, Any]) -> str:
    method, status = attempt.get("method", "?"), attempt.get("status", "?")
    if status == "accepted":
        frames = attempt.get("frames_by_shape") or {}
        drawn = ", ".join(f"{n} {c}" for n, c in frames.items())
        cap = attempt.get("frame_cap")
        extra = "; ".join(x for x in (f"cap {cap}" if cap is not None else "", drawn) if x)
        return f"{method} accepted" + (f" ({extra})" if extra else "")
    reason = str(attempt.get("reason") or "").split(";")[0].strip()
    if len(reason) > 90:
        reason = reason[:87] + "..."
    return f"{method} {status}" + (f" ({reason})" if reason else "")


def passes_frame(df: pd.DataFrame, passes: Mapping[str, Sequence[Mapping[str, Any]] | None]
                 ) -> pd.DataFrame:
    """One row per (arm, item, pass): check, tokens before/after, accepted method, attempts.

    ``df`` is the records frame with an ``arm_label`` column; one context per (arm, item)."""
    cols = ["arm_label", "production", "item_id", "context_window", "pass_index", "check",
            "tokens_before", "tokens_after", "method", "frames", "frames_by_shape", "attempts",
            "rescues", "dead_end"]
    rows: list[dict[str, Any]] = []
    contexts = df.drop_duplicates(["arm_label", "item_id"])
    for ctx in contexts.itertuples():
        stored = passes.get(ctx.context_hash)
        if not stored:
            continue
        for p in stored:
            rows.append({
                "arm_label": ctx.arm_label, "production": ctx.production,
                "item_id": ctx.item_id, "context_window": ctx.context_window,
                "pass_index": p.get("index"), "check": p.get("check"),
                "tokens_before": p.get("tokens_before"), "tokens_after": p.get("tokens_after"),
                "method": p.get("method") or "none", "frames": p.get("frames", 0),
                "frames_by_shape": json.dumps(p.get("frames_by_shape") or {}, sort_keys=True),
                "attempts": " -> ".join(_attempt_text(a) for a in p.get("attempts") or ()),
                "rescues": ",".join(p.get("rescues") or ()), "dead_end": bool(p.get("dead_end")),
            })
    return pd.DataFrame(rows, columns=cols)


def pass_lines(table: pd.DataFrame, df: pd.DataFrame, max_failed: int = 3) -> list[str]:
    """Markdown: per arm and item, every committed pass and the first failed ones (the rest
    counted), so a reader sees when an arm mixed compactions with failed passes."""
    out: list[str] = []
    labels = sorted(set(df["arm_label"]))
    if table.empty:
        return ["No stored context carries its maintenance passes (runs before they were kept, "
                "or no compaction was needed).", ""]
    for label in labels:
        part = table[table["arm_label"] == label]
        if part.empty:
            continue
        verdicts = part.groupby("item_id", sort=True)["production"].first()
        mixed = verdicts.nunique() > 1
        out += [f"### {label} ({_verdict_heading(verdicts)})", ""]
        out += ["| item | pass | check | tokens before -> after | method | frames | attempts |",
                "| --- | ---: | --- | ---: | --- | ---: | --- |"]
        for item, rows in part.groupby("item_id", sort=True):
            name = f"{item[-8:]} ({verdicts[item]})" if mixed else item[-8:]
            failed = rows[rows["method"] == "none"]
            shown = pd.concat([rows[rows["method"] != "none"], failed.head(max_failed)])
            for r in shown.sort_values("pass_index").itertuples():
                before = f"{r.tokens_before:,}" if pd.notna(r.tokens_before) else "-"
                after = f"{int(r.tokens_after):,}" if pd.notna(r.tokens_after) else "-"
                out.append(f"| {name} | {r.pass_index} | {r.check} | {before} -> {after} | "
                           f"{r.method} | {r.frames} | {r.attempts} |")
            if len(failed) > max_failed:
                out.append(f"| {name} | ... | | | {len(failed) - max_failed} more passes "
                           "where every method failed | | |")
        out.append("")
    return out


def _verdict_heading(verdicts: pd.Series) -> str:
    """An arm's verdict, or each verdict with its count of sessions when they differ (an arm
    whose sessions production treated differently must not be filed under one of them)."""
    counts = verdicts.value_counts()
    if len(counts) == 1:
        return str(counts.index[0])
    return ", ".join(f"{verdict}: {n} session{'s' if n > 1 else ''}"
                     for verdict, n in sorted(counts.items()))
