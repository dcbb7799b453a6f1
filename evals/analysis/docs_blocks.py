"""Figures in the README files written from the committed results, never typed by hand.

Why: a figure copied by hand into prose drifts from the records it came from (a rerun, a fixed
bill, a new session) and nothing notices. Each block of measured figures in ``README.md`` and
``results/README.md`` sits between markers::

    <!-- generated:NAME (snapcompact-eval-table --write-docs; do not edit) -->
    ...
    <!-- /generated:NAME -->

and is rendered here from the committed tables under ``results/`` (or, for computed tables such
as the frame costs, from the rules they are computed from). ``--write-docs`` rewrites the blocks;
``--check`` renders them again and fails on any block whose text differs (stale), any block a
file is missing, a block whose source is not committed, or a figure typed in the prose outside
the blocks (:func:`stray_figures`): prose holds settings and definitions, not measurements.
Benchmark records (speed, memory) live in benchmarks/README.md, each with its command and date.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

__all__ = ["BLOCKS", "FIGURE", "GENERATED_DOCS", "SCANNED_DOCS", "DocBlock", "check_docs",
           "render_block", "scanned_docs", "span_problems", "stray_figures", "write_docs"]

_OPEN = "<!-- generated:{name} (snapcompact-eval-table --write-docs; do not edit) -->"
_CLOSE = "<!-- /generated:{name} -->"


@dataclass(frozen=True)
class DocBlock:
    """One generated block: where it lives and the committed table it is rendered from."""

    name: str
    doc: str  # path of the markdown file, relative to the checkout
    source: str  # the committed table it reads, relative to the checkout
    render: Callable[[Path], str]


def _num(value: object, spec: str) -> str:
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "–"
    return "–" if math.isnan(f) else format(f, spec)


def _main_job_table(root: Path) -> str:
    """Per arm and verdict: contexts, compactions, frames by shape drawn, tokens, recall."""
    from evals.analysis.aggregate import arm_labels

    summary = pd.read_csv(root / "results" / "summary.csv")
    summary = summary.assign(arm_label=arm_labels(summary)).sort_values(
        ["context_window", "strategy", "policy", "predicted_prompt_tokens"],
        ascending=[False, True, True, True])
    counters = sorted({m for cell in summary.get("compaction_token_method", pd.Series())
                       .dropna() for m in str(cell).split("; ") if m})
    counted = f"; {', '.join(counters)}" if counters else ""
    out = ["| arm | verdict | contexts | compactions | frames by shape drawn (per context) | "
           f"context tokens: text + image | compaction calls: tokens/q (per context{counted}) | "
           "recall [95 % Wilson] | recall, discarded (n) |",
           "| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- |"]
    for r in summary.itertuples():
        if not r.n_questions and r.n_skipped:
            out.append(f"| {r.arm_label} | {r.production} | {_num(r.n_contexts, '.0f')} | – | – | "
                       f"skipped: {_num(r.tokens_skipped_context, ',.0f')} tokens, over the "
                       "model's input window | – | – | – |")
            continue
        frames = r.frames_by_shape_per_context if isinstance(r.frames_by_shape_per_context,
                                                             str) else "0"
        out.append(
            f"| {r.arm_label} | {r.production} | {_num(r.n_contexts, '.0f')} | "
            f"{_num(r.compactions_mean, '.1f')} | {frames or '0'} | "
            f"{_num(r.text_tokens, ',.0f')} + {_num(r.predicted_image_tokens, ',.0f')} | "
            f"{_compaction(r)} | "
            f"{_num(r.recall, '.2f')} [{_num(r.recall_lo, '.2f')}, {_num(r.recall_hi, '.2f')}] | "
            f"{_num(r.recall_discarded, '.2f')} ({_num(r.n_discarded, '.0f')}) |")
    return "\n".join(out)


def _compaction(r: object) -> str:
    """The question's share of its session's compaction calls and the session's bill
    (summary.csv's ``compaction_*`` columns; a table written before them: not recorded)."""
    share = getattr(r, "compaction_tokens_per_question", None)
    per_context = getattr(r, "compaction_billed_tokens_per_context", None)
    if _num(share, ",.0f") == "–":
        return "not recorded"
    return f"{_num(share, ',.0f')} ({_num(per_context, ',.0f')})"


def _research_claims(root: Path) -> str:
    """The held-out comparison's sentences, as research_compare wrote them."""
    text = (root / "results" / "research" / "research_compare.md").read_text(encoding="utf-8")
    marker = "### What the evidence supports"
    if marker not in text:
        raise ValueError("results/research/research_compare.md has no claims section: "
                         "regenerate it with python -m evals.analysis.research_compare")
    claims = text.split(marker, 1)[1].strip()
    sessions = pd.read_csv(root / "results" / "research" / "research_sessions.csv")
    base = sessions[sessions["research"] == "production"]
    valid = int((base["verdict"] == "valid").sum())
    head = (f"Held-out sessions: {base['seed'].nunique()} (production valid on {valid}, "
            f"handed over to an LLM summary on {len(base) - valid}); per-session figures in "
            "`results/research/research_sessions.csv`, tables in "
            "`results/research/research_compare.md`.")
    return head + "\n\n" + claims


def _frame_costs(root: Path) -> str:
    """Billed tokens and dollars per full frame (computed from the billing rules and prices)."""
    from evals.analysis.frame_costs import build

    return build(subheading="###")


def _study_claims(root: Path) -> str:
    """The pre-registered rerun's sentences, as its report states them (or that it has none)."""
    report = root / "results" / "study" / "recommended_rerun" / "report.md"
    if not report.is_file():
        return ("Pre-registered rerun (`configs/study/recommended_rerun.yaml`): its records are "
                "not committed yet, so it reports nothing.")
    text = report.read_text(encoding="utf-8")
    parts = text.split("\n## ")
    keep = [p for p in parts if p.startswith(("Sessions", "Primary endpoint",
                                              "Secondary endpoints"))]
    body = "\n\n".join("**" + p.replace("\n\n", "**\n\n", 1).strip() for p in keep)
    return ("Pre-registered rerun (`configs/study/recommended_rerun.yaml`; report, records and "
            "command: `results/study/recommended_rerun/report.md`):\n\n" + body)


BLOCKS: tuple[DocBlock, ...] = (
    DocBlock("main-job-table", "README.md", "results/summary.csv", _main_job_table),
    DocBlock("frame-costs", "README.md", "snapcompact/pricing/pricing.toml", _frame_costs),
    DocBlock("research-claims", "README.md", "results/research/research_compare.md",
             _research_claims),
    DocBlock("study-claims", "README.md", "configs/study/recommended_rerun.yaml",
             _study_claims),
)


def render_block(block: DocBlock, root: Path) -> str:
    """The block's text with its markers."""
    if not (root / block.source).is_file():
        raise ValueError(f"{block.doc}: block {block.name} quotes {block.source}, which is not "
                         "committed")
    body = block.render(root).strip("\n")
    return f"{_OPEN.format(name=block.name)}\n{body}\n{_CLOSE.format(name=block.name)}"


def _span(text: str, name: str) -> tuple[int, int] | None:
    m = re.search(rf"<!-- generated:{re.escape(name)}\b[^>]*-->.*?"
                  rf"<!-- /generated:{re.escape(name)} -->", text, flags=re.S)
    return (m.start(), m.end()) if m else None


def write_docs(root: Path) -> list[str]:
    """Rewrite every block in place; returns the names of the blocks that changed."""
    changed = []
    for block in BLOCKS:
        path = root / block.doc
        text = path.read_text(encoding="utf-8")
        span = _span(text, block.name)
        if span is None:
            raise ValueError(f"{block.doc} has no generated:{block.name} markers")
        new = text[:span[0]] + render_block(block, root) + text[span[1]:]
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(block.name)
    return changed


#: the pages whose prose is always scanned for figures typed outside a generated block; with
#: them every ``docs/*.md``, every ``results/**/*.md`` that is not itself generated (checked by
#: re-deriving it instead: :mod:`evals.analysis.rederive`) and the comments of ``configs/``
SCANNED_DOCS: tuple[str, ...] = ("README.md", "results/README.md")
#: generated wholesale and re-derived from committed records, so not scanned as prose
GENERATED_DOCS: tuple[str, ...] = ("results/report.md", "results/shapetable/report.md",
                                   "results/research/research_compare.md",
                                   "results/outcomes/outcomes.md",
                                   "results/frame_pay/frame_pay.md")

#: what a measured figure looks like in prose: a ratio (``3.84x``), a signed difference
#: (``+0.112``, ``-11,749``), a fraction with two or more decimals (``0.45``), an interval
#: (``[0.28, 0.58]``), a share compared (``12 % fewer``), a timing (``7 min 28 s``, ``22 s``), a
#: bill per question (``60,982 tokens a question``).
#: Settings and definitions (a 200k window, 95 %, version numbers, ranges of seeds such as
#: ``13-52``) do not look like this; a setting that does goes in inline code.
FIGURE = re.compile(
    r"(?<![\w.])\d+\.\d+x\b"
    r"|(?<![\w.\-])[+\u2212\-]\d[\d,]*(?:\.\d+)?(?![\w\-])"
    r"|(?<![\w.$])0\.\d{2,}\b"
    r"|\[\s*[+\u2212\-]?\d[\d.,]*\s*,\s*[+\u2212\-]?\d[\d.,]*\s*\]"
    r"|(?<![\w.])\d+(?:\.\d+)?\s?%\s+(?:fewer|more|less|cheaper|dearer|higher|lower)\b"
    r"|(?<![\w.])\d+\s?min(?:\s+\d+\s?s)?\b"
    r"|(?<![\w.\-])\d+(?:\.\d+)?\s?s\b(?![\w.\-])"
    r"|(?<![\w.,])\d{1,3}(?:,\d{3})+\s+(?:billed\s+)?(?:prompt\s+)?tokens?"
    r"\s*(?:(?:a|per)\s+question|/q)\b")

#: a span of prose whose figures are quoted from a committed file: each must occur in it
_QUOTES = re.compile(r"<!-- quotes: (\S+) -->(.*?)<!-- /quotes -->", re.S)
#: a span of prose whose figures a command measured (timings, examples): the command must be
#: in it, in code (``snapcompact-eval ...``, ``python -m ...``, ``make ...``; inline or an
#: indented code line)
_EXAMPLE = re.compile(r"<!-- example -->(.*?)<!-- /example -->", re.S)
_COMMAND = re.compile(r"(?:`[^`\n]*|^ {4}[^\n]*)(?:snapcompact|python|pytest|make |upstream-)",
                      re.M)


#: folders under results/ that are never committed (run records, the cache, the viewer)
_UNCOMMITTED = {"runs", "cache", "view"}


def scanned_docs(root: Path) -> list[str]:
    """The prose pages and config files ``--check`` scans, relative to ``root``."""
    pages = [*SCANNED_DOCS, *(str(p.relative_to(root)) for p in sorted(root.glob("docs/*.md"))),
             *(str(p.relative_to(root)) for p in sorted(root.glob("results/**/*.md"))
               if not set(p.relative_to(root).parts[1:2]) & _UNCOMMITTED)]
    pages += [str(p.relative_to(root)) for p in sorted(root.glob("configs/**/*.yaml"))]
    generated = {*GENERATED_DOCS, *_study_reports(root)}
    return [p for i, p in enumerate(pages) if p not in pages[:i] and p not in generated]


def _study_reports(root: Path) -> set[str]:
    """The reports of the pre-registered studies whose records are committed: ``--check``
    rebuilds each from its records (:func:`evals.analysis.rederive.check_study_reports`), so
    they are not prose. Any other page under ``results/study/`` is scanned like any page."""
    from evals.analysis.rederive import study_record_folders

    return {str((folder / "report.md").relative_to(root))
            for _, folder in study_record_folders(root)}


def _comments(text: str) -> str:
    """A YAML file's comments only (each line's text from ``#``), line numbers kept."""
    return "\n".join(line[line.index("#"):] if "#" in line else ""
                     for line in text.splitlines())


def _blank(match: re.Match[str]) -> str:
    """The match replaced by spaces, its newlines kept (line numbers stay true)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def stray_figures(text: str) -> list[tuple[int, str]]:
    """(line number, figure) for every figure-like number in ``text`` outside generated blocks,
    quoted and example spans, fenced code and inline code: a measured figure typed by hand has
    no committed data under it."""
    text = re.sub(r"<!-- generated:(\S+)\b[^>]*-->.*?<!-- /generated:\1 -->", _blank, text,
                  flags=re.S)
    text = _QUOTES.sub(_blank, text)
    text = _EXAMPLE.sub(_blank, text)
    return _figures(text)


def _figures(text: str) -> list[tuple[int, str]]:
    """(line number, figure) outside fenced and inline code."""
    text = re.sub(r"^```.*?^```", _blank, text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", _blank, text)
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1)
            for m in FIGURE.finditer(line)]


def span_problems(doc: str, text: str, root: Path) -> list[str]:
    """A quoted figure missing from the file it names; an example span without its command."""
    out = []
    for m in _QUOTES.finditer(text):
        first = text.count("\n", 0, m.start(2)) + 1
        source = root / m.group(1)
        if not source.is_file():
            out.append(f"{doc}:{first}: quotes {m.group(1)}, which is not committed")
            continue
        have = source.read_text(encoding="utf-8")
        for line, figure in _figures(m.group(2)):
            if figure not in have:
                out.append(f"{doc}:{first + line - 1}: figure {figure!r} quoted from "
                           f"{m.group(1)} is not in it")
    for m in _EXAMPLE.finditer(text):
        if not _COMMAND.search(m.group(1)):
            out.append(f"{doc}:{text.count(chr(10), 0, m.start()) + 1}: an example span "
                       "without its command (in code) measured nothing a reader can rerun")
    return out


def check_docs(root: Path) -> list[str]:
    """One line per problem: a block missing, stale, or quoting an uncommitted table; a figure
    typed in the prose of a scanned page (:func:`scanned_docs`) or a config's comments, or
    quoted from a file that does not hold it; and any generated file that its committed records
    no longer re-derive (:mod:`evals.analysis.rederive`)."""
    from evals.analysis.rederive import check_all

    problems = []
    for doc in scanned_docs(root):
        path = root / doc
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if doc.endswith(".yaml"):
            text = _comments(text)
        for line, figure in stray_figures(text):
            problems.append(f"{doc}:{line}: figure {figure!r} typed outside a generated block "
                            "(no committed data behind it): generate it from a committed table, "
                            "quote it (<!-- quotes: FILE -->), give its command (<!-- example "
                            "-->) or remove it")
        problems += span_problems(doc, text, root)
    for block in BLOCKS:
        text = (root / block.doc).read_text(encoding="utf-8")
        span = _span(text, block.name)
        if span is None:
            problems.append(f"{block.doc}: no generated:{block.name} block")
            continue
        try:
            want = render_block(block, root)
        except (OSError, ValueError) as exc:
            problems.append(f"{block.doc}: {block.name}: {exc}")
            continue
        if text[span[0]:span[1]] != want:
            problems.append(f"{block.doc}: block {block.name} is stale (differs from "
                            f"{block.source}); run snapcompact-eval-table --write-docs")
    return problems + check_all(root)
