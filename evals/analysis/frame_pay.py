"""Where frames pay: billed characters per token of the discarded history, as text and as frames.

Why by content type: a text token carries about 3.5 characters of English prose but far fewer of
code, JSON or shell output, while a frame carries the same number of characters whatever they
are (its cells), billed by its pixels. So frames lose money on prose and can win on tool output
(issue 47; pxpipe's live A/B). This table says which, per session, model line and shape.

For one session (a session file the library's loader reads):

1. **Discarded history.** Every message but the kept tail: the last :data:`KEEP_CHARS`
   characters of message text (production's ``keepRecentTokens`` 20k at 4 characters a token).
2. **Content type** of each text block of it: ``prose`` (user and assistant text), ``json`` (a
   tool result that parses as JSON, or whose first non-empty lines all parse: JSONL), ``code``
   (a tool result of a file-reading tool, :data:`READ_TOOLS`), ``logs`` (every other tool result:
   shell, grep, test output).
3. **As text**: the characters over the tokens the model line's provider bills for them
   (``snapcompact.billing.billed_text_tokens``: Claude's own tokenizer, OpenAI's tiktoken...).
4. **As frames** of a shape: the text drawn by the library's renderer
   (``snapcompact.render.render_many``: normalized in the shape's font, paginated, every page
   drawn; the last page cropped to the rows it uses), each frame billed at its own width and
   height as the provider bills it (``snapcompact.billing.bill_image``, after its resize): the
   text's characters over the frames' tokens. Not the frame's capacity (cols x rows): a frame
   holds fewer characters than its cells (line breaks, the last frame's crop), and the same
   characters are the numerator of both columns, so their ratio is the token saving itself.

A shape *pays* for a content type when its characters per token beat the text's. A content type
is sampled to its first :data:`SAMPLE_CHARS` characters (a ratio, not a total). Run it as
``python -m evals.analysis.frame_pay [SESSION...] [--main-job] [--out DIR]`` (``--main-job``: the
main job's generated sessions, made again from its dataset config at its seed; with ``--out``,
``frame_pay.md`` with its command on line 1, ``frame_pay.csv`` and the figure of
``evals.analysis.frame_pay_plot``). ``snapcompact-eval-table --check`` re-derives the committed
main-job table (:func:`rebuild_frame_pay`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapcompact.billing import bill_image, billed_text_tokens
from snapcompact.pricing import resolve_shape
from snapcompact.render import render_many

KEEP_CHARS = 80_000
SAMPLE_CHARS = 200_000
READ_TOOLS = frozenset({"read", "Read", "view", "open", "read_file", "cat"})
CONTENT_TYPES = ("prose", "code", "json", "logs")
#: (label, model id, wire API): one model line per provider family.
LINES: tuple[tuple[str, str, str], ...] = (
    ("Claude Sonnet 4.5", "claude-sonnet-4-5", "anthropic-messages"),
    ("GPT-5.5", "gpt-5.5", "openai-responses"),
    ("Gemini 2.5 Flash", "gemini-2.5-flash", "google-generative-ai"),
)
SHAPES = ("11on16-bw", "8on16-bw", "8on22-bw", "6x6u-bw", "5x8-bw")


def _text_blocks(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or ()
            if isinstance(b, Mapping) and b.get("type") == "text"]


def _is_json(text: str) -> bool:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        json.loads(stripped)
        return True
    except ValueError:
        lines = [line for line in stripped.splitlines() if line.strip()][:20]
        try:
            return all(isinstance(json.loads(line), (dict, list)) for line in lines)
        except ValueError:
            return False


def content_type(message: Mapping[str, Any], text: str) -> str:
    """Step 2 of the module docstring."""
    if message.get("role") != "toolResult":
        return "prose"
    if _is_json(text):
        return "json"
    return "code" if str(message.get("toolName") or "") in READ_TOOLS else "logs"


def discarded_by_type(messages: Sequence[Mapping[str, Any]],
                      keep_chars: int = KEEP_CHARS) -> dict[str, str]:
    """The discarded history's text, joined per content type (steps 1 and 2)."""
    kept, cut = 0, len(messages)
    while cut > 0 and kept < keep_chars:
        cut -= 1
        kept += sum(len(t) for t in _text_blocks(messages[cut]))
    pieces: dict[str, list[str]] = {kind: [] for kind in CONTENT_TYPES}
    for message in messages[:cut]:
        for text in _text_blocks(message):
            if text.strip():
                pieces[content_type(message, text)].append(text)
    return {kind: "\n".join(texts)[:SAMPLE_CHARS] for kind, texts in pieces.items() if texts}


def frame_bill(model: str, api: str, width: int, height: int) -> tuple[int, bool]:
    """(tokens, resized): what one ``width`` x ``height`` frame is billed (the detail production
    sends), and whether the provider shrinks it before the model reads it."""
    detail = resolve_shape(model, api=api).image_detail
    try:
        bill = bill_image(model, width, height, detail=detail, api=api)
    except ValueError:  # a tile model refuses "original": production would send high
        bill = bill_image(model, width, height, detail="high", api=api)
    return bill.tokens, (bill.seen_width, bill.seen_height) != (width, height)


@dataclass(frozen=True)
class Drawn:
    """A text drawn in one shape: its frames' sizes and the characters they hold."""

    shape: str
    sizes: tuple[tuple[int, int], ...]  # (width, height) of every frame, first page first
    drawn_chars: int  # cells drawn (after the renderer's normalization)


def draw(text: str, shape: str) -> Drawn:
    """Render ``text`` in ``shape`` with the library's renderer (one worker: deterministic)."""
    frames = render_many(text, shape, workers=1)
    return Drawn(shape, tuple((f.width, f.height) for f in frames), sum(f.chars for f in frames))


def frame_tokens(drawn: Drawn, model: str, api: str) -> tuple[int, bool]:
    """Tokens ``model`` is billed for every frame of ``drawn``, and whether any is shrunk."""
    bills = [frame_bill(model, api, w, h) for w, h in drawn.sizes]
    return sum(t for t, _ in bills), any(r for _, r in bills)


@dataclass(frozen=True)
class PayRow:
    """One session x model line x content type: characters per billed token, text and frames."""

    session: str
    line: str
    content: str
    chars: int
    text_chars_per_token: float
    frame_chars_per_token: Mapping[str, float]
    text_method: str = ""  # how the text tokens were counted (an estimate is labelled so)
    resized: frozenset[str] = frozenset()  # shapes the provider shrinks before reading
    text_tokens: int = 0
    frame_tokens: Mapping[str, int] = field(default_factory=dict)
    frames: Mapping[str, int] = field(default_factory=dict)
    drawn_chars: Mapping[str, int] = field(default_factory=dict)

    @property
    def best_shape(self) -> str:
        return max(self.frame_chars_per_token, key=lambda s: self.frame_chars_per_token[s])

    @property
    def pays(self) -> bool:
        return self.frame_chars_per_token[self.best_shape] > self.text_chars_per_token


def frame_chars_per_token(text: str, shape_name: str, model: str, api: str
                          ) -> tuple[float, bool]:
    """Step 4 of the module docstring, and whether the provider shrinks a frame."""
    tokens, resized = frame_tokens(draw(text, shape_name), model, api)
    return (len(text) / tokens if tokens else float("nan")), resized


def pay_rows(session: str, messages: Sequence[Mapping[str, Any]],
             shapes: Sequence[str] = SHAPES,
             lines: Sequence[tuple[str, str, str]] = LINES,
             keep_chars: int = KEEP_CHARS) -> list[PayRow]:
    """Every model line x content type of one session (each text drawn once per shape)."""
    rows = []
    for kind, text in discarded_by_type(messages, keep_chars).items():
        drawn = {s: draw(text, s) for s in shapes}
        for label, model, api in lines:
            tokens, method = billed_text_tokens(text, model)
            bills = {s: frame_tokens(d, model, api) for s, d in drawn.items()}
            rows.append(PayRow(
                session, label, kind, len(text), len(text) / tokens,
                {s: (len(text) / t if t else float("nan")) for s, (t, _) in bills.items()},
                method, frozenset(s for s, (_, r) in bills.items() if r), tokens,
                {s: t for s, (t, _) in bills.items()},
                {s: len(d.sizes) for s, d in drawn.items()},
                {s: d.drawn_chars for s, d in drawn.items()}))
    return rows


def to_markdown(rows: Sequence[PayRow], shapes: Sequence[str] = SHAPES) -> str:
    """The table: text vs each shape's characters per billed token, and whether frames pay."""
    out = ["| session | line | content | chars | text c/tok (counter) | " +
           " | ".join(f"{s} c/tok (frames)" for s in shapes) + " | frames pay |",
           "|---|---|---|---:|---:|" + "---:|" * len(shapes) + "---|"]
    for r in rows:
        cells = " | ".join(f"{r.frame_chars_per_token[s]:.2f}" + ("*" if s in r.resized else "")
                           + (f" ({r.frames[s]})" if s in r.frames else "") for s in shapes)
        verdict = f"yes ({r.best_shape})" if r.pays else "no"
        out.append(f"| {r.session} | {r.line} | {r.content} | {r.chars:,} | "
                   f"{r.text_chars_per_token:.2f} ({r.text_method}) | {cells} | {verdict} |")
    out += ["", "c/tok: the content's characters over the tokens billed for them, as text (the "
            "provider's counter) and as the frames the library's renderer draws of it in each "
            "shape (their count in brackets), every frame billed at its own size as the provider "
            "bills it; `*` the provider shrinks a frame before the model reads it (smaller "
            "glyphs: cheaper, and less legible). `frames pay`: some shape beats text. A content "
            f"type is its first {SAMPLE_CHARS:,} characters of the discarded history (all but "
            f"the last {KEEP_CHARS:,}). Characters per token say what frames cost, not whether "
            "they are read: pair a row with the recall of its shape (the main job's correct / "
            "abstained / wrong by the content type of the evidence: "
            "`results/outcomes/outcomes_by_content_type.csv`)."]
    return "\n".join(out)


def to_csv(rows: Sequence[PayRow], shapes: Sequence[str] = SHAPES) -> str:
    """One line per row x (text or shape): characters, tokens, frames, characters drawn."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["session", "line", "content", "form", "chars", "tokens", "chars_per_token",
                     "frames", "drawn_chars", "resized", "counter"])
    for r in rows:
        writer.writerow([r.session, r.line, r.content, "text", r.chars, r.text_tokens,
                         f"{r.text_chars_per_token:.4f}", "", "", "", r.text_method])
        for s in shapes:
            writer.writerow([r.session, r.line, r.content, s, r.chars, r.frame_tokens.get(s, ""),
                             f"{r.frame_chars_per_token[s]:.4f}", r.frames.get(s, ""),
                             r.drawn_chars.get(s, ""), s in r.resized, "bill_image"])
    return buf.getvalue()


def main_job_sessions(overrides: Sequence[str] = ()) -> list[tuple[str, Sequence[Mapping]]]:
    """The main job's generated sessions, made again from its composed dataset config (the
    ``eval`` config and its seed, as ``evals.pipeline.plan.load_items`` makes them)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from evals.items.datasets import load_dataset
    from evals.spec.config_files import CONFIG_DIR

    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIG_DIR)):
        cfg = compose("eval", overrides=list(overrides))
    params = OmegaConf.to_container(cfg.dataset.params, resolve=True)
    assert isinstance(params, dict)
    items = load_dataset(str(cfg.dataset.name), **params)
    return [(item.item_id, item.messages) for item in items]


MAIN_JOB_COMMAND = "python -m evals.analysis.frame_pay --main-job --out results/frame_pay"


def rebuild_frame_pay(command: str = MAIN_JOB_COMMAND) -> dict[str, str]:
    """``frame_pay.md`` and ``frame_pay.csv`` of the main job's sessions, as committed."""
    rows = [row for name, messages in main_job_sessions() for row in pay_rows(name, messages)]
    return {"frame_pay.md": f"`{command}`\n\n{to_markdown(rows)}\n",
            "frame_pay.csv": to_csv(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.analysis.frame_pay",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("sessions", nargs="*", help="session files")
    parser.add_argument("--main-job", action="store_true",
                        help="the main job's generated sessions (its dataset config, its seed)")
    parser.add_argument("--out", default=None, help="write frame_pay.md, frame_pay.csv and the "
                        "figure where_snapcompact_pays.png here")
    args = parser.parse_args(argv)
    from snapcompact.compaction import load_session_messages

    sessions = main_job_sessions() if args.main_job else []
    sessions += [(Path(p).name, load_session_messages(Path(p))) for p in args.sessions]
    if not sessions:
        parser.error("no session: name session files or --main-job")
    rows = [row for name, messages in sessions for row in pay_rows(name, messages)]
    command = " ".join(["python -m evals.analysis.frame_pay",
                        *map(shlex.quote, argv if argv is not None else sys.argv[1:])])
    text = f"`{command}`\n\n{to_markdown(rows)}\n"
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "frame_pay.md").write_text(text)
        (out / "frame_pay.csv").write_text(to_csv(rows))
        from evals.analysis.frame_pay_plot import write_figure

        write_figure(rows, out / "where_snapcompact_pays.png", SHAPES)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
