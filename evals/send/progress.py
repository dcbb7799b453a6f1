"""Running counters of a client (requests sent, cache hits, retries, tokens, dollars) and the
tqdm bar that shows them.

Why a module: the counters are what a sweep's operator watches and what the run's console
summary prints; they are a view of the client's work, apart from how it sends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Progress:
    """Running counters of one client; listeners are called after every change."""

    completed: int = 0
    requests_sent: int = 0
    cache_hits: int = 0
    dedup_hits: int = 0
    claim_waits: int = 0  # requests answered by another process holding the claim
    cache_write_errors: int = 0
    retries: int = 0
    errors: int = 0
    budget_refusals: int = 0
    token_waits: int = 0  # sends that waited for the input-tokens-per-minute limit
    token_wait_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    listeners: list[Callable[[Progress], None]] = field(default_factory=list, repr=False)

    def notify(self) -> None:
        for listener in self.listeners:
            listener(self)

    def summary(self) -> str:
        text = (
            f"{self.completed} done, {self.requests_sent} sent, {self.cache_hits} cache hits, "
            f"{self.dedup_hits} shared, {self.errors} errors, "
            f"{self.prompt_tokens + self.completion_tokens:,} tok, ${self.cost_usd:.4f}"
        )
        if self.token_waits:
            text += (f", {self.token_waits} waited {self.token_wait_s:,.1f} s for the "
                     "tokens-per-minute limit")
        if self.cache_write_errors:
            text += (f" (WARNING: {self.cache_write_errors} answers could not be cached; they "
                     "are kept in the records only)")
        return text


class ProgressBar:
    """tqdm bar over a ``Progress``: completed/total, with requests, hits, tokens and dollars."""

    def __init__(self, progress: Progress, total: int, desc: str = "eval", **tqdm_kwargs: Any):
        from tqdm.auto import tqdm

        self.progress = progress
        self._start = progress.completed
        self._bar = tqdm(total=total, desc=desc, unit="q", **tqdm_kwargs)
        progress.listeners.append(self._update)

    def _update(self, progress: Progress) -> None:
        done = progress.completed - self._start
        self._bar.set_postfix(
            sent=progress.requests_sent,
            hits=progress.cache_hits + progress.dedup_hits,
            err=progress.errors,
            tok=f"{progress.prompt_tokens + progress.completion_tokens:,}",
            usd=f"{progress.cost_usd:.4f}",
            refresh=False,
        )
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._update in self.progress.listeners:
            self.progress.listeners.remove(self._update)
        self._update(self.progress)
        self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
