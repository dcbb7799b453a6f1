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
4. **As frames** of a shape: the text normalized as the renderer prints it
   (``snapcompact.text.normalize`` in the shape's font) fills ``cells / capacity`` frames of the
   shape's full size (a partial last frame counted pro rata), each billed as the provider bills
   an image of that size (``snapcompact.billing.bill_image``, after its resize): characters over
   those tokens.

A shape *pays* for a content type when its characters per token beat the text's. A content type
is sampled to its first :data:`SAMPLE_CHARS` characters (a ratio, not a total). Run it as
``python -m evals.analysis.frame_pay SESSION... [--out DIR]`` (with ``--out``, also the figure
of ``evals.analysis.frame_pay_plot``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapcompact.billing import bill_image, billed_text_tokens
from snapcompact.core import geometry, get_shape
from snapcompact.pricing import resolve_shape
from snapcompact.text import normalize

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


def frame_bill(model: str, api: str, size: int) -> tuple[int, bool]:
    """(tokens, resized): what one full square frame of ``size`` px is billed (the detail
    production sends), and whether the provider shrinks it before the model reads it."""
    detail = resolve_shape(model, api=api).image_detail
    try:
        bill = bill_image(model, size, size, detail=detail, api=api)
    except ValueError:  # a tile model refuses "original": production would send high
        bill = bill_image(model, size, size, detail="high", api=api)
    return bill.tokens, (bill.seen_width, bill.seen_height) != (size, size)


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

    @property
    def best_shape(self) -> str:
        return max(self.frame_chars_per_token, key=lambda s: self.frame_chars_per_token[s])

    @property
    def pays(self) -> bool:
        return self.frame_chars_per_token[self.best_shape] > self.text_chars_per_token


def frame_chars_per_token(text: str, shape_name: str, model: str, api: str
                          ) -> tuple[float, bool]:
    """Step 4 of the module docstring, and whether the provider shrinks the frame."""
    shape = get_shape(shape_name)
    cells = len(normalize(text, shape.font))
    per_frame, resized = frame_bill(model, api, shape.frame_size)
    tokens = cells / geometry(shape).capacity * per_frame
    return (len(text) / tokens if tokens else float("nan")), resized


def pay_rows(session: str, messages: Sequence[Mapping[str, Any]],
             shapes: Sequence[str] = SHAPES,
             lines: Sequence[tuple[str, str, str]] = LINES,
             keep_chars: int = KEEP_CHARS) -> list[PayRow]:
    """Every model line x content type of one session."""
    rows = []
    for kind, text in discarded_by_type(messages, keep_chars).items():
        for label, model, api in lines:
            tokens, method = billed_text_tokens(text, model)
            frames = {s: frame_chars_per_token(text, s, model, api) for s in shapes}
            rows.append(PayRow(session, label, kind, len(text), len(text) / tokens,
                               {s: f[0] for s, f in frames.items()}, method,
                               frozenset(s for s, f in frames.items() if f[1])))
    return rows


def to_markdown(rows: Sequence[PayRow], shapes: Sequence[str] = SHAPES) -> str:
    """The table: text vs each shape's characters per billed token, and whether frames pay."""
    out = ["| session | line | content | chars | text c/tok (counter) | " +
           " | ".join(f"{s} c/tok" for s in shapes) + " | frames pay |",
           "|---|---|---|---:|---:|" + "---:|" * len(shapes) + "---|"]
    for r in rows:
        cells = " | ".join(f"{r.frame_chars_per_token[s]:.2f}" + ("*" if s in r.resized else "")
                           for s in shapes)
        verdict = f"yes ({r.best_shape})" if r.pays else "no"
        out.append(f"| {r.session} | {r.line} | {r.content} | {r.chars:,} | "
                   f"{r.text_chars_per_token:.2f} ({r.text_method}) | {cells} | {verdict} |")
    out += ["", "Frames: full frames at the shape's own size, billed as the provider bills them; "
            "`*` the provider shrinks that frame before the model reads it (smaller glyphs: "
            "cheaper, and less legible). Characters per token say what frames cost, not whether "
            "they are read: pair a row with the recall of its shape."]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.analysis.frame_pay",
                                     description=__doc__.split("\n", 1)[0])
    parser.add_argument("sessions", nargs="+", help="session files")
    parser.add_argument("--out", default=None, help="write where_frames_pay.md and the figure "
                        "where_snapcompact_pays.png here")
    args = parser.parse_args(argv)
    from snapcompact.compaction import load_session_messages

    rows: list[PayRow] = []
    for path in args.sessions:
        rows += pay_rows(Path(path).name, load_session_messages(Path(path)))
    text = to_markdown(rows)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "where_frames_pay.md").write_text(text + "\n")
        from evals.analysis.frame_pay_plot import write_figure

        write_figure(rows, Path(args.out) / "where_snapcompact_pays.png", SHAPES)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
