"""Where the vendored font files live.

The fonts sit at the repository's top level (``fonts/``, with their licenses) so that they are
visible and reviewable. The package reaches them through ``snapcompact/font_files``, a symlink to
``../fonts`` that the wheel build follows, so an installed wheel carries them as package data and
an editable install reads the checkout's folder through the same name. ``SNAPCOMPACT_FONTS_DIR``
points elsewhere (a checkout without symlink support, a patched font set).
"""

from __future__ import annotations

import os
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

#: The package-data folder (inside ``snapcompact``) that holds the font files.
FONT_DATA = "font_files"


@lru_cache(maxsize=1)
def fonts_dir() -> Path:
    """Folder of the vendored fonts: ``$SNAPCOMPACT_FONTS_DIR`` if set, else the repository's."""
    override = os.environ.get("SNAPCOMPACT_FONTS_DIR")
    candidates = [Path(override)] if override else []
    candidates.append(Path(str(files("snapcompact") / FONT_DATA)))
    candidates.append(Path(__file__).resolve().parents[2] / "fonts")  # no-symlink checkout
    for path in candidates:
        if (path / "8x13.bdf").is_file():
            return path
    raise FileNotFoundError(
        "snapcompact fonts not found; set SNAPCOMPACT_FONTS_DIR to the repository's fonts/ folder"
        f" (looked in: {', '.join(str(p) for p in candidates)})"
    )
