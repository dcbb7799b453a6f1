"""Write the viewer: static HTML/CSS/JS pages plus data files, openable straight from disk.

Why this shape: a researcher opens ``index.html`` from a folder (``file://``), on a laptop
without a server or network. Browsers refuse ``fetch`` on ``file://``, so every data file is a
small script that hands its payload to the page (``SC.data("<name>", {...})``), loaded on demand
by inserting a ``<script>`` tag. Nothing is ever fetched from elsewhere; the pages carry a
Content-Security-Policy that forbids it.

Paging: no page holds a run. The index holds one row per cell (model line x strategy x shape x
policy ...); a cell's questions are split into pages of ``page_size`` rows, precomputed for each
filter (all / correct / wrong x every evidence round), so a 10,000-question sweep is thousands
of small files, never one giant page. Each question, context, transcript and question group is
its own file, named by hash and sharded by its first two hex digits like the frame store.

Frames are copied (or hard- or sym-linked) from the run's frame store as they are -- never
re-rendered -- and checked against their hash when copied. Contexts (``contexts/ab/<hash>.json``,
the wire messages with images replaced by frame hashes) and offline-reader transcripts
(``transcripts/ab/<hash>.json``; their spans are in the record) are passed through. Rows from
before contexts were stored get a context rebuilt from the record itself (its frames and
question), marked as such on the page.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from evals.analysis.aggregate import OFFLINE_LABEL
from evals.analysis.write_model_shapes import library_table_path
from evals.items.probes import NEVER_STATED, PROBE_KINDS
from evals.store.transcripts import TRANSCRIPTS_DIR
from evals.view.entries import (
    CELL_FIELDS,
    COMPACTION_FIELDS,
    Cell,
    Entry,
    build_entries,
    cells_of,
    field_of,
    groups_of,
    kind_of,
    list_names,
    load_rows,
    outcome_of,
    round_key,
)
from snapcompact.pricing import count_text_tokens, parse_shape_rules

PAGE_SIZE = 100
FRAME_MODES = ("copy", "hardlink", "symlink")
MARKER = ".snapcompact-view"
CONTEXTS_DIR = "contexts"
FRAMES_DIR = "frames"
PAGES = ("index.html", "cell.html", "question.html", "compare.html")
ASSETS = ("view.css", "view.js")
_SHORT = 160


@dataclass(frozen=True)
class SiteStats:
    """What was written: counts, and the site's size on disk (frames apart and in total)."""

    out: Path
    questions: int
    cells: int
    list_pages: int
    contexts: int
    transcripts: int
    frames: int
    missing_frames: int
    files: int
    total_bytes: int
    frame_bytes: int

    def summary(self) -> str:
        mib = 1024 * 1024
        return (f"{self.questions} questions in {self.cells} cells, {self.list_pages} list pages, "
                f"{self.contexts} contexts, {self.transcripts} transcripts, {self.frames} frames"
                f" ({self.missing_frames} missing); {self.files} files, "
                f"{self.total_bytes / mib:.1f} MiB ({self.frame_bytes / mib:.1f} MiB frames) "
                f"in {self.out}")


def _sharded(kind: str, digest: str) -> str:
    return f"{kind}/{digest[:2]}/{digest}"


class _Writer:
    """Data files under ``out/data``: ``SC.data(name, payload)`` scripts."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.files = 0

    def data(self, name: str, payload: Any) -> None:
        path = self.out / "data" / f"{name}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        path.write_text(f"SC.data({json.dumps(name)},{body});\n", encoding="utf-8")
        self.files += 1


def _prepare_out(out: Path) -> None:
    """Make ``out`` a fresh site folder; only ever clear a folder this module wrote."""
    if out.exists():
        if not out.is_dir():
            raise ValueError(f"--out {out} exists and is not a directory")
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise ValueError(f"--out {out} is a non-empty directory that is not a viewer site; "
                             "choose an empty or new directory")
        for name in ("data", "assets", FRAMES_DIR, *PAGES):
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by snapcompact-eval-view; safe to delete\n")


def _copy_static(out: Path) -> None:
    static = resources.files("evals.view") / "static"
    for name in PAGES:
        (out / name).write_bytes((static / name).read_bytes())
    (out / "assets").mkdir(exist_ok=True)
    for name in ASSETS:
        (out / "assets" / name).write_bytes((static / name).read_bytes())


def _short(text: Any, limit: int = _SHORT) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _list_row(entry: Entry) -> dict[str, Any]:
    row = entry.row
    gold = list(row.get("gold_answers") or [])
    return {"id": entry.entry_id, "q": _short(row.get("question")),
            "gold": _short(" | ".join(gold), 80), "a": _short(row.get("answer"), 80),
            "ok": entry.correct, "err": entry.error is not None, "skip": entry.skipped,
            "abst": bool(row.get("abstained")), "f1": row.get("f1"),
            "probe": entry.probe, "probe_old": entry.probe_defaulted, "kind": kind_of(entry),
            "round": entry.evidence_round, "tok": entry.billed_tokens,
            "item": row.get("item_id"), "qid": row.get("question_id")}


def _pages(rows: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [rows[i:i + size] for i in range(0, len(rows), size)] or [[]]


def _cell_summary(cell: Cell, list_pages: Mapping[str, int]) -> dict[str, Any]:
    """The index's row of a cell: per evidence round [questions, correct, errors, billed tokens,
    skipped, abstained, silent wrong, confabulated, never-stated answered, never-stated correct]
    (a skipped question is counted apart: never correct, never wrong, and its context's tokens
    are not a question's bill; recall leaves the never-stated probes out, as the tables do:
    ``evals.analysis.outcomes.stated_probes``), per probe kind
    its outcomes (:func:`probe_counts`), the reader, the arm's label, and why its questions were
    skipped."""
    rounds: dict[str, list[int]] = {}
    for e in cell.entries:
        counts = rounds.setdefault(round_key(e.evidence_round), [0] * 10)
        kind = kind_of(e)
        never = e.probe == NEVER_STATED and e.skipped is None and e.error is None
        counts[8] += int(never)
        counts[9] += int(never and e.correct)
        counts[5] += int(kind == "abstained")
        counts[6] += int(kind == "silent wrong")
        counts[7] += int(kind == "confabulated")
        counts[0] += 1
        counts[1] += int(e.correct)
        counts[2] += int(e.error is not None)
        counts[3] += e.billed_tokens if e.skipped is None else 0
        counts[4] += int(e.skipped is not None)
    first = cell.entries[0]
    skipped = sorted({e.skipped for e in cell.entries if e.skipped is not None})
    return {"id": cell.cell_id, **cell.as_dict(), "arm_label": cell.label,
            "label": first.reader_label, "offline": first.offline, "rounds": rounds,
            "reader_name": first.reader_name, "probes": probe_counts(cell.entries),
            "lists": dict(list_pages), "skipped": "; ".join(skipped)}


#: A cell's per-probe-kind counts, in this order (errors and skipped questions are in none).
PROBE_COUNTS = ("correct", "abstained", "wrong", "silent wrong", "confabulated")


def probe_counts(entries: Sequence[Entry]) -> dict[str, list[int]]:
    """Per probe kind, [correct, abstained, wrong, silent wrong, confabulated] over the
    questions answered (skipped questions were not asked; an error gave no answer)."""
    out: dict[str, list[int]] = {}
    for e in entries:
        if e.skipped is not None or e.error is not None:
            continue
        counts = out.setdefault(e.probe, [0] * len(PROBE_COUNTS))
        counts[PROBE_COUNTS.index(outcome_of(e))] += 1
        kind = kind_of(e)
        if kind in PROBE_COUNTS[3:]:
            counts[PROBE_COUNTS.index(kind)] += 1
    return {kind: out[kind] for kind in sorted(out, key=_probe_order)}


def _probe_order(kind: str) -> tuple[int, str]:
    return (PROBE_KINDS.index(kind) if kind in PROBE_KINDS else len(PROBE_KINDS), kind)


def _link_readers(summaries: list[dict[str, Any]]) -> None:
    """Give each cell its other readers' cells of the same arm (``others``: id and reader), so
    the index shows told and blind side by side without ranking them together."""
    arms: dict[tuple, list[dict[str, Any]]] = {}
    for s in summaries:
        arms.setdefault(tuple(str(s[f]) for f in CELL_FIELDS[1:]), []).append(s)
    for s in summaries:
        same = arms[tuple(str(s[f]) for f in CELL_FIELDS[1:])]
        s["others"] = [{"id": o["id"], "reader_name": o["reader_name"]}
                       for o in same if o["id"] != s["id"]]


def _legacy_context(row: Mapping[str, Any]) -> dict[str, Any]:
    """A context rebuilt from an old record: its frames (with sizes and tokens) and question."""
    hashes = list(row.get("frame_hashes") or [])
    px = list(row.get("frame_px") or [])
    seen = list(row.get("seen_px") or [])
    tokens = list(row.get("image_tokens_per_frame") or [])
    parts: list[dict[str, Any]] = []
    for i, digest in enumerate(hashes):
        width, height = px[i] if i < len(px) else (0, 0)
        seen_w, seen_h = seen[i] if i < len(seen) else (width, height)
        parts.append({"type": "image", "frame_hash": digest, "width": width, "height": height,
                      "seen_width": seen_w, "seen_height": seen_h,
                      "tokens": tokens[i] if i < len(tokens) else None})
    parts.append({"type": "text", "text": str(row.get("question") or "")})
    return {"source": "record",
            "note": ("rebuilt from the record (it has no context_hash): the frames and the "
                     "question as recorded; instruction text and any history text are not "
                     "stored in such records"),
            "messages": [{"role": "user", "content": parts}]}


def _check_context(data: Any, where: str) -> dict[str, Any]:
    messages = data.get("messages") if isinstance(data, Mapping) else None
    if not isinstance(messages, list):
        raise ValueError(f"{where}: a context must be a JSON object with a 'messages' list")
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            message["content"] = [{"type": "text", "text": content}]
        elif not isinstance(content, list):
            raise ValueError(f"{where}: messages[{i}].content must be a list of parts")
    return dict(data)


def _frames_of(context: Mapping[str, Any]) -> list[str]:
    return [part["frame_hash"] for message in context["messages"]
            for part in message["content"]
            if isinstance(part, Mapping) and part.get("type") == "image" and part.get("frame_hash")]


def _block_tokens(context: Mapping[str, Any], target_model: str) -> list[Any]:
    """Predicted billed tokens of each part in order: text counted for the target model, images
    as the context recorded them."""
    out: list[Any] = []
    for message in context["messages"]:
        for part in message["content"]:
            if not isinstance(part, Mapping):
                out.append(None)
            elif part.get("type") == "text":
                counted = count_text_tokens(str(part.get("text", "")), target_model)
                out.append({"tokens": counted.tokens, "method": counted.method})
            else:
                out.append({"tokens": part.get("tokens"), "method": "image bill"})
    return out


class _Frames:
    """Frames copied (checked against their hash) or linked from the runs' frame stores."""

    def __init__(self, out: Path, mode: str) -> None:
        if mode not in FRAME_MODES:
            raise ValueError(f"frames mode {mode!r}: choose one of {', '.join(FRAME_MODES)}")
        self.out = out / FRAMES_DIR
        self.mode = mode
        self.done: set[str] = set()
        self.missing: set[str] = set()
        self.bytes = 0

    def add(self, digest: str, run_dir: Path) -> bool:
        if digest in self.done:
            return True
        source = run_dir / FRAMES_DIR / digest[:2] / f"{digest}.png"
        target = self.out / digest[:2] / f"{digest}.png"
        if not source.is_file():
            self.missing.add(digest)
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() or target.is_symlink():
            target.unlink()
        if self.mode == "symlink":
            target.symlink_to(source.resolve())
        else:
            data = source.read_bytes()
            if hashlib.sha256(data).hexdigest() != digest:
                raise ValueError(f"frame store corrupt: {source} does not hash to its name")
            linked = False
            if self.mode == "hardlink":
                try:
                    os.link(source, target)
                    linked = True
                except OSError:
                    linked = False
            if not linked:
                target.write_bytes(data)
            self.bytes += len(data)
        self.done.add(digest)
        self.missing.discard(digest)
        return True


def _tree_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            files += 1
            size += path.lstat().st_size if path.is_symlink() else path.stat().st_size
    return files, size


def build_site(run_dirs: Sequence[str | Path], out: str | Path, *, page_size: int = PAGE_SIZE,
               frames: str = "copy", table: Any = None,
               log: Callable[[str], None] = print) -> SiteStats:
    """Write the viewer for the records under ``run_dirs`` into ``out``: the static pages, then
    each cell's paged lists, each question group, each question with its context, transcript
    and frames, and last the index that points at them."""
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")
    if frames not in FRAME_MODES:
        raise ValueError(f"frames mode {frames!r}: choose one of {', '.join(FRAME_MODES)}")
    if table is None:
        table = parse_shape_rules(library_table_path().read_text())
    out = Path(out)
    entries = build_entries(load_rows(run_dirs), table)
    if not entries:
        raise ValueError("the records hold no question rows (only transcriptions?)")
    _prepare_out(out)
    _copy_static(out)
    writer = _Writer(out)
    cells = cells_of(entries)
    summaries, list_pages = _write_cell_lists(writer, cells, page_size)
    _write_groups(writer, entries)
    questions = _QuestionPages(writer, _Frames(out, frames))
    for entry in entries:
        questions.write(entry)
    _write_index(writer, entries, summaries, page_size)
    files, total = _tree_size(out)
    stats = SiteStats(out=out, questions=len(entries), cells=len(cells), list_pages=list_pages,
                      contexts=len(questions.contexts), transcripts=len(questions.transcripts),
                      frames=len(questions.frames.done),
                      missing_frames=len(questions.frames.missing),
                      files=files, total_bytes=total,
                      frame_bytes=_tree_size(out / FRAMES_DIR)[1])
    log(stats.summary())
    return stats


def _write_cell_lists(writer: _Writer, cells: Sequence[Cell],
                      page_size: int) -> tuple[list[dict[str, Any]], int]:
    """Each cell's questions, one paged list per filter (all / correct / wrong x evidence
    round); returns the cells' index summaries and the number of list pages written."""
    summaries = []
    list_pages = 0
    for cell in cells:
        lists: dict[str, list[Entry]] = {}
        for entry in cell.entries:
            for name in list_names(entry):
                lists.setdefault(name, []).append(entry)
        pages_per_list = {}
        for name, members in sorted(lists.items()):
            chunks = _pages(members, page_size)
            pages_per_list[name] = len(chunks)
            for number, chunk in enumerate(chunks, start=1):
                writer.data(f"cells/{cell.cell_id}/{name}/p{number}",
                            {"cell": cell.cell_id, "list": name, "page": number,
                             "pages": len(chunks), "total": len(members),
                             "rows": [_list_row(e) for e in chunk]})
                list_pages += 1
        summaries.append(_cell_summary(cell, pages_per_list))
    _link_readers(summaries)
    return summaries, list_pages


def _write_groups(writer: _Writer, entries: Sequence[Entry]) -> None:
    """One file per question group: the same question in every cell, side by side."""
    for group_id, members in groups_of(entries).items():
        writer.data(_sharded("g", group_id), {"id": group_id, "members": [
            {"id": e.entry_id, "cell": e.cell_id, **dict(zip(CELL_FIELDS, e.cell, strict=True)),
             "ok": e.correct, "err": e.error is not None, "skip": e.skipped,
             "a": _short(e.row.get("answer"), 80), "kind": kind_of(e),
             "reader_name": e.reader_name, "abst": bool(e.row.get("abstained")),
             "tok": e.billed_tokens, "round": e.evidence_round} for e in members]})


class _QuestionPages:
    """One file per question, and once each the context, transcript and frames it points at
    (contexts and transcripts checked and passed through, per-part token counts cached)."""

    def __init__(self, writer: _Writer, frames: _Frames) -> None:
        self.writer = writer
        self.frames = frames
        self.contexts: dict[str, dict[str, Any]] = {}
        self.transcripts: set[str] = set()
        self._tokens: dict[tuple[str, str], list[Any]] = {}

    def write(self, entry: Entry) -> None:
        row = entry.row
        context_ref, block_tokens, missing = self._context(entry)
        fields = {name: field_of(row, name, default) for name, default in
                  COMPACTION_FIELDS.items()}
        self.writer.data(_sharded("q", entry.entry_id), {
            "id": entry.entry_id, "cell": entry.cell_id, "group": entry.group_id,
            "coords": dict(zip(CELL_FIELDS, entry.cell, strict=True)), "label": entry.reader_label,
            "offline": entry.offline, "run_dir": str(entry.run_dir), "fields": fields,
            "billed_tokens": entry.billed_tokens, "correct": entry.correct,
            "outcome": outcome_of(entry), "kind": kind_of(entry), "skipped": entry.skipped,
            "probe": entry.probe, "probe_old": entry.probe_defaulted,
            "reader_name": entry.reader_name,
            "context": context_ref, "block_tokens": block_tokens, "missing_frames": missing,
            "transcript": self._transcript(entry), "reading": entry.reading,
            "record": dict(row)})

    def _context(self, entry: Entry) -> tuple[dict[str, Any], list[Any], list[str]]:
        """The question's context reference, each part's tokens and the frames not found: a
        stored context by hash, or one rebuilt inline from a record that has none."""
        target = str(entry.row.get("target_model", ""))
        if not entry.context_hash:
            context = _legacy_context(entry.row)
            return ({"inline": context}, _block_tokens(context, target),
                    self._copy_frames(context, entry.run_dir))
        digest = str(entry.context_hash)
        stored = self._stored_context(digest, entry.run_dir)
        if stored is None:
            return {"missing": digest}, [], []
        key = (digest, target)
        if key not in self._tokens:
            self._tokens[key] = _block_tokens(stored, target)
        return {"hash": digest}, self._tokens[key], self._copy_frames(stored, entry.run_dir)

    def _stored_context(self, digest: str, run_dir: Path) -> dict[str, Any] | None:
        """A run's stored context, checked against its hash and written once (None: absent)."""
        context = self.contexts.get(digest)
        if context is None:
            source = run_dir / CONTEXTS_DIR / digest[:2] / f"{digest}.json"
            if source.is_file():
                raw = source.read_bytes()
                if hashlib.sha256(raw).hexdigest() != digest:
                    raise ValueError(f"context store corrupt: {source} does not hash to its name")
                context = _check_context(json.loads(raw), str(source))
                self.contexts[digest] = context
                self.writer.data(_sharded("ctx", digest), context)
        return context

    def _copy_frames(self, context: Mapping[str, Any], run_dir: Path) -> list[str]:
        """Copy (or link) the context's frames; returns the hashes not found in the run."""
        return [h for h in _frames_of(context) if not self.frames.add(h, run_dir)]

    def _transcript(self, entry: Entry) -> dict[str, str] | None:
        """The offline reader's transcript reference, written once (None: no transcript)."""
        if not entry.transcript_hash:
            return None
        digest = str(entry.transcript_hash)
        source = entry.run_dir / TRANSCRIPTS_DIR / digest[:2] / f"{digest}.json"
        if digest in self.transcripts:
            return {"hash": digest}
        if not source.is_file():
            return {"missing": digest}
        self.writer.data(_sharded("tr", digest), json.loads(source.read_bytes()))
        self.transcripts.add(digest)
        return {"hash": digest}


def _write_index(writer: _Writer, entries: Sequence[Entry], summaries: list[dict[str, Any]],
                 page_size: int) -> None:
    """The index: the runs, the filters' values and one summary per cell."""
    rounds = sorted({round_key(e.evidence_round) for e in entries},
                    key=lambda r: (r == "rna", int(r[1:]) if r != "rna" else 0))
    writer.data("index", {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": sorted({str(e.run_dir) for e in entries}),
        "offline_label": OFFLINE_LABEL,
        "page_size": page_size,
        "questions": len(entries),
        "cell_fields": list(CELL_FIELDS),
        "filters": {
            "window": sorted({e.cell[9] for e in entries if e.cell[9] is not None},
                             reverse=True),
            "verdict": sorted({e.cell[10] for e in entries}),
            "shape": sorted({e.cell[6] for e in entries}),
            "strategy": sorted({e.strategy for e in entries}),
            "policy": sorted({e.policy for e in entries}),
            "round": rounds,
        },
        "cells": summaries,
    })
