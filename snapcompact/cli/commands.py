"""Command line: the same verbs and flags as the reference oracle, so outputs can be diffed.

    python -m snapcompact render    --shape NAME [--size PX] --out DIR   < text
    python -m snapcompact normalize --shape NAME                         < text
    python -m snapcompact geometry  --shape NAME [--size PX]
    python -m snapcompact resolve   --model ID [--api API] [--provider P] [--shape NAME|auto]
    python -m snapcompact bill      --model ID --width W --height H [--detail D] [--api A]
                                    [--provider P]
    python -m snapcompact serialize [--options JSON]                     < messages.json
    python -m snapcompact compact   SESSION --model ID [--api A] [--provider P]
                                    [--strategy snapcompact|truncate|full]
                                    [--policy pinned|foveated]
                                    [--shape NAME] [--size PX] [--context-window N]
                                    [--settings FILE]
                                    [--steps K [--question TEXT] [--allow-estimate]]
                                    [--system-prompt FILE] --out DIR
    python -m snapcompact session   SESSION {show|transcript|tree|prune}
                                    (see snapcompact.cli.session)

Every verb prints JSON on stdout; bad input exits with status 2 and a one-line message
(``--debug`` before the verb shows the traceback instead). ``render`` refuses to draw more than
``--max-frames`` frames (default 1,000) and replaces the frames of an earlier render in ``--out``
(files named ``frameNNN.png`` and ``meta.json``), leaving other files alone.

Each verb imports its stage inside its handler, on purpose: a ``render`` must not pay for loading
the compaction pipeline (importing every stage up front took 0.70 s against 0.09 s for this module
alone, measured 2026-12-02 on 2 cores), and the whole-process render time is what a user meets.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

DEFAULT_MAX_FRAMES = 1000
_JSON_MAX_DEPTH_LIMIT = 20000  # recursion limit while parsing stdin JSON
_OWN_FRAME = re.compile(r"^frame\d{3,}\.png$")


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    return data.decode("utf-8",
                       errors="replace")  # invalid bytes become U+FFFD, as in the reference


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _print(value: object) -> None:
    # Like JSON.stringify: lone surrogates (a cut through an astral character) are escaped.
    from snapcompact.core import indented_json

    text = indented_json(value, indent=1) + "\n"  # json.dumps(value, indent=1, ensure_ascii=False)
    buffer = getattr(sys.stdout, "buffer", None)
    encoding = str(getattr(sys.stdout, "encoding", None)).lower().replace("_", "-")
    if buffer is not None and os.linesep == "\n" and encoding in ("utf-8", "utf8"):
        # The bytes the text layer would write: a text that encodes holds no surrogate, so this
        # skips a regex pass over a summary that can run to tens of megabytes.
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            sys.stdout.flush()
            buffer.write(data)
            return
    text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    sys.stdout.write(text)


def _shape(name: str, size: int | None):
    """The shape at ``size``, refused when not even one cell fits (every verb, not just render)."""
    from snapcompact.core import get_shape

    shape = get_shape(name, size)
    _check_fits(shape)
    return shape


def _check_fits(shape) -> None:
    from snapcompact.core import geometry

    geo = geometry(shape)
    if geo.cols < 1 or geo.rows < 1:
        raise ValueError(f"frame size {shape.frame_size} px is too small for shape "
                         f"{shape.name!r} ({shape.cell_width}x{shape.cell_height} cells)")


def _model_id(value: str) -> str:
    if not value or not value.strip() or value != value.strip():
        raise ValueError(f"--model {value!r} is not a model id (e.g. claude-sonnet-4-5)")
    return value


def _output_folder(value: str) -> Path:
    """``--out`` as a folder ready for frames: created, checked, and cleared of our old files."""
    if not value or not value.strip():
        raise ValueError("--out is empty: name the folder to write the frames into")
    out = Path(value)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {value}: is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    if not os.access(out, os.W_OK | os.X_OK):
        raise ValueError(f"--out {value}: folder is not writable")
    for stale in out.iterdir():  # frames of an earlier render would pass for this one's
        if (_OWN_FRAME.match(stale.name) or stale.name == "meta.json") and stale.is_file():
            stale.unlink()
    return out


def _cmd_render(args: argparse.Namespace) -> int:
    from snapcompact.core import geometry
    from snapcompact.render import checked_pages, render_pages

    shape = _shape(args.shape, args.size)
    if args.max_frames < 1:
        raise ValueError(f"--max-frames must be >= 1, got {args.max_frames}")
    text = _read_stdin()
    t0 = time.perf_counter()
    page_texts = checked_pages(text, shape, args.max_frames)  # normalized and paginated once
    out = _output_folder(args.out)
    frames = render_pages(page_texts, shape, effort=args.png_effort)
    seconds = time.perf_counter() - t0
    for i, frame in enumerate(frames):
        (out / f"frame{i:03d}.png").write_bytes(frame.png)
    geo = geometry(shape)
    meta = {
        "shape": shape.name,
        "frame_size": shape.frame_size,
        "png_effort": args.png_effort,
        "geometry": {"cols": geo.cols, "rows": geo.rows, "capacity": geo.capacity},
        "frames": len(frames),
        "per_frame": [
            {"cols": f.cols, "rows": f.rows, "chars": f.chars, "width": f.width, "height": f.height}
            for f in frames
        ],
        "seconds": seconds,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    _print({"frames": len(frames), "seconds": seconds})
    return 0


def _cmd_normalize(args: argparse.Namespace) -> int:
    from snapcompact.text import normalize

    _print(normalize(_read_stdin(), _shape(args.shape, None).font))
    return 0


def _cmd_geometry(args: argparse.Namespace) -> int:
    from snapcompact.core import geometry

    shape = _shape(args.shape, args.size)
    geo = geometry(shape)
    _print({"shape": shape.name, "frame_size": shape.frame_size,
            "geometry": {"cols": geo.cols, "rows": geo.rows, "capacity": geo.capacity}})
    return 0


def _cmd_resolve(args: argparse.Namespace) -> int:
    from snapcompact.pricing import resolve_shape

    resolved = resolve_shape(_model_id(args.model), api=args.api, provider=args.provider,
                             shape=args.shape, frame_size=args.size)
    _check_fits(resolved.shape)
    _print(resolved.to_json())
    if resolved.fallback is not None:  # the JSON says it too; a script reading stdout may not
        sys.stderr.write(f"note: fallback: {resolved.fallback}\n")
    return 0


def _cmd_bill(args: argparse.Namespace) -> int:
    from snapcompact.billing import bill_image

    bill = bill_image(_model_id(args.model), args.width, args.height, detail=args.detail,
                      api=args.api, provider=args.provider)
    _print(bill.to_json())
    for note in bill.fallbacks:
        sys.stderr.write(f"note: {note}\n")
    return 0


def _cmd_serialize(args: argparse.Namespace) -> int:
    from snapcompact.archive import serialize_conversation

    text = _read_stdin()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _JSON_MAX_DEPTH_LIMIT))
    try:
        messages = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"messages on stdin are not valid JSON: {exc}") from exc
    except RecursionError:
        raise ValueError("messages on stdin are nested too deeply to parse") from None
    finally:
        sys.setrecursionlimit(limit)
    try:
        options = json.loads(args.options) if args.options else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"--options is not valid JSON: {exc}") from exc
    _print(serialize_conversation(messages, options))
    return 0


#: Set to a list by ``python -m snapcompact`` (which ends the process without teardown): the
#: objects of a finished run are parked there instead of being freed one by one.
KEEP_UNTIL_EXIT: list[object] | None = None


def _cmd_compact(args: argparse.Namespace) -> int:
    from snapcompact.agent import CompactRequest, compact_session_file

    if args.steps is None:
        for flag, value in (("--question", args.question), ("--allow-estimate",
                                                             args.allow_estimate or None)):
            if value is not None:
                raise ValueError(f"{flag} belongs to the step protocol: add --steps K")
    request = CompactRequest(
        session=args.session, model=_model_id(args.model), out=str(_output_folder(args.out)),
        api=args.api,
        provider=args.provider, strategy=args.strategy, policy=args.policy,
        shape=None if args.shape in (None, "auto") else args.shape, frame_size=args.size,
        settings=args.settings, system_prompt=args.system_prompt,
        **({} if args.context_window is None else {"context_window": args.context_window}))
    if args.steps is not None:
        from snapcompact.agent import StepsRequest, compact_session_steps, step_line

        def show(row: dict) -> None:
            sys.stderr.write(step_line(row) + "\n")
            sys.stderr.flush()

        summary = compact_session_steps(request, StepsRequest(
            steps=args.steps, question="Continue." if args.question is None else args.question,
            allow_estimate=args.allow_estimate), on_row=show, keep_alive=KEEP_UNTIL_EXIT)
    else:
        summary = compact_session_file(request, keep_alive=KEEP_UNTIL_EXIT)
    for note in summary.get("load_warnings", ()):  # one line each, counted in warnings_total
        sys.stderr.write(f"snapcompact compact: warning: {note}\n")
    _print(summary)
    if KEEP_UNTIL_EXIT is not None:
        KEEP_UNTIL_EXIT.append(summary)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block); ``-h`` still prints the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_compact_parser(sub: Any) -> None:
    """The ``compact`` subcommand's arguments (the longest verb: a parser of its own)."""
    p = sub.add_parser("compact", help="replay a session through the compaction pipeline and "
                       "write the next turn's context")
    p.add_argument("session", help="session JSONL (pi v1-v3, oh-my-pi/GJC or Claude Code; bad "
                   "lines are warnings), or a JSON list of agent messages")
    p.add_argument("--model", required=True)
    p.add_argument("--api")
    p.add_argument("--provider")
    p.add_argument("--strategy", default="snapcompact",
                   choices=("snapcompact", "truncate", "full", "context-full", "handoff"),
                   help="snapcompact = the coding agent's default method order")
    p.add_argument("--policy", choices=("pinned", "foveated"))
    p.add_argument("--shape", help="shape name, or auto (default)")
    p.add_argument("--size", type=int, help="frame side in px")
    p.add_argument("--context-window", type=int,
                   help="the model's window in tokens (default: CompactRequest's, 200,000)")
    p.add_argument("--settings", help="settings file (.toml or .json)")
    p.add_argument("--steps", type=int, metavar="K",
                   help="the upstream-agent oracle's protocol instead of a live replay: resume "
                   "at every K-th user message (one pre-prompt check, canned reply 'ok'); one "
                   "line per step on stderr")
    p.add_argument("--question", help="with --steps: the last resume's prompt "
                   "(default Continue.)")
    p.add_argument("--allow-estimate", action="store_true",
                   help="with --steps: run on a stand-in Claude counter when ctok is missing "
                   "(refused otherwise: the steps are a parity check); rows say ESTIMATE")
    p.add_argument("--system-prompt", metavar="FILE",
                   help="the system prompt counted with the context (default: the coding "
                   "agent 18.3.4's own prompt for --model, with no tools)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_cmd_compact)


def build_parser() -> argparse.ArgumentParser:
    """The ``snapcompact`` argument parser with one subcommand per verb."""
    parser = _Parser(prog="snapcompact", description=__doc__.split("\n")[0])
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("render", help="render stdin text into PNG frames")
    p.add_argument("--shape", required=True)
    p.add_argument("--size", type=int)
    p.add_argument("--out", required=True)
    p.add_argument("--max-frames", type=int, default=DEFAULT_MAX_FRAMES,
                   help=f"refuse inputs that need more frames (default {DEFAULT_MAX_FRAMES})")
    p.add_argument("--png-effort", choices=("production", "fast"), default="production",
                   help="deflate effort: production (default; bytes no larger than the "
                        "reference's) or fast (same pixels, ~1.1-1.4x the bytes, for frames "
                        "nobody sends)")
    p.set_defaults(func=_cmd_render)

    p = sub.add_parser("normalize", help="print the normalized text as one JSON string")
    p.add_argument("--shape", required=True)
    p.set_defaults(func=_cmd_normalize)

    p = sub.add_parser("geometry", help="print a shape's grid geometry")
    p.add_argument("--shape", required=True)
    p.add_argument("--size", type=int)
    p.set_defaults(func=_cmd_geometry)

    p = sub.add_parser("resolve", help="resolve the frame shape for a model")
    p.add_argument("--model", required=True)
    p.add_argument("--api")
    p.add_argument("--provider")
    p.add_argument("--shape", default="auto")
    p.add_argument("--size", type=int)
    p.set_defaults(func=_cmd_resolve)

    p = sub.add_parser("bill", help="tokens a provider bills for one image")
    p.add_argument("--model", required=True)
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--height", type=int, required=True)
    p.add_argument("--detail", choices=("low", "high", "original", "auto"))
    p.add_argument("--api")
    p.add_argument("--provider")
    p.set_defaults(func=_cmd_bill)

    p = sub.add_parser("serialize", help="serialize a conversation (JSON messages on stdin)")
    p.add_argument("--options")
    p.set_defaults(func=_cmd_serialize)

    _add_compact_parser(sub)
    from snapcompact.cli.session import add_session_parser

    add_session_parser(sub)
    return parser


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    if isinstance(exc, RecursionError):
        return "input is nested too deeply"
    if isinstance(exc, MemoryError):
        return "not enough memory for this input"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _silence_stdout() -> None:
    """After stdout failed, point it at /dev/null so the exit-time flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run one verb and return its exit status; errors print one line unless ``--debug``."""
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()  # a full disk or a closed pipe on stdout is an error of this verb
        return status
    except KeyboardInterrupt:
        sys.stderr.write(f"snapcompact {args.command}: interrupted\n")
        return 130
    except Exception as exc:
        if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
            _silence_stdout()  # the reader went away (`| head`): not worth a message
            return 1
        if isinstance(exc, OSError) and exc.filename is None and exc.errno == errno.ENOSPC:
            _silence_stdout()
        if args.debug:
            raise
        sys.stderr.write(f"snapcompact {args.command}: error: {_one_line(exc)}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
