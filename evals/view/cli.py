"""``snapcompact-eval-view``: run directories -> a static records viewer in ``--out``.

    snapcompact-eval-view results/runs/default --out results/view
    snapcompact-eval-view runs/a runs/b --out /tmp/view --page-size 50 --frames hardlink

Open ``<out>/index.html`` in a browser; nothing else is needed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evals.view.site import FRAME_MODES, PAGE_SIZE, build_site


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="snapcompact-eval-view", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories (searched for records.jsonl)")
    parser.add_argument("--out", required=True, help="folder to write the site into")
    parser.add_argument("--page-size", type=int, default=PAGE_SIZE,
                        help=f"questions per list page (default {PAGE_SIZE})")
    parser.add_argument("--frames", choices=FRAME_MODES, default="copy",
                        help="copy frames into the site (default), hard-link or symlink them")
    args = parser.parse_args(argv)
    try:
        build_site(args.runs, args.out, page_size=args.page_size, frames=args.frames)
    except (ValueError, OSError) as exc:
        print(f"snapcompact-eval-view: error: {exc}", file=sys.stderr)
        return 2
    print(f"open {args.out}/index.html")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
