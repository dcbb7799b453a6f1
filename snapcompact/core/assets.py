"""Where the vendored font files live.

The fonts sit at the repository's top level (``fonts/``, with their licenses) so that they are
visible and reviewable; an installed copy can point elsewhere with ``SNAPCOMPACT_FONTS_DIR``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def fonts_dir() -> Path:
    """Folder of the vendored fonts: ``$SNAPCOMPACT_FONTS_DIR`` if set, else the repository's."""
    override = os.environ.get("SNAPCOMPACT_FONTS_DIR")
    candidates = [Path(override)] if override else []
    candidates.append(Path(__file__).resolve().parent.parent.parent / "fonts")
    for path in candidates:
        if (path / "8x13.bdf").is_file():
            return path
    raise FileNotFoundError(
        "snapcompact fonts not found; set SNAPCOMPACT_FONTS_DIR to the repository's fonts/ folder"
        f" (looked in: {', '.join(str(p) for p in candidates)})"
    )
