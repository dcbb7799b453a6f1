"""Write measured winners back into the library's model -> shape table (``model_shapes.toml``).

Why a line editor and not a TOML writer: the table is read by people as much as by the loader;
its comments say where each value came from. So the current file is edited in place, one
``key = value`` line at a time, inside the block of the row being decided ([[rules]] by ``name``,
or [claude_high_res]); everything else stays byte for byte. The result is then checked twice:
parsed with ``tomllib`` it must equal the old data with exactly the intended changes, and it
must load through the library's own validator (``snapcompact.pricing.resolve.parse_shape_rules``).

A row whose shape changes keeps the old value as ``reference_shape`` when it had none, so
``table="reference"`` still reproduces the reference implementation. The loader has no
reference frame size, so a change of frame size (or of the Claude high-res row) also moves the
reference table: such changes are listed as warnings rather than hidden.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import snapcompact.pricing
from evals.analysis.aggregate import UNMATCHED_LINE, reader_label, shape_label
from evals.analysis.winner import Candidate, Decision
from snapcompact.core import NAMED_SHAPES, renamed_keys
from snapcompact.pricing import parse_shape_rules, shape_rules

HIGH_RES_LINE = "claude-high-res"
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")


def library_table_path() -> Path:
    """The table file the library loads (the source file under an editable install)."""
    return Path(snapcompact.pricing.__file__).with_name("model_shapes.toml")


@dataclass(frozen=True)
class RowChange:
    line: str
    reader_id: str
    old_shape: str
    old_frame_size: int | None
    shape: str
    frame_size: int | None
    evidence: str
    old_evidence: str = ""  # the row's evidence before ("" for a row never measured)

    @property
    def changed(self) -> bool:
        """The row's entry (shape or frame size) moves."""
        return (self.old_shape, self.old_frame_size) != (self.shape, self.frame_size)

    @property
    def rewrites(self) -> bool:
        """The row's text changes: its entry, or only its evidence."""
        return self.changed or self.evidence != self.old_evidence


@dataclass(frozen=True)
class TableProposal:
    current_text: str
    text: str
    changes: tuple[RowChange, ...]
    skipped: tuple[str, ...]  # lines with evidence that were not written, and why
    warnings: tuple[str, ...]

    def diff(self, name: str = "snapcompact/pricing/model_shapes.toml") -> str:
        return "".join(difflib.unified_diff(
            self.current_text.splitlines(keepends=True), self.text.splitlines(keepends=True),
            fromfile=f"a/{name} (current)", tofile=f"b/{name} (regenerated)"))


@dataclass
class _Block:
    kind: str  # "table" or "array"
    name: str
    start: int  # index of the header line
    end: int  # one past the last line


def _blocks(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m:
            if blocks:
                blocks[-1].end = i
            blocks.append(_Block("array" if m.group(1) == "[[" else "table", m.group(2), i,
                                 len(lines)))
    return blocks


def _toml_value(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"model shape table: cannot write value {value!r}")
    return str(value) if isinstance(value, int) else json.dumps(value, ensure_ascii=True)


def _set_key(lines: list[str], block: _Block, key: str, value: Any) -> None:
    """Replace ``key = ...`` in the block, or insert it after the block's last key line."""
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    text = f"{key} = {_toml_value(value)}\n"
    for i in range(block.start + 1, block.end):
        if pattern.match(lines[i]):
            lines[i] = text
            return
    last = block.start
    for i in range(block.start + 1, block.end):
        stripped = lines[i].strip()
        if stripped and not stripped.startswith("#"):
            last = i
    if not lines[last].endswith("\n"):
        lines[last] += "\n"
    lines.insert(last + 1, text)
    block.end += 1


def _find_block(lines: list[str], line_name: str) -> _Block | None:
    for block in _blocks(lines):
        if line_name == HIGH_RES_LINE and block.kind == "table" and block.name == "claude_high_res":
            return block
        if block.kind == "array" and block.name == "rules":
            body = tomllib.loads("".join(lines[block.start + 1:block.end]))
            if body.get("name") == line_name:
                return block
    return None


def _comparison(best: Candidate, c: Candidate) -> str:
    """The paired session-level interval the decision read for ``c``: best minus ``c``."""
    if c.shared_sessions < 2 or c.diff_lo != c.diff_lo:  # one session (or none): no interval
        return (f"{best.label} minus {c.label}: no paired interval "
                f"({c.shared_sessions} session(s) shared)")
    verdict = "excludes 0" if c.significantly_below else "includes 0"
    return (f"{best.label} minus {c.label} "
            f"[{c.diff_lo:+.3f}, {c.diff_hi:+.3f}] paired over {c.shared_sessions} sessions "
            f"({verdict})")


def evidence_text(decision: Decision) -> str:
    """What a written row rests on, in one line: every shape's recall and billed tokens, the
    paired session-level interval of the best recall minus each other shape (the comparison
    the winner rule reads), the questions, sessions and seeds behind the winner."""
    w, best = decision.winner, decision.best_recall
    shapes = sorted(decision.candidates, key=lambda c: (c.label != w.label, c.label))
    parts = [f"{c.label} recall {c.recall:.3f}, {c.billed_tokens:,.0f} billed tokens/question"
             for c in shapes]
    parts += [_comparison(best, c) for c in shapes if c.label != best.label]
    text = (f"{reader_label(decision.reader_id)}: winner {w.label}; " + "; ".join(parts)
            + f"; {w.n_questions} questions, {decision.sessions} session(s), "
            f"seeds {','.join(map(str, decision.seeds))}")
    if w.measured_on:
        text += f"; measured on {w.measured_on}"
    if decision.tie:
        text += f"; tie with {', '.join(t for t in decision.tie if t != w.label)}"
    if decision.flags:
        text += "; thin evidence"
    return text


#: What a table with measured rows says about the rows (and model ids) nobody measured.
NOT_MEASURED = ("rows without an `evidence` key were not measured by this harness and keep the "
                "entries above; a measured row applies to every model id its pattern matches, "
                "including ids not among the models measured")
#: The header's lead: it describes every measured row's own evidence, whichever run wrote it.
MEASURED_LEAD = "snapcompact-eval-table, each measured row's own evidence"


def measured_text(decision: Decision, provenance: str = "") -> str:
    """What one written row rests on: records, sessions, questions, the model ids measured,
    the reader and the code that wrote the records (no date: the same records give the same
    text on any day)."""
    d = decision
    text = (f"{d.rows} records, {d.sessions} session(s), {d.winner.n_questions} questions, "
            f"models {', '.join(d.target_models)}, reader {d.reader_id}")
    return f"{text}, {provenance}" if provenance else text


def row_evidence_sessions(text: str, line_name: str) -> int | None:
    """Sessions the row's current evidence rests on: 0 for a row never measured, None when
    the row has evidence that does not say (a later run may not replace it unasked).

    Read from the row's ``evidence_sessions``, or for a table written before that key, from
    the header's ``<line>: N records, S session(s)``.
    """
    data = tomllib.loads(text)
    try:
        row = _row_data(data, line_name)
    except (KeyError, StopIteration):
        return 0
    if "evidence" not in row:
        return 0
    if isinstance(row.get("evidence_sessions"), int):
        return int(row["evidence_sessions"])
    header = str(data.get("meta", {}).get("measured", ""))
    m = re.search(rf"(?:^|; ){re.escape(line_name)}: \d+ records, (\d+) session", header)
    return int(m.group(1)) if m else None


def _reference_view(data: dict) -> dict[str, tuple[str, int | None]]:
    """What ``table="reference"`` resolves per row (shape, frame size; None = research size)."""
    view: dict[str, tuple[str, int | None]] = {}
    hr = data["claude_high_res"]
    view[HIGH_RES_LINE] = (hr["shape"], hr["frame_size"])
    for row in data.get("rules", []):
        ref = row.get("reference_shape", row["shape"])
        size = row.get("frame_size") if ref == row["shape"] else None
        research = NAMED_SHAPES[ref].frame_size
        view[row["name"]] = (ref, research if size is None else size)
    return view


def _row_data(data: dict, line_name: str) -> dict:
    """The parsed table's entry of one model line (the high-res tier or a named rule)."""
    if line_name == HIGH_RES_LINE:
        return data["claude_high_res"]
    return next(r for r in data["rules"] if r.get("name") == line_name)


def _refuse_old_spelling(data: Mapping[str, Any]) -> None:
    """Winners are written into today's spelling only (the old one is read, not rewritten)."""
    old_keys = renamed_keys("model_table")
    if any(key in data for key in old_keys):
        raise ValueError(f"the model shape table is in the old spelling ({', '.join(old_keys)}): "
                         f"rename them {', '.join(old_keys.values())} before writing winners "
                         "into it")


def propose_table(current_text: str, decisions: Iterable[Decision], reader: str | None = None,
                  provenance: str = "",
                  kept: Sequence[tuple[Decision, str]] = ()) -> TableProposal:
    """The current table with each decided row set to its winner (see the module docstring).

    ``kept``: decisions whose change was refused (:mod:`evals.analysis.apply_gate`), with why:
    their rows keep shape and size and say so in ``evidence`` ("kept ...: no evidence to
    change ...; measured: ..."). Every written row carries ``evidence_sessions`` (the bar a
    later run must reach to replace it: :mod:`evals.analysis.apply_gate`) and ``measured`` (what
    it rests on, ``provenance`` appended: the code that wrote the records); the header's
    ``measured`` is rebuilt from every measured row's own, so it never describes only the last
    run.
    """
    parse_shape_rules(current_text)  # the starting point must itself be valid
    old_data = tomllib.loads(current_text)
    _refuse_old_spelling(old_data)
    expected = copy.deepcopy(old_data)
    lines = current_text.splitlines(keepends=True)
    by_line: dict[str, list[Decision]] = {}
    for d in decisions:
        if reader is None or d.reader_id == reader:
            by_line.setdefault(d.line, []).append(d)
    changes, skipped = [], []
    for line_name in sorted(by_line):
        why = _why_not_written(line_name, by_line[line_name], lines)
        if why is not None:
            skipped.append(why)
            continue
        changes.append(_write_winner(lines, expected, by_line[line_name][0], provenance))
    for decision, why in kept:
        if reader is not None and decision.reader_id != reader:
            continue
        change = _write_kept(lines, expected, decision, why, provenance)
        if change is not None:
            changes.append(change)
    if any(c.rewrites for c in changes):
        _write_meta(lines, expected, old_data)
    text = "".join(lines)
    if tomllib.loads(text) != expected:
        raise ValueError("model shape table: regenerated text does not parse to the intended data")
    parse_shape_rules(text)
    return TableProposal(current_text=current_text, text=text, changes=tuple(changes),
                         skipped=tuple(skipped), warnings=_reference_moves(old_data, expected))


def _why_not_written(line_name: str, found: list[Decision], lines: list[str]) -> str | None:
    """Why a model line's evidence is not written (None: it is): no row matches its models,
    several readers decided it, or the table has no such row."""
    if line_name == UNMATCHED_LINE:
        models = sorted({m for d in found for m in d.target_models})
        return f"{', '.join(models)}: no row of the table matches; add a rule by hand"
    if len(found) > 1:
        readers = ", ".join(d.reader_id for d in found)
        return (f"{line_name}: evidence from several readers ({readers}); "
                "choose one with --reader")
    if _find_block(lines, line_name) is None:
        return f"{line_name}: no such row in the current table"
    return None


def _set_evidence(lines: list[str], block: _Block, row: dict, decision: Decision,
                  evidence: str, provenance: str) -> None:
    """The keys that say what a row rests on: its evidence, the sessions, what was measured."""
    for key, value in (("evidence", evidence), ("evidence_sessions", decision.sessions),
                       ("measured", measured_text(decision, provenance))):
        _set_key(lines, block, key, value)
        row[key] = value


def _write_winner(lines: list[str], expected: dict, decision: Decision,
                  provenance: str = "") -> RowChange:
    """Set a row to its winner (shape, frame size unless the research size of a row without
    one, evidence), keeping the old shape as ``reference_shape`` when the row had none."""
    line_name = decision.line
    block = _find_block(lines, line_name)
    assert block is not None  # _why_not_written checked it
    row = _row_data(expected, line_name)
    w = decision.winner
    old_shape, old_size = row["shape"], row.get("frame_size")
    new_size: int | None = w.frame_size
    if (line_name != HIGH_RES_LINE and old_size is None
            and w.frame_size == NAMED_SHAPES[w.shape].frame_size):
        new_size = None
    old_evidence = str(row.get("evidence", ""))
    evidence = evidence_text(decision)
    if w.shape != old_shape and line_name != HIGH_RES_LINE and "reference_shape" not in row:
        _set_key(lines, block, "reference_shape", old_shape)
        row["reference_shape"] = old_shape
    _set_key(lines, block, "shape", w.shape)
    row["shape"] = w.shape
    if new_size is not None:
        _set_key(lines, block, "frame_size", new_size)
        row["frame_size"] = new_size
    _set_evidence(lines, block, row, decision, evidence, provenance)
    return RowChange(line_name, decision.reader_id, old_shape, old_size, w.shape, new_size,
                     evidence, old_evidence)


def _write_kept(lines: list[str], expected: dict, decision: Decision,
                why: str, provenance: str = "") -> RowChange | None:
    """A refused change: the row keeps shape and size, its evidence says why and what was
    measured (None: the table has no such row)."""
    block = _find_block(lines, decision.line)
    if block is None:
        return None
    row = _row_data(expected, decision.line)
    old = shape_label(row["shape"], row.get("frame_size")
                      or NAMED_SHAPES[row["shape"]].frame_size)
    old_evidence = str(row.get("evidence", ""))
    evidence = f"kept {old} ({why}); measured: {evidence_text(decision)}"
    _set_evidence(lines, block, row, decision, evidence, provenance)
    return RowChange(decision.line, decision.reader_id, row["shape"], row.get("frame_size"),
                     row["shape"], row.get("frame_size"), evidence, old_evidence)


def _row_names(data: dict) -> list[str]:
    """The table's model lines in file order (the high-res tier first, as it is checked)."""
    return [HIGH_RES_LINE] + [str(r.get("name")) for r in data.get("rules", [])]


def _header_parts(expected: dict, old_data: dict) -> list[str]:
    """``<line>: <what it rests on>`` for every row with evidence: its own ``measured``, or
    for a row written before that key, its part of the old header (or "not described")."""
    old_header = str(old_data.get("meta", {}).get("measured", ""))
    parts = []
    for name in _row_names(expected):
        row = _row_data(expected, name)
        if "evidence" not in row:
            continue
        if "measured" in row:
            parts.append(f"{name}: {row['measured']}")
            continue
        m = re.search(rf"(?:^|; ){re.escape(name)}: ([^;]*)", old_header)
        parts.append(f"{name}: {m.group(1) if m else 'what it rests on was not recorded'}")
    return parts


def _write_meta(lines: list[str], expected: dict, old_data: dict) -> None:
    """The ``[meta]`` header of a table with measured rows: what each measured row rests on
    (rebuilt from the rows, whichever run wrote them), and what the rows nobody measured mean
    (a table without ``[meta]`` is left as it is)."""
    meta = next((b for b in _blocks(lines) if b.kind == "table" and b.name == "meta"), None)
    if meta is None:
        return
    measured = "; ".join([MEASURED_LEAD, *_header_parts(expected, old_data)])
    for key, value in (("measured", measured), ("not_measured", NOT_MEASURED)):
        _set_key(lines, meta, key, value)
        expected["meta"][key] = value


def _reference_moves(old_data: dict, expected: dict) -> tuple[str, ...]:
    """Warnings for rows whose ``table="reference"`` resolution the change moves."""
    old_ref, new_ref = _reference_view(old_data), _reference_view(expected)
    return tuple(
        f"{name}: table='reference' moves from {old_ref[name][0]}@{old_ref[name][1]} to "
        f"{new_ref[name][0]}@{new_ref[name][1]} (the table has no reference frame size or "
        "reference high-res row); tests/pricing/test_resolve.py reference parity will report it"
        for name in old_ref if old_ref[name] != new_ref.get(name))


def apply_table(proposal: TableProposal, path: str | Path) -> Path:
    """Write the regenerated table to ``path`` (refusing if the file changed since it was read)."""
    path = Path(path)
    if path.read_text() != proposal.current_text:
        raise ValueError(f"{path} changed since it was read; rerun the table command")
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(proposal.text)
    tmp.replace(path)

    shape_rules.cache_clear()
    return path
