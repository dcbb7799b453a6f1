"""``python -m evals.analysis.study``: see :mod:`evals.analysis.study.cli`."""

import sys

from evals.analysis.study.cli import main

sys.exit(main())
