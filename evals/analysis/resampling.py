"""The resampling the tables and the winner rule share: the unit, the seeds, the bootstrap.

Why a module: recall intervals, F1 intervals and the winner's paired comparison must resample
the same unit with seeds that do not depend on load order; stated once here:

* The resampling unit is a *question*: (dataset, item_id, question_id), and for a model line that
  pools several target models, (target_model, dataset, item_id, question_id). Seeds of the same
  question are averaged first, so a question counts once however often it was asked.
* A group's bootstrap is seeded from ``seed`` and the group's own coordinates
  (:func:`stable_seed`), so its interval does not depend on which other groups were loaded.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

UNIT = ["dataset", "item_id", "question_id"]
#: What a session is in the per-question index (its questions share one compaction history).
SESSION_UNIT = ["target_model", "dataset", "item_id"]


def stable_seed(seed: int, *parts: object) -> int:
    """A seed derived from ``seed`` and a group's coordinates (independent of load order)."""
    text = json.dumps([seed, *[str(p) for p in parts]])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples of the rows of ``values`` (units x metrics)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n = len(values)
    if n == 0:
        return np.full((n_boot, values.shape[1]), np.nan)
    idx = rng.integers(0, n, size=(n_boot, n))
    return values[idx].mean(axis=1)


def percentile_interval(samples: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    lo = np.quantile(samples, alpha / 2, axis=0)
    hi = np.quantile(samples, 1 - alpha / 2, axis=0)
    return lo, hi


def check_settings(n_boot: int, alpha: float) -> None:
    if not isinstance(n_boot, int) or n_boot < 100:
        raise ValueError(f"bootstrap resamples must be an integer >= 100, got {n_boot!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")

