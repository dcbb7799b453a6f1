"""``python -m evals.view`` is ``snapcompact-eval-view``."""

from evals.view.cli import main

raise SystemExit(main())
