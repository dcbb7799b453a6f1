"""``python -m snapcompact``: the command-line verbs of :mod:`snapcompact.cli`."""

from snapcompact.cli import main

raise SystemExit(main())
