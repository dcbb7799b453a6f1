"""Command line: the same verbs and flags as the reference oracle, so outputs can be diffed.

    python -m snapcompact render    --shape NAME [--size PX] --out DIR   < text
    python -m snapcompact normalize --shape NAME                         < text
    python -m snapcompact geometry  --shape NAME [--size PX]
    python -m snapcompact resolve   --model ID [--api API] [--provider P] [--shape NAME|auto]
    python -m snapcompact bill      --model ID --width W --height H [--detail D] [--api A] [--provider P]
    python -m snapcompact serialize [--options JSON]                     < messages.json
    python -m snapcompact session SESSION {show|transcript|tree|prune}   (see snapcompact.session_cli)

Every verb prints JSON on stdout; bad input exits with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    return data.decode("utf-8", errors="replace")  # invalid bytes become U+FFFD, as in the reference


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _print(value: object) -> None:
    # Like JSON.stringify: lone surrogates (a cut through an astral character) are escaped.
    text = json.dumps(value, indent=1, ensure_ascii=False)
    text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    sys.stdout.write(text + "\n")


def _cmd_render(args: argparse.Namespace) -> int:
    from snapcompact.render import render_many
    from snapcompact.shapes import geometry, get_shape

    shape = get_shape(args.shape, args.size)
    text = _read_stdin()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    frames = render_many(text, shape)
    seconds = time.perf_counter() - t0
    for i, frame in enumerate(frames):
        (out / f"frame{i:03d}.png").write_bytes(frame.png)
    geo = geometry(shape)
    meta = {
        "shape": shape.name,
        "frame_size": shape.frame_size,
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
    from snapcompact.normalize import normalize
    from snapcompact.shapes import get_shape

    _print(normalize(_read_stdin(), get_shape(args.shape).font))
    return 0


def _cmd_geometry(args: argparse.Namespace) -> int:
    from snapcompact.shapes import geometry, get_shape

    shape = get_shape(args.shape, args.size)
    geo = geometry(shape)
    _print({"shape": shape.name, "frame_size": shape.frame_size,
            "geometry": {"cols": geo.cols, "rows": geo.rows, "capacity": geo.capacity}})
    return 0


def _cmd_resolve(args: argparse.Namespace) -> int:
    from snapcompact.resolve import resolve_shape

    resolved = resolve_shape(args.model, api=args.api, provider=args.provider, variant=args.shape,
                             frame_size=args.size)
    _print(resolved.to_json())
    return 0


def _cmd_bill(args: argparse.Namespace) -> int:
    from snapcompact.billing import bill_image

    bill = bill_image(args.model, args.width, args.height, detail=args.detail, api=args.api,
                      provider=args.provider)
    _print(bill.to_json())
    return 0


def _cmd_serialize(args: argparse.Namespace) -> int:
    from snapcompact.serialize import serialize_conversation

    try:
        messages = json.loads(_read_stdin())
    except json.JSONDecodeError as exc:
        raise ValueError(f"messages on stdin are not valid JSON: {exc}") from exc
    try:
        options = json.loads(args.options) if args.options else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"--options is not valid JSON: {exc}") from exc
    _print(serialize_conversation(messages, options))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="snapcompact", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("render", help="render stdin text into PNG frames")
    p.add_argument("--shape", required=True)
    p.add_argument("--size", type=int)
    p.add_argument("--out", required=True)
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

    from snapcompact.session_cli import add_session_parser

    add_session_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        sys.stderr.write(f"snapcompact {args.command}: error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
