"""Record rows -> what the viewer shows: one entry per question asked, grouped into cells.

Why its own module: the site's pages are a pure function of these entries, and the rules that
make them (which row wins when a measurement was recorded twice, what a "cell" of the summary
table is, which rows are the same question under another shape) are the ones a reader of the
site must be able to trust, so they live apart from the HTML.

Rows are read as the raw JSON objects of ``records.jsonl`` (``evals.store.records.iter_rows``),
every field through ``.get`` with a default, so rows from before the compaction fields existed
(``strategy``, ``policy``, ``evidence_round``, ``context_hash``, ...) view as well as new ones.
A field may also sit in ``extra`` (where the harness put it before it became a column).

A *cell* is one row of the summary table: (reader, model line, target model, strategy, policy,
arm, shape, frame size, the shape asked for, window, production verdict, research knobs), so two
windows or two verdicts never share a cell. A *group* is one question (dataset, item, question,
seed) across every cell it was asked in: the question page offers them side by side. A question
that was not asked (``skipped``: ``full`` over the model's window) is an entry of its own kind:
never correct, never wrong, never in a recall.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.analysis.aggregate import (
    OFFLINE_PROVIDER,
    PRODUCTION_BOUND,
    PRODUCTION_NOT_SENT,
    PRODUCTION_STAND_IN,
    PRODUCTION_UNCHECKED,
    PRODUCTION_VALID,
    arm_label,
    model_line,
    production_status,
    reader_id,
    reader_label,
)
from evals.blind.provider import BLIND_LABEL, TOLD_LABEL
from evals.blind.provider import PROVIDER as BLIND_PROVIDER
from evals.items.probes import (
    ABSTAINED,
    CORRECT,
    WRONG,
    is_confabulation,
    is_silent_wrong,
    probe_of,
)
from evals.store.records import (
    find_record_files,
    iter_rows,
    one_row_per_measurement,
    upgrade_record,
)

#: Fields the compaction harness adds to a record (absent in older rows), and their defaults.
COMPACTION_FIELDS: dict[str, Any] = {
    "strategy": "",
    "policy": "",
    "compactions": None,
    "evidence_round": None,
    "frames_evicted": None,
    "text_tail_chars": None,
    "compaction_cost_tokens": None,
    "context_hash": None,
}

CELL_FIELDS = ("reader_id", "line", "target_model", "strategy", "policy", "arm", "shape",
               "frame_size", "shape_requested", "context_window", "verdict", "research")
#: The index's order of verdicts within a window: ranked arms first, then the bounds, then arms
#: production would not send as measured.
VERDICT_ORDER = (PRODUCTION_VALID, PRODUCTION_BOUND, PRODUCTION_STAND_IN, PRODUCTION_NOT_SENT,
                 PRODUCTION_UNCHECKED)


def _digest(value: Any, length: int) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def field_of(row: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """``row[name]``, else ``row["extra"][name]``, else ``default`` (None counts as absent)."""
    value = row.get(name)
    if value is None:
        extra = row.get("extra")
        if isinstance(extra, Mapping):
            value = extra.get(name)
    return default if value is None else value


@dataclass(frozen=True)
class SourceRow:
    """One record row and the run directory its frames, contexts and transcripts live in."""

    row: Mapping[str, Any]
    run_dir: Path
    order: int  # position in reading order: the later of two equal rows wins ties


@dataclass(frozen=True)
class Entry:
    """One question as asked in one cell: what the pages need, plus the row itself."""

    entry_id: str
    cell_id: str
    group_id: str
    run_dir: Path
    row: Mapping[str, Any]
    cell: tuple  # values of CELL_FIELDS
    strategy: str
    policy: str
    evidence_round: int | None
    billed_tokens: int
    correct: bool
    error: str | None
    context_hash: str | None
    reading: Mapping[str, Any] | None  # the offline reader's spans (``evals.store.transcripts``)
    skipped: str | None = None  # why the question was not asked (never scored)
    probe: str = "exact"  # the question's probe kind (evals.items.probes)
    probe_defaulted: bool = True  # no ``question_meta.probe``: an old row, read as exact
    reader_name: str = ""  # who answered: told evidence (legibility floor), blind, or the model

    @property
    def transcript_hash(self) -> str | None:
        return self.reading.get("transcript") if self.reading else None

    @property
    def reader_label(self) -> str:
        return reader_label(self.cell[0])

    @property
    def offline(self) -> bool:
        return self.cell[0] == OFFLINE_PROVIDER


@dataclass
class Cell:
    """One row of the summary table and the entries behind it, in a stable order."""

    cell_id: str
    values: tuple
    entries: list[Entry] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(zip(CELL_FIELDS, self.values, strict=True))

    @property
    def label(self) -> str:
        """The arm as the tables name it (``snapcompact foveated auto @200k``)."""
        v = self.as_dict()
        return arm_label(v["strategy"], v["policy"], v["shape"], v["frame_size"],
                         v["shape_requested"], v["context_window"], v["research"])


def load_rows(run_dirs: Sequence[str | Path]) -> list[SourceRow]:
    """Every row of every ``records.jsonl`` under the given run directories (or files)."""
    out: list[SourceRow] = []
    for path in find_record_files(run_dirs):
        for row in iter_rows(path):
            out.append(SourceRow(row=upgrade_record(row), run_dir=path.parent, order=len(out)))
    if not out:
        raise ValueError(f"no records found under {', '.join(str(p) for p in run_dirs)}")
    return out


def _identity(row: Mapping[str, Any]) -> list:
    """What makes a measurement distinct, compaction coordinates included."""
    coords = [row.get(k) for k in ("run_id", "dataset", "item_id", "question_id", "model",
                                   "target_model", "shape", "frame_size", "reader", "seed")]
    arm = [field_of(row, name) for name in ("shape_requested", "context_window", "research",
                                             "summarizer")]
    return coords + [field_of(row, "strategy", ""), field_of(row, "policy", "")] + (
        arm if any(v is not None for v in arm) else [])


def build_entries(rows: Iterable[SourceRow], table: Any) -> list[Entry]:
    """One entry per measurement (:func:`evals.store.records.one_row_per_measurement`; the run id is
    part of a measurement here, so each run's row of a question is its own entry).

    Transcription rows (no question) are left out: they have no answer to drill into.
    """
    questions = sorted((s for s in rows if s.row.get("reader") != "transcribe"),
                       key=lambda s: s.order)
    chosen = one_row_per_measurement(
        questions, key=lambda s: _digest(_identity(s.row), 20),
        succeeded=lambda s: s.row.get("error") is None,
        created_at=lambda s: str(s.row.get("created_at") or ""))
    lines: dict[str, str] = {}
    entries = []
    for source in chosen:
        row = source.row
        key = _digest(_identity(row), 20)
        target = str(row.get("target_model", ""))
        if target not in lines:
            lines[target] = model_line(target, table)
        strategy = str(field_of(row, "strategy", ""))
        policy = str(field_of(row, "policy", ""))
        cell = (reader_id(str(row.get("model", ""))), lines[target], target, strategy, policy,
                str(row.get("arm", "")), str(row.get("shape", "")),
                int(row.get("frame_size") or 0), *_arm_fields(row, strategy))
        group = [row.get(k) for k in ("dataset", "item_id", "question_id", "seed")]
        evidence_round = field_of(row, "evidence_round")
        billed = row.get("predicted_prompt_tokens") or 0
        meta = row.get("question_meta")
        probe = probe_of(meta if isinstance(meta, Mapping) else None)
        entries.append(Entry(
            entry_id=key,
            cell_id=_digest(list(cell), 12),
            group_id=_digest(group, 16),
            run_dir=source.run_dir,
            row=row,
            cell=cell,
            strategy=strategy,
            policy=policy,
            evidence_round=int(evidence_round) if evidence_round is not None else None,
            billed_tokens=int(billed),
            correct=(bool(row.get("correct")) and row.get("error") is None
                     and not field_of(row, "skipped")),
            error=row.get("error"),
            skipped=str(field_of(row, "skipped")) if field_of(row, "skipped") else None,
            context_hash=field_of(row, "context_hash"),
            reading=reading if isinstance(reading := field_of(row, "reading"), Mapping)
            else None,
            probe=probe[0], probe_defaulted=probe[1], reader_name=reader_name_of(row),
        ))
    entries.sort(key=lambda e: (tuple(str(x) for x in e.cell), str(e.row.get("dataset")),
                                str(e.row.get("item_id")), str(e.row.get("question_id")),
                                int(e.row.get("seed") or 0)))
    return entries


def _arm_fields(row: Mapping[str, Any], strategy: str) -> tuple[str, int | None, str, str]:
    """The cell's arm coordinates past the shape: the shape asked for, the window, the
    production verdict (:func:`evals.analysis.aggregate.production_status`) and the research
    knobs."""
    window = field_of(row, "context_window")
    return (str(field_of(row, "shape_requested", "")),
            int(window) if window is not None else None,
            production_status(strategy, field_of(row, "production_valid"),
                              field_of(row, "summary_stand_in", False)),
            str(field_of(row, "research", "production")))


def _cell_order(cell: Cell) -> tuple:
    """Table order: reader, line, target, then the window (largest first: each window is its
    own table), the verdict (ranked arms first), then the rest."""
    v = cell.as_dict()
    window = v["context_window"]
    verdict = v["verdict"]
    return (cell.values[:3], -(window or 0),
            VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER),
            tuple(str(x) for x in cell.values))


def cells_of(entries: Iterable[Entry]) -> list[Cell]:
    """Entries grouped by cell, cells in table order (:func:`_cell_order`)."""
    cells: dict[str, Cell] = {}
    for entry in entries:
        cell = cells.setdefault(entry.cell_id, Cell(entry.cell_id, entry.cell))
        cell.entries.append(entry)
    return sorted(cells.values(), key=_cell_order)


def groups_of(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    """The same question under every cell it was asked in."""
    groups: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        groups[entry.group_id].append(entry)
    return dict(groups)


def round_key(evidence_round: int | None) -> str:
    """List-name part for an evidence round: "r0", "r1", ..., "rna" when not recorded."""
    return "rna" if evidence_round is None else f"r{evidence_round}"


def reader_name_of(row: Mapping[str, Any]) -> str:
    """Who answered: the row's ``extra["reader_label"]``, else read from its model id (the
    offline told-evidence reader, the blind reader), else the model id itself."""
    label = field_of(row, "reader_label")
    if isinstance(label, str) and label:
        return label
    model = str(row.get("model", ""))
    prefix = model.split("/", 1)[0]
    return {OFFLINE_PROVIDER: TOLD_LABEL, BLIND_PROVIDER: BLIND_LABEL}.get(prefix, model)


def outcome_of(entry: Entry) -> str:
    """``skipped`` (not asked), ``correct``, ``abstained`` or ``wrong``: a skipped question is
    never wrong; an error is a wrong answer (it gave no right one)."""
    if entry.skipped is not None:
        return "skipped"
    if entry.correct:
        return CORRECT
    if entry.error is None and entry.row.get("abstained"):
        return ABSTAINED
    return WRONG


def kind_of(entry: Entry) -> str:
    """The outcome with its two kinds of wrong named apart: ``silent wrong`` (a value where the
    truth was in the session) and ``confabulated`` (a never-stated probe answered with a value);
    an error is neither (no answer was given)."""
    outcome = outcome_of(entry)
    if outcome == WRONG and entry.error is None:
        if is_silent_wrong(outcome, entry.probe):
            return "silent wrong"
        if is_confabulation(outcome, entry.probe):
            return "confabulated"
    return outcome


def list_names(entry: Entry) -> tuple[str, ...]:
    """The filtered question lists of its cell an entry belongs to (outcome x round); a silent
    wrong or confabulated answer is also in its own list (``silent``, ``confab``)."""
    rnd = round_key(entry.evidence_round)
    outcomes = [outcome_of(entry)]
    kind = kind_of(entry)
    if kind in LIST_OF_KIND:
        outcomes.append(LIST_OF_KIND[kind])
    return ("all-all", f"all-{rnd}", *(f"{o}-{r}" for o in outcomes for r in ("all", rnd)))


#: The list name of the two kinds of wrong (list names are ``<outcome>-<round>``: no dash).
LIST_OF_KIND = {"silent wrong": "silent", "confabulated": "confab"}
