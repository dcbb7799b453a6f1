"""``python -m snapcompact``: the command-line verbs of :mod:`snapcompact.cli`.

The process ends with ``os._exit`` once the verb has returned and both output streams are
flushed: everything a verb writes is written and closed by then (files through ``with`` blocks,
the session through one-shot descriptors, thread pools joined), so the interpreter's teardown
would only free the objects of a finished run one by one, which took ~3 CPU s after a
60,000-message ``compact`` (measured 2026-12-02); ``compact`` also parks its replay in
``commands.KEEP_UNTIL_EXIT`` rather than freeing it. ``main()`` itself is unchanged for callers
in Python.
"""

import os
import sys

from snapcompact.cli import commands, main

commands.KEEP_UNTIL_EXIT = []  # a verb's big objects are left for the process end (above)
status = main()
try:
    sys.stdout.flush()
    sys.stderr.flush()
except OSError:  # the reader went away after main() had flushed: nothing more to say
    status = status or 1
os._exit(status if isinstance(status, int) else 0)
