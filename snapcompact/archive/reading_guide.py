"""The text that travels with an archive and tells the model how to read it.

Why deterministic: the guide is stored as the compaction entry's ``summary`` and re-sent on every
request, so it must be a pure function of the archive (same archive, same bytes, prompt caches
stay warm). It follows the structure of the reference's ``snapcompact-summary.md`` (lead line,
scope tags, reading rules that depend on the frames' layout, a ``FILES`` list, a ``HISTORY``
heading after which the history blocks follow), in our own words.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NO_HISTORY", "UNDERLINE", "GuideFacts", "render_guide", "short_summary"]

#: Summary of a compaction that archived nothing and touched no files (reference wording).
NO_HISTORY = "No prior history."
#: Heading underline (19 '=' as in the reference template).
UNDERLINE = "=" * 19


@dataclass(frozen=True)
class GuideFacts:
    """Everything the guide states; computed from the archive by the caller.

    ``cols``/``rows`` describe the frames (several widths, e.g. a foveated middle, read
    ``"142 or 196"``); ``ink``, ``stopword_dim``, ``line_repeat`` and ``doc_columns`` describe the
    newest shape; ``truncated_chars`` is printed as a raw number when non-zero.
    """

    frame_count: int
    cols: str
    rows: int
    doc_columns: bool = False
    sentence_ink: bool = False
    stopword_dim: bool = False
    line_repeat: int = 1
    included_previous_summary: bool = False
    truncated_chars: int = 0
    include_thinking: bool = True
    files: str = ""


def _frame_rules(f: GuideFacts) -> list[str]:
    lines = [
        ("- The middle of HISTORY is shown as images: each image is one page of the same "
         "transcript, "
        "in order, between the marked separators. A solid black cell is a line break; runs of "
        "spaces were squeezed to one.")
    ]
    if f.doc_columns:
        lines.append(f"  - Each image holds two columns side by side, each {f.cols} characters "
                     "wide "
                     f"and at most {f.rows} rows high; read the left column top to bottom, then "
                     "the right.")
    else:
        lines.append(f"  - Each image is one grid {f.cols} characters wide and at most {f.rows} "
                     "rows "
                     "high, read left to right, top to bottom; lines are not word-wrapped, so a "
                     "word "
                     "may continue on the next row.")
    if f.sentence_ink:
        lines.append("  - The ink colour changes with every sentence (six colours in turn).")
    if f.stopword_dim:
        lines.append("  - Function words are printed in light gray, content words in full ink.")
    if f.line_repeat > 1:
        lines.append("  - Every line is printed twice, first on white, then on a pale yellow band; "
                     "both copies hold the same text.")
    return lines


def render_guide(f: GuideFacts) -> str:
    """The reading guide, ending with the ``HISTORY`` heading the history blocks follow."""
    if f.include_thinking:
        tags = ("- `¶user:` the user, `¶think:` your reasoning, `¶ai:` your reply, "
                "`¶call:` a tool call.")
    else:
        tags = "- `¶user:` the user, `¶ai:` your reply, `¶call:` a tool call."
    out = [
        ("Pick the conversation up where it left off. Its earlier turns are archived under "
        "HISTORY below, oldest first: read all of it, then carry on with the live conversation "
        "that follows."),
        "",
        "Scope tags in the archived transcript:",
        tags,
        ("- A line without a tag belongs to the scope above it; back-to-back blocks of one kind "
        "carry the tag only once."),
        ("- A tool call reads `¶call:name(args)//intent` (the `//intent` part may be missing); "
        "its output sits between `<out>` and `</out>`."),
        "",
        "How to read HISTORY:",
        "- Text passages are the exact transcript; you can rely on them word for word.",
    ]
    if f.frame_count > 0:
        out.extend(_frame_rules(f))
    if f.included_previous_summary:
        out.append("- HISTORY opens with a condensed digest of context older than the archived "
                   "turns.")
    if f.truncated_chars:
        out.append(f"- About {f.truncated_chars} characters of older history in the middle were "
                   "dropped to keep the archive within its budget.")
    out.append("- When an exact earlier detail matters and the archive is unclear, check the "
               "workspace again (re-read the file, re-run the command) instead of guessing.")
    out.append("")
    if f.files:
        out.extend(["FILES", UNDERLINE, f.files, ""])
    out.extend(["HISTORY", UNDERLINE])
    return "\n".join(out)


def short_summary(total_chars: int, frame_count: int, text_chars: int) -> str:
    """One line for the UI (reference format, thousands separated by commas)."""
    plural = "" if frame_count == 1 else "s"
    note = f" (+{text_chars:,} chars as text)" if text_chars > 0 else ""
    return (f"Archived {total_chars:,} chars of history onto {frame_count} snapcompact "
            f"frame{plural}{note}")
