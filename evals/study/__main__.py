"""``python -m evals.study``: see :mod:`evals.study.cli`."""

import sys

from evals.study.cli import main

sys.exit(main())
